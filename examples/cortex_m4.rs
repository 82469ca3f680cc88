//! rope2d on a Cortex-M4F, checked on the device against the golden vectors.
//!
//! ```text
//! cargo run --release --target thumbv7em-none-eabihf --example cortex_m4
//! ```
//!
//! runs it under QEMU (MPS2-AN386 board, semihosting) through the runner in
//! `.cargo/config.toml`. It prints one line per check and `N passed, M failed`, and exits QEMU
//! with status 0 only when every check passes; a panic or a fault exits with status 1.
//! With `--features defmt` the same output goes out as defmt frames, for `defmt-print`.
//! `.ci/firmware.sh` runs both and measures the instruction and size budgets on this image.
//!
//! On the device:
//! - the 14×14, d = 64, base-100 table of the seed convention (interleaved pairs, column
//!   first), built without `f64` or `libm`;
//! - q = the golden input of `tests/golden/seed_axial_d64_14x14_b100.json` (2 heads), which
//!   holds the tokens `t = row·14 + col` with `t % 3 == 0` and `t = 195`: 66 of the 196 grid
//!   tokens, rotated with `rotate_at` at their grid positions; k = the same tokens with their
//!   two heads swapped. Both are compared with the file's `expected_ref` (≤ 1e-5) and
//!   `expected_f64` (≤ 4e-6). The file is parsed by `const fn`s at compile time
//!   (`include_bytes!`): the firmware reads no files;
//! - the inverse, relativity `<R(p)q, R(p')k> = <R(p−m)q, R(p'−m)k>`, `rotate_head` against
//!   `rotate_at`, the runtime-shaped `AxialTableRef::build` against `AxialTable::new`, and the
//!   Cortex-M backend against the scalar reference (both layouts, both directions, a head
//!   dimension that leaves a remainder) within its stated bound.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(not(target_os = "none"))]
fn main() {
    println!(
        "examples/cortex_m4.rs is firmware: \
         cargo run --release --target thumbv7em-none-eabihf --example cortex_m4"
    );
}

#[cfg(target_os = "none")]
mod firmware {
    use cortex_m_rt::{ExceptionFrame, entry, exception};
    use cortex_m_semihosting::debug;
    // The defmt logger (semihosting); linked in both builds so one linker setup serves both.
    use defmt_semihosting as _;
    use rope2d::{
        Axial2d, AxialTable, AxialTableRef, AxisOrder, Backend, Direction, Error, Grid, GridPos,
        Layout, Shape,
    };

    #[cfg(not(feature = "defmt"))]
    macro_rules! say {
        ($($arg:tt)*) => { cortex_m_semihosting::hprintln!($($arg)*) };
    }
    #[cfg(feature = "defmt")]
    macro_rules! say {
        ($($arg:tt)*) => { defmt::println!($($arg)*) };
    }

    /// The golden file, turned into Rust data at compile time.
    mod golden {
        // Parsing half a megabyte in `const` takes the compiler a few seconds: not a loop.
        #![allow(long_running_const_eval)]

        use rope2d::GridPos;

        const JSON: &[u8] = include_bytes!("../tests/golden/seed_axial_d64_14x14_b100.json");

        /// Grid side, head dimension and heads this firmware is built for; checked below
        /// against the file.
        pub const SIDE: usize = 14;
        pub const D: usize = 64;
        pub const HEADS: usize = 2;
        /// Tokens in the file.
        pub const TOKENS: usize = count(b"positions") / 2;
        /// Values per token.
        pub const TOKEN_LEN: usize = HEADS * D;

        // The file must be the convention this firmware builds.
        const _: () = {
            assert!(number(after_key(b"head_dim")).0 == D as f64);
            assert!(number(after_key(b"heads")).0 == HEADS as f64);
            assert!(number(after_key(b"base")).0 == 100.0);
            assert!(number(after_key(b"freq_scale")).0 == 1.0);
            assert!(string_is(b"kind", b"axial2d"));
            assert!(string_is(b"layout", b"interleaved"));
            assert!(string_is(b"first_axis", b"col"));
            assert!(string_is(b"mode", b"index"));
            let grid = floats::<2>(b"grid");
            assert!(grid[0] == SIDE as f32 && grid[1] == SIDE as f32);
        };

