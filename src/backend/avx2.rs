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
    __m256, __m256i, _CMP_ORD_Q, _MM_FROUND_TO_NEAREST_INT, _mm_loadl_epi64, _mm_loadu_si128,
    _mm_packs_epi16, _mm_shuffle_epi32, _mm_storel_epi64, _mm_storeu_si128, _mm256_add_epi32,
    _mm256_add_ps, _mm256_addsub_ps, _mm256_and_ps, _mm256_and_si256, _mm256_blendv_epi8,
    _mm256_blendv_ps, _mm256_castpd_ps, _mm256_castps_pd, _mm256_castps_si256, _mm256_castsi256_ps,
    _mm256_castsi256_si128, _mm256_cmp_ps, _mm256_cmpgt_epi32, _mm256_cvtepi8_epi32,
    _mm256_cvtepi16_epi32, _mm256_cvtepi32_ps, _mm256_cvtepu16_epi32, _mm256_cvtph_ps,
    _mm256_cvtps_epi32, _mm256_cvtps_ph, _mm256_extracti128_si256, _mm256_fmadd_ps,
    _mm256_fmaddsub_ps, _mm256_fmsub_ps, _mm256_fmsubadd_ps, _mm256_loadu_ps, _mm256_maskload_ps,
    _mm256_maskstore_ps, _mm256_min_ps, _mm256_movehdup_ps, _mm256_moveldup_ps, _mm256_mul_ps,
    _mm256_or_si256, _mm256_packs_epi32, _mm256_packus_epi32, _mm256_permute_ps,
    _mm256_permute4x64_epi64, _mm256_permute4x64_pd, _mm256_set_epi32, _mm256_set1_epi32,
    _mm256_set1_ps, _mm256_setr_ps, _mm256_shuffle_ps, _mm256_slli_epi32, _mm256_srli_epi32,
    _mm256_storeu_ps, _mm256_xor_ps,
};

use core::arch::x86_64::{
    _CMP_UNORD_Q, _mm256_blend_epi16, _mm256_loadu_si256, _mm256_storeu_si256,
};

use super::simd::{Bf16Pairs, Simd, Stored, Vector};
use super::x86::{AVX2_FMA, F16C, features};
use super::{AngleSource, Job, drive};
use crate::element::{Element, sealed::Format};

/// An AVX2 vector. Only constructed inside functions that run only on CPUs with AVX2 and FMA
/// ([`run_avx2`], [`run_avx2_f16c`], [`run_with_32_registers`] and the staging loop, each
/// called after the check): every `unsafe` block below relies on that. `SET` is the
/// instruction set its loops ([`Forms`](super::simd::Forms)) are compiled with: [`AVX2`],
/// [`AVX2_F16C`] (`f16` buffers) or [`AVX512VL`] (the `avx512` backend's 256-bit form).
#[derive(Clone, Copy)]
struct V<const SET: u8 = AVX2>(__m256);

/// AVX2 and FMA.
const AVX2: u8 = 0;
/// AVX2, FMA and F16C.
const AVX2_F16C: u8 = 1;
/// AVX-512F and VL as well: the same 256-bit operations, bit for bit, with 32 registers.
#[cfg(feature = "avx512")]
const AVX512VL: u8 = 2;

super::simd::forms!(V<AVX2>, features = "avx2,fma");
super::simd::forms!(V<AVX2_F16C>, features = "avx2,fma,f16c");
#[cfg(feature = "avx512")]
super::simd::forms!(V<AVX512VL>, features = "avx512f,avx512vl,avx2,fma,f16c");

/// Whether this CPU has AVX2 and FMA and the OS saves their registers: CPUID and XGETBV,
/// read once and cached ([`x86`](super::x86)), with or without `std`.
#[inline]
pub(crate) fn is_available() -> bool {
    super::x86::features() & super::x86::AVX2_FMA != 0
}

/// The loop, for [`Backend::describe`](super::Backend::describe).
pub(crate) const FORM: &str = concat!(
    "256-bit FMA; each token's angles loaded once, its heads rotated in address order, ",
    "half-layout heads prefetched beyond 1 MiB"
);

/// How element types are converted.
pub(crate) fn conversions() -> &'static str {
    if features() & F16C != 0 {
        "f16 by F16C, bf16, i16 and i8 by AVX2, in the rotation loop: loaded eight values at a time, rotated i16, i8 and bf16 stored sixteen at a time where a loop holds two vectors (one pack of both; interleaved bf16 pairs split by a shift and a mask); Q15 tables by vpmaddwd"
    } else {
        "f16 in scalar code (no F16C), bf16, i16 and i8 by AVX2, in the rotation loop: loaded eight values at a time, rotated i16, i8 and bf16 stored sixteen at a time where a loop holds two vectors (one pack of both; interleaved bf16 pairs split by a shift and a mask); Q15 tables by vpmaddwd"
    }
}

