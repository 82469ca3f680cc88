//! The backend seam: one driver loop written once, generic over a per-token [`Kernel`].
//!
//! Public entry points validate their whole input, then describe the work as a [`Job`] and
//! hand it to the selected [`Backend`]. A backend is one file that implements [`Kernel`]
//! and exposes `run(job)` (wrapping [`drive`] in its `#[target_feature]` where it has one)
//! and `is_available()`; adding one is that file plus one line in `registry!` below.

use crate::config::{Coord, Direction, GridPos, Layout};
use crate::freq::Schedule;
use crate::math;

/// Rotation of whole head vectors by per-pair angles given as `[cos, sin]`.
pub(crate) trait Kernel {
    /// Rotates pairs `first_pair .. first_pair + angles.len()` of every head in `x` (a whole
    /// number of `head_dim`-value heads) by `angles`, reversed for [`Direction::Inverse`].
    fn rotate_pairs(
        x: &mut [f32],
        head_dim: usize,
        layout: Layout,
        first_pair: usize,
        angles: &[[f32; 2]],
        dir: Direction,
    );

    /// Rotates every pair `k` of every head `h` in `x` by the sum of the angles
    /// `a[h·d/2 + k]` and `b[h·d/2 + k]` (RoPE-Mixed: `cos(α+β) = cαcβ − sαsβ`, …).
    fn rotate_pairs_summed(
        x: &mut [f32],
        head_dim: usize,
        layout: Layout,
        a: &[[f32; 2]],
        b: &[[f32; 2]],
        dir: Direction,
    );
}

/// Positions of consecutive 1-D tokens.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Positions1d<'t> {
    /// `start, start + 1, …`
    From(u32),
    /// One position per token.
    List(&'t [u32]),
}

/// Positions of consecutive 2-D tokens.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Positions2d<'t> {
    /// Row-major over a grid of `cols` columns.
    Grid { cols: usize },
    /// One position per token.
    List(&'t [GridPos]),
}

/// Where each token's angles come from.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Angles<'t> {
    /// 1-D table: row `p` (width `d/2`) for position `p`.
    Table1d {
        table: &'t [[f32; 2]],
        positions: Positions1d<'t>,
    },
    /// Axial tables of width `d/4`: `first` indexed by the first axis, `second` by the other.
    Axial {
        rows: &'t [[f32; 2]],
        cols: &'t [[f32; 2]],
        col_first: bool,
        positions: Positions2d<'t>,
    },
    /// RoPE-Mixed tables, per row and per column: index `i`'s entries start at `i · stride`;
    /// a token reads `token_len / 2` of them.
    Mixed {
        rows: &'t [[f32; 2]],
        cols: &'t [[f32; 2]],
        stride: usize,
        positions: Positions2d<'t>,
    },
    /// 1-D without a table: angles computed per token.
    Direct1d {
        freqs: Schedule,
        positions: Positions1d<'t>,
    },
    /// Axial 2-D without a table, at real-valued coordinates.
    DirectAxial {
        freqs: Schedule,
        col_first: bool,
        coords: &'t [Coord],
    },
}

/// Validated work: `x` holds whole tokens of `token_len` values, one angle source entry each.
pub(crate) struct Job<'x, 't> {
    pub x: &'x mut [f32],
    pub token_len: usize,
    pub head_dim: usize,
    pub layout: Layout,
    pub dir: Direction,
    pub angles: Angles<'t>,
}

/// Axial grid rows are processed in blocks of at most this many bytes (whole tokens, at
/// least one): small enough for L1, large enough to load the row entries once for many heads.
const AXIAL_BLOCK_BYTES: usize = 8 * 1024;

/// Angles computed on the fly are staged in chunks of this many pairs (512 B of stack).
const DIRECT_CHUNK: usize = 64;

/// The one loop over tokens every backend runs.
///
/// The loop is instantiated once per layout and direction, so that inside it both are
/// constants and each kernel's dispatch on them folds away instead of running per token.
#[inline(always)]
pub(crate) fn drive<'t, K: Kernel>(job: Job<'_, 't>) {
    use {Direction::*, Layout::*};
    match (job.layout, job.dir) {
        (Interleaved, Forward) => drive_as::<K>(job, Interleaved, Forward),
        (Interleaved, Inverse) => drive_as::<K>(job, Interleaved, Inverse),
        (Half, Forward) => drive_as::<K>(job, Half, Forward),
        (Half, Inverse) => drive_as::<K>(job, Half, Inverse),
    }
}