        pub static POSITIONS: [GridPos; TOKENS] = {
            let flat = floats::<{ 2 * TOKENS }>(b"positions");
            let mut out = [GridPos::new(0, 0); TOKENS];
            let mut t = 0;
            while t < TOKENS {
                out[t] = GridPos::new(flat[2 * t] as u32, flat[2 * t + 1] as u32);
                t += 1;
            }
            out
        };
        pub static INPUT: [f32; TOKENS * TOKEN_LEN] = floats(b"input");
        pub static EXPECTED_REF: [f32; TOKENS * TOKEN_LEN] = floats(b"expected_ref");
        pub static EXPECTED_F64: [f32; TOKENS * TOKEN_LEN] = floats(b"expected_f64");

        /// Index just past the first `"key":` of the file.
        const fn after_key(key: &[u8]) -> usize {
            let mut i = 0;
            while i + key.len() + 3 <= JSON.len() {
                if JSON[i] == b'"'
                    && JSON[i + 1 + key.len()] == b'"'
                    && JSON[i + 2 + key.len()] == b':'
                {
                    let mut j = 0;
                    while j < key.len() && JSON[i + 1 + j] == key[j] {
                        j += 1;
                    }
                    if j == key.len() {
                        return i + 3 + key.len();
                    }
                }
                i += 1;
            }
            panic!("a key is missing from the golden file")
        }

        const fn skip_spaces(mut i: usize) -> usize {
            while JSON[i] == b' ' || JSON[i] == b'\n' {
                i += 1;
            }
            i
        }

        /// Whether the string value of `key` is `value`.
        const fn string_is(key: &[u8], value: &[u8]) -> bool {
            let i = skip_spaces(after_key(key));
            if JSON[i] != b'"' || JSON[i + 1 + value.len()] != b'"' {
                return false;
            }
            let mut j = 0;
            while j < value.len() {
                if JSON[i + 1 + j] != value[j] {
                    return false;
                }
                j += 1;
            }
            true
        }

        /// `10^k`, exact for `k ≤ 22`.
        const POW10: [f64; 23] = {
            let mut p = [1.0; 23];
            let mut k = 1;
            while k < 23 {
                p[k] = p[k - 1] * 10.0;
                k += 1;
            }
            p
        };

        /// The JSON number at `i` and the index after it. Up to 19 significant digits are
        /// kept, scaled by exact powers of ten: within a few f64 ulps, so the `f32` values
        /// (stored as exact doubles) come out exact.
        const fn number(i: usize) -> (f64, usize) {
            let mut i = skip_spaces(i);
            let negative = JSON[i] == b'-';
            if negative {
                i += 1;
            }
            let (mut mantissa, mut digits, mut exp10, mut fraction) = (0u64, 0, 0i32, false);
            loop {
                let c = JSON[i];
                if c.is_ascii_digit() {
                    if digits < 19 {
                        mantissa = mantissa * 10 + (c - b'0') as u64;
                        if mantissa != 0 {
                            digits += 1;
                        }
                        if fraction {
                            exp10 -= 1;
                        }
                    } else if !fraction {
                        exp10 += 1;
                    }
                } else if c == b'.' && !fraction {
                    fraction = true;
                } else {
                    break;
                }
                i += 1;
            }
            assert!(
                digits > 0 || mantissa == 0,
                "not a number in the golden file"
            );
            if JSON[i] == b'e' || JSON[i] == b'E' {
                i += 1;
                let negative_exp = JSON[i] == b'-';
                if JSON[i] == b'-' || JSON[i] == b'+' {
                    i += 1;
                }
                let mut e = 0i32;
                while JSON[i].is_ascii_digit() {
                    e = e * 10 + (JSON[i] - b'0') as i32;
                    i += 1;
                }
                exp10 += if negative_exp { -e } else { e };
            }
            let mut value = mantissa as f64;
            while exp10 > 0 {
                let k = if exp10 > 22 { 22 } else { exp10 };
                value *= POW10[k as usize];
                exp10 -= k;
            }
            while exp10 < 0 {
                let k = if exp10 < -22 { 22 } else { -exp10 };
                value /= POW10[k as usize];
                exp10 += k;
            }
            (if negative { -value } else { value }, i)
        }

