//! The AVX2 + FMA backend (x86_64): [`simd`](super::simd)'s algorithm on 8-lane `__m256`
//! vectors. Interleaved pairs: one swap within pairs (`vpermilps`), one multiply and one
//! `vfmadd` per 8 floats against the row's duplicated cosines and signed sines; half layout:
//! two multiplies and two fused multiply-adds per 8 pairs, no shuffle.
//!
//! # Difference from [`Backend::Scalar`](super::Backend::Scalar)
//!
//! Scalar computes `a' = rnd(rnd(a·c) − rnd(b·s))`, `b' = rnd(rnd(b·c) + rnd(a·s))`; this
//! backend fuses the first product of each output: `a' = rnd(a·c − rnd(b·s))`,
//! `b' = rnd(b·c + rnd(a·s))` (the inverse flips the sign of `s`). Hence, per output,
//!
//! `|avx2 − scalar| ≤ 3·2⁻²⁴·(|a·c| + |b·s|) + 3·2⁻¹⁵⁰ ≤ 2⁻²²·(|a| + |b|) + 2⁻¹⁴⁸`
//!
//! (the second term only matters for subnormal results). RoPE-Mixed angle sums are formed
//! without FMA, bit for bit as in scalar, so the same bound holds with those sums as `c`, `s`.
//! Results are deterministic and identical to the `avx512` and `neon` backends'. NaN
//! propagates as in scalar (a NaN in either element of a pair makes both outputs NaN);
//! infinities give the same infinities and NaNs as scalar unless a result lies within an ulp
//! of overflow.

use core::arch::x86_64::{
    __m256, __m256i, _mm256_add_ps, _mm256_addsub_ps, _mm256_castpd_ps, _mm256_castps_pd,
    _mm256_cmpgt_epi32, _mm256_fmadd_ps, _mm256_fmaddsub_ps, _mm256_fmsub_ps, _mm256_fmsubadd_ps,
    _mm256_loadu_ps, _mm256_maskload_ps, _mm256_maskstore_ps, _mm256_movehdup_ps,
    _mm256_moveldup_ps, _mm256_mul_ps, _mm256_permute_ps, _mm256_permute4x64_pd, _mm256_set_epi32,
    _mm256_set1_epi32, _mm256_set1_ps, _mm256_setr_ps, _mm256_shuffle_ps, _mm256_storeu_ps,
};

use super::simd::{Simd, Vector};
use super::{AngleSource, Job, drive};

/// An AVX2 vector. Only constructed inside [`run_avx2`], which runs only on CPUs with AVX2
/// and FMA: every `unsafe` block below relies on that.
#[derive(Clone, Copy)]
struct V(__m256);

/// Whether this CPU has AVX2 and FMA and the OS saves their registers: CPUID and XGETBV,
/// read once and cached ([`x86`](super::x86)), with or without `std`.
#[inline]
pub(crate) fn is_available() -> bool {
    super::x86::features() & super::x86::AVX2_FMA != 0
}

/// The loop, for [`Backend::describe`](super::Backend::describe).
pub(crate) const FORM: &str =
    "256-bit FMA; each token's angles expanded once into a row, its heads rotated in address order";

/// How element types are converted.
pub(crate) use super::x86::conversions;

/// Element conversions: AVX2 (+ F16C) eight values at a time, bit-identical to the reference.
pub(crate) use super::x86::{load, store};

// Inlined: the job goes straight to the `#[target_feature]` loop, not through one more
// out-of-line copy (a few ns of a small call).
#[inline(always)]
pub(crate) fn run<A: AngleSource>(job: Job<'_, A>) {
    if is_available() {
        // SAFETY: the CPU supports AVX2 and FMA, checked just above.
        unsafe { run_avx2(job) }
    } else {
        // Unreachable through the public API (tables only accept available backends); kept
        // so that this safe function is sound on any CPU.
        super::scalar::run(job);
    }
}

/// The whole driver loop, compiled with AVX2 and FMA so every vector operation inlines.
///
/// # Safety
///
/// The CPU must support AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
unsafe fn run_avx2<A: AngleSource>(job: Job<'_, A>) {
    drive::<Simd<V>, A>(job);
}

/// The kernels' loop bodies between `llvm-mca` markers, for `.ci/mca.sh` (only with
/// `--cfg rope2d_mca`; see [`mca_regions`](super::simd::mca_regions)).
///
/// # Safety
///
/// As for [`mca_regions`](super::simd::mca_regions), on a CPU with this backend's features.
#[cfg(rope2d_mca)]
#[unsafe(no_mangle)]
#[target_feature(enable = "avx2,fma")]
pub unsafe extern "C" fn rope2d_mca_avx2(x: *mut f32, a: *const f32, b: *const f32, n: usize) {
    // SAFETY: as the caller guarantees.
    unsafe { super::simd::mca_regions::<V>(x, a, b, n) }
}