/// [`drive`] with `layout` and `dir` given as constants by the caller.
#[inline(always)]
fn drive_as<'t, K: Kernel>(job: Job<'_, 't>, layout: Layout, dir: Direction) {
    let Job {
        x,
        token_len,
        head_dim,
        angles,
        ..
    } = job;
    if token_len == 0 || head_dim == 0 {
        return;
    }
    match angles {
        Angles::Table1d { table, positions } => {
            let tokens = x.chunks_exact_mut(token_len);
            let width = head_dim / 2;
            let rows = table.chunks_exact(width);
            for (token, p) in tokens.zip(Positions1dIter::new(positions)) {
                if let Some(row) = rows.clone().nth(p as usize) {
                    K::rotate_pairs(token, head_dim, layout, 0, row, dir);
                }
            }
        }
        Angles::Axial {
            rows,
            cols,
            col_first,
            positions,
        } => {
            let width = head_dim / 4;
            if let Positions2d::Grid { cols: grid_cols } = positions
                && grid_cols > 0
                && width > 0
            {
                // Row-major grid: every token of a grid row shares its row entries, so the
                // row section is rotated for a block of tokens at once (one kernel call, the
                // entries loaded once for all of the block's heads), then each token's column
                // section. Blocks stay within `AXIAL_BLOCK_BYTES` so the second pass hits L1.
                // Each pair is still rotated once by the same angle: results are unchanged.
                let (row_pair, col_pair) = if col_first { (width, 0) } else { (0, width) };
                let block = (AXIAL_BLOCK_BYTES / (4 * token_len)).clamp(1, grid_cols) * token_len;
                let grid_rows = x.chunks_mut(grid_cols.saturating_mul(token_len));
                for (grid_row, row) in grid_rows.zip(rows.chunks_exact(width)) {
                    let mut col_entries = cols.chunks_exact(width);
                    for block in grid_row.chunks_mut(block) {
                        let whole = block.len() - block.len() % token_len;
                        let block = &mut block[..whole];
                        K::rotate_pairs(block, head_dim, layout, row_pair, row, dir);
                        for (token, col) in block.chunks_exact_mut(token_len).zip(&mut col_entries)
                        {
                            K::rotate_pairs(token, head_dim, layout, col_pair, col, dir);
                        }
                    }
                }
                return;
            }
            let tokens = x.chunks_exact_mut(token_len);
            for (token, pos) in tokens.zip(Positions2dIter::new(positions)) {
                let row = rows.chunks_exact(width).nth(pos.row as usize);
                let col = cols.chunks_exact(width).nth(pos.col as usize);
                if let (Some(row), Some(col)) = (row, col) {
                    let (first, second) = if col_first { (col, row) } else { (row, col) };
                    K::rotate_pairs(token, head_dim, layout, 0, first, dir);
                    K::rotate_pairs(token, head_dim, layout, width, second, dir);
                }
            }
        }
        Angles::Mixed {
            rows,
            cols,
            stride,
            positions,
        } => {
            let width = token_len / 2;
            let tokens = x.chunks_exact_mut(token_len);
            for (token, pos) in tokens.zip(Positions2dIter::new(positions)) {
                let row = mixed_entries(rows, pos.row, stride, width);
                let col = mixed_entries(cols, pos.col, stride, width);
                if let (Some(row), Some(col)) = (row, col) {
                    K::rotate_pairs_summed(token, head_dim, layout, col, row, dir);
                }
            }
        }
        Angles::Direct1d { freqs, positions } => {
            let mut chunk = [[0f32; 2]; DIRECT_CHUNK];
            let tokens = x.chunks_exact_mut(token_len);
            for (token, p) in tokens.zip(Positions1dIter::new(positions)) {
                let mut first_pair = 0;
                let mut filled = 0;
                for f in freqs.iter() {
                    chunk[filled] = math::cos_sin_turns(f.phase_of_integer(i64::from(p)));
                    filled += 1;
                    if filled == DIRECT_CHUNK {
                        K::rotate_pairs(token, head_dim, layout, first_pair, &chunk, dir);
                        first_pair += filled;
                        filled = 0;
                    }
                }
                K::rotate_pairs(token, head_dim, layout, first_pair, &chunk[..filled], dir);
            }
        }
        Angles::DirectAxial {
            freqs,
            col_first,
            coords,
        } => {
            let section = head_dim / 4;
            let mut first_chunk = [[0f32; 2]; DIRECT_CHUNK];
            let mut second_chunk = [[0f32; 2]; DIRECT_CHUNK];
            for (token, coord) in x.chunks_exact_mut(token_len).zip(coords) {
                // Validated finite by the caller; a NaN here would only give NaN angles.
                let (first, second) = if col_first {
                    (coord.col, coord.row)
                } else {
                    (coord.row, coord.col)
                };
                let (Some(first_decoded), Some(second_decoded)) =
                    (math::decode_f32(first), math::decode_f32(second))
                else {
                    continue;
                };
                let mut first_pair = 0;
                let mut filled = 0;
                for f in freqs.iter() {
                    first_chunk[filled] =
                        math::cos_sin_turns(f.phase_of_coordinate(first_decoded, first));
                    second_chunk[filled] =
                        math::cos_sin_turns(f.phase_of_coordinate(second_decoded, second));
                    filled += 1;
                    if filled == DIRECT_CHUNK || first_pair + filled == section {
                        K::rotate_pairs(
                            token,
                            head_dim,
                            layout,
                            first_pair,
                            &first_chunk[..filled],
                            dir,
                        );
                        K::rotate_pairs(
                            token,
                            head_dim,
                            layout,
                            section + first_pair,
                            &second_chunk[..filled],
                            dir,
                        );
                        first_pair += filled;
                        filled = 0;
                    }
                }
            }
        }
    }
}