        /// Calls `visit` for each number of the (nested) array value of `key`; returns how
        /// many there are. Written as a macro-free loop over a callback-free state, so it
        /// runs in `const`: `N = 0` counts only.
        const fn scan<const N: usize>(key: &[u8]) -> ([f32; N], usize) {
            let mut out = [0f32; N];
            let mut i = skip_spaces(after_key(key));
            assert!(JSON[i] == b'[', "the golden value is not an array");
            let (mut depth, mut n) = (0, 0);
            loop {
                match JSON[i] {
                    b'[' => depth += 1,
                    b']' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    b',' | b' ' | b'\n' => {}
                    _ => {
                        let (value, next) = number(i);
                        if N > 0 {
                            out[n] = value as f32;
                        }
                        n += 1;
                        i = next;
                        continue;
                    }
                }
                i += 1;
            }
            (out, n)
        }

        /// Numbers in the array value of `key`.
        const fn count(key: &[u8]) -> usize {
            scan::<0>(key).1
        }

        /// The array value of `key`, flattened; it must hold exactly `N` numbers.
        const fn floats<const N: usize>(key: &[u8]) -> [f32; N] {
            let (out, n) = scan::<N>(key);
            assert!(n == N, "unexpected length of a golden array");
            out
        }
    }

    use golden::{D, EXPECTED_F64, EXPECTED_REF, HEADS, INPUT, POSITIONS, SIDE, TOKEN_LEN, TOKENS};

    /// The seed convention: interleaved pairs, pairs 0 .. d/4 rotated by the column, base 100.
    const SEED: Axial2d = Axial2d::new(Layout::Interleaved, AxisOrder::ColFirst, 100.0);
    type SeedTable = AxialTable<D, SIDE, SIDE>;
    const VALUES: usize = TOKENS * TOKEN_LEN;
    const SHAPE: Shape = Shape::heads(HEADS);

    /// Every call into rope2d, each in its own function: `.ci/firmware.sh` measures these
    /// (and all they call) for size and checks them for panic paths.
    mod calls {
        use super::*;

        #[inline(never)]
        pub fn build_table(config: &Axial2d) -> Result<SeedTable, Error> {
            SeedTable::new(config)
        }

