//! The AVX-512 backend (x86_64, AVX-512F + AVX2 + FMA): [`simd`](super::simd)'s algorithm on
//! 16-lane `__m512` vectors. Tails shorter than a vector use masked loads and stores (lanes
//! outside the mask are neither read nor written).
//!
//! # Difference from [`Backend::Scalar`](super::Backend::Scalar)
//!
//! Exactly that of `Avx2`: every lane performs the operations the `Avx2` backend performs on
//! it (the same products, the same single fused product per output, the same unfused
//! RoPE-Mixed angle sums), so the results are bit for bit those of `Avx2` (and `Neon`), and
//!
//! `|avx512 − scalar| ≤ 3·2⁻²⁴·(|a·c| + |b·s|) + 3·2⁻¹⁵⁰ ≤ 2⁻²²·(|a| + |b|) + 2⁻¹⁴⁸`
//!
//! per output. NaN and infinities propagate as in `Avx2`.

use core::arch::x86_64::{
    __m512, __mmask16, _mm512_add_ps, _mm512_fmadd_ps, _mm512_fmaddsub_ps, _mm512_fmsub_ps,
    _mm512_fmsubadd_ps, _mm512_loadu_ps, _mm512_mask_storeu_ps, _mm512_maskz_loadu_ps,
    _mm512_movehdup_ps, _mm512_moveldup_ps, _mm512_mul_ps, _mm512_permute_ps, _mm512_set1_ps,
    _mm512_setr_ps, _mm512_storeu_ps,
};
// Miri does not implement `vpermt2ps`: there `deinterleave` goes through memory.
#[cfg(not(miri))]
use core::arch::x86_64::{_mm512_permutex2var_ps, _mm512_setr_epi32};

use super::simd::{Simd, Vector};
use super::{AngleSource, Job, drive};

/// An AVX-512 vector. Only constructed inside [`run_avx512`], which runs only on CPUs with
/// AVX-512F, AVX2 and FMA: every `unsafe` block below relies on that.
#[derive(Clone, Copy)]
struct V(__m512);

/// Whether this CPU has AVX-512F, AVX2 and FMA and the OS saves the AVX-512 state: CPUID and
/// XGETBV, read once and cached ([`x86`](super::x86)), with or without `std`.
#[inline]
pub(crate) fn is_available() -> bool {
    super::x86::features() & super::x86::AVX512F != 0
}

/// The loop, for [`Backend::describe`](super::Backend::describe).
pub(crate) const FORM: &str = if cfg!(feature = "avx2") {
    "512-bit FMA on buffers up to 1 MiB, the avx2 loop beyond; each token's angles expanded once into a row, its heads rotated in address order"
} else {
    "512-bit FMA; each token's angles expanded once into a row, its heads rotated in address order"
};

/// How element types are converted.
pub(crate) use super::x86::conversions;

/// Buffers of more floats than this (1 MiB, beyond L2) are rotated with the 256-bit form,
/// the `avx2` loop (bit-identical). Streaming from and to memory, 512-bit stores measured
/// slower than 256-bit ones on both CPUs this was tuned on — an Intel Xeon (family 6,
/// model 167; the bare `x = -x` stream too) and an AMD EPYC Zen 4 (3–32 MiB groups:
/// 1.05–1.2× on the Xeon, up to 1.4× on Zen 4), while within L2 the 512-bit form is faster
/// (ViT-S, 0.3 MiB: 0.93×).
#[cfg(feature = "avx2")]
const BEYOND_L2_FLOATS: usize = 1 << 18;

/// Element conversions: AVX2 (+ F16C) eight values at a time, bit-identical to the reference.
pub(crate) use super::x86::{load, store};

// Inlined: the job goes straight to the `#[target_feature]` loop, not through one more
// out-of-line copy (a few ns of a small call).
#[inline(always)]
pub(crate) fn run<A: AngleSource>(job: Job<'_, A>) {
    if is_available() {
        #[cfg(feature = "avx2")]
        if job.x.len() > BEYOND_L2_FLOATS {
            return super::avx2::run(job);
        }
        // SAFETY: the CPU supports AVX-512F, AVX2 and FMA, checked just above.
        unsafe { run_avx512(job) }
    } else {
        // Unreachable through the public API (tables only accept available backends); kept
        // so that this safe function is sound on any CPU.
        super::scalar::run(job);
    }
}