/// `count` entries of a RoPE-Mixed table starting at `index · stride`, if in range.
#[inline(always)]
fn mixed_entries(
    table: &[[f32; 2]],
    index: u32,
    stride: usize,
    count: usize,
) -> Option<&[[f32; 2]]> {
    let start = (index as usize).checked_mul(stride)?;
    table.get(start..)?.get(..count)
}

// The token loops iterate positions with these iterators rather than calling closures: a
// closure is a separate function without the caller's `#[target_feature]`s, and the
// intrinsics of an arch backend's kernel would not inline into it.

/// The positions of consecutive 1-D tokens.
enum Positions1dIter<'t> {
    From(u32),
    List(core::slice::Iter<'t, u32>),
}

impl<'t> Positions1dIter<'t> {
    #[inline(always)]
    fn new(positions: Positions1d<'t>) -> Self {
        match positions {
            Positions1d::From(start) => Self::From(start),
            Positions1d::List(list) => Self::List(list.iter()),
        }
    }
}

impl Iterator for Positions1dIter<'_> {
    type Item = u32;

    #[inline(always)]
    fn next(&mut self) -> Option<u32> {
        match self {
            Self::From(p) => {
                let current = *p;
                *p = p.wrapping_add(1);
                Some(current)
            }
            Self::List(list) => list.next().copied(),
        }
    }
}

/// The positions of consecutive 2-D tokens.
enum Positions2dIter<'t> {
    Grid { row: u32, col: usize, cols: usize },
    List(core::slice::Iter<'t, GridPos>),
}

impl<'t> Positions2dIter<'t> {
    #[inline(always)]
    fn new(positions: Positions2d<'t>) -> Self {
        match positions {
            Positions2d::Grid { cols } => Self::Grid {
                row: 0,
                col: 0,
                cols,
            },
            Positions2d::List(list) => Self::List(list.iter()),
        }
    }
}

impl Iterator for Positions2dIter<'_> {
    type Item = GridPos;

    #[inline(always)]
    fn next(&mut self) -> Option<GridPos> {
        match self {
            Self::Grid { row, col, cols } => {
                let pos = GridPos {
                    row: *row,
                    col: *col as u32,
                };
                *col += 1;
                if *col == *cols {
                    *col = 0;
                    *row += 1;
                }
                Some(pos)
            }
            Self::List(list) => list.next().copied(),
        }
    }
}

