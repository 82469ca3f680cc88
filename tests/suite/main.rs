//! The integration tests but the backend sweep (`tests/backends.rs`), as one test binary: each
//! file instantiates the engine for the element types, plans and positions it calls, and in
//! one binary the instantiations they share are compiled once (a dev build of the five took 64
//! CPU-seconds, against 160 as five binaries). The backend sweep stays a binary of its own:
//! the cross tests build it optimised, and it alone.
//!
//! `cargo test --test suite -- errors::` runs one file's tests (each is a module).

mod elements;
mod errors;
mod golden;
mod properties;
mod q15;