/// The whole driver loop, compiled with AVX-512F, AVX2 and FMA so every vector operation
/// inlines.
///
/// # Safety
///
/// The CPU must support AVX-512F, AVX2 and FMA.
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn run_avx512<A: AngleSource>(job: Job<'_, A>) {
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
#[target_feature(enable = "avx512f,avx2,fma")]
pub unsafe extern "C" fn rope2d_mca_avx512(x: *mut f32, a: *const f32, b: *const f32, n: usize) {
    // SAFETY: as the caller guarantees.
    unsafe { super::simd::mca_regions::<V>(x, a, b, n) }
}

/// The first `n` lanes (`n ≤ 16`).
#[inline(always)]
fn lanes(n: usize) -> __mmask16 {
    ((1u32 << n) - 1) as __mmask16
}

// SAFETY: every method is an AVX-512F intrinsic (available: see `V`) on the pointers the
// trait's contract makes valid.
unsafe impl Vector for V {
    const LANES: usize = 16;

    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        // SAFETY: 16 readable floats at `p` (the trait's contract).
        V(unsafe { _mm512_loadu_ps(p) })
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32) {
        // SAFETY: 16 writable floats at `p`.
        unsafe { _mm512_storeu_ps(p, self.0) }
    }
    #[inline(always)]
    unsafe fn load_partial(p: *const f32, n: usize) -> Self {
        // SAFETY: `n` readable floats at `p`; masked-off lanes are not accessed.
        unsafe {
            if n == 8 {
                V(core::arch::x86_64::_mm512_zextps256_ps512(
                    core::arch::x86_64::_mm256_loadu_ps(p),
                ))
            } else {
                V(_mm512_maskz_loadu_ps(lanes(n), p))
            }
        }
    }
    #[inline(always)]
    unsafe fn store_partial(self, p: *mut f32, n: usize) {
        // SAFETY: `n` writable floats at `p`; masked-off lanes are not accessed.
        unsafe {
            if n == 8 {
                core::arch::x86_64::_mm256_storeu_ps(
                    p,
                    core::arch::x86_64::_mm512_castps512_ps256(self.0),
                );
            } else {
                _mm512_mask_storeu_ps(p, lanes(n), self.0)
            }
        }
    }
    #[inline(always)]
    unsafe fn swap_pairs(self) -> Self {
        // SAFETY: AVX-512F.
        V(unsafe { _mm512_permute_ps::<0b10_11_00_01>(self.0) })
    }
    #[inline(always)]
    unsafe fn dup_even(self) -> Self {
        // SAFETY: AVX-512F.
        V(unsafe { _mm512_moveldup_ps(self.0) })
    }
    #[inline(always)]
    unsafe fn dup_odd(self) -> Self {
        // SAFETY: AVX-512F.
        V(unsafe { _mm512_movehdup_ps(self.0) })
    }
    #[cfg(not(miri))]
    #[inline(always)]
    unsafe fn deinterleave(lo: Self, hi: Self) -> (Self, Self) {
        // SAFETY: AVX-512F: `vpermt2ps` picks the even (odd) floats of both vectors.
        unsafe {
            let even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
            let odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
            (
                V(_mm512_permutex2var_ps(lo.0, even, hi.0)),
                V(_mm512_permutex2var_ps(lo.0, odd, hi.0)),
            )
        }
    }
    /// Under Miri, which does not implement `vpermt2ps`: the same lanes moved through a
    /// stack copy.
    #[cfg(miri)]
    #[inline(always)]
    unsafe fn deinterleave(lo: Self, hi: Self) -> (Self, Self) {
        let mut all = [0f32; 32];
        let (mut c, mut s) = ([0f32; 16], [0f32; 16]);
        // SAFETY: AVX-512F; 32 floats of `all`, 16 of `c` and of `s`.
        unsafe {
            lo.store(all.as_mut_ptr());
            hi.store(all.as_mut_ptr().add(16));
            for (i, pair) in all.chunks_exact(2).enumerate() {
                c[i] = pair[0];
                s[i] = pair[1];
            }
            (V::load(c.as_ptr()), V::load(s.as_ptr()))
        }
    }
    #[inline(always)]
    unsafe fn mul(self, other: Self) -> Self {
        // SAFETY: AVX-512F.
        V(unsafe { _mm512_mul_ps(self.0, other.0) })
    }
    #[inline(always)]
    unsafe fn add(self, other: Self) -> Self {
        // SAFETY: AVX-512F.
        V(unsafe { _mm512_add_ps(self.0, other.0) })
    }
    #[inline(always)]
    unsafe fn fmadd(self, b: Self, c: Self) -> Self {
        // SAFETY: AVX-512F.
        V(unsafe { _mm512_fmadd_ps(self.0, b.0, c.0) })
    }
    #[inline(always)]
    unsafe fn fmsub(self, b: Self, c: Self) -> Self {
        // SAFETY: AVX-512F.
        V(unsafe { _mm512_fmsub_ps(self.0, b.0, c.0) })
    }
    #[inline(always)]
    unsafe fn alternating(negate_odd: bool) -> Self {
        let s = if negate_odd { 1.0 } else { -1.0 };
        // SAFETY: AVX-512F.
        V(unsafe { _mm512_setr_ps(s, -s, s, -s, s, -s, s, -s, s, -s, s, -s, s, -s, s, -s) })
    }
    #[inline(always)]
    unsafe fn splat(x: f32) -> Self {
        // SAFETY: AVX-512F.
        V(unsafe { _mm512_set1_ps(x) })
    }
    #[inline(always)]
    unsafe fn addsub(self, other: Self) -> Self {
        // SAFETY: AVX-512F. No `addsub` at 512 bits: `fmaddsub` with a factor of 1, whose
        // product is exact, so each lane is rounded once, as `addsub` rounds it.
        V(unsafe { _mm512_fmaddsub_ps(self.0, _mm512_set1_ps(1.0), other.0) })
    }
    #[inline(always)]
    unsafe fn fmaddsub(self, b: Self, c: Self) -> Self {
        // SAFETY: AVX-512F.
        V(unsafe { _mm512_fmaddsub_ps(self.0, b.0, c.0) })
    }
    #[inline(always)]
    unsafe fn fmsubadd(self, b: Self, c: Self) -> Self {
        // SAFETY: AVX-512F.
        V(unsafe { _mm512_fmsubadd_ps(self.0, b.0, c.0) })
    }
}