macro_rules! registry {
    ($($(#[doc = $doc:literal])* $variant:ident => $module:ident, $name:literal, cfg($($cfg:tt)*);)*) => {
        $(#[cfg($($cfg)*)] mod $module;)*

        /// A kernel implementation. Every backend gives the same results as [`Backend::Scalar`]
        /// within the bound stated on its variant; [`Backend::auto`] picks the fastest one.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[cfg_attr(feature = "defmt", derive(defmt::Format))]
        #[non_exhaustive]
        pub enum Backend {
            $($(#[doc = $doc])* #[cfg($($cfg)*)] $variant,)*
        }

        impl Backend {
            /// Every backend compiled into this build (available on this CPU or not).
            pub const ALL: &'static [Backend] = &[$(#[cfg($($cfg)*)] Backend::$variant,)*];

            /// A short lowercase name: `"scalar"`, …
            pub const fn name(self) -> &'static str {
                match self {
                    $(#[cfg($($cfg)*)] Backend::$variant => $name,)*
                }
            }

            /// Whether this CPU can run the backend.
            pub fn is_available(self) -> bool {
                match self {
                    $(#[cfg($($cfg)*)] Backend::$variant => $module::is_available(),)*
                }
            }

            pub(crate) fn run(self, job: Job<'_, '_>) {
                match self {
                    $(#[cfg($($cfg)*)] Backend::$variant => $module::run(job),)*
                }
            }
        }
    };
}

registry! {
    /// Plain Rust, one pair at a time, `a·c − b·s` without fused multiply-add: the reference
    /// every other backend is tested against. Always available.
    Scalar => scalar, "scalar", cfg(all());
    /// `wide` SIMD with instructions chosen at compile time (SSE2/AVX, NEON, simd128, plain
    /// arrays elsewhere), no fused multiply-add: bit for bit the same results as `Scalar`.
    /// Always available.
    Portable => portable, "portable", cfg(all());
    /// x86_64 AVX2 + FMA, detected at run time with `std` (else from the build's target
    /// features). One fused product per output: each differs from `Scalar` by at most
    /// `3·2⁻²⁴·(|a·c| + |b·s|)` (+`3·2⁻¹⁵⁰` for subnormals), `≤ 2⁻²²·(|a| + |b|)`.
    Avx2 => avx2, "avx2", cfg(all(feature = "avx2", target_arch = "x86_64"));
    /// aarch64 NEON. Bit for bit the results of `Avx2`, with the same bound against `Scalar`.
    Neon => neon, "neon", cfg(all(feature = "neon", target_arch = "aarch64"));
    /// Arm M-profile cores with a single-precision FPU (Cortex-M4F, M7, M33, M55, …): fused
    /// multiply-add and multi-register loads, 4 pairs per loop step. The same bound against
    /// `Scalar` as `Avx2`. Always available where compiled.
    CortexM => cortex_m, "cortex-m", cfg(all(target_arch = "arm", target_abi = "eabihf", not(target_has_atomic = "64")));
}

impl Backend {
    /// The fastest backend this build and CPU can run, in this order: `Avx2` (x86_64, when
    /// the CPU has AVX2 and FMA), `Neon` (aarch64), `CortexM` (Arm M-profile hard-float),
    /// else `Scalar`. `Portable` is never chosen
    /// automatically (it measured slower than `Scalar` on x86_64 with SSE2 only); select it
    /// with `with_backend`.
    pub fn auto() -> Self {
        #[cfg(all(feature = "avx2", target_arch = "x86_64"))]
        if avx2::is_available() {
            return Backend::Avx2;
        }
        #[cfg(all(feature = "neon", target_arch = "aarch64"))]
        if neon::is_available() {
            return Backend::Neon;
        }
        // Arm M-profile hard-float targets (the only Arm hard-float targets without 64-bit
        // atomics): their FPUs, FPv4-SP and FPv5, all have VFMA.
        #[cfg(all(
            target_arch = "arm",
            target_abi = "eabihf",
            not(target_has_atomic = "64")
        ))]
        if cortex_m::is_available() {
            return Backend::CortexM;
        }
        // `Portable` is not chosen: with SSE2 only (x86_64 without AVX2) it measured slower
        // than `Scalar`, which LLVM auto-vectorises; on 32-bit Arm `wide` is plain arrays.
        Backend::Scalar
    }
}

impl Default for Backend {
    fn default() -> Self {
        Self::auto()
    }
}