/// Whether this CPU converts `E` with vector instructions: AVX2, and F16C for `f16`.
#[inline(always)]
pub(super) fn converts<E: Element>() -> bool {
    let f = features();
    f & AVX2_FMA != 0 && (E::FORMAT != Format::F16 || f & F16C != 0)
}

/// Whether this backend's register form takes heads of `head_dim` values of `E` paired as
/// `pairing` (for `avx512`, which runs this loop for heads its own vectors do not tile).
#[cfg(feature = "avx512")]
#[inline(always)]
pub(super) fn holds_in_registers<E: Element>(head_dim: usize, pairing: super::Pairing) -> bool {
    super::simd::holds_in_registers::<V, E>(head_dim, pairing)
}

/// Whether every one of `runs` falls on whole vectors of this backend's register form (for
/// `avx512`, as [`holds_in_registers`]).
#[cfg(feature = "avx512")]
#[inline(always)]
pub(super) fn splits_runs<E: Element>(pairing: super::Pairing, runs: &[crate::spec::Run]) -> bool {
    super::simd::splits_runs::<V, E>(pairing, runs)
}

/// Whether [`run`] takes buffers of `E` at this scale ratio, converting in the rotation loop
/// (ratio 1; `f16` with F16C); otherwise the caller stages them in `f32`.
#[inline(always)]
pub(crate) fn fuses<E: Element>(ratio: f32) -> bool {
    ratio == 1.0 && converts::<E>()
}

/// Whether the CPU has everything the staging loops are compiled for.
#[inline(always)]
fn stages_in_vectors() -> bool {
    features() & (AVX2_FMA | F16C) == AVX2_FMA | F16C
}

super::simd::staging!(
    V,
    features = "avx2,fma,f16c",
    available = stages_in_vectors()
);

// Inlined: the job goes straight to the `#[target_feature]` loop, not through one more
// out-of-line copy (a few ns of a small call).
#[inline(always)]
pub(crate) fn run<E: Element, A: AngleSource>(job: Job<'_, A, E>) {
    if !converts::<E>() {
        // Unreachable through the public API (tables only accept available backends, and
        // `fuses` sends `f16` without F16C to staging); kept so that this safe function is
        // sound on any CPU.
        return super::scalar::run(job);
    }
    // A constant condition, so that each type instantiates its own driver only: `f16` not
    // `run_avx2` (whose loops could not inline F16C's conversions), the others not
    // `run_avx2_f16c` (the branch not taken is not compiled).
    if const { matches!(E::FORMAT, Format::F16) } {
        match job.retype(E::as_f16) {
            // SAFETY: the CPU supports AVX2, FMA and F16C (`converts`).
            Ok(job) => unsafe { run_avx2_f16c(job) },
            // Unreachable: `E` is `f16`.
            Err(job) => super::scalar::run(job),
        }
    } else {
        // SAFETY: the CPU supports AVX2 and FMA (`converts`).
        unsafe { run_avx2(job) }
    }
}

/// The whole driver loop, compiled with AVX2 and FMA so every vector operation inlines (the
/// loops over heads out of line, [`Forms`](super::simd::Forms), compiled with the same).
///
/// # Safety
///
/// The CPU must support AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
unsafe fn run_avx2<E: Element, A: AngleSource>(job: Job<'_, A, E>) {
    // SAFETY: the CPU supports AVX2 and FMA (this function's contract), `V`'s instruction set.
    let kernel = unsafe { Simd::<V, E>::new() };
    drive(kernel, job);
}

/// [`run_avx2`] with F16C, for `f16` buffers.
///
/// # Safety
///
/// The CPU must support AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn run_avx2_f16c<A: AngleSource>(job: Job<'_, A, half::f16>) {
    // SAFETY: the CPU supports AVX2, FMA and F16C (this function's contract), `V`'s instruction
    // set.
    let kernel = unsafe { Simd::<V<AVX2_F16C>, half::f16>::new() };
    drive(kernel, job);
}