/// `[v0 v1 v4 v5 | v2 v3 v6 v7]` → `[v0 … v7]` (a function, not a closure: a closure would
/// not inline the intrinsic).
#[inline(always)]
fn fix_lanes(v: __m256) -> __m256 {
    // SAFETY: AVX2 (see `V`).
    unsafe { _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(v))) }
}

/// Lanes `0 .. n` set: the mask of `vmaskmovps`.
#[inline(always)]
fn first_lanes(n: usize) -> __m256i {
    // SAFETY: AVX2 (see `V`).
    unsafe {
        _mm256_cmpgt_epi32(
            _mm256_set1_epi32(n as i32),
            _mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0),
        )
    }
}

// SAFETY: every method is an AVX2/FMA intrinsic (available: see `V`) on the pointers the
// trait's contract makes valid.
unsafe impl Vector for V {
    const LANES: usize = 8;

    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        // SAFETY: 8 readable floats at `p` (the trait's contract).
        V(unsafe { _mm256_loadu_ps(p) })
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32) {
        // SAFETY: 8 writable floats at `p`.
        unsafe { _mm256_storeu_ps(p, self.0) }
    }
    #[inline(always)]
    unsafe fn load_partial(p: *const f32, n: usize) -> Self {
        // SAFETY: `n` readable floats at `p`; masked lanes are not accessed.
        V(unsafe { _mm256_maskload_ps(p, first_lanes(n)) })
    }
    #[inline(always)]
    unsafe fn store_partial(self, p: *mut f32, n: usize) {
        // SAFETY: `n` writable floats at `p`; masked lanes are not accessed.
        unsafe { _mm256_maskstore_ps(p, first_lanes(n), self.0) }
    }
    #[inline(always)]
    unsafe fn swap_pairs(self) -> Self {
        // SAFETY: AVX.
        V(unsafe { _mm256_permute_ps::<0b10_11_00_01>(self.0) })
    }
    #[inline(always)]
    unsafe fn dup_even(self) -> Self {
        // SAFETY: AVX.
        V(unsafe { _mm256_moveldup_ps(self.0) })
    }
    #[inline(always)]
    unsafe fn dup_odd(self) -> Self {
        // SAFETY: AVX.
        V(unsafe { _mm256_movehdup_ps(self.0) })
    }
    #[inline(always)]
    unsafe fn deinterleave(lo: Self, hi: Self) -> (Self, Self) {
        // SAFETY: AVX. The shuffles give `[v0 v1 v4 v5 | v2 v3 v6 v7]`; `fix_lanes` puts the
        // lanes in order.
        unsafe {
            let c = _mm256_shuffle_ps::<0b10_00_10_00>(lo.0, hi.0);
            let s = _mm256_shuffle_ps::<0b11_01_11_01>(lo.0, hi.0);
            (V(fix_lanes(c)), V(fix_lanes(s)))
        }
    }
    #[inline(always)]
    unsafe fn mul(self, other: Self) -> Self {
        // SAFETY: AVX.
        V(unsafe { _mm256_mul_ps(self.0, other.0) })
    }
    #[inline(always)]
    unsafe fn add(self, other: Self) -> Self {
        // SAFETY: AVX.
        V(unsafe { _mm256_add_ps(self.0, other.0) })
    }
    #[inline(always)]
    unsafe fn fmadd(self, b: Self, c: Self) -> Self {
        // SAFETY: FMA.
        V(unsafe { _mm256_fmadd_ps(self.0, b.0, c.0) })
    }
    #[inline(always)]
    unsafe fn fmsub(self, b: Self, c: Self) -> Self {
        // SAFETY: FMA.
        V(unsafe { _mm256_fmsub_ps(self.0, b.0, c.0) })
    }
    #[inline(always)]
    unsafe fn alternating(negate_odd: bool) -> Self {
        let s = if negate_odd { 1.0 } else { -1.0 };
        // SAFETY: AVX.
        V(unsafe { _mm256_setr_ps(s, -s, s, -s, s, -s, s, -s) })
    }
    #[inline(always)]
    unsafe fn splat(x: f32) -> Self {
        // SAFETY: AVX.
        V(unsafe { _mm256_set1_ps(x) })
    }
    #[inline(always)]
    unsafe fn addsub(self, other: Self) -> Self {
        // SAFETY: AVX.
        V(unsafe { _mm256_addsub_ps(self.0, other.0) })
    }
    #[inline(always)]
    unsafe fn fmaddsub(self, b: Self, c: Self) -> Self {
        // SAFETY: FMA.
        V(unsafe { _mm256_fmaddsub_ps(self.0, b.0, c.0) })
    }
    #[inline(always)]
    unsafe fn fmsubadd(self, b: Self, c: Self) -> Self {
        // SAFETY: FMA.
        V(unsafe { _mm256_fmsubadd_ps(self.0, b.0, c.0) })
    }
}
