//! The backend seam: token loops written once ([`angles`]), generic over a per-token
//! [`Kernel`].
//!
//! Public entry points validate their whole input, then describe the work as a [`Job`] and
//! hand it to the selected [`Backend`]. A backend is one file that implements [`Kernel`]
//! and exposes `run(job)` (wrapping [`drive`] in its `#[target_feature]` where it has one)
//! and `is_available()`; adding one is that file plus one line in `registry!` below.

mod angles;

pub(crate) use angles::{
    AngleSource, AxialGrid, AxialList, Direct1d, DirectAxial, Mixed, Positions1d, Positions2d,
    Table1d,
};

use crate::config::{Direction, Layout};

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

    /// Rotates a block of whole tokens (`token_len` values each) of one axial grid row:
    /// pairs `row_pair .. row_pair + row.len()` of every head by `row`, shared by all tokens,
    /// and, for each token `t`, pairs `col_pair .. col_pair + width` of each of its heads by
    /// `cols[t·width .. (t + 1)·width]` (only tokens with a whole chunk of `cols` get this).
    ///
    /// Each pair is rotated once, by the angle it would get from [`rotate_pairs`] calls, so
    /// the results are those of the provided implementation (one call for the row section,
    /// then one per token); a kernel may override it to rotate both sections in one pass.
    ///
    /// [`rotate_pairs`]: Kernel::rotate_pairs
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn rotate_axial_block(
        x: &mut [f32],
        token_len: usize,
        head_dim: usize,
        layout: Layout,
        (row_pair, row): (usize, &[[f32; 2]]),
        (col_pair, cols): (usize, &[[f32; 2]]),
        width: usize,
        dir: Direction,
    ) where
        Self: Sized,
    {
        let (row, cols) = ((row_pair, row), (col_pair, cols));
        axial_block_by_sections::<Self>(x, token_len, head_dim, layout, row, cols, width, dir);
    }

    /// Rotates a whole axial grid in one call, if this kernel has a path for its shape:
    /// every grid row `r` of `x` (`grid_cols` tokens of `token_len` values, as many rows as
    /// both `x` and `rows` have whole ones) as [`rotate_axial_block`] rotates it with the row
    /// entries `rows[r·width .. (r + 1)·width]` and the column entries `cols` (the same for
    /// every grid row). Returns `false`, touching nothing, when it has no such path; the
    /// caller then runs its block loop. The provided implementation has no such path.
    ///
    /// This lets a kernel prepare the column entries once per call instead of once per grid
    /// row (on hosted targets only: the bare-metal token loop never calls it).
    ///
    /// [`rotate_axial_block`]: Kernel::rotate_axial_block
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn rotate_axial_grid(
        _x: &mut [f32],
        _token_len: usize,
        _head_dim: usize,
        _layout: Layout,
        _rows: (usize, &[[f32; 2]]),
        _cols: (usize, &[[f32; 2]]),
        _width: usize,
        _grid_cols: usize,
        _dir: Direction,
    ) -> bool {
        false
    }

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

/// [`Kernel::rotate_axial_block`]'s provided implementation — the row section of the whole
/// block in one call, then each token's column section — also the fallback of kernels that
/// override it for some shapes only.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn axial_block_by_sections<K: Kernel>(
    x: &mut [f32],
    token_len: usize,
    head_dim: usize,
    layout: Layout,
    (row_pair, row): (usize, &[[f32; 2]]),
    (col_pair, cols): (usize, &[[f32; 2]]),
    width: usize,
    dir: Direction,
) {
    angles::rotate_pairs::<K>(x, head_dim, layout, row_pair, row, dir);
    if token_len == 0 || width == 0 {
        return;
    }
    for (token, col) in x.chunks_exact_mut(token_len).zip(cols.chunks_exact(width)) {
        angles::rotate_pairs::<K>(token, head_dim, layout, col_pair, col, dir);
    }
}

/// Validated work: `x` holds whole tokens of `token_len` values, one angle source entry each.
pub(crate) struct Job<'x, A> {
    pub x: &'x mut [f32],
    pub token_len: usize,
    pub head_dim: usize,
    pub layout: Layout,
    pub dir: Direction,
    pub angles: A,
}

/// Whether [`drive`] instantiates its loop once per layout and direction. On hosted targets
/// it does, so both are constants inside the loop and each kernel's dispatch on them folds
/// away instead of running per token; on bare-metal targets one copy keeps flash small.
const SPECIALISE: bool = !cfg!(target_os = "none");