/// The driver loop compiled with AVX-512VL as well: the same 256-bit operations, bit for bit,
/// which may then use all 32 vector registers — a half-layout head of d = 128 holds its
/// angles in 16 of them, which AVX2's 16 registers cannot do without spilling (the `avx512`
/// backend's form beyond L2).
///
/// # Safety
///
/// The CPU must support AVX-512F and VL, AVX2, FMA and F16C.
#[cfg(feature = "avx512")]
#[target_feature(enable = "avx512f,avx512vl,avx2,fma,f16c")]
pub(super) unsafe fn run_with_32_registers<E: Element, A: AngleSource>(job: Job<'_, A, E>) {
    // SAFETY: the CPU supports AVX-512F and VL, AVX2, FMA and F16C (this function's contract),
    // `V`'s instruction set.
    let kernel = unsafe { Simd::<V<AVX512VL>, E>::new() };
    drive(kernel, job);
}

/// The 256-bit Q15 vector, for the `avx512` loop's sections that 512-bit blocks do not tile.
#[cfg(feature = "avx512")]
pub(super) use q15::Lanes as Q15Lanes256;
pub(crate) use q15::run_q15;

/// Q15 tables on `i16` and `i8` buffers: the scalar kernel with its pair loop in 256-bit
/// integer vectors ([`lane_blocks`](super::simd::lane_blocks) over [`Lanes`](q15::Lanes): 8
/// interleaved or 16 half-layout pairs a block; interleaved `i8` 16 a step, then an 8-pair
/// block), bit for bit the scalar results. RoPE-Mixed's summed entries and the pairs after
/// the last whole block take the scalar code.
mod q15 {
    use super::super::scalar::Fixed;
    use super::super::simd::{Q15Lanes, lane_blocks};
    use crate::config::Direction;
    use core::arch::x86_64::{
        __m256i, _mm_loadu_si128, _mm_storeu_si128, _mm256_add_epi32, _mm256_castsi256_si128,
        _mm256_cvtepi8_epi16, _mm256_loadu_si256, _mm256_madd_epi16, _mm256_packs_epi16,
        _mm256_packs_epi32, _mm256_permute2x128_si256, _mm256_permute4x64_epi64, _mm256_set1_epi32,
        _mm256_setr_epi8, _mm256_setzero_si256, _mm256_shuffle_epi8, _mm256_sign_epi16,
        _mm256_srai_epi32, _mm256_storeu_si256, _mm256_unpackhi_epi8, _mm256_unpackhi_epi16,
        _mm256_unpacklo_epi8, _mm256_unpacklo_epi16,
    };

    super::super::simd::q15_loop!(
        features = "avx2",
        available = super::is_available(),
        blocks = lane_blocks::<Lanes, _>,
        fallback = crate::backend::scalar::run_q15
    );

    /// 16 `i16` lanes in a 256-bit vector. Only constructed where AVX2 is available (the
    /// `unsafe` trait's contract).
    #[derive(Clone, Copy)]
    pub(in crate::backend) struct Lanes(__m256i);

    // SAFETY: every method below uses AVX2 only, and is only called where it is available
    // (the trait's contract).
    unsafe impl Q15Lanes for Lanes {
        const LANES: usize = 16;

        #[inline(always)]
        unsafe fn load<V: Fixed>(x: &[V]) -> Self {
            let x = &x[..16];
            // SAFETY: AVX2 (caller); `V` is `i16` or `i8` (`Fixed`'s only types), 16 of them
            // readable at `x`.
            Self(unsafe {
                if size_of::<V>() == 2 {
                    _mm256_loadu_si256(x.as_ptr().cast())
                } else {
                    _mm256_cvtepi8_epi16(_mm_loadu_si128(x.as_ptr().cast()))
                }
            })
        }

        #[inline(always)]
        unsafe fn store<V: Fixed>(x: &mut [V], v: Self) {
            let x = &mut x[..16];
            // SAFETY: as in `load`, 16 values writable at `x`.
            unsafe {
                if size_of::<V>() == 2 {
                    _mm256_storeu_si256(x.as_mut_ptr().cast(), v.0);
                } else {
                    // `[r0..7, r0..7 | r8..15, r8..15]` as bytes: keep qwords 0 and 2.
                    let bytes = _mm256_permute4x64_epi64::<0b1000>(_mm256_packs_epi16(v.0, v.0));
                    _mm_storeu_si128(x.as_mut_ptr().cast(), _mm256_castsi256_si128(bytes));
                }
            }
        }

        #[inline(always)]
        unsafe fn entries(angles: &[[i16; 2]], i: usize) -> Self {
            let e = &angles[i..i + 8];
            // SAFETY: AVX2 (caller); 8 entries, 32 bytes, readable at `e`.
            Self(unsafe { _mm256_loadu_si256(e.as_ptr().cast()) })
        }

