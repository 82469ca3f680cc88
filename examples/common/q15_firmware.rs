//! The integer-only firmware of `cortex_m0.rs` and `riscv32.rs`: rope2d's Q15 path on a core
//! without an FPU, checked on the device against the golden vectors. The including example
//! provides, before this module, the macros `say!` (one line of output, `format_args!`
//! syntax) and `take!` (`take!(: T = init)`: `Some(&'static mut T)` the first time a call
//! site runs), a module `platform` with `measure_begin`, `measure_end` (the markers
//! `.ci/firmware.sh` counts instructions between) and `exit(success) -> !`, and
//! `stack_paint.rs` as `stack_paint`, whose `stacked!` it uses.
//!
//! On the device:
//! - the Q15 table of the seed convention (8×8 grid, d = 32, base 100, interleaved pairs,
//!   column first) built with `Q15Table::build` into a `static` the firmware owns — integer
//!   arithmetic only (measured: instructions per entry);
//! - q = the golden input of `tests/golden/seed_axial_d32_8x8_b100.json` (64 tokens, 2 heads)
//!   in Q15 at scale 2⁻¹² (|x| < 4), rotated over the whole grid with `rotate` (measured:
//!   instructions per pair) and compared with the exact rotation of that quantised input:
//!   within 1 LSB. The exact values are worked out at compile time from the file (each
//!   pair's angle recovered from its golden input and `expected_f64` output, in `const`
//!   `f64`) and stored as integers in 1/256 LSB, so the comparison is integer too;
//! - the rotation loop against the definition evaluated in plain Rust with the table's own
//!   entries, bit for bit: forward, inverse, and a buffer that is not word-aligned (which
//!   takes the plain-Rust loop where the core has a loop of its own);
//! - the inverse restores q within 2 LSB;
//! - calls that must be refused (a short buffer, an `f32` buffer) are, touching nothing.
//!
//! Every rope2d call sits in `mod calls`, which `.ci/firmware.sh` measures for size, checks
//! for panic paths and bounds for stack; the firmware prints each call's peak stack, measured
//! by painting (`stack: <call> <bytes>`), for the script to hold against that bound.
use crate::platform::{exit, measure_begin, measure_end};
use q15_reference::Q15Grid;
use rope2d::{
    Direction, Error, Grid, Layout, Q15Table, Shape, Spec,
    preset::{self, AxisOrder},
};

#[path = "q15_reference.rs"]
mod q15_reference;

/// The golden grid's shape, for the definition the loop is held to.
const REFERENCE_GRID: Q15Grid = Q15Grid {
    side: SIDE,
    heads: HEADS,
    d: D,
};

/// Bytes of free stack painted below a measured call (at most what lies between the
/// statics and the stack): more than any call here takes.
const STACK_WINDOW: usize = 2 * 1024;

/// The golden file, turned into integers at compile time.
mod golden {
    #![allow(long_running_const_eval)]

    use crate::json::{after_key, count, floats, number, string_is};

    const JSON: &[u8] = include_bytes!("../../tests/golden/seed_axial_d32_8x8_b100.json");

    pub const SIDE: usize = 8;
    pub const D: usize = 32;
    pub const HEADS: usize = 2;
    pub const TOKENS: usize = SIDE * SIDE;
    pub const VALUES: usize = TOKENS * HEADS * D;
    /// Q15 values per unit of the file's data: |x| < 4 fits, and so does a rotated pair.
    pub const SCALE: f64 = 4096.0;

    // The file must be the convention and the whole grid in row-major order.
    const _: () = {
        assert!(number(JSON, after_key(JSON, b"head_dim")).0 == D as f64);
        assert!(number(JSON, after_key(JSON, b"heads")).0 == HEADS as f64);
        assert!(number(JSON, after_key(JSON, b"base")).0 == 100.0);
        assert!(string_is(JSON, b"kind", b"axial2d"));
        assert!(string_is(JSON, b"layout", b"interleaved"));
        assert!(string_is(JSON, b"first_axis", b"col"));
        assert!(string_is(JSON, b"mode", b"index"));
        assert!(count(JSON, b"positions") == 2 * TOKENS);
        let positions = floats::<{ 2 * TOKENS }>(JSON, b"positions");
        let mut t = 0;
        while t < TOKENS {
            assert!(positions[2 * t] as usize == t / SIDE);
            assert!(positions[2 * t + 1] as usize == t % SIDE);
            t += 1;
        }
    };

    const fn round(v: f64) -> i32 {
        if v >= 0.0 {
            (v + 0.5) as i32
        } else {
            (v - 0.5) as i32
        }
    }

    /// The input in Q15 at [`SCALE`].
    pub static INPUT: [i16; VALUES] = {
        let x = floats::<VALUES>(JSON, b"input");
        let mut out = [0i16; VALUES];
        let mut i = 0;
        while i < VALUES {
            out[i] = round(x[i] as f64 * SCALE) as i16;
            i += 1;
        }
        out
    };

