//! rope2d on a Cortex-M4F (and a Cortex-M33), checked on the device against the golden
//! vectors.
//!
//! ```text
//! cargo run --release --target thumbv7em-none-eabihf --example cortex_m4
//! cargo run --release --target thumbv8m.main-none-eabihf --example cortex_m4
//! ```
//!
//! runs it under QEMU (MPS2-AN386 board, a Cortex-M4F; MPS2-AN505, a Cortex-M33 with its FPU
//! and without the optional DSP extension, which the target does not enable; semihosting)
//! through the runners in `.cargo/config.toml`. It prints one line per check and `N passed, M failed`, and exits QEMU
//! with status 0 only when every check passes; a panic or a fault exits with status 1.
//! With `--features defmt` the same output goes out as defmt frames, for `defmt-print`.
//! `.ci/firmware.sh` runs both and measures the instruction and size budgets on this image.
//!
//! On the device, as a real firmware would use the crate — the table built once with
//! `Table::build` from a constant preset into a `static` the firmware owns, whole grids
//! rotated with `rotate_qk`:
//! - the 14×14, d = 64, base-100 table of the seed convention (interleaved pairs, column
//!   first), built without `f64` or `libm` (measured: instructions per entry);
//! - q = the golden input of `tests/golden/seed_axial_d64_14x14_b100.json` (2 heads), which
//!   holds the tokens `t = row·14 + col` with `t % 3 == 0` and `t = 195`: the 66 golden tokens
//!   are scattered to their positions in a whole-grid buffer (the other tokens are copies of
//!   golden tokens), k = the same with the two heads swapped; both rotated by one `rotate_qk`
//!   (measured: instructions per pair), and the golden tokens read back and compared with the
//!   file's `expected_ref` (≤ 1e-5) and `expected_f64` (≤ 4e-6). The file is parsed by
//!   `const fn`s at compile time (`include_bytes!`): the firmware reads no files;
//! - the inverse (`rotate_qk` with `Direction::Inverse`) restores q and k;
//! - the hand-scheduled `vmul`/`vmla` kernel against a plain-Rust evaluation of
//!   `fl(fl(a·c) − fl(b·s))`, `fl(fl(b·c) + fl(a·s))` with the table's own entries
//!   (`row_entries`/`col_entries`), bit for bit: both layouts (and axis orders), both
//!   directions, and d = 20 with 3 heads (a 4-pair step plus a remainder);
//! - relativity: with the same q at every grid position and the same k at every position,
//!   `<R(p)q, R(p')k>` depends on `p' − p` only (one whole-grid rotation, checked for every
//!   `p` at several displacements);
//! - a call with a short k is refused and leaves q and k untouched;
//! - the grid in `i8` (scale 2⁻⁴), requantised to 2⁻³ by the `f32` table: within 1 LSB of
//!   the `f32` rotation of the same quantised input, rounded.
//!
//! Every rope2d call sits in `mod calls` (or a `calls_*` module beside it), which
//! `.ci/firmware.sh` measures for size (with everything it reaches), checks for panic paths
//! and bounds for stack; the firmware prints each call's peak stack, measured by painting
//! (`stack: <call> <bytes>`), for the script to hold against that bound.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(not(target_os = "none"))]
fn main() {
    println!(
        "examples/cortex_m4.rs is firmware: \
         cargo run --release --target thumbv7em-none-eabihf --example cortex_m4"
    );
}

/// The const-fn golden JSON reader (shared with `cortex_m0.rs`).
#[cfg(target_os = "none")]
#[path = "common/golden_json.rs"]
mod json;

/// The peak stack of a call, measured by painting, and `stacked!` (shared with the other
/// firmware examples).
#[cfg(target_os = "none")]
#[macro_use]
#[path = "common/stack_paint.rs"]
mod stack_paint;

/// The definition the Q15 loop is held to (shared with `cortex_m0.rs` and `riscv32.rs`).
#[cfg(target_os = "none")]
#[path = "common/q15_reference.rs"]
mod q15_reference;

#[cfg(target_os = "none")]
mod firmware {
    use crate::q15_reference::{self, Q15Grid};
    use cortex_m_rt::{ExceptionFrame, entry, exception};
    use cortex_m_semihosting::debug;
    // The defmt logger (semihosting); linked in both builds so one linker setup serves both.
    use defmt_semihosting as _;
    use rope2d::{
        Backend, Direction, Error, Grid, Layout, Q15Table, Shape, Spec, Table,
        preset::{self, AxisOrder},
    };

    #[cfg(not(feature = "defmt"))]
    macro_rules! say {
        ($($arg:tt)*) => { cortex_m_semihosting::hprintln!($($arg)*) };
    }
    #[cfg(feature = "defmt")]
    macro_rules! say {
        ($($arg:tt)*) => { defmt::println!($($arg)*) };
    }