        #[inline(always)]
        unsafe fn weights(e: Self, dir: Direction) -> (Self, Self) {
            // `vpsignw` multipliers per 32 bits (`[c, s]`): keep both, negate the high
            // (`s`) or the low half.
            const KEEP: i32 = 0x0001_0001;
            const NEGATE_HIGH: i32 = 0xFFFF_0001_u32 as i32;
            const NEGATE_LOW: i32 = 0x0001_FFFF;
            let (m1, m2) = match dir {
                Direction::Forward => (NEGATE_HIGH, KEEP),
                Direction::Inverse => (KEEP, NEGATE_LOW),
            };
            // SAFETY: AVX2 (caller).
            unsafe {
                let swap = _mm256_setr_epi8(
                    2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13, 2, 3, 0, 1, 6, 7, 4, 5,
                    10, 11, 8, 9, 14, 15, 12, 13,
                );
                let w1 = _mm256_sign_epi16(e.0, _mm256_set1_epi32(m1));
                let swapped = _mm256_shuffle_epi8(e.0, swap);
                let w2 = _mm256_sign_epi16(swapped, _mm256_set1_epi32(m2));
                (Self(w1), Self(w2))
            }
        }

        #[inline(always)]
        unsafe fn half_entries(e0: Self, e1: Self) -> (Self, Self) {
            // SAFETY: AVX2 (caller). The unpacks bring together pairs 0–3 and 8–11 (`lo`),
            // 4–7 and 12–15 (`hi`).
            unsafe {
                (
                    Self(_mm256_permute2x128_si256::<0x20>(e0.0, e1.0)),
                    Self(_mm256_permute2x128_si256::<0x31>(e0.0, e1.0)),
                )
            }
        }

        #[inline(always)]
        unsafe fn madd_round<const BYTES: bool>(x: Self, w: Self) -> Self {
            let half = if BYTES { 1 << 22 } else { 1 << 14 };
            // SAFETY: AVX2 (caller).
            unsafe {
                let sum = _mm256_add_epi32(_mm256_madd_epi16(x.0, w.0), _mm256_set1_epi32(half));
                Self(if BYTES {
                    _mm256_srai_epi32::<23>(sum)
                } else {
                    _mm256_srai_epi32::<15>(sum)
                })
            }
        }

        #[inline(always)]
        unsafe fn packs(a: Self, b: Self) -> Self {
            // SAFETY: AVX2 (caller).
            Self(unsafe { _mm256_packs_epi32(a.0, b.0) })
        }

        #[inline(always)]
        unsafe fn zip(v: Self) -> Self {
            // SAFETY: AVX2 (caller).
            unsafe {
                let zip = _mm256_setr_epi8(
                    0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15, 0, 1, 8, 9, 2, 3, 10, 11,
                    4, 5, 12, 13, 6, 7, 14, 15,
                );
                Self(_mm256_shuffle_epi8(v.0, zip))
            }
        }

        #[inline(always)]
        unsafe fn unpack(a: Self, b: Self) -> (Self, Self) {
            // SAFETY: AVX2 (caller).
            unsafe {
                (
                    Self(_mm256_unpacklo_epi16(a.0, b.0)),
                    Self(_mm256_unpackhi_epi16(a.0, b.0)),
                )
            }
        }

        #[inline(always)]
        unsafe fn load_bytes<V: Fixed>(x: &[V]) -> (Self, Self) {
            let x = &x[..32];
            // SAFETY: AVX2 (caller); `V` is `i8` (caller), 32 of them, 32 bytes, readable at
            // `x`.
            unsafe {
                let v = _mm256_loadu_si256(x.as_ptr().cast());
                let zero = _mm256_setzero_si256();
                (
                    Self(_mm256_unpacklo_epi8(zero, v)),
                    Self(_mm256_unpackhi_epi8(zero, v)),
                )
            }
        }

        #[inline(always)]
        unsafe fn store_bytes<V: Fixed>(x: &mut [V], lo: Self, hi: Self) {
            let x = &mut x[..32];
            // SAFETY: as in `load_bytes`, 32 bytes writable at `x`.
            unsafe { _mm256_storeu_si256(x.as_mut_ptr().cast(), _mm256_packs_epi16(lo.0, hi.0)) }
        }
    }
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
///
/// # Safety
///
/// The CPU supports AVX2.
#[inline(always)]
unsafe fn fix_lanes(v: __m256) -> __m256 {
    // SAFETY: AVX2 (caller).
    unsafe { _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(v))) }
}

