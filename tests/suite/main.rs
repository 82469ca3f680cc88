//! The integration tests but the backend sweep (`tests/backends.rs`) and the error cases
//! (`tests/errors.rs`), as one test binary: each file instantiates the engine for the element
//! types, plans and positions it calls, and in one binary the instantiations they share are
//! compiled once (`cargo test --no-run --timings`, dev profile: 44 s for this binary, against
//! 140 s for its four files as binaries of their own). The backend sweep stays a binary of its
//! own because the cross tests build it optimised, and it alone; the error cases
//! (`tests/errors.rs`, 19 s) because the MSRV job and Miri run them alone.
//!
//! `cargo test --test suite -- q15::` runs one file's tests (each is a module).

mod elements;
mod golden;
mod properties;
mod q15;
mod simd_bits;

#[path = "../common/mod.rs"]
mod common;
use common::Rng;