    /// The exact rotation of [`INPUT`] in 1/256 LSB: each pair's cos and sin recovered
    /// from the file's input `(a, b)` and `expected_f64` output `(a', b')` —
    /// `cos θ = (a·a' + b·b') / (a² + b²)`, `sin θ = (a·b' − b·a') / (a² + b²)` — and
    /// applied to the quantised pair.
    pub static EXACT_256: [i32; VALUES] = {
        let x = floats::<VALUES>(JSON, b"input");
        let e = expected_f64();
        let mut out = [0i32; VALUES];
        let mut p = 0;
        while p < VALUES {
            let (a, b) = (x[p] as f64, x[p + 1] as f64);
            let (a2, b2) = (e[p], e[p + 1]);
            let norm = a * a + b * b;
            let (c, s) = ((a * a2 + b * b2) / norm, (a * b2 - b * a2) / norm);
            let (qa, qb) = (INPUT[p] as f64, INPUT[p + 1] as f64);
            out[p] = round((qa * c - qb * s) * 256.0);
            out[p + 1] = round((qa * s + qb * c) * 256.0);
            p += 2;
        }
        out
    };

    /// `expected_f64` as `f64` (the reader's arrays are `f32`: this one must not be).
    const fn expected_f64() -> [f64; VALUES] {
        let mut out = [0f64; VALUES];
        let mut i = after_key(JSON, b"expected_f64");
        let mut n = 0;
        while n < VALUES {
            while !(JSON[i] == b'-' || JSON[i].is_ascii_digit()) {
                i += 1;
            }
            let (value, next) = number(JSON, i);
            out[n] = value;
            n += 1;
            i = next;
        }
        out
    }
}

use golden::{D, EXACT_256, HEADS, INPUT, SIDE, VALUES};

const GRID: [usize; 2] = [SIDE, SIDE];
/// The seed convention: interleaved pairs, pairs 0 .. d/4 rotated by the column.
const SPEC: Spec<'static, 2> = preset::axial(D, Layout::Interleaved, AxisOrder::ColFirst, 100.0);
/// `(8 + 8) · 32/4` Q15 `[cos, sin]` entries: 512 B.
const ENTRIES: usize = SPEC.plan.table_len(GRID);
const SHAPE: Shape = Shape::heads(HEADS);

/// Every rope2d call of the firmware, each in its own function: `.ci/firmware.sh`
/// measures these (and all they call) for size.
mod calls {
    use super::*;

    #[inline(never)]
    pub fn build(storage: &mut [[i16; 2]]) -> Result<Q15Table<'_, 2>, Error> {
        Q15Table::build(storage, &SPEC, GRID)
    }

    #[inline(never)]
    pub fn rotate(table: &Q15Table<'_, 2>, x: &mut [i16], dir: Direction) -> Result<(), Error> {
        table.rotate(x, SHAPE, Grid::new(GRID), dir)
    }

    #[inline(never)]
    pub fn rotate_grid(
        table: &Q15Table<'_, 2>,
        x: &mut [i16],
        grid: Grid<2>,
        dir: Direction,
    ) -> Result<(), Error> {
        table.rotate(x, SHAPE, grid, dir)
    }

    #[inline(never)]
    pub fn entries<'a>(
        table: &Q15Table<'a, 2>,
        axis: usize,
        index: usize,
    ) -> Option<&'a [[i16; 2]]> {
        table.entries(axis, index)
    }

    /// A buffer type a Q15 table refuses: one `f32` head.
    #[inline(never)]
    pub fn rotate_f32(table: &Q15Table<'_, 2>, head: &mut [f32]) -> Result<(), Error> {
        table.rotate_head(head, [1, 2], Direction::Forward)
    }
}

/// Word alignment for the storage and buffers (the Cortex-M0 loop reads whole words).
#[repr(C, align(4))]
struct Words<T>(T);

/// Values of a rotation of whole tokens from the grid's first that differ from the
/// definition (`q15_reference::mismatches`), as the tally counts them.
fn kernel_mismatches(table: &Q15Table<'_, 2>, input: &[i16], got: &[i16], dir: Direction) -> i32 {
    let entries = |axis, index| calls::entries(table, axis, index);
    let n = q15_reference::mismatches(entries, REFERENCE_GRID, input, got, dir);
    i32::try_from(n).unwrap_or(i32::MAX)
}

struct Tally {
    passed: u32,
    failed: u32,
}

impl Tally {
    /// Integers only: no float formatting on a core without an FPU.
    fn check(&mut self, ok: bool, what: &str, worst: i32, limit: i32, unit: &str) {
        let verdict = if ok { "pass" } else { "FAIL" };
        say!(
            "{}  {}: worst {} (limit {}) {}",
            verdict,
            what,
            worst,
            limit,
            unit
        );
        if ok {
            self.passed += 1;
        } else {
            self.failed += 1;
        }
    }

    fn error(&mut self, what: &str, error: Error) {
        self.failed += 1;
        say!("FAIL  {}: {}", what, error);
    }
}