/// Lanes `0 .. n` set: the mask of `vmaskmovps`.
///
/// # Safety
///
/// The CPU supports AVX2.
#[inline(always)]
unsafe fn first_lanes(n: usize) -> __m256i {
    // SAFETY: AVX2 (caller).
    unsafe {
        _mm256_cmpgt_epi32(
            _mm256_set1_epi32(n as i32),
            _mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0),
        )
    }
}

// SAFETY: every method is an AVX2/FMA intrinsic (available: see `V`) on the pointers the
// trait's contract makes valid.
unsafe impl<const SET: u8> Vector for V<SET> {
    // 16 registers: six vectors' cosines and sines beside the loop's own.
    const ANGLE_REGISTERS: usize = 6;
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
    unsafe fn xor(self, other: Self) -> Self {
        // SAFETY: AVX.
        V(unsafe { _mm256_xor_ps(self.0, other.0) })
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
    unsafe fn select(mask: Self, a: Self, b: Self) -> Self {
        // SAFETY: AVX; `vblendvps` tests each lane's sign bit, set in an all-ones mask.
        V(unsafe { _mm256_blendv_ps(b.0, a.0, mask.0) })
    }
    #[inline(always)]
    unsafe fn prefetch(p: *const u8) {
        // SAFETY: SSE (every x86_64 CPU); a prefetch reads nothing and never faults.
        unsafe { core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast()) }
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

// --- element conversions ------------------------------------------------------------------
//
// Bit for bit those of `element` (f16: F16C rounds to nearest-even like `half`; bf16: the
// same integer rounding as `half`; integers: the same clamp and nearest-even rounding, NaN to
// 0, the saturating packs doing the lower end — and the whole clamp of a rotation's output,
// `Stored::store_rotated`). Each is a function, not a closure, so that its intrinsics inline
// into the `#[target_feature]` loops.

// Interleaved bf16 pairs: split by a shift and a mask, merged by one `vpblendw`.
// SAFETY: AVX2 (available: see `V`); `2·LANES` bf16 (32 bytes) readable or writable at `p`
// (the trait's contract).
unsafe impl<const SET: u8> Bf16Pairs for V<SET> {
    #[inline(always)]
    unsafe fn load_bf16_pairs(p: *const u16) -> (Self, Self) {
        // SAFETY: as stated on the impl: `2·LANES` bf16 (32 bytes) readable at `p`.
        unsafe {
            let w = _mm256_loadu_si256(p.cast());
            let first = _mm256_slli_epi32::<16>(w);
            let second = _mm256_and_si256(w, _mm256_set1_epi32(0xFFFF_0000_u32 as i32));
            (
                V(_mm256_castsi256_ps(first)),
                V(_mm256_castsi256_ps(second)),
            )
        }
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    unsafe fn store_bf16_pairs(a: Self, b: Self, p: *mut u16) {
        // SAFETY: as stated on the impl: `2·LANES` bf16 (32 bytes) writable at `p`.
        unsafe {
            // Odd 16-bit words (each lane's high half) from the second element's rounding,
            // even ones from the first's, shifted down.
            let first = bf16_rotated_lanes(a.0);
            let words = _mm256_blend_epi16::<0b1010_1010>(first, bf16_nearest_even(b.0));
            _mm256_storeu_si256(p.cast(), words);
        }
    }
}

// SAFETY: `f32` lanes load and store themselves; `f16` uses F16C, whose arms run only in the
// drivers compiled with it (`run_avx2_f16c`, `run_with_32_registers`, the staging loops), each
// called on CPUs that have it (`converts`, `stages_in_vectors`): `run` never sends `f16` to
// `run_avx2` (its `V<AVX2>` instantiation of these arms is dead code); the rest is AVX2. A
// buffer of `E` has the layout of the integer type each arm reads (`f16`, `bf16`:
// `repr(transparent)` over `u16`), and the trait's contract makes `LANES` values readable or
// writable at `p`.
unsafe impl<E: Element, const SET: u8> Stored<E> for V<SET> {
    // Out of line in unoptimised builds: every inlined copy of every arm would take its
    // own stack slots there (no slot reuse), megabytes for the whole driver loop.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    unsafe fn load_values(p: *const E) -> Self {
        // SAFETY: as stated on the impl.
        unsafe {
            V(match E::FORMAT {
                Format::F32 => _mm256_loadu_ps(p.cast()),
                Format::F16 => _mm256_cvtph_ps(_mm_loadu_si128(p.cast())),
                Format::Bf16 => {
                    let h = _mm256_cvtepu16_epi32(_mm_loadu_si128(p.cast()));
                    _mm256_castsi256_ps(_mm256_slli_epi32::<16>(h))
                }
                Format::I16 => _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(_mm_loadu_si128(p.cast()))),
                Format::I8 => _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(p.cast()))),
            })
        }
    }

    // Out of line in unoptimised builds: every inlined copy of every arm would take its
    // own stack slots there (no slot reuse), megabytes for the whole driver loop.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    unsafe fn store_values(self, p: *mut E) {
        let v = self.0;
        // SAFETY: as stated on the impl.
        unsafe {
            match E::FORMAT {
                Format::F32 => _mm256_storeu_ps(p.cast(), v),
                Format::F16 => {
                    _mm_storeu_si128(p.cast(), _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v))
                }
                Format::Bf16 => _mm_storeu_si128(p.cast(), bf16_bits(v)),
                // The saturating packs take what `rounded_below` leaves out of range.
                Format::I16 => store_i16(rounded_below(v, 32767.0), p.cast()),
                Format::I8 => store_i8(rounded_below(v, 127.0), p.cast()),
            }
        }
    }

    // Integers: lanes below 2³⁰ (the caller's contract) convert exactly, and the saturating
    // packs clamp; no `vcmpps`, `vandps` and `vminps`.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    unsafe fn store_rotated(self, p: *mut E) {
        // SAFETY: as stated on the impl.
        unsafe {
            match E::FORMAT {
                Format::I16 => store_i16(_mm256_cvtps_epi32(self.0), p.cast()),
                Format::I8 => store_i8(_mm256_cvtps_epi32(self.0), p.cast()),
                Format::Bf16 => _mm_storeu_si128(p.cast(), bf16_packed(bf16_rotated_lanes(self.0))),
                _ => self.store_values(p),
            }
        }
    }

    // One pack of both vectors and one shuffle to put its 128-bit lanes in order, instead
    // of a pack and a shuffle (two for `i8`) per vector.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    unsafe fn store_rotated_pair(first: Self, second: Self, p: *mut E) {
        // SAFETY: as stated on the impl, for `2·LANES` values.
        unsafe {
            match E::FORMAT {
                Format::I16 => {
                    let (w0, w1) = (_mm256_cvtps_epi32(first.0), _mm256_cvtps_epi32(second.0));
                    _mm256_storeu_si256(p.cast(), in_order(_mm256_packs_epi32(w0, w1)));
                }
                Format::I8 => {
                    let (w0, w1) = (_mm256_cvtps_epi32(first.0), _mm256_cvtps_epi32(second.0));
                    // Words [first 0..3, second 0..3 | first 4..7, second 4..7], bytes in
                    // the same order: dwords 0, 2, 1, 3 of them are the values in order.
                    let words = _mm256_packs_epi32(w0, w1);
                    let bytes = _mm_packs_epi16(
                        _mm256_castsi256_si128(words),
                        _mm256_extracti128_si256::<1>(words),
                    );
                    _mm_storeu_si128(p.cast(), _mm_shuffle_epi32::<0b11_01_10_00>(bytes));
                }
                Format::Bf16 => {
                    let (b0, b1) = (bf16_rotated_lanes(first.0), bf16_rotated_lanes(second.0));
                    // Every lane is below 2¹⁶: nothing saturates.
                    _mm256_storeu_si256(p.cast(), in_order(_mm256_packus_epi32(b0, b1)));
                }
                _ => {
                    first.store_rotated(p);
                    second.store_rotated(p.add(Self::LANES));
                }
            }
        }
    }
}