    /// The core it runs on, by the part number in its CPUID register.
    fn core() -> &'static str {
        // SAFETY: a read of a read-only System Control Block register, in privileged mode.
        let cpuid = unsafe { (*cortex_m::peripheral::CPUID::PTR).base.read() };
        match (cpuid >> 4) & 0xFFF {
            0xC24 => "Cortex-M4",
            0xC27 => "Cortex-M7",
            0xD21 => "Cortex-M33",
            0xD22 => "Cortex-M55",
            _ => "Cortex-M",
        }
    }

    /// What rotates Q15 buffers in this build.
    const Q15_LOOP: &str = if cfg!(rope2d_arm_dsp) {
        "the DSP extension's loop"
    } else {
        "the plain-Rust loop"
    };

    /// Bytes of free stack painted below a measured call: more than any call here takes.
    const STACK_WINDOW: usize = 8 * 1024;

    /// The seed file: 2-D axial, the convention the firmware's main table is built for.
    mod golden {
        #![allow(long_running_const_eval)]

        use crate::json::{after_key, count, floats, number, string_is};

        const JSON: &[u8] = include_bytes!("../tests/golden/seed_axial_d64_14x14_b100.json");

        /// Grid side, head dimension and heads this firmware is built for; checked below
        /// against the file.
        pub const SIDE: usize = 14;
        pub const D: usize = 64;
        pub const HEADS: usize = 2;
        /// Tokens in the file.
        pub const TOKENS: usize = count(JSON, b"positions") / 2;
        /// Values per token.
        pub const TOKEN_LEN: usize = HEADS * D;

        // The file must be the convention this firmware builds.
        const _: () = {
            assert!(number(JSON, after_key(JSON, b"head_dim")).0 == D as f64);
            assert!(number(JSON, after_key(JSON, b"heads")).0 == HEADS as f64);
            assert!(number(JSON, after_key(JSON, b"base")).0 == 100.0);
            assert!(number(JSON, after_key(JSON, b"freq_scale")).0 == 1.0);
            assert!(string_is(JSON, b"kind", b"axial2d"));
            assert!(string_is(JSON, b"layout", b"interleaved"));
            assert!(string_is(JSON, b"first_axis", b"col"));
            assert!(string_is(JSON, b"mode", b"index"));
            let grid = floats::<2>(JSON, b"grid");
            assert!(grid[0] == SIDE as f32 && grid[1] == SIDE as f32);
        };

        /// `[row, col]` of each token.
        pub static POSITIONS: [[u32; 2]; TOKENS] = {
            let flat = floats::<{ 2 * TOKENS }>(JSON, b"positions");
            let mut out = [[0; 2]; TOKENS];
            let mut t = 0;
            while t < TOKENS {
                out[t] = [flat[2 * t] as u32, flat[2 * t + 1] as u32];
                t += 1;
            }
            out
        };
        pub static INPUT: [f32; TOKENS * TOKEN_LEN] = floats(JSON, b"input");
        pub static EXPECTED_REF: [f32; TOKENS * TOKEN_LEN] = floats(JSON, b"expected_ref");
        pub static EXPECTED_F64: [f32; TOKENS * TOKEN_LEN] = floats(JSON, b"expected_f64");
    }

    /// The first tokens of the Wan 2.1 file: a 3-D preset on the device.
    mod wan {
        #![allow(long_running_const_eval)]

        use crate::json::{after_key, floats, number, string_is};

        const JSON: &[u8] = include_bytes!("../tests/golden/wan21_3d_d128_3x4x6.json");

        pub const D: usize = 128;
        pub const HEADS: usize = 2;
        /// `[frames, rows, cols]`.
        pub const GRID: [usize; 3] = [3, 4, 6];
        /// The first tokens of the file checked on the device.
        pub const TOKENS: usize = 8;
        pub const TOKEN_LEN: usize = HEADS * D;

        const _: () = {
            assert!(number(JSON, after_key(JSON, b"head_dim")).0 == D as f64);
            assert!(number(JSON, after_key(JSON, b"heads")).0 == HEADS as f64);
            assert!(number(JSON, after_key(JSON, b"theta")).0 == 10_000.0);
            assert!(string_is(JSON, b"family", b"wan"));
            let grid = floats::<3>(JSON, b"grid");
            assert!(grid[0] == GRID[0] as f32 && grid[1] == GRID[1] as f32);
            assert!(grid[2] == GRID[2] as f32);
        };

        /// `[frame, row, col]` of each checked token.
        pub static POSITIONS: [[u32; 3]; TOKENS] = {
            let flat = first::<{ 3 * TOKENS }, { 3 * 25 }>(b"positions");
            let mut out = [[0; 3]; TOKENS];
            let mut t = 0;
            while t < TOKENS {
                out[t] = [
                    flat[3 * t] as u32,
                    flat[3 * t + 1] as u32,
                    flat[3 * t + 2] as u32,
                ];
                t += 1;
            }
            out
        };
        const ALL: usize = 25 * TOKEN_LEN;
        pub static INPUT: [f32; TOKENS * TOKEN_LEN] =
            first::<{ TOKENS * TOKEN_LEN }, ALL>(b"input");
        pub static EXPECTED_F64: [f32; TOKENS * TOKEN_LEN] =
            first::<{ TOKENS * TOKEN_LEN }, ALL>(b"expected_f64");
        pub static EXPECTED_REF: [f32; TOKENS * TOKEN_LEN] =
            first::<{ TOKENS * TOKEN_LEN }, ALL>(b"expected_ref");

        /// The first `N` of the `M` numbers of `key`.
        const fn first<const N: usize, const M: usize>(key: &[u8]) -> [f32; N] {
            let all = floats::<M>(JSON, key);
            let mut out = [0f32; N];
            let mut i = 0;
            while i < N {
                out[i] = all[i];
                i += 1;
            }
            out
        }
    }

    use golden::{D, EXPECTED_F64, EXPECTED_REF, HEADS, INPUT, POSITIONS, SIDE, TOKEN_LEN, TOKENS};

    /// The seed convention: interleaved pairs, pairs 0 .. d/4 rotated by the column, base 100.
    const fn seed(d: usize) -> Spec<'static, 2> {
        preset::axial(d, Layout::Interleaved, AxisOrder::ColFirst, 100.0)
    }
    /// The other layout and axis order, for the kernel checks.
    const fn half(d: usize) -> Spec<'static, 2> {
        preset::axial(d, Layout::Half, AxisOrder::RowFirst, 100.0)
    }
    const GRID: [usize; 2] = [SIDE, SIDE];
    /// `(rows + cols) · d/4` `[cos, sin]` entries: 3 584 B.
    const ENTRIES: usize = seed(D).plan.table_len(GRID);
    /// Values of a whole-grid `[196 tokens][2 heads][64]` buffer.
    const GRID_VALUES: usize = SIDE * SIDE * TOKEN_LEN;
    const SHAPE: Shape = Shape::heads(HEADS);

    /// Every call into rope2d of a firmware that rotates 2-D axial grids, each in its own
    /// function: `.ci/firmware.sh` measures these (and all they call) for size and checks
    /// them for panic paths. The firmware builds its table from a constant preset in storage
    /// it owns and rotates whole grids: the lean set a real firmware needs.
    mod calls {
        use super::*;

        /// The seed convention's 14×14 table. The spec is a constant, so the paths of the
        /// conventions it does not use fold away.
        #[inline(never)]
        pub fn build(storage: &mut [[f32; 2]]) -> Result<Table<'_, 2>, Error> {
            const SPEC: Spec<'static, 2> = seed(D);
            Table::build(storage, &SPEC, GRID)
        }

        #[inline(never)]
        pub fn rotate_qk(
            table: &Table<'_, 2>,
            q: &mut [f32],
            k: &mut [f32],
            shape: Shape,
            dir: Direction,
        ) -> Result<(), Error> {
            table.rotate_qk(q, k, shape, Grid::new(table.extents()), dir)
        }

        #[inline(never)]
        pub fn entries<'a>(
            table: &Table<'a, 2>,
            axis: usize,
            index: usize,
        ) -> Option<&'a [[f32; 2]]> {
            table.entries(axis, index)
        }

        #[inline(never)]
        pub fn backend(table: &Table<'_, 2>) -> Backend {
            table.backend()
        }
    }

    /// Tables of the kernel checks, whose specs vary at run time: the general table builder,
    /// measured separately by `.ci/firmware.sh` (what a firmware that chooses its convention
    /// at run time links).
    mod calls_general {
        use super::*;

        #[inline(never)]
        pub fn build<'a>(
            storage: &'a mut [[f32; 2]],
            spec: &Spec<'_, 2>,
            extents: [usize; 2],
        ) -> Result<Table<'a, 2>, Error> {
            Table::build(storage, spec, extents)
        }
    }

    /// The calls of the 3-D check (a Wan 2.1 table, tokens at explicit positions), measured
    /// separately by `.ci/firmware.sh`.
    mod calls_3d {
        use super::*;

        #[inline(never)]
        pub fn build(storage: &mut [[f32; 2]]) -> Result<Table<'_, 3>, Error> {
            const SPEC: Spec<'static, 3> = preset::wan(wan::D, 10_000.0);
            Table::build(storage, &SPEC, wan::GRID)
        }

        #[inline(never)]
        pub fn rotate_at(
            table: &Table<'_, 3>,
            x: &mut [f32],
            shape: Shape,
            positions: &[[u32; 3]],
            dir: Direction,
        ) -> Result<(), Error> {
            table.rotate_at(x, shape, positions, dir)
        }
    }

    /// An `i8` buffer requantised by the `f32` table: the staged path (values converted into
    /// a stack buffer, rotated and rounded back), measured separately by `.ci/firmware.sh`.
    mod calls_i8 {
        use super::*;

        #[inline(never)]
        pub fn rotate(table: &Table<'_, 2>, x: &mut [i8], dir: Direction) -> Result<(), Error> {
            table.rotate(x, SHAPE.with_scales(I8_IN, I8_OUT), Grid::new(GRID), dir)
        }
    }

    /// Scales of the `i8` check: inputs in steps of 2⁻⁴ (the golden values stay below 8),
    /// outputs in steps of 2⁻³ (a rotation grows no pair's norm, no value passes 8·√2).
    const I8_IN: f32 = 1.0 / 16.0;
    const I8_OUT: f32 = 1.0 / 8.0;

    /// The Q15 calls (the DSP kernel on the M4F, plain Rust on the M33), measured separately
    /// by `.ci/firmware.sh`.
    mod calls_q15 {
        use super::*;

        #[inline(never)]
        pub fn build(storage: &mut [[i16; 2]]) -> Result<Q15Table<'_, 2>, Error> {
            const SPEC: Spec<'static, 2> = seed(D);
            Q15Table::build(storage, &SPEC, GRID)
        }

        #[inline(never)]
        pub fn rotate(table: &Q15Table<'_, 2>, x: &mut [i16], dir: Direction) -> Result<(), Error> {
            table.rotate(x, SHAPE, Grid::new(GRID), dir)
        }

        /// The first two tokens of the grid, at their positions.
        #[inline(never)]
        pub fn rotate_at(
            table: &Q15Table<'_, 2>,
            x: &mut [i16],
            dir: Direction,
        ) -> Result<(), Error> {
            table.rotate_at(x, SHAPE, &[[0, 0], [0, 1]], dir)
        }

        #[inline(never)]
        pub fn entries<'a>(
            table: &Q15Table<'a, 2>,
            axis: usize,
            index: usize,
        ) -> Option<&'a [[i16; 2]]> {
            table.entries(axis, index)
        }
    }

    /// Brackets a measured region: `.ci/firmware.sh` counts the instructions QEMU executes
    /// between a call of `measure_begin` and the next call of `measure_end`, and reads the
    /// work done from the `measure:` line printed after it. The two bodies differ (`nop`,
    /// `isb`), so the linker cannot fold them into one, and cannot drop the calls.
    #[inline(never)]
    #[unsafe(no_mangle)]
    extern "C" fn measure_begin() {
        cortex_m::asm::nop();
    }

    #[inline(never)]
    #[unsafe(no_mangle)]
    extern "C" fn measure_end() {
        cortex_m::asm::isb();
    }

    struct Tally {
        passed: u32,
        failed: u32,
    }

    impl Tally {
        fn check(&mut self, ok: bool, what: &str, worst: f32, limit: f32) {
            if ok {
                self.passed += 1;
                say!("pass  {}: worst {} (limit {})", what, worst, limit);
            } else {
                self.failed += 1;
                say!("FAIL  {}: worst {} (limit {})", what, worst, limit);
            }
        }

        fn error(&mut self, what: &str, error: Error) {
            self.failed += 1;
            say!("FAIL  {}: {}", what, error);
        }
    }

    fn worst_diff(a: &[f32], b: &[f32]) -> f32 {
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f32::max)
    }

    /// The token's values with its two heads swapped (`k` is `q` with swapped heads).
    fn swap_heads(from: &[f32], to: &mut [f32]) {
        let (lo, hi) = to.split_at_mut(D);
        lo.copy_from_slice(&from[D..]);
        hi.copy_from_slice(&from[..D]);
    }

    /// Whole-grid q and k: the 66 golden tokens scattered to their grid positions, every
    /// other token a copy of a golden token (so that every pair is rotated by something),
    /// k with the heads swapped.
    fn scatter(q: &mut [f32], k: &mut [f32]) {
        for (t, (qt, kt)) in q
            .chunks_exact_mut(TOKEN_LEN)
            .zip(k.chunks_exact_mut(TOKEN_LEN))
            .enumerate()
        {
            let golden = POSITIONS
                .iter()
                .position(|p| p[0] as usize * SIDE + p[1] as usize == t)
                .unwrap_or(t % TOKENS);
            let src = &INPUT[golden * TOKEN_LEN..][..TOKEN_LEN];
            qt.copy_from_slice(src);
            swap_heads(src, kt);
        }
    }

    /// The golden tokens of a rotated whole-grid q (and k): worst difference from
    /// `expected` (for k, with the heads of `expected` swapped).
    fn golden_diff(x: &[f32], expected: &[f32], swapped: bool) -> f32 {
        let mut worst = 0f32;
        let mut want = [0f32; TOKEN_LEN];
        for (pos, exp) in POSITIONS.iter().zip(expected.chunks_exact(TOKEN_LEN)) {
            let t = pos[0] as usize * SIDE + pos[1] as usize;
            if swapped {
                swap_heads(exp, &mut want);
            } else {
                want.copy_from_slice(exp);
            }
            worst = worst.max(worst_diff(&x[t * TOKEN_LEN..][..TOKEN_LEN], &want));
        }
        worst
    }

    /// Outputs of a grid rotation that differ in any bit from the plain-Rust evaluation
    /// `a' = fl(fl(a·c) − fl(b·s))`, `b' = fl(fl(b·c) + fl(a·s))` (inverse: `s → −s`) with
    /// the table's own entries; `u32::MAX` when an entry cannot be read.
    fn kernel_mismatches(
        table: &Table<'_, 2>,
        spec: &Spec<'_, 2>,
        (head_dim, heads, cols): (usize, usize, usize),
        input: &[f32],
        output: &[f32],
        dir: Direction,
    ) -> u32 {
        let (half, quarter) = (head_dim / 2, head_dim / 4);
        let mut mismatches = 0;
        for (t, (x, y)) in input
            .chunks_exact(heads * head_dim)
            .zip(output.chunks_exact(heads * head_dim))
            .enumerate()
        {
            let (Some(row), Some(col)) = (
                calls::entries(table, 0, t / cols),
                calls::entries(table, 1, t % cols),
            ) else {
                return u32::MAX;
            };
            // The first section's axis: 1 (column) or 0 (row).
            let (first, second) = if spec.plan.sections[0].axis == 1 {
                (col, row)
            } else {
                (row, col)
            };
            for (x, y) in x.chunks_exact(head_dim).zip(y.chunks_exact(head_dim)) {
                for pair in 0..half {
                    let [c, s] = if pair < quarter {
                        first[pair]
                    } else {
                        second[pair - quarter]
                    };
                    let (ia, ib) = match spec.layout {
                        Layout::Interleaved => (2 * pair, 2 * pair + 1),
                        Layout::Half => (pair, pair + half),
                    };
                    let (a, b) = (x[ia], x[ib]);
                    let (a2, b2) = match dir {
                        Direction::Forward => (a * c - b * s, b * c + a * s),
                        Direction::Inverse => (a * c + b * s, b * c - a * s),
                    };
                    if a2.to_bits() != y[ia].to_bits() || b2.to_bits() != y[ib].to_bits() {
                        mismatches += 1;
                    }
                }
            }
        }
        mismatches
    }

    /// Rotates `q`, `k` (copies of `q0`, `k0`) with `table` in `dir` and counts the outputs
    /// that differ from the plain-Rust evaluation.
    #[allow(clippy::too_many_arguments)]
    fn check_kernel(
        tally: &mut Tally,
        what: &str,
        (table, spec): (&Table<'_, 2>, &Spec<'_, 2>),
        shape: (usize, usize, usize),
        (q0, k0): (&[f32], &[f32]),
        (q, k): (&mut [f32], &mut [f32]),
        dir: Direction,
    ) {
        q.copy_from_slice(q0);
        k.copy_from_slice(k0);
        match calls::rotate_qk(table, q, k, Shape::heads(shape.1), dir) {
            Ok(()) => {
                let n = kernel_mismatches(table, spec, shape, q0, q, dir)
                    .saturating_add(kernel_mismatches(table, spec, shape, k0, k, dir));
                tally.check(n == 0, what, n as f32, 0.0);
            }
            Err(e) => tally.error(what, e),
        }
    }

    #[entry]
    fn main() -> ! {
        let mut tally = Tally {
            passed: 0,
            failed: 0,
        };
        say!(
            "rope2d on a {}: {}x{} grid, d = {}, base 100, {} heads, {} golden tokens; Q15 by {}",
            core(),
            SIDE,
            SIDE,
            D,
            HEADS,
            TOKENS,
            Q15_LOOP
        );

        // The table lives in a `static` the firmware owns (3 584 B), built in place.
        let Some(storage) = cortex_m::singleton!(: [[f32; 2]; ENTRIES] = [[0.0; 2]; ENTRIES])
        else {
            tally.check(false, "table storage", 0.0, 0.0);
            finish(tally)
        };
        let built = stacked!("calls::build", {
            measure_begin();
            let built = calls::build(storage);
            measure_end();
            built
        });
        say!("measure: table_entries {}", ENTRIES);
        let table = match built {
            Ok(table) => table,
            Err(e) => {
                tally.error("Table::build (14x14, d = 64)", e);
                finish(tally)
            }
        };
        let backend = calls::backend(&table);
        say!(
            "table: {} B of (cos, sin) entries ({} entries), backend {}",
            ENTRIES * 8,
            ENTRIES,
            backend.name()
        );
        tally.check(
            backend == Backend::Scalar,
            "Backend::auto() is scalar",
            0.0,
            0.0,
        );

        // q and k over the whole grid, rotated together (measured).
        let mut q0 = [0f32; GRID_VALUES];
        let mut k0 = [0f32; GRID_VALUES];
        scatter(&mut q0, &mut k0);
        let (mut q, mut k) = (q0, k0);
        let rotated = stacked!("calls::rotate_qk", {
            measure_begin();
            let rotated = calls::rotate_qk(&table, &mut q, &mut k, SHAPE, Direction::Forward);
            measure_end();
            rotated
        });
        say!("measure: pairs {}", GRID_VALUES);
        match rotated {
            Ok(()) => {
                let w = golden_diff(&q, &EXPECTED_REF, false);
                tally.check(w <= 1e-5, "q vs expected_ref", w, 1e-5);
                let w = golden_diff(&q, &EXPECTED_F64, false);
                tally.check(w <= 4e-6, "q vs expected_f64", w, 4e-6);
                let w = golden_diff(&k, &EXPECTED_REF, true);
                tally.check(w <= 1e-5, "k vs expected_ref (heads swapped)", w, 1e-5);
                let w = golden_diff(&k, &EXPECTED_F64, true);
                tally.check(w <= 4e-6, "k vs expected_f64 (heads swapped)", w, 4e-6);
            }
            Err(e) => tally.error("rotate_qk", e),
        }

        // The inverse undoes the rotation.
        match calls::rotate_qk(&table, &mut q, &mut k, SHAPE, Direction::Inverse) {
            Ok(()) => {
                let w = worst_diff(&q, &q0).max(worst_diff(&k, &k0));
                tally.check(w <= 1e-5, "inverse(forward(q, k)) == (q, k)", w, 1e-5);
            }
            Err(e) => tally.error("inverse", e),
        }

        // The hand-scheduled kernel against the plain-Rust evaluation, bit for bit: both
        // layouts (and axis orders), both directions, and d = 20 (5 pairs per section: a
        // 4-pair step plus a remainder) with 3 heads.
        let seed_shape = (D, HEADS, SIDE);
        for dir in [Direction::Forward, Direction::Inverse] {
            check_kernel(
                &mut tally,
                "kernel == plain Rust, interleaved, column first (mismatching outputs)",
                (&table, &seed(D)),
                seed_shape,
                (&q0, &k0),
                (&mut q, &mut k),
                dir,
            );
        }
        let mut half_storage = [[0f32; 2]; ENTRIES];
        match stacked!(
            "calls_general::build",
            calls_general::build(&mut half_storage, &half(D), GRID)
        ) {
            Ok(half_table) => {
                for dir in [Direction::Forward, Direction::Inverse] {
                    check_kernel(
                        &mut tally,
                        "kernel == plain Rust, half, row first (mismatching outputs)",
                        (&half_table, &half(D)),
                        seed_shape,
                        (&q0, &k0),
                        (&mut q, &mut k),
                        dir,
                    );
                }
            }
            Err(e) => tally.error("half-layout table", e),
        }
        const SMALL_D: usize = 20;
        const SMALL_GRID: [usize; 2] = [2, 3];
        const SMALL_VALUES: usize = 2 * 3 * 3 * SMALL_D;
        for spec in [seed(SMALL_D), half(SMALL_D)] {
            let mut small_storage = [[0f32; 2]; (2 + 3) * SMALL_D / 4];
            match calls_general::build(&mut small_storage, &spec, SMALL_GRID) {
                Ok(small) => {
                    for dir in [Direction::Forward, Direction::Inverse] {
                        check_kernel(
                            &mut tally,
                            "kernel == plain Rust, d = 20, 3 heads (mismatching outputs)",
                            (&small, &spec),
                            (SMALL_D, 3, 3),
                            (&q0[..SMALL_VALUES], &k0[..SMALL_VALUES]),
                            (&mut q[..SMALL_VALUES], &mut k[..SMALL_VALUES]),
                            dir,
                        );
                    }
                }
                Err(e) => tally.error("d = 20 table", e),
            }
        }

        // Relativity: with the same q vector at every grid position and the same k vector at
        // every position, <R(p)q, R(p')k> must depend on p' − p only. One whole-grid
        // rotation; for each displacement δ, every p with p + δ in the grid is compared with
        // the first such p (per head, relative to Σ|q||k|).
        for (q, k) in q
            .chunks_exact_mut(TOKEN_LEN)
            .zip(k.chunks_exact_mut(TOKEN_LEN))
        {
            q.copy_from_slice(&INPUT[..TOKEN_LEN]);
            k.copy_from_slice(&INPUT[TOKEN_LEN..2 * TOKEN_LEN]);
        }
        match calls::rotate_qk(&table, &mut q, &mut k, SHAPE, Direction::Forward) {
            Ok(()) => {
                let scale: [f32; HEADS] = core::array::from_fn(|h| {
                    let (qh, kh) = (&INPUT[h * D..][..D], &INPUT[TOKEN_LEN + h * D..][..D]);
                    qh.iter().zip(kh).map(|(a, b)| (a * b).abs()).sum()
                });
                let head = |x: &[f32], t: usize, h: usize| -> [f32; D] {
                    core::array::from_fn(|i| x[t * TOKEN_LEN + h * D + i])
                };
                let mut worst = 0f32;
                let deltas: [(i32, i32); 6] = [(0, 0), (0, 1), (1, 0), (3, -2), (-5, 7), (13, 13)];
                for (dr, dc) in deltas {
                    for (h, &scale) in scale.iter().enumerate() {
                        let mut first = None;
                        for t in 0..SIDE * SIDE {
                            let (r, c) = ((t / SIDE) as i32, (t % SIDE) as i32);
                            let (r2, c2) = (r + dr, c + dc);
                            if !(0..SIDE as i32).contains(&r2) || !(0..SIDE as i32).contains(&c2) {
                                continue;
                            }
                            let t2 = r2 as usize * SIDE + c2 as usize;
                            let (qh, kh) = (head(&q, t, h), head(&k, t2, h));
                            let dot: f32 = qh.iter().zip(&kh).map(|(a, b)| a * b).sum();
                            let reference = *first.get_or_insert(dot);
                            worst = worst.max((dot - reference).abs() / scale);
                        }
                    }
                }
                tally.check(
                    worst <= 1e-5,
                    "relativity <R(p)q,R(p')k> = <R(p-m)q,R(p'-m)k> (relative to sum|q||k|)",
                    worst,
                    1e-5,
                );
            }
            Err(e) => tally.error("relativity", e),
        }

        // A 3-D preset: Wan 2.1's table (frames × rows × cols, sections of 22, 21 and 21
        // pairs) and the first golden tokens of its file at their positions.
        check_wan(&mut tally);

        // Q15 (on the M4F's DSP extension): the same grid in i16.
        check_q15(&mut tally, &q0);

        // The same grid in i8, requantised by the f32 table (staged on the stack).
        check_i8(&mut tally, &table, &q0, (&mut q, &mut k));

        // An invalid call is refused before anything is touched: k one value short.
        q.copy_from_slice(&q0);
        k.copy_from_slice(&k0);
        let refused = calls::rotate_qk(
            &table,
            &mut q,
            &mut k[..GRID_VALUES - 1],
            SHAPE,
            Direction::Forward,
        );
        tally.check(
            matches!(refused, Err(Error::BufferLength { .. })) && q == q0 && k == k0,
            "rotate_qk with a short k refused, q and k untouched",
            0.0,
            0.0,
        );

        finish(tally)
    }

    /// Word alignment for the Q15 storage and buffer (the M4F's DSP loop reads words).
    #[repr(C, align(4))]
    struct Words<T>(T);

    /// Q15 values per unit of the golden data: |x| < 4 fits, and so does a rotated pair.
    const Q15_SCALE: f32 = 4096.0;

    /// The whole-grid q in Q15 (the golden tokens and their copies, as in `scatter`), rotated
    /// by a Q15 table of the seed convention (measured: instructions per pair): bit for bit
    /// the definition in plain Rust with the table's own entries (forward and inverse), the
    /// golden tokens within 2.25 LSB of `expected_f64` (0.5 rounding, 1 for the entries at
    /// `|a| + |b| ≤ 2¹⁵`, 0.71 for the input's own quantisation), the inverse within 2 LSB.
    fn check_q15(tally: &mut Tally, q0: &[f32]) {
        const Q15_ENTRIES: usize = ENTRIES;
        let Some(Words(storage)) = cortex_m::singleton!(
            : Words<[[i16; 2]; Q15_ENTRIES]> = Words([[0; 2]; Q15_ENTRIES])
        ) else {
            return tally.check(false, "Q15 table storage", 0.0, 0.0);
        };
        let table = match stacked!("calls_q15::build", calls_q15::build(storage)) {
            Ok(table) => table,
            Err(e) => return tally.error("Q15Table::build (14x14, d = 64)", e),
        };
        let Some(Words(q)) =
            cortex_m::singleton!(: Words<[i16; GRID_VALUES]> = Words([0; GRID_VALUES]))
        else {
            return tally.check(false, "Q15 buffer", 0.0, 0.0);
        };
        let Some(Words(input)) =
            cortex_m::singleton!(: Words<[i16; GRID_VALUES]> = Words([0; GRID_VALUES]))
        else {
            return tally.check(false, "Q15 input", 0.0, 0.0);
        };
        for (i, &v) in input.iter_mut().zip(q0) {
            let v = v * Q15_SCALE;
            *i = (if v < 0.0 { v - 0.5 } else { v + 0.5 }) as i16;
        }
        q.copy_from_slice(input);
        let rotated = stacked!("calls_q15::rotate", {
            measure_begin();
            let rotated = calls_q15::rotate(&table, q, Direction::Forward);
            measure_end();
            rotated
        });
        say!("measure: q15_pairs {}", GRID_VALUES / 2);
        if let Err(e) = rotated {
            return tally.error("Q15 rotate", e);
        }
        let n = q15_mismatches(&table, input, q, Direction::Forward);
        tally.check(
            n == 0,
            "Q15 kernel == plain Rust, forward (mismatches)",
            n as f32,
            0.0,
        );
        let mut worst = 0f32;
        for (pos, exp) in POSITIONS.iter().zip(EXPECTED_F64.chunks_exact(TOKEN_LEN)) {
            let t = pos[0] as usize * SIDE + pos[1] as usize;
            for (&got, &want) in q[t * TOKEN_LEN..][..TOKEN_LEN].iter().zip(exp) {
                worst = worst.max((f32::from(got) - want * Q15_SCALE).abs());
            }
        }
        tally.check(worst <= 2.25, "Q15 q vs expected_f64 (LSB)", worst, 2.25);
        let mut back = [0i16; 2 * TOKEN_LEN];
        back.copy_from_slice(&q[..2 * TOKEN_LEN]);
        match calls_q15::rotate(&table, q, Direction::Inverse) {
            Ok(()) => {
                let worst = q
                    .iter()
                    .zip(input.iter())
                    .map(|(&a, &b)| (i32::from(a) - i32::from(b)).abs())
                    .max()
                    .unwrap_or(0);
                tally.check(
                    worst <= 2,
                    "Q15 inverse(forward(q)) == q (LSB)",
                    worst as f32,
                    2.0,
                );
                // The inverse kernel on the forward output of the first two tokens.
                let mut first = Words([0i16; 2 * TOKEN_LEN]);
                first.0.copy_from_slice(&back);
                let n = match stacked!(
                    "calls_q15::rotate_at",
                    calls_q15::rotate_at(&table, &mut first.0, Direction::Inverse)
                ) {
                    Ok(()) => q15_mismatches(&table, &back, &first.0, Direction::Inverse),
                    Err(_) => u32::MAX,
                };
                tally.check(
                    n == 0,
                    "Q15 kernel == plain Rust, inverse (mismatches)",
                    n as f32,
                    0.0,
                );
            }
            Err(e) => tally.error("Q15 inverse", e),
        }
    }

    /// Values of a Q15 rotation of whole tokens from the grid's first that differ from the
    /// definition (`q15_reference::mismatches`).
    fn q15_mismatches(table: &Q15Table<'_, 2>, input: &[i16], got: &[i16], dir: Direction) -> u32 {
        let entries = |axis, index| calls_q15::entries(table, axis, index);
        let grid = Q15Grid {
            side: SIDE,
            heads: HEADS,
            d: D,
        };
        q15_reference::mismatches(entries, grid, input, got, dir)
    }

    /// `x` rounded to the nearest integer (ties away from zero), saturated to `i8`.
    fn round_i8(x: f32) -> i8 {
        (if x < 0.0 { x - 0.5 } else { x + 0.5 }) as i8
    }

    /// The whole grid quantised to `i8` at scale [`I8_IN`] and rotated into scale [`I8_OUT`]
    /// by the `f32` table: every output within 1 LSB of the `f32` rotation of the same
    /// quantised input, rounded (the crate's bound for integer buffers), and the peak stack
    /// of the staged call measured. `scratch` holds the `f32` reference.
    fn check_i8(
        tally: &mut Tally,
        table: &Table<'_, 2>,
        q0: &[f32],
        scratch: (&mut [f32], &mut [f32]),
    ) {
        let (reference, other) = scratch;
        let Some(x) = cortex_m::singleton!(: [i8; GRID_VALUES] = [0; GRID_VALUES]) else {
            return tally.check(false, "i8 buffer", 0.0, 0.0);
        };
        for ((x, r), &v) in x.iter_mut().zip(reference.iter_mut()).zip(q0) {
            *x = round_i8(v / I8_IN);
            *r = f32::from(*x) * I8_IN;
        }
        other.copy_from_slice(reference);
        if let Err(e) = calls::rotate_qk(table, reference, other, SHAPE, Direction::Forward) {
            return tally.error("i8 reference (f32 rotate_qk)", e);
        }
        let rotated = stacked!(
            "calls_i8::rotate",
            calls_i8::rotate(table, x, Direction::Forward)
        );
        if let Err(e) = rotated {
            return tally.error("i8 rotate (requantised)", e);
        }
        let worst = x
            .iter()
            .zip(reference.iter())
            .map(|(&got, &r)| (i32::from(got) - i32::from(round_i8(r / I8_OUT))).abs())
            .max()
            .unwrap_or(0);
        tally.check(
            worst <= 1,
            "i8 requantised 2^-4 -> 2^-3 vs f32 rotation, rounded (LSB)",
            worst as f32,
            1.0,
        );
    }

    /// Wan 2.1 on the device: the table built from the preset, the file's first tokens
    /// rotated at their positions and compared with `expected_ref` and `expected_f64`.
    fn check_wan(tally: &mut Tally) {
        const SPEC: Spec<'static, 3> = preset::wan(wan::D, 10_000.0);
        const WAN_ENTRIES: usize = SPEC.plan.table_len(wan::GRID);
        let mut storage = [[0f32; 2]; WAN_ENTRIES];
        let table = match stacked!("calls_3d::build", calls_3d::build(&mut storage)) {
            Ok(table) => table,
            Err(e) => return tally.error("Wan 2.1 table", e),
        };
        let mut x = wan::INPUT;
        match stacked!(
            "calls_3d::rotate_at",
            calls_3d::rotate_at(
                &table,
                &mut x,
                Shape::heads(wan::HEADS),
                &wan::POSITIONS,
                Direction::Forward,
            )
        ) {
            Ok(()) => {
                let w = worst_diff(&x, &wan::EXPECTED_REF);
                tally.check(w <= 1e-5, "Wan 2.1 (3-D) vs expected_ref", w, 1e-5);
                let w = worst_diff(&x, &wan::EXPECTED_F64);
                tally.check(w <= 4e-6, "Wan 2.1 (3-D) vs expected_f64", w, 4e-6);
            }
            Err(e) => tally.error("Wan 2.1 rotate_at", e),
        }
    }

    fn finish(tally: Tally) -> ! {
        say!("{} passed, {} failed", tally.passed, tally.failed);
        debug::exit(if tally.failed == 0 {
            debug::EXIT_SUCCESS
        } else {
            debug::EXIT_FAILURE
        });
        loop {
            cortex_m::asm::wfi();
        }
    }

    #[panic_handler]
    fn panic(info: &core::panic::PanicInfo) -> ! {
        #[cfg(not(feature = "defmt"))]
        say!("panic: {}", info);
        #[cfg(feature = "defmt")]
        say!("panic: {}", defmt::Display2Format(info));
        debug::exit(debug::EXIT_FAILURE);
        loop {
            cortex_m::asm::wfi();
        }
    }

    #[exception]
    unsafe fn HardFault(frame: &ExceptionFrame) -> ! {
        #[cfg(not(feature = "defmt"))]
        say!("hard fault at pc {:#010x}", frame.pc());
        #[cfg(feature = "defmt")]
        say!("hard fault at pc {=u32:#010x}", frame.pc());
        debug::exit(debug::EXIT_FAILURE);
        loop {
            cortex_m::asm::wfi();
        }
    }

    #[exception]
    unsafe fn DefaultHandler(irqn: i16) {
        say!("unexpected exception {}", irqn);
        debug::exit(debug::EXIT_FAILURE);
    }
}
