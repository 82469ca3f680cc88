//! The NEON backend (aarch64): [`simd`](super::simd)'s algorithm on 4-lane `float32x4_t`
//! vectors. Interleaved pairs: one `vrev64q_f32` (swap within pairs), one multiply by the
//! signed sines and one `vfmaq_f32` with the cosines per 4 floats; half layout: the table
//! de-interleaved by `vuzp1q`/`vuzp2q` once per token.
//!
//! # Difference from [`Backend::Scalar`](super::Backend::Scalar)
//!
//! Exactly that of the `avx2` backend, bit for bit: each output fuses its first product,
//! `a' = rnd(a·c − rnd(b·s))`, `b' = rnd(b·c + rnd(a·s))` (the inverse flips the sign of
//! `s`), so per output
//!
//! `|neon − scalar| ≤ 3·2⁻²⁴·(|a·c| + |b·s|) + 3·2⁻¹⁵⁰ ≤ 2⁻²²·(|a| + |b|) + 2⁻¹⁴⁸`.
//!
//! RoPE-Mixed angle sums are formed without FMA, bit for bit as in scalar. NaN propagates as
//! in scalar; infinities give the same infinities and NaNs as scalar unless a result lies
//! within an ulp of overflow.

use core::arch::aarch64::{
    float32x4_t, vaddq_f32, vdupq_n_f32, vfmaq_f32, vfmsq_f32, vld1q_f32, vmulq_f32, vnegq_f32,
    vrev64q_f32, vst1q_f32, vtrn1q_f32, vtrn2q_f32, vuzp1q_f32, vuzp2q_f32,
};

use super::simd::{Simd, Vector};
use super::{AngleSource, Job, drive};

/// A NEON vector. Only constructed inside [`run_neon`], which runs only on CPUs with NEON:
/// every `unsafe` block below relies on that.
#[derive(Clone, Copy)]
struct V(float32x4_t);

/// Whether this CPU has NEON (always, on the usual aarch64 targets).
#[inline]
pub(crate) fn is_available() -> bool {
    #[cfg(target_feature = "neon")]
    {
        true
    }
    #[cfg(all(not(target_feature = "neon"), feature = "std"))]
    {
        std::arch::is_aarch64_feature_detected!("neon")
    }
    #[cfg(all(not(target_feature = "neon"), not(feature = "std")))]
    {
        false
    }
}

/// Element conversions: the reference ones.
pub(crate) use crate::element::{load, store};

pub(crate) fn run<A: AngleSource>(job: Job<'_, A>) {
    if is_available() {
        // SAFETY: the CPU supports NEON, checked just above.
        unsafe { run_neon(job) }
    } else {
        // Unreachable through the public API; keeps this safe function sound everywhere.
        super::scalar::run(job);
    }
}

/// The whole driver loop, compiled with NEON so every vector operation inlines.
///
/// # Safety
///
/// The CPU must support NEON.
#[target_feature(enable = "neon")]
unsafe fn run_neon<A: AngleSource>(job: Job<'_, A>) {
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
#[target_feature(enable = "neon")]
pub unsafe extern "C" fn rope2d_mca_neon(x: *mut f32, a: *const f32, b: *const f32, n: usize) {
    // SAFETY: as the caller guarantees.
    unsafe { super::simd::mca_regions::<V>(x, a, b, n) }
}

// SAFETY: every method is a NEON intrinsic (available: see `V`) on the pointers the trait's
// contract makes valid.
unsafe impl Vector for V {
    const LANES: usize = 4;

    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        // SAFETY: 4 readable floats at `p` (the trait's contract).
        V(unsafe { vld1q_f32(p) })
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32) {
        // SAFETY: 4 writable floats at `p`.
        unsafe { vst1q_f32(p, self.0) }
    }
    #[inline(always)]
    unsafe fn load_partial(p: *const f32, n: usize) -> Self {
        let mut lanes = [0f32; 4];
        // SAFETY: `n < 4` readable floats at `p`, 4 of `lanes`.
        unsafe {
            core::ptr::copy_nonoverlapping(p, lanes.as_mut_ptr(), n);
            V(vld1q_f32(lanes.as_ptr()))
        }
    }
    #[inline(always)]
    unsafe fn store_partial(self, p: *mut f32, n: usize) {
        let mut lanes = [0f32; 4];
        // SAFETY: 4 floats of `lanes`, `n < 4` writable floats at `p`.
        unsafe {
            vst1q_f32(lanes.as_mut_ptr(), self.0);
            core::ptr::copy_nonoverlapping(lanes.as_ptr(), p, n);
        }
    }
    #[inline(always)]
    unsafe fn swap_pairs(self) -> Self {
        // SAFETY: NEON.
        V(unsafe { vrev64q_f32(self.0) })
    }
    #[inline(always)]
    unsafe fn dup_even(self) -> Self {
        // SAFETY: NEON.
        V(unsafe { vtrn1q_f32(self.0, self.0) })
    }
    #[inline(always)]
    unsafe fn dup_odd(self) -> Self {
        // SAFETY: NEON.
        V(unsafe { vtrn2q_f32(self.0, self.0) })
    }
    #[inline(always)]
    unsafe fn deinterleave(lo: Self, hi: Self) -> (Self, Self) {
        // SAFETY: NEON.
        unsafe { (V(vuzp1q_f32(lo.0, hi.0)), V(vuzp2q_f32(lo.0, hi.0))) }
    }
    #[inline(always)]
    unsafe fn mul(self, other: Self) -> Self {
        // SAFETY: NEON.
        V(unsafe { vmulq_f32(self.0, other.0) })
    }
    #[inline(always)]
    unsafe fn add(self, other: Self) -> Self {
        // SAFETY: NEON.
        V(unsafe { vaddq_f32(self.0, other.0) })
    }
    #[inline(always)]
    unsafe fn fmadd(self, b: Self, c: Self) -> Self {
        // SAFETY: NEON: `c + self·b`, one rounding.
        V(unsafe { vfmaq_f32(c.0, self.0, b.0) })
    }
    #[inline(always)]
    unsafe fn fmsub(self, b: Self, c: Self) -> Self {
        // SAFETY: NEON: `−(c − self·b)`, one rounding (the negation is exact).
        V(unsafe { vnegq_f32(vfmsq_f32(c.0, self.0, b.0)) })
    }
    #[inline(always)]
    unsafe fn alternating(negate_odd: bool) -> Self {
        let s = if negate_odd { 1.0 } else { -1.0 };
        let lanes = [s, -s, s, -s];
        // SAFETY: NEON; 4 floats of `lanes`.
        V(unsafe { vld1q_f32(lanes.as_ptr()) })
    }
    #[inline(always)]
    unsafe fn splat(x: f32) -> Self {
        // SAFETY: NEON.
        V(unsafe { vdupq_n_f32(x) })
    }
}