/// A 256-bit pack of two vectors `a`, `b` ([a 0..3, b 0..3 | a 4..7, b 4..7]) put in order
/// (quadwords 0, 2, 1, 3).
///
/// # Safety
///
/// The CPU supports AVX2.
#[inline(always)]
unsafe fn in_order(packed: __m256i) -> __m256i {
    // SAFETY: AVX2 (caller).
    unsafe { _mm256_permute4x64_epi64::<0b11_01_10_00>(packed) }
}

/// Stores eight 32-bit lanes at `p` as `i16`, saturated.
///
/// # Safety
///
/// The CPU supports AVX2; eight `i16` writable at `p`.
#[inline(always)]
unsafe fn store_i16(w: __m256i, p: *mut i16) {
    // SAFETY: AVX2 and `p` (caller).
    unsafe {
        let packed = _mm256_permute4x64_epi64::<0b1000>(_mm256_packs_epi32(w, w));
        _mm_storeu_si128(p.cast(), _mm256_castsi256_si128(packed));
    }
}

/// Stores eight 32-bit lanes at `p` as `i8`, saturated.
///
/// # Safety
///
/// The CPU supports AVX2; eight `i8` writable at `p`.
#[inline(always)]
unsafe fn store_i8(w: __m256i, p: *mut i8) {
    // SAFETY: AVX2 and `p` (caller).
    unsafe {
        let words = _mm256_packs_epi32(w, w);
        let (lo, hi) = (
            _mm256_castsi256_si128(words),
            _mm256_extracti128_si256::<1>(words),
        );
        // lo = [v0..v3, v0..v3], hi = [v4..v7, v4..v7] as i16: bytes v0..v3 v4..v7.
        let bytes = _mm_packs_epi16(lo, hi);
        _mm_storel_epi64(p.cast(), _mm_shuffle_epi32::<0b1000>(bytes));
    }
}