        #[inline(never)]
        pub fn build_ref<'a>(
            storage: &'a mut [[f32; 2]],
            config: &Axial2d,
            head_dim: usize,
            grid: Grid,
        ) -> Result<AxialTableRef<'a>, Error> {
            AxialTableRef::build(storage, config, head_dim, grid)
        }

        #[inline(never)]
        pub fn rotate_at(
            table: &AxialTableRef<'_>,
            x: &mut [f32],
            shape: Shape,
            positions: &[GridPos],
            dir: Direction,
        ) -> Result<(), Error> {
            table.rotate_at(x, shape, positions, dir)
        }

        #[inline(never)]
        pub fn rotate_head(
            table: &AxialTableRef<'_>,
            head: &mut [f32],
            pos: GridPos,
            dir: Direction,
        ) -> Result<(), Error> {
            table.rotate_head(head, pos, dir)
        }

        #[inline(never)]
        pub fn rotate(
            table: &AxialTableRef<'_>,
            x: &mut [f32],
            shape: Shape,
            dir: Direction,
        ) -> Result<(), Error> {
            table.rotate(x, shape, dir)
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

    /// `k`: the golden tokens with their two heads swapped, and the same for an output.
    fn swap_heads(from: &[f32], to: &mut [f32]) {
        for (src, dst) in from
            .chunks_exact(TOKEN_LEN)
            .zip(to.chunks_exact_mut(TOKEN_LEN))
        {
            dst[..D].copy_from_slice(&src[D..]);
            dst[D..].copy_from_slice(&src[..D]);
        }
    }

    /// The largest `|cortex-m − scalar| / (2⁻²² · (|a| + |b|))` over all outputs, `(a, b)`
    /// the input pair of each output; the backend's stated bound holds when it is ≤ 1.
    fn fma_bound_ratio(
        input: &[f32],
        fast: &[f32],
        exact: &[f32],
        head_dim: usize,
        layout: Layout,
    ) -> f32 {
        let unit = f32::EPSILON / 2.0; // 2⁻²⁴; the bound is 4 units of |a| + |b|
        let mut worst = 0f32;
        for ((x, f), e) in input
            .chunks_exact(head_dim)
            .zip(fast.chunks_exact(head_dim))
            .zip(exact.chunks_exact(head_dim))
        {
            for k in 0..head_dim / 2 {
                let (ia, ib) = match layout {
                    Layout::Interleaved => (2 * k, 2 * k + 1),
                    _ => (k, k + head_dim / 2),
                };
                let scale = 4.0 * unit * (x[ia].abs() + x[ib].abs()) + f32::MIN_POSITIVE;
                worst = worst
                    .max((f[ia] - e[ia]).abs() / scale)
                    .max((f[ib] - e[ib]).abs() / scale);
            }
        }
        worst
    }

    /// Runs `table` on `input` with the Cortex-M and the scalar backend in both directions
    /// and checks the bound between them.
    fn compare_backends(
        tally: &mut Tally,
        what: &str,
        table: AxialTableRef<'_>,
        input: &[f32],
        shape: Shape,
        positions: &[GridPos],
        (fast, exact): (&mut [f32], &mut [f32]),
    ) {
        let (Ok(cm), Ok(scalar)) = (
            table.with_backend(Backend::CortexM),
            table.with_backend(Backend::Scalar),
        ) else {
            tally.error(what, Error::BackendUnavailable);
            return;
        };
        for dir in [Direction::Forward, Direction::Inverse] {
            fast.copy_from_slice(input);
            exact.copy_from_slice(input);
            let ran = calls::rotate_at(&cm, fast, shape, positions, dir)
                .and_then(|()| calls::rotate_at(&scalar, exact, shape, positions, dir));
            match ran {
                Ok(()) => {
                    let ratio =
                        fma_bound_ratio(input, fast, exact, table.head_dim(), table.layout());
                    tally.check(ratio <= 1.0, what, ratio, 1.0);
                }
                Err(e) => tally.error(what, e),
            }
        }
    }

    #[entry]
    fn main() -> ! {
        let mut tally = Tally {
            passed: 0,
            failed: 0,
        };
        say!(
            "rope2d on a Cortex-M4F: {}x{} grid, d = {}, base 100, {} heads, {} golden tokens",
            SIDE,
            SIDE,
            D,
            HEADS,
            TOKENS
        );

        // The table, measured twice: built in place in caller storage (the cost of the
        // entries), and as an `AxialTable` returned by value (plus zeroing and moving 3.5 KB).
        let mut storage = [[0f32; 2]; SeedTable::ENTRIES];
        measure_begin();
        let in_place = calls::build_ref(&mut storage, &SEED, D, Grid::new(SIDE, SIDE)).is_ok();
        measure_end();
        say!("measure: table_entries {}", SeedTable::ENTRIES);
        tally.check(in_place, "AxialTableRef::build (14x14, d = 64)", 0.0, 0.0);
        measure_begin();
        let built = calls::build_table(&SEED);
        measure_end();
        say!("measure: table_entries_by_value {}", SeedTable::ENTRIES);
        let table = match built {
            Ok(table) => table,
            Err(e) => {
                tally.error("build the 14x14 d=64 table", e);
                finish(tally)
            }
        };
        let view = table.view();
        say!(
            "table: {} B of (cos, sin) entries ({} entries), {} B with its configuration, backend {}",
            SeedTable::BYTES,
            SeedTable::ENTRIES,
            core::mem::size_of::<SeedTable>(),
            view.backend().name()
        );
        let auto_ok = view.backend() == Backend::CortexM;
        tally.check(auto_ok, "Backend::auto() is cortex-m", 0.0, 0.0);

        // q and k, rotated at the golden positions (q measured).
        let mut q = [0f32; VALUES];
        let mut k = [0f32; VALUES];
        q.copy_from_slice(&INPUT);
        swap_heads(&INPUT, &mut k);
        measure_begin();
        let rotated_q = calls::rotate_at(&view, &mut q, SHAPE, &POSITIONS, Direction::Forward);
        measure_end();
        say!("measure: pairs_rotate_at {}", VALUES / 2);
        let rotated_k = calls::rotate_at(&view, &mut k, SHAPE, &POSITIONS, Direction::Forward);
        let mut want = [0f32; VALUES];
        match rotated_q.and(rotated_k) {
            Ok(()) => {
                let w = worst_diff(&q, &EXPECTED_REF);
                tally.check(w <= 1e-5, "q vs expected_ref", w, 1e-5);
                let w = worst_diff(&q, &EXPECTED_F64);
                tally.check(w <= 4e-6, "q vs expected_f64", w, 4e-6);
                swap_heads(&EXPECTED_REF, &mut want);
                let w = worst_diff(&k, &want);
                tally.check(w <= 1e-5, "k vs expected_ref (heads swapped)", w, 1e-5);
                swap_heads(&EXPECTED_F64, &mut want);
                let w = worst_diff(&k, &want);
                tally.check(w <= 4e-6, "k vs expected_f64 (heads swapped)", w, 4e-6);
            }
            Err(e) => tally.error("rotate q and k", e),
        }

        // The scalar reference on the same data (measured, for comparison).
        let mut scalar_q = [0f32; VALUES];
        scalar_q.copy_from_slice(&INPUT);
        match view.with_backend(Backend::Scalar) {
            Ok(scalar) => {
                let ran = calls::rotate_at(
                    &scalar,
                    &mut scalar_q,
                    SHAPE,
                    &POSITIONS,
                    Direction::Forward,
                );
                match ran {
                    Ok(()) => {
                        let w = worst_diff(&scalar_q, &EXPECTED_REF);
                        tally.check(w <= 1e-5, "scalar backend vs expected_ref", w, 1e-5);
                        let ratio = fma_bound_ratio(&INPUT, &q, &scalar_q, D, Layout::Interleaved);
                        tally.check(
                            ratio <= 1.0,
                            "cortex-m vs scalar, in units of the bound",
                            ratio,
                            1.0,
                        );
                    }
                    Err(e) => tally.error("scalar backend", e),
                }
            }
            Err(e) => tally.error("scalar backend", e),
        }

        // rotate_head token by token gives the bits of rotate_at.
        let mut per_head = [0f32; VALUES];
        per_head.copy_from_slice(&INPUT);
        let mut head_result = Ok(());
        for (token, &pos) in per_head.chunks_exact_mut(TOKEN_LEN).zip(POSITIONS.iter()) {
            for head in token.chunks_exact_mut(D) {
                head_result =
                    head_result.and(calls::rotate_head(&view, head, pos, Direction::Forward));
            }
        }
        match head_result {
            Ok(()) => {
                let w = worst_diff(&per_head, &q);
                tally.check(w == 0.0, "rotate_head == rotate_at", w, 0.0);
            }
            Err(e) => tally.error("rotate_head", e),
        }

        // The inverse undoes the rotation.
        match calls::rotate_at(&view, &mut q, SHAPE, &POSITIONS, Direction::Inverse) {
            Ok(()) => {
                let w = worst_diff(&q, &INPUT);
                tally.check(w <= 1e-5, "inverse(forward(q)) == q", w, 1e-5);
            }
            Err(e) => tally.error("inverse", e),
        }

        // Relativity: <R(p)q, R(p')k> depends only on p' − p. For consecutive golden tokens,
        // shift both positions by m = their component-wise minimum and compare.
        let mut worst_rel = 0f32;
        let mut relativity = Ok(());
        for t in 0..TOKENS - 1 {
            let (p, p2) = (POSITIONS[t], POSITIONS[t + 1]);
            let m = GridPos::new(p.row.min(p2.row), p.col.min(p2.col));
            let shifted = |x: GridPos| GridPos::new(x.row - m.row, x.col - m.col);
            let q0 = &INPUT[t * TOKEN_LEN..][..D];
            let k0 = &INPUT[(t + 1) * TOKEN_LEN + D..][..D];
            let mut dots = [0f32; 2];
            for (dot, (pq, pk)) in dots.iter_mut().zip([(p, p2), (shifted(p), shifted(p2))]) {
                let (mut qh, mut kh) = ([0f32; D], [0f32; D]);
                qh.copy_from_slice(q0);
                kh.copy_from_slice(k0);
                relativity = relativity
                    .and(calls::rotate_head(&view, &mut qh, pq, Direction::Forward))
                    .and(calls::rotate_head(&view, &mut kh, pk, Direction::Forward));
                *dot = qh.iter().zip(&kh).map(|(a, b)| a * b).sum();
            }
            let scale: f32 = q0.iter().zip(k0).map(|(a, b)| (a * b).abs()).sum();
            worst_rel = worst_rel.max((dots[0] - dots[1]).abs() / scale);
        }
        match relativity {
            Ok(()) => tally.check(
                worst_rel <= 1e-5,
                "relativity <R(p)q,R(p')k> = <R(p-m)q,R(p'-m)k> (relative to sum|q||k|)",
                worst_rel,
                1e-5,
            ),
            Err(e) => tally.error("relativity", e),
        }

        // The runtime-shaped table holds the same bits.
        match calls::build_ref(&mut storage, &SEED, D, Grid::new(SIDE, SIDE)) {
            Ok(runtime) => {
                let same = (0..SIDE).all(|i| {
                    runtime.row_entries(i) == view.row_entries(i)
                        && runtime.col_entries(i) == view.col_entries(i)
                });
                tally.check(same, "AxialTableRef::build == AxialTable::new", 0.0, 0.0);
            }
            Err(e) => tally.error("AxialTableRef::build", e),
        }

        // The Cortex-M backend against scalar: every variant of its loop.
        let mut fast = [0f32; VALUES];
        compare_backends(
            &mut tally,
            "cortex-m vs scalar: interleaved",
            view,
            &INPUT,
            SHAPE,
            &POSITIONS,
            (&mut fast, &mut scalar_q),
        );
        let half_config = Axial2d::new(Layout::Half, AxisOrder::RowFirst, 100.0);
        match calls::build_table(&half_config) {
            Ok(half) => compare_backends(
                &mut tally,
                "cortex-m vs scalar: half layout",
                half.view(),
                &INPUT,
                SHAPE,
                &POSITIONS,
                (&mut fast, &mut scalar_q),
            ),
            Err(e) => tally.error("half-layout table", e),
        }
        // d = 20: 5 pairs per section, so one 4-pair step and one single pair; 3 heads, a
        // 2 x 3 grid visited in reverse.
        const SMALL_D: usize = 20;
        const SMALL_GRID: Grid = Grid::new(2, 3);
        const SMALL_VALUES: usize = 6 * 3 * SMALL_D;
        let reversed: [GridPos; 6] =
            core::array::from_fn(|i| GridPos::new(1 - i as u32 / 3, 2 - i as u32 % 3));
        for config in [SEED, half_config] {
            let mut storage = [[0f32; 2]; (2 + 3) * SMALL_D / 4];
            match calls::build_ref(&mut storage, &config, SMALL_D, SMALL_GRID) {
                Ok(small) => compare_backends(
                    &mut tally,
                    "cortex-m vs scalar: d = 20, 3 heads (4-pair steps + remainder)",
                    small,
                    &INPUT[..SMALL_VALUES],
                    Shape::heads(3),
                    &reversed,
                    (&mut fast[..SMALL_VALUES], &mut scalar_q[..SMALL_VALUES]),
                ),
                Err(e) => tally.error("d = 20 table", e),
            }
        }

        // Whole-grid rotation (`rotate`, row-major tokens) agrees with rotate_at on the same
        // positions, and an invalid call is refused without touching the buffer.
        // (The whole grid, 196 tokens x 2 heads, measured for both backends.)
        let mut grid_x = [0f32; SIDE * SIDE * TOKEN_LEN];
        for (i, v) in grid_x.iter_mut().enumerate() {
            *v = INPUT[i % VALUES];
        }
        let grid_positions: [GridPos; SIDE * SIDE] =
            core::array::from_fn(|t| GridPos::new((t / SIDE) as u32, (t % SIDE) as u32));
        let mut grid_y = grid_x;
        let mut grid_s = grid_x;
        measure_begin();
        let whole = calls::rotate(&view, &mut grid_x, SHAPE, Direction::Forward);
        measure_end();
        say!("measure: pairs {}", grid_x.len() / 2);
        let scalar = view.with_backend(Backend::Scalar).unwrap_or(view);
        measure_begin();
        let whole_scalar = calls::rotate(&scalar, &mut grid_s, SHAPE, Direction::Forward);
        measure_end();
        say!("measure: scalar_pairs {}", grid_s.len() / 2);
        match whole.and(whole_scalar).and_then(|()| {
            calls::rotate_at(
                &view,
                &mut grid_y,
                SHAPE,
                &grid_positions,
                Direction::Forward,
            )
        }) {
            Ok(()) => {
                let w = worst_diff(&grid_x, &grid_y);
                tally.check(
                    w == 0.0,
                    "rotate (whole grid) == rotate_at (all positions)",
                    w,
                    0.0,
                );
            }
            Err(e) => tally.error("rotate", e),
        }
        let shape1 = Shape::heads(1);
        let before = grid_x;
        let outside = [GridPos::new(SIDE as u32, 0)];
        let refused = calls::rotate_at(
            &view,
            &mut grid_x[..D],
            shape1,
            &outside,
            Direction::Forward,
        );
        tally.check(
            matches!(refused, Err(Error::GridPositionOutOfRange { .. })) && grid_x == before,
            "out-of-grid position refused, buffer untouched",
            0.0,
            0.0,
        );

        finish(tally)
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