/// The loop over a job's tokens, for kernel `K`.
#[inline(always)]
pub(crate) fn drive<K: Kernel, A: AngleSource>(job: Job<'_, A>) {
    use {Direction::*, Layout::*};
    let Job {
        x,
        token_len,
        head_dim,
        layout,
        dir,
        angles,
    } = job;
    if token_len == 0 || head_dim == 0 {
        return;
    }
    if !SPECIALISE {
        return angles.rotate_tokens::<K>(x, token_len, head_dim, layout, dir);
    }
    match (layout, dir) {
        (Interleaved, Forward) => {
            angles.rotate_tokens::<K>(x, token_len, head_dim, Interleaved, Forward)
        }
        (Interleaved, Inverse) => {
            angles.rotate_tokens::<K>(x, token_len, head_dim, Interleaved, Inverse)
        }
        (Half, Forward) => angles.rotate_tokens::<K>(x, token_len, head_dim, Half, Forward),
        (Half, Inverse) => angles.rotate_tokens::<K>(x, token_len, head_dim, Half, Inverse),
    }
}

/// The scalar kernel of Arm M-profile hard-float targets (the only Arm hard-float targets
/// without 64-bit atomics; their FPUs, FPv4-SP and FPv5, all have the chained `vmla`).
#[cfg(all(
    target_arch = "arm",
    target_abi = "eabihf",
    not(target_has_atomic = "64")
))]
#[allow(unsafe_code)]
mod cortex_m;

macro_rules! registry {
    ($($(#[doc = $doc:literal])* $variant:ident => $module:ident, $name:literal, cfg($($cfg:tt)*);)*) => {
        // `unsafe` is denied crate-wide; the arch backends allow it, the others forbid it.
        $(#[cfg($($cfg)*)] #[allow(unsafe_code)] mod $module;)*

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

            pub(crate) fn run<A: AngleSource>(self, job: Job<'_, A>) {
                match self {
                    $(#[cfg($($cfg)*)] Backend::$variant => $module::run(job),)*
                }
            }
        }
    };
}

registry! {
    /// The reference every other backend is tested against: each output is
    /// `fl(fl(a·c) − fl(b·s))` / `fl(fl(b·c) + fl(a·s))`, no fused multiply-add, the same bits
    /// on every target. Plain Rust, except on Arm M-profile cores with an FPU, where a
    /// hand-scheduled `vmul`/`vmla` loop performs exactly this arithmetic (`cortex_m.rs`).
    /// Always available.
    Scalar => scalar, "scalar", cfg(all());
    /// `wide` SIMD with instructions chosen at compile time (SSE2/AVX, NEON, simd128, plain
    /// arrays elsewhere), no fused multiply-add: bit for bit the same results as `Scalar`.
    /// Always available on hosted targets; not compiled for bare-metal targets
    /// (`target_os = "none"`), where `wide` has no SIMD to offer and flash is scarce.
    Portable => portable, "portable", cfg(not(target_os = "none"));
    /// x86_64 AVX2 + FMA, detected at run time with `std` (else from the build's target
    /// features). One fused product per output: each differs from `Scalar` by at most
    /// `3·2⁻²⁴·(|a·c| + |b·s|)` (+`3·2⁻¹⁵⁰` for subnormals), `≤ 2⁻²²·(|a| + |b|)`.
    Avx2 => avx2, "avx2", cfg(all(feature = "avx2", target_arch = "x86_64"));
    /// x86_64 AVX-512F (+ AVX2, FMA), detected like `Avx2`. The operations of `Avx2` on
    /// 16-lane vectors: bit for bit the results of `Avx2`, with the same bound against `Scalar`.
    Avx512 => avx512, "avx512", cfg(all(feature = "avx512", target_arch = "x86_64"));
    /// aarch64 NEON. Bit for bit the results of `Avx2`, with the same bound against `Scalar`.
    Neon => neon, "neon", cfg(all(feature = "neon", target_arch = "aarch64"));
}

impl Backend {
    /// The fastest backend this build and CPU can run, in this order: `Avx512` (x86_64, when
    /// the CPU has AVX-512F, AVX2 and FMA), `Avx2` (x86_64, when the CPU has AVX2 and FMA),
    /// `Neon` (aarch64), else `Scalar` (which on Arm M-profile cores with an FPU is the
    /// hand-scheduled `vmla` loop). `Portable` is never chosen automatically (it measured
    /// slower than `Scalar` on x86_64 with SSE2 only); select it with `with_backend`.
    pub fn auto() -> Self {
        #[cfg(all(feature = "avx512", target_arch = "x86_64"))]
        if avx512::is_available() {
            return Backend::Avx512;
        }
        #[cfg(all(feature = "avx2", target_arch = "x86_64"))]
        if avx2::is_available() {
            return Backend::Avx2;
        }
        #[cfg(all(feature = "neon", target_arch = "aarch64"))]
        if neon::is_available() {
            return Backend::Neon;
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