/// Eight floats rounded to bf16 as `half` rounds them (nearest-even on the top 16 bits; a
/// NaN keeps its top bits and becomes quiet), packed into 8 × 16 bits in order.
///
/// # Safety
///
/// The CPU supports AVX2.
#[inline(always)]
unsafe fn bf16_bits(v: __m256) -> core::arch::x86_64::__m128i {
    // SAFETY: AVX2 (caller).
    unsafe { bf16_packed(_mm256_srli_epi32::<16>(bf16_rounded(v))) }
}

/// Eight 32-bit lanes below 2¹⁶ packed into 8 × 16 bits in order.
///
/// # Safety
///
/// The CPU supports AVX2.
#[inline(always)]
unsafe fn bf16_packed(b: __m256i) -> core::arch::x86_64::__m128i {
    // SAFETY: AVX2 (caller).
    unsafe {
        // packus works within 128-bit lanes: [b0..b3, b0..b3 | b4..b7, b4..b7]; keep qwords
        // 0 and 2 (every lane is below 2¹⁶, so nothing saturates).
        let packed = _mm256_permute4x64_epi64::<0b1000>(_mm256_packus_epi32(b, b));
        _mm256_castsi256_si128(packed)
    }
}

/// Eight floats of a rotation loop's output rounded to bf16 as [`bf16_nearest_even`] rounds
/// them, each in the low half of its 32-bit lane (the high half zero).
///
/// # Safety
///
/// The CPU supports AVX2.
#[inline(always)]
unsafe fn bf16_rotated_lanes(v: __m256) -> __m256i {
    // SAFETY: AVX2 (caller).
    unsafe { _mm256_srli_epi32::<16>(bf16_nearest_even(v)) }
}

/// Eight floats rounded to bf16 nearest-even, each in the high half of its lane (the low half
/// garbage): `0x7FFF` and the kept part's lowest bit added. As `half` rounds them but for
/// NaNs, unless they are quiet with zero low 16 bits (a rotation loop's: see
/// [`Stored::store_rotated`]).
///
/// # Safety
///
/// The CPU supports AVX2.
#[inline(always)]
unsafe fn bf16_nearest_even(v: __m256) -> __m256i {
    // SAFETY: AVX2 (caller).
    unsafe {
        let x = _mm256_castps_si256(v);
        let lsb = _mm256_and_si256(_mm256_srli_epi32::<16>(x), _mm256_set1_epi32(1));
        _mm256_add_epi32(x, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF)))
    }
}

/// Eight floats rounded to bf16 as `half` rounds them, each in the high half of its lane (the
/// low half is garbage): nearest-even by adding `0x7FFF` and the kept part's lowest bit; a
/// NaN keeps its top bits with the quiet bit set.
///
/// # Safety
///
/// The CPU supports AVX2.
#[inline(always)]
unsafe fn bf16_rounded(v: __m256) -> __m256i {
    // SAFETY: AVX2 (caller).
    unsafe {
        let x = _mm256_castps_si256(v);
        let rounded = bf16_nearest_even(v);
        let nan = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_UNORD_Q>(v, v));
        let quieted = _mm256_or_si256(x, _mm256_set1_epi32(0x0040_0000));
        _mm256_blendv_epi8(rounded, quieted, nan)
    }
}