/// The checks, then `N passed, M failed`; exits with success only when all pass.
pub fn run() -> ! {
    let mut tally = Tally {
        passed: 0,
        failed: 0,
    };
    say!(
        "rope2d on a {}, integer only: {}x{} grid, d = {}, base 100, {} heads, Q15",
        crate::platform::CORE,
        SIDE,
        SIDE,
        D,
        HEADS
    );
    // Word-aligned storage and buffers (`Words`).
    let Some(Words(storage)) = take!(: Words<[[i16; 2]; ENTRIES]> = Words([[0; 2]; ENTRIES]))
    else {
        tally.check(false, "table storage", 0, 0, "");
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
            tally.error("Q15Table::build (8x8, d = 32)", e);
            finish(tally)
        }
    };
    say!(
        "table: {} B of Q15 (cos, sin) entries ({} entries)",
        ENTRIES * 4,
        ENTRIES
    );

    let Some(Words(q)) = take!(: Words<[i16; VALUES]> = Words([0; VALUES])) else {
        tally.check(false, "q storage", 0, 0, "");
        finish(tally)
    };
    q.copy_from_slice(&INPUT);
    let rotated = stacked!("calls::rotate", {
        measure_begin();
        let rotated = calls::rotate(&table, q, Direction::Forward);
        measure_end();
        rotated
    });
    say!("measure: pairs {}", VALUES / 2);
    match rotated {
        Ok(()) => {
            let worst = q
                .iter()
                .zip(&EXACT_256)
                .map(|(&got, &exact)| (i32::from(got) * 256 - exact).abs())
                .max()
                .unwrap_or(0);
            tally.check(
                worst <= 256,
                "q vs the exact rotation of the quantised golden input",
                worst,
                256,
                "(1/256 LSB)",
            );
        }
        Err(e) => tally.error("rotate", e),
    }
    let n = kernel_mismatches(&table, &INPUT, q, Direction::Forward);
    tally.check(
        n == 0,
        "kernel == plain Rust, forward (mismatching values)",
        n,
        0,
        "",
    );

    // The hand-written loop against the definition in plain Rust, bit for bit: the
    // inverse, and the first two grid lines at an odd halfword offset (not word-aligned:
    // the plain-Rust loop) — both must give the definition's bits.
    let lines = 2 * SIDE * HEADS * D;
    let mut inverse = Words([0i16; 2 * SIDE * HEADS * D]);
    inverse.0.copy_from_slice(&INPUT[..lines]);
    let mut odd = Words([0i16; 2 * SIDE * HEADS * D + 1]);
    odd.0[1..].copy_from_slice(&INPUT[..lines]);
    let grid = Grid::new([2, SIDE]);
    let results = [
        calls::rotate_grid(&table, &mut inverse.0, grid, Direction::Inverse),
        stacked!(
            "calls::rotate_grid",
            calls::rotate_grid(&table, &mut odd.0[1..], grid, Direction::Forward)
        ),
    ];
    if let Some(&Err(e)) = results.iter().find(|r| r.is_err()) {
        tally.error("rotate (two lines)", e);
    } else {
        let n = kernel_mismatches(&table, &INPUT[..lines], &inverse.0, Direction::Inverse)
            .saturating_add(kernel_mismatches(
                &table,
                &INPUT[..lines],
                &odd.0[1..],
                Direction::Forward,
            ));
        tally.check(
            n == 0,
            "kernel == plain Rust, inverse and unaligned (mismatching values)",
            n,
            0,
            "",
        );
    }

    match calls::rotate(&table, q, Direction::Inverse) {
        Ok(()) => {
            let worst = q
                .iter()
                .zip(&INPUT)
                .map(|(&a, &b)| (i32::from(a) - i32::from(b)).abs())
                .max()
                .unwrap_or(0);
            tally.check(worst <= 2, "inverse(forward(q)) == q", worst, 2, "LSB");
        }
        Err(e) => tally.error("inverse", e),
    }

    // Refused calls touch nothing: a buffer one value short, and an f32 buffer (its bits
    // compared: no float arithmetic on this core).
    q.copy_from_slice(&INPUT);
    let short = calls::rotate(&table, &mut q[..VALUES - 1], Direction::Forward);
    tally.check(
        matches!(short, Err(Error::BufferLength { .. })) && q[..] == INPUT[..],
        "a short buffer refused, untouched",
        0,
        0,
        "",
    );
    let mut head = [0f32; D];
    let refused = stacked!("calls::rotate_f32", calls::rotate_f32(&table, &mut head));
    tally.check(
        refused == Err(Error::FixedPoint) && head.iter().all(|v| v.to_bits() == 0),
        "an f32 head refused (Error::FixedPoint), untouched",
        0,
        0,
        "",
    );
    finish(tally)
}

fn finish(tally: Tally) -> ! {
    say!("{} passed, {} failed", tally.passed, tally.failed);
    exit(tally.failed == 0)
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    say!("panic: {}", info);
    exit(false)
}
