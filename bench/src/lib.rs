//! rope2d's benchmarks live in `benches/rope.rs`: `cargo bench -p rope2d-bench` from the
//! repository root (results in `target/criterion`). This library is empty.