/// `v` rounded to nearest-even integers, NaN lanes 0 and lanes above `hi` at `hi`; lanes below
/// −2³¹ (−∞ among them) become −2³¹, which the saturating packs take to the type's minimum
/// as the clamp of [`element::store`](crate::element::store) does.
///
/// # Safety
///
/// The CPU supports AVX2.
#[inline(always)]
unsafe fn rounded_below(v: __m256, hi: f32) -> __m256i {
    // SAFETY: AVX (caller).
    unsafe {
        let v = _mm256_and_ps(v, _mm256_cmp_ps::<_CMP_ORD_Q>(v, v));
        // MXCSR's default rounding: nearest-even.
        _mm256_cvtps_epi32(_mm256_min_ps(v, _mm256_set1_ps(hi)))
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::super::{Kernel, Pairing, RowBuffer};
    use super::{Simd, V};
    use crate::config::{Direction, Layout};
    use crate::spec::Run;
    use core::mem::MaybeUninit;

    /// The grid loop from the tables rotates a grid's buffer, and refuses, touching nothing,
    /// a buffer of more lines than the grid (its coordinates would step past the grid and the
    /// tables) and a grid that reaches past a table. The engine never asks for either: this
    /// holds the safe function to its contract by itself.
    #[test]
    fn grid_from_tables_refuses_what_lies_past_the_grid() {
        if !super::is_available() {
            return;
        }
        // SAFETY: the CPU has AVX2 and FMA (checked above).
        let kernel = unsafe { Simd::<V, f32>::new() };
        // d = 16, interleaved: two 8-lane vectors a head; pairs 0–3 on axis 0, 4–7 on axis 1.
        let pairing = Pairing {
            layout: Layout::Interleaved,
            pairs: 8,
        };
        let runs = [
            Run {
                first: 0,
                axis: 0,
                column: 0,
                len: 4,
            },
            Run {
                first: 4,
                axis: 1,
                column: 0,
                len: 4,
            },
        ];
        // Two coordinates on axis 0, three on axis 1, four entries each.
        let (rows, columns) = ([[0.6f32, 0.8]; 2 * 4], [[0.8f32, 0.6]; 3 * 4]);
        let tables = ([&rows[..], &columns[..]], [4, 4]);
        // (origin, extents, lines of 3 tokens in the buffer, rotated)
        let cases = [
            ([0, 0], [2, 3], 2, true),
            ([0, 0], [2, 3], 1, true),
            ([1, 0], [1, 3], 1, true),
            ([0, 0], [2, 3], 3, false),
            ([0, 0], [1, 3], 2, false),
            ([1, 0], [2, 3], 2, false),
            ([0, 1], [2, 3], 2, false),
        ];
        for (origin, extents, lines, rotates) in cases {
            let mut x = std::vec![1.0f32; lines * 3 * 16];
            let ran = kernel.rotate_grid_from_tables(
                &mut x,
                16,
                16,
                pairing,
                Direction::Forward,
                &runs,
                tables,
                (origin, extents),
            );
            assert_eq!(ran, rotates, "origin {origin:?}, {lines} lines");
            assert_eq!(x.iter().all(|&v| v == 1.0), !rotates, "origin {origin:?}");
        }
    }

    /// The row functions hold their own bounds: `prepare` past the row stages nothing (its
    /// padding would have been stored past the row's arrays — Miri sees it), and the line
    /// loop refuses an empty section, which `line_fits` cannot bound (it would read table
    /// floats never staged). The engine asks for neither.
    #[test]
    fn row_functions_refuse_what_lies_past_the_row() {
        if !super::is_available() {
            return;
        }
        type K = Simd<V, f32>;
        // SAFETY: the CPU has AVX2 and FMA (checked above).
        let kernel = unsafe { K::new() };
        let pairing = Pairing {
            layout: Layout::Interleaved,
            pairs: 8,
        };
        let (mut row_slot, mut table_slot) = (MaybeUninit::uninit(), MaybeUninit::uninit());
        let row = <K as Kernel>::Row::init(&mut row_slot);
        let table = <K as Kernel>::Row::init(&mut table_slot);
        for first in [513, 600, 1100, usize::MAX / 4] {
            kernel.prepare(row, pairing, Direction::Forward, first, &[]);
        }
        kernel.prepare(row, pairing, Direction::Forward, 0, &[[0.6, 0.8]; 8]);
        let mut line = std::vec![1.0f32; 2 * 16];
        let ran = kernel.rotate_line_split(&mut line, 16, 16, pairing, row, (3, 0), table);
        assert!(!ran);
        assert!(line.iter().all(|&v| v == 1.0));
    }
}
