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
    __m256i, __m512, __m512i, __mmask16, _CMP_ORD_Q, _MM_FROUND_TO_NEAREST_INT, _mm_loadu_si128,
    _mm_storeu_si128, _mm256_loadu_si256, _mm256_storeu_si256, _mm512_add_epi32, _mm512_add_ps,
    _mm512_and_si512, _mm512_castps_si512, _mm512_castsi512_ps, _mm512_cmp_ps_mask,
    _mm512_cmpgt_epi32_mask, _mm512_cmplt_epi32_mask, _mm512_cvtepi8_epi32, _mm512_cvtepi16_epi32,
    _mm512_cvtepi32_epi16, _mm512_cvtepi32_ps, _mm512_cvtepu16_epi32, _mm512_cvtneps_pbh,
    _mm512_cvtph_ps, _mm512_cvtps_ph, _mm512_fmadd_ps, _mm512_fmaddsub_ps, _mm512_fmsub_ps,
    _mm512_fmsubadd_ps, _mm512_loadu_ps, _mm512_mask_blend_epi32, _mm512_mask_blend_ps,
    _mm512_mask_storeu_ps, _mm512_maskz_loadu_ps, _mm512_min_ps, _mm512_movehdup_ps,
    _mm512_moveldup_ps, _mm512_mul_ps, _mm512_or_si512, _mm512_permute_ps, _mm512_set1_epi32,
    _mm512_set1_ps, _mm512_setr_ps, _mm512_setzero_si512, _mm512_slli_epi32, _mm512_srli_epi32,
    _mm512_storeu_ps, _mm512_xor_si512,
};
// Miri does not implement `vpermt2ps`: there `deinterleave` goes through memory.
#[cfg(not(miri))]
use core::arch::x86_64::_mm512_permutex2var_ps;

use core::arch::x86_64::{
    _CMP_UNORD_Q, _mm512_cvtne2ps_pbh, _mm512_cvtps_epi32, _mm512_cvtsepi32_epi8,
    _mm512_cvtsepi32_epi16, _mm512_fpclass_ps_mask, _mm512_loadu_si512, _mm512_mask_or_epi32,
    _mm512_maskz_cvtps_epi32, _mm512_permutexvar_epi16, _mm512_setr_epi32, _mm512_storeu_si512,
    _mm512_ternarylogic_epi32,
};

use super::simd::{Bf16Pairs, Simd, Stored, Vector};
use super::{AngleSource, Job, drive};
use crate::element::{Element, sealed::Format};

/// An AVX-512 vector. Only constructed inside functions that run only on CPUs with
/// AVX-512F, AVX2 and FMA ([`run_avx512`], [`run_avx512_bf16`] and the staging loop, each
/// called after the check): every `unsafe` block below relies on that. `BF16`: rounds `bf16`
/// with `vcvtneps2bf16` / `vcvtne2ps2bf16` (only in [`run_avx512_bf16`], on CPUs with AVX-512
/// BF16, DQ and BW).
#[derive(Clone, Copy)]
struct V<const BF16: bool = false>(__m512);

// The loops over heads, with the features of `run_avx512` and `run_avx512_bf16`.
super::simd::forms!(V<false>, features = "avx512f,avx2,fma");
super::simd::forms!(
    V<true>,
    features = "avx512f,avx512bf16,avx512dq,avx512bw,avx2,fma"
);

/// Whether this CPU has AVX-512F, AVX2 and FMA and the OS saves the AVX-512 state: CPUID and
/// XGETBV, read once and cached ([`x86`](super::x86)), with or without `std`.
#[inline]
pub(crate) fn is_available() -> bool {
    super::x86::features() & super::x86::AVX512F != 0
}

/// The loop, for [`Backend::describe`](super::Backend::describe).
pub(crate) const FORM: &str = if cfg!(feature = "avx2") {
    "512-bit FMA up to 1 MiB; the avx2 loop (32 registers with AVX-512VL) beyond, not for interleaved pairs on AMD Zen 4+ and Intel model 207, and at any size for heads or sections only 256-bit registers fit (d = 80 half); angles loaded once per token, heads in address order"
} else {
    "512-bit FMA; each token's angles loaded once, its heads rotated in address order"
};

/// Whether this CPU has AVX-512BW and AVX-512VL, which the 512-bit Q15 loop needs (every
/// AVX-512 CPU since Skylake-SP has both), on top of [`is_available`].
#[inline]
fn has_bw_vl() -> bool {
    use super::x86::{AVX512BW, AVX512VL, features};
    features() & (AVX512BW | AVX512VL) == AVX512BW | AVX512VL
}

/// How element types are converted, and which loop takes Q15 tables.
pub(crate) fn conversions() -> &'static str {
    macro_rules! line {
        ($floats:literal, $q15:literal) => {
            concat!(
                $floats,
                ", 16 values a step in the rotation loop; Q15 by ",
                $q15
            )
        };
    }
    let bf16 = super::x86::features() & super::x86::AVX512BF16 != 0;
    match (bf16, cfg!(feature = "avx2"), has_bw_vl()) {
        (true, true, true) => line!(
            "f16, i16, i8 by AVX-512F, bf16 by AVX-512 BF16 (in the 512-bit loop at every size)",
            "512-bit vpmaddwd (AVX-512BW)"
        ),
        (true, true, false) => line!(
            "f16, i16, i8 by AVX-512F, bf16 by AVX-512 BF16 (in the 512-bit loop at every size)",
            "the avx2 vpmaddwd loop"
        ),
        (true, false, _) => line!(
            "f16, i16, i8 by AVX-512F, bf16 by AVX-512 BF16 (in the 512-bit loop at every size)",
            "the scalar integer kernel"
        ),
        (false, true, true) => line!(
            "f16, bf16, i16, i8 by AVX-512F",
            "512-bit vpmaddwd (AVX-512BW)"
        ),
        (false, true, false) => line!("f16, bf16, i16, i8 by AVX-512F", "the avx2 vpmaddwd loop"),
        (false, false, _) => line!(
            "f16, bf16, i16, i8 by AVX-512F",
            "the scalar integer kernel"
        ),
    }
}

/// Whether [`run`] takes buffers of `E` at this scale ratio, converting in the rotation loop
/// (ratio 1); otherwise the caller stages them in `f32`.
// `E`: the registry asks every backend the same question.
#[allow(clippy::extra_unused_type_parameters)]
#[inline(always)]
pub(crate) fn fuses<E: Element>(ratio: f32) -> bool {
    ratio == 1.0
}

/// Buffers of more bytes than this (1 MiB, beyond L2) are rotated with the 256-bit form,
/// the `avx2` loop (bit-identical; compiled with AVX-512VL where the CPU has it, so that it
/// may use 32 registers: `mrope_text`, whose d = 128 half-layout heads hold 16 vectors of
/// angles, 75.9 → 64–68 µs on an AMD EPYC Zen 4). Streaming from and to memory, 512-bit
/// stores measured slower than 256-bit ones on an Intel Xeon (family 6, model 167; 3–32 MiB
/// groups: 1.05–1.2×; the bare `x = -x` stream too), while within L2 the 512-bit form is
/// faster (ViT-S, 0.3 MiB: 0.93×). AMD Zen 4 and later and the Intel Xeon of model 207 (Emerald
/// Rapids) keep the 512-bit loop for interleaved pairs at every size
/// ([`WIDE_INTERLEAVED`](super::x86::WIDE_INTERLEAVED)), measured faster there.
/// Heads or sections that only the 256-bit form holds in registers take it at every size
/// ([`narrow_heads`]).
#[cfg(feature = "avx2")]
const BEYOND_L2_BYTES: usize = 1 << 20;

/// Whether heads of `head_dim` values of `E` paired as `pairing`, with sections `runs`, take
/// the 256-bit register form and not the 512-bit one. Such buffers take the 256-bit form at
/// every size; the 512-bit loops would read their angles from memory or stage a row per
/// line. Two cases:
/// - heads 512-bit vectors do not tile: full rotary, their floats (interleaved) or pairs
///   (half layout) a multiple of 8, not of 16, and at most 64 — Qwen2-VL's vision tower
///   (d = 80, half layout), d = 24, 40 or 56 interleaved; measured 1.2–1.9× slower on the
///   512-bit loop on an AMD EPYC Zen 4;
/// - heads both widths hold whose sections (`runs`) fall on whole 256-bit vectors but not
///   on whole 512-bit ones: Qwen2-VL's M-RoPE (16/24/24 pairs, d = 128 half layout),
///   CogVideoX at d = 64 (16/24/24 floats), 2-D axial d = 16 or 48 interleaved and d = 32 or
///   96 half layout. The 512-bit loops stage a row per line or token for them; measured
///   1.03–5.5× slower on the same Zen 4 (README, "Backends").
#[cfg(feature = "avx2")]
#[inline(always)]
fn narrow_heads<E: Element>(
    head_dim: usize,
    pairing: super::Pairing,
    runs: &[crate::spec::Run],
) -> bool {
    use super::simd::{holds_in_registers, splits_runs};
    super::avx2::holds_in_registers::<E>(head_dim, pairing)
        && (!holds_in_registers::<V, E>(head_dim, pairing)
            || (super::avx2::splits_runs::<E>(pairing, runs)
                && !splits_runs::<V, E>(pairing, runs)))
}

#[cfg(feature = "avx2")]
pub(crate) use q15::run_q15;

/// Q15 tables on `i16` and `i8` buffers: the `avx2` backend's integer loop in 512-bit
/// vectors ([`lane_blocks`](super::simd::lane_blocks) over [`Lanes`](q15::Lanes), with
/// AVX-512BW; AVX-512VL gives the 256-bit blocks it ends in 32 registers), 16 interleaved or
/// 32 half-layout pairs a block — half the instructions per value, bit for bit the scalar
/// results. Sections that 512-bit blocks do not tile end in the `avx2` blocks (d = 96
/// interleaved: 24 pairs per axis, one 16-pair and one 8-pair block), then scalar code.
/// Interleaved `i8` pairs go 32 a step (64 bytes widened within lanes), and leave the rest
/// to the `avx2` blocks' 16-pair steps rather than take a 16-pair block here.
/// Without AVX-512BW and VL (Xeon Phi), the `avx2` loop.
#[cfg(feature = "avx2")]
mod q15 {
    use super::super::Pairing;
    use super::super::avx2::Q15Lanes256;
    use super::super::scalar::Fixed;
    use super::super::simd::{Q15Lanes, lane_blocks};
    use crate::config::Direction;
    use core::arch::x86_64::{
        __m512i, _mm_setr_epi8, _mm256_loadu_si256, _mm256_storeu_si256, _mm512_add_epi32,
        _mm512_broadcast_i32x4, _mm512_cvtepi8_epi16, _mm512_cvtsepi16_epi8, _mm512_loadu_si512,
        _mm512_madd_epi16, _mm512_mask_sub_epi16, _mm512_packs_epi16, _mm512_packs_epi32,
        _mm512_rol_epi32, _mm512_set1_epi32, _mm512_setzero_si512, _mm512_shuffle_epi8,
        _mm512_shuffle_i32x4, _mm512_srai_epi32, _mm512_storeu_si512, _mm512_unpackhi_epi8,
        _mm512_unpackhi_epi16, _mm512_unpacklo_epi8, _mm512_unpacklo_epi16,
    };

    super::super::simd::q15_loop!(
        features = "avx512f,avx512bw,avx512vl,avx2",
        available = super::has_bw_vl(),
        blocks = blocks,
        fallback = super::super::avx2::run_q15
    );

    /// The whole 512-bit blocks of pairs `first_pair ..`, then what whole 256-bit blocks the
    /// rest holds; returns how many of `angles` they took.
    ///
    /// # Safety
    ///
    /// The CPU supports AVX-512F, AVX-512BW, AVX-512VL and AVX2.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    unsafe fn blocks<V: Fixed>(
        x: &mut [V],
        head_dim: usize,
        pairing: Pairing,
        first_pair: usize,
        angles: &[[i16; 2]],
        dir: Direction,
    ) -> usize {
        // SAFETY: the instruction sets of both vectors (caller).
        unsafe {
            let done = lane_blocks::<Lanes, V>(x, head_dim, pairing, first_pair, angles, dir);
            let rest = angles.get(done..).unwrap_or(&[]);
            let first = first_pair + done;
            done + lane_blocks::<Q15Lanes256, V>(x, head_dim, pairing, first, rest, dir)
        }
    }

    /// 32 `i16` lanes in a 512-bit vector. Only constructed where AVX-512F and AVX-512BW are
    /// available (the `unsafe` trait's contract).
    #[derive(Clone, Copy)]
    pub(super) struct Lanes(__m512i);

    // SAFETY: every method below uses AVX-512F and AVX-512BW only, and is only called where
    // they are available (the trait's contract).
    unsafe impl Q15Lanes for Lanes {
        const LANES: usize = 32;
        const NARROWER_FOLLOWS: bool = true;

        #[inline(always)]
        unsafe fn load<V: Fixed>(x: &[V]) -> Self {
            let x = &x[..32];
            // SAFETY: AVX-512F and AVX-512BW (caller); `V` is `i16` or `i8` (`Fixed`'s only
            // types), 32 of them readable at `x`.
            Self(unsafe {
                if size_of::<V>() == 2 {
                    _mm512_loadu_si512(x.as_ptr().cast())
                } else {
                    _mm512_cvtepi8_epi16(_mm256_loadu_si256(x.as_ptr().cast()))
                }
            })
        }

        #[inline(always)]
        unsafe fn store<V: Fixed>(x: &mut [V], v: Self) {
            let x = &mut x[..32];
            // SAFETY: as in `load`, 32 values writable at `x`; `vpmovswb` saturates to `i8`.
            unsafe {
                if size_of::<V>() == 2 {
                    _mm512_storeu_si512(x.as_mut_ptr().cast(), v.0);
                } else {
                    _mm256_storeu_si256(x.as_mut_ptr().cast(), _mm512_cvtsepi16_epi8(v.0));
                }
            }
        }

        #[inline(always)]
        unsafe fn entries(angles: &[[i16; 2]], i: usize) -> Self {
            let e = &angles[i..i + 16];
            // SAFETY: AVX-512F (caller); 16 entries, 64 bytes, readable at `e`.
            Self(unsafe { _mm512_loadu_si512(e.as_ptr().cast()) })
        }

        #[inline(always)]
        unsafe fn weights(e: Self, dir: Direction) -> (Self, Self) {
            // The 16-bit lanes a masked `vpsubw` negates: the high (`s`) or low halves.
            const HIGH: u32 = 0xAAAA_AAAA;
            const LOW: u32 = 0x5555_5555;
            let (m1, m2) = match dir {
                Direction::Forward => (HIGH, 0),
                Direction::Inverse => (0, LOW),
            };
            // SAFETY: AVX-512F and AVX-512BW (caller).
            unsafe {
                let zero = _mm512_setzero_si512();
                let w1 = _mm512_mask_sub_epi16(e.0, m1, zero, e.0);
                // `vprold` by 16: `[s, c]`.
                let swapped = _mm512_rol_epi32::<16>(e.0);
                let w2 = _mm512_mask_sub_epi16(swapped, m2, zero, swapped);
                (Self(w1), Self(w2))
            }
        }

        #[inline(always)]
        unsafe fn half_entries(e0: Self, e1: Self) -> (Self, Self) {
            // SAFETY: AVX-512F (caller). Per 128-bit lane `j` the unpacks bring together
            // pairs `8j .. 8j + 4` (`lo`) and `8j + 4 .. 8j + 8` (`hi`): entries of lanes
            // 0, 2 of `e0` and of `e1`, then lanes 1, 3.
            unsafe {
                (
                    Self(_mm512_shuffle_i32x4::<0b10_00_10_00>(e0.0, e1.0)),
                    Self(_mm512_shuffle_i32x4::<0b11_01_11_01>(e0.0, e1.0)),
                )
            }
        }

        #[inline(always)]
        unsafe fn madd_round<const BYTES: bool>(x: Self, w: Self) -> Self {
            let half = if BYTES { 1 << 22 } else { 1 << 14 };
            // SAFETY: AVX-512F and AVX-512BW (caller).
            unsafe {
                let sum = _mm512_add_epi32(_mm512_madd_epi16(x.0, w.0), _mm512_set1_epi32(half));
                Self(if BYTES {
                    _mm512_srai_epi32::<23>(sum)
                } else {
                    _mm512_srai_epi32::<15>(sum)
                })
            }
        }

        #[inline(always)]
        unsafe fn packs(a: Self, b: Self) -> Self {
            // SAFETY: AVX-512BW (caller).
            Self(unsafe { _mm512_packs_epi32(a.0, b.0) })
        }

        #[inline(always)]
        unsafe fn zip(v: Self) -> Self {
            // SAFETY: AVX-512F and AVX-512BW (caller).
            unsafe {
                let zip = _mm512_broadcast_i32x4(_mm_setr_epi8(
                    0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15,
                ));
                Self(_mm512_shuffle_epi8(v.0, zip))
            }
        }

        #[inline(always)]
        unsafe fn unpack(a: Self, b: Self) -> (Self, Self) {
            // SAFETY: AVX-512BW (caller).
            unsafe {
                (
                    Self(_mm512_unpacklo_epi16(a.0, b.0)),
                    Self(_mm512_unpackhi_epi16(a.0, b.0)),
                )
            }
        }

        #[inline(always)]
        unsafe fn load_bytes<V: Fixed>(x: &[V]) -> (Self, Self) {
            let x = &x[..64];
            // SAFETY: AVX-512F and AVX-512BW (caller); `V` is `i8` (caller), 64 of them, 64
            // bytes, readable at `x`.
            unsafe {
                let v = _mm512_loadu_si512(x.as_ptr().cast());
                let zero = _mm512_setzero_si512();
                (
                    Self(_mm512_unpacklo_epi8(zero, v)),
                    Self(_mm512_unpackhi_epi8(zero, v)),
                )
            }
        }

        #[inline(always)]
        unsafe fn store_bytes<V: Fixed>(x: &mut [V], lo: Self, hi: Self) {
            let x = &mut x[..64];
            // SAFETY: as in `load_bytes`, 64 bytes writable at `x`.
            unsafe { _mm512_storeu_si512(x.as_mut_ptr().cast(), _mm512_packs_epi16(lo.0, hi.0)) }
        }
    }
}

/// Q15 tables: the scalar integer kernel (built without the `avx2` backend).
#[cfg(not(feature = "avx2"))]
pub(crate) use super::scalar::run_q15;

super::simd::staging!(V, features = "avx512f,avx2,fma", available = is_available());

// Inlined: the job goes straight to the `#[target_feature]` loop, not through one more
// out-of-line copy (a few ns of a small call).
#[inline(always)]
pub(crate) fn run<E: Element, A: AngleSource>(job: Job<'_, A, E>) {
    if is_available() {
        // `bf16` with AVX-512 BF16: its 512-bit loop at every size (it rounds in one
        // instruction where the 256-bit form takes about ten).
        // The type test is a constant, so that the other types never instantiate that loop.
        let job = if const { matches!(E::FORMAT, Format::Bf16) }
            && super::x86::features() & super::x86::AVX512BF16 != 0
        {
            match job.retype(E::as_bf16) {
                // SAFETY: the CPU supports AVX-512F, AVX-512 BF16, DQ and BW, AVX2 and FMA
                // (checked: `AVX512BF16` includes DQ and BW).
                Ok(job) => return unsafe { run_avx512_bf16(job) },
                Err(job) => job,
            }
        } else {
            job
        };
        // The sections `narrow_heads` weighs: none for one token (a decode step), whose row
        // is staged either way and measured a little slower on the 256-bit form (Qwen2-VL's
        // M-RoPE, 28 heads: 210–212 against 215–220 ns on an AMD EPYC Zen 4). Read from a
        // copy of the source: borrowing the job made LLVM pass it on through the stack with
        // overlapping moves, a store-forwarding stall (+10 ns a call).
        #[cfg(feature = "avx2")]
        let angles = job.angles;
        #[cfg(feature = "avx2")]
        let runs = if job.x.len() > job.token_len {
            angles.runs()
        } else {
            &[]
        };
        #[cfg(feature = "avx2")]
        if super::avx2::converts::<E>()
            && ((size_of_val(job.x) > BEYOND_L2_BYTES
                && !(job.pairing.layout == crate::config::Layout::Interleaved
                    && super::x86::features() & super::x86::WIDE_INTERLEAVED != 0))
                || narrow_heads::<E>(job.head_dim, job.pairing, runs))
        {
            let wide = super::x86::AVX512VL | super::x86::F16C;
            if super::x86::features() & wide == wide {
                // SAFETY: the CPU supports AVX-512F, AVX2 and FMA (checked above), AVX-512VL
                // and F16C (checked just now).
                return unsafe { super::avx2::run_with_32_registers(job) };
            }
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
/// inlines (the loops over heads out of line, [`Forms`](super::simd::Forms), compiled
/// with the same).
///
/// # Safety
///
/// The CPU must support AVX-512F, AVX2 and FMA.
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn run_avx512<E: Element, A: AngleSource>(job: Job<'_, A, E>) {
    // SAFETY: the CPU supports AVX-512F, AVX2 and FMA (this function's contract), `V`'s
    // instruction set.
    let kernel = unsafe { Simd::<V, E>::new() };
    drive(kernel, job);
}

/// [`run_avx512`] for `bf16` buffers with AVX-512 BF16's rounding instruction.
///
/// # Safety
///
/// The CPU must support AVX-512F, AVX-512 BF16, AVX-512DQ, AVX-512BW, AVX2 and FMA.
#[target_feature(enable = "avx512f,avx512bf16,avx512dq,avx512bw,avx2,fma")]
unsafe fn run_avx512_bf16<A: AngleSource>(job: Job<'_, A, half::bf16>) {
    // SAFETY: the CPU supports AVX-512F, BF16, DQ and BW, AVX2 and FMA (this function's
    // contract), `V`'s instruction set.
    let kernel = unsafe { Simd::<V<true>, half::bf16>::new() };
    drive(kernel, job);
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
unsafe impl<const BF16: bool> Vector for V<BF16> {
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
    unsafe fn xor(self, other: Self) -> Self {
        // SAFETY: AVX-512F (the integer form: `vxorps` on 512 bits needs AVX-512DQ).
        V(unsafe {
            _mm512_castsi512_ps(_mm512_xor_si512(
                _mm512_castps_si512(self.0),
                _mm512_castps_si512(other.0),
            ))
        })
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
    unsafe fn select(mask: Self, a: Self, b: Self) -> Self {
        // SAFETY: AVX-512F. The mask's lanes as mask bits (all ones is negative; the test is
        // loop-invariant where the mask is), then one `vblendmps`.
        unsafe {
            let k = _mm512_cmplt_epi32_mask(_mm512_castps_si512(mask.0), _mm512_setzero_si512());
            V(_mm512_mask_blend_ps(k, b.0, a.0))
        }
    }
    #[inline(always)]
    unsafe fn prefetch(p: *const u8) {
        // SAFETY: SSE (every x86_64 CPU); a prefetch reads nothing and never faults.
        unsafe { core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast()) }
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

// --- element conversions ------------------------------------------------------------------
//
// Bit for bit those of `element` and of the `avx2` backend (`vcvtps2ph` rounds to
// nearest-even like `half`; bf16: the same integer rounding as `half`; integers: the same
// clamp and nearest-even rounding, NaN to 0, the saturating `vpmovsdw` / `vpmovsdb` doing
// the lower end — and the whole clamp of a rotation's output, `Stored::store_rotated`).
// AVX-512 BF16's `vcvtneps2bf16`, where the CPU has it (`V<true>`), rounds bf16 in one
// instruction except for vectors holding a subnormal, which it would flush to zero.

// Interleaved bf16 pairs: split by a shift and a mask, merged by one `vpternlogd` (or, with
// AVX-512 BF16, `vcvtne2ps2bf16` and one `vpermw`).
// SAFETY: AVX-512F, and for `V<true>` AVX-512 BF16 and BW (available: see `V`); `2·LANES`
// bf16 (64 bytes) readable or writable at `p` (the trait's contract).
unsafe impl<const BF16: bool> Bf16Pairs for V<BF16> {
    #[inline(always)]
    unsafe fn load_bf16_pairs(p: *const u16) -> (Self, Self) {
        // SAFETY: as stated on the impl: `2·LANES` bf16 (64 bytes) readable at `p`.
        unsafe {
            let w = _mm512_loadu_si512(p.cast());
            let first = _mm512_slli_epi32::<16>(w);
            let second = _mm512_and_si512(w, _mm512_set1_epi32(HIGH_HALF));
            (
                V(_mm512_castsi512_ps(first)),
                V(_mm512_castsi512_ps(second)),
            )
        }
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    unsafe fn store_bf16_pairs(a: Self, b: Self, p: *mut u16) {
        // SAFETY: as stated on the impl (`V<true>`: AVX-512 BF16 and BW, see `V`); `2·LANES`
        // bf16 (64 bytes) writable at `p`.
        unsafe {
            let words = if BF16 && !(has_subnormal(a.0) | has_subnormal(b.0)) {
                // Words 0–15 the first elements, 16–31 the second; `vpermw` interleaves them.
                let halves: __m512i = core::mem::transmute(_mm512_cvtne2ps_pbh(b.0, a.0));
                let lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
                let second = _mm512_slli_epi32::<16>(_mm512_add_epi32(lane, _mm512_set1_epi32(16)));
                _mm512_permutexvar_epi16(_mm512_or_si512(lane, second), halves)
            } else {
                // The second element's rounded high half, the first's shifted down into the
                // low half.
                let first = _mm512_srli_epi32::<16>(bf16_rounded(a.0));
                _mm512_ternarylogic_epi32::<0xCA>(
                    _mm512_set1_epi32(HIGH_HALF),
                    bf16_rounded(b.0),
                    first,
                )
            };
            _mm512_storeu_si512(p.cast(), words);
        }
    }
}

// SAFETY: every arm is AVX-512F (available: see `V`), and `V<true>`'s `bf16` arms also
// AVX-512 BF16 (`vcvtneps2bf16`) and DQ (`vfpclassps` in `has_subnormal`), which it has only
// in `run_avx512_bf16`, on CPUs with both. A buffer of `E` has the layout of the integer type
// each arm reads (`f16`, `bf16`: `repr(transparent)` over `u16`), and the
// trait's contract makes `LANES` values readable or writable at `p`.
unsafe impl<E: Element, const BF16: bool> Stored<E> for V<BF16> {
    // Out of line in unoptimised builds: every inlined copy of every arm would take its
    // own stack slots there (no slot reuse), megabytes for the whole driver loop.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    unsafe fn load_values(p: *const E) -> Self {
        // SAFETY: as stated on the impl.
        unsafe {
            V(match E::FORMAT {
                Format::F32 => _mm512_loadu_ps(p.cast()),
                Format::F16 => _mm512_cvtph_ps(_mm256_loadu_si256(p.cast())),
                Format::Bf16 => {
                    let h = _mm512_cvtepu16_epi32(_mm256_loadu_si256(p.cast()));
                    _mm512_castsi512_ps(_mm512_slli_epi32::<16>(h))
                }
                Format::I16 => {
                    _mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(_mm256_loadu_si256(p.cast())))
                }
                Format::I8 => _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(p.cast()))),
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
                Format::F32 => _mm512_storeu_ps(p.cast(), v),
                Format::F16 => {
                    _mm256_storeu_si256(p.cast(), _mm512_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v))
                }
                Format::Bf16 if BF16 && !has_subnormal(v) => {
                    // `vcvtneps2bf16` rounds as `half` does (nearest-even; a NaN keeps its top
                    // bits, quieted) except that it flushes subnormal inputs, checked above.
                    let b: __m256i = core::mem::transmute(_mm512_cvtneps_pbh(v));
                    _mm256_storeu_si256(p.cast(), b);
                }
                Format::Bf16 => _mm256_storeu_si256(p.cast(), _mm512_cvtepi32_epi16(bf16_bits(v))),
                // `vpmovsdw` / `vpmovsdb` saturate what `rounded_below` leaves out of range.
                Format::I16 => {
                    let w = rounded_below(v, 32767.0);
                    _mm256_storeu_si256(p.cast(), _mm512_cvtsepi32_epi16(w));
                }
                Format::I8 => {
                    let w = rounded_below(v, 127.0);
                    _mm_storeu_si128(p.cast(), _mm512_cvtsepi32_epi8(w));
                }
            }
        }
    }

    // Integers: lanes below 2³⁰ (the caller's contract) convert exactly, and `vpmovsdw` /
    // `vpmovsdb` clamp; no `vcmpps` (a port-5 µop beside the shuffles) and no `vminps`
    // (an `i8` grid, vit_s: 0.80× the time).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    unsafe fn store_rotated(self, p: *mut E) {
        // SAFETY: as stated on the impl.
        unsafe {
            match E::FORMAT {
                Format::I16 => {
                    let w = _mm512_cvtps_epi32(self.0);
                    _mm256_storeu_si256(p.cast(), _mm512_cvtsepi32_epi16(w));
                }
                Format::I8 => {
                    _mm_storeu_si128(p.cast(), _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(self.0)))
                }
                _ => self.store_values(p),
            }
        }
    }
}

/// The high 16 bits of each 32-bit lane.
const HIGH_HALF: i32 = 0xFFFF_0000_u32 as i32;

/// Sixteen floats rounded to bf16 as `half` rounds them, each in the high half of its lane
/// (the low half is garbage): nearest-even by adding `0x7FFF` and the kept part's lowest
/// bit; a NaN keeps its top bits with the quiet bit set.
///
/// # Safety
///
/// The CPU supports AVX-512F.
#[inline(always)]
unsafe fn bf16_rounded(v: __m512) -> __m512i {
    // SAFETY: AVX-512F (caller).
    unsafe {
        let x = _mm512_castps_si512(v);
        let lsb = _mm512_and_si512(_mm512_srli_epi32::<16>(x), _mm512_set1_epi32(1));
        let rounded = _mm512_add_epi32(x, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF)));
        let nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
        _mm512_mask_or_epi32(rounded, nan, x, _mm512_set1_epi32(0x0040_0000))
    }
}

/// Whether a lane of `v` is subnormal: one `vfpclassps` (class 0x20, denormal). Only called
/// by `V<true>`, which runs only in [`run_avx512_bf16`], on CPUs with AVX-512DQ.
///
/// # Safety
///
/// The CPU supports AVX-512F and AVX-512DQ.
#[inline(always)]
unsafe fn has_subnormal(v: __m512) -> bool {
    // SAFETY: AVX-512F and AVX-512DQ (caller).
    unsafe { _mm512_fpclass_ps_mask::<0x20>(v) != 0 }
}

/// Sixteen floats rounded to bf16 as `half` rounds them (nearest-even on the top 16 bits; a
/// NaN keeps its top bits and becomes quiet), one per 32-bit lane.
///
/// # Safety
///
/// The CPU supports AVX-512F.
#[inline(always)]
unsafe fn bf16_bits(v: __m512) -> __m512i {
    // SAFETY: AVX-512F (caller).
    unsafe {
        let x = _mm512_castps_si512(v);
        let lsb = _mm512_and_si512(_mm512_srli_epi32::<16>(x), _mm512_set1_epi32(1));
        let bias = _mm512_add_epi32(_mm512_set1_epi32(0x7FFF), lsb);
        let rounded = _mm512_srli_epi32::<16>(_mm512_add_epi32(x, bias));
        let magnitude = _mm512_and_si512(x, _mm512_set1_epi32(0x7FFF_FFFF));
        let nan = _mm512_cmpgt_epi32_mask(magnitude, _mm512_set1_epi32(0x7F80_0000));
        let quieted = _mm512_or_si512(_mm512_srli_epi32::<16>(x), _mm512_set1_epi32(0x0040));
        _mm512_mask_blend_epi32(nan, rounded, quieted)
    }
}

/// `v` rounded to nearest-even integers, NaN lanes 0 and lanes above `hi` at `hi`; lanes below
/// −2³¹ (−∞ among them) become −2³¹, which a saturating narrow takes to the type's minimum
/// as the clamp of [`element::store`](crate::element::store) does — one clamp, and the NaN
/// mask folded into the conversion (measured on an AMD EPYC Zen 4: an `i8` rotation loop
/// 2.11 → 1.62 ns per 16 values against clamping both ends and narrowing by truncation).
///
/// # Safety
///
/// The CPU supports AVX-512F.
#[inline(always)]
unsafe fn rounded_below(v: __m512, hi: f32) -> __m512i {
    // SAFETY: AVX-512F (caller).
    unsafe {
        let ordered = _mm512_cmp_ps_mask::<_CMP_ORD_Q>(v, v);
        // MXCSR's default rounding: nearest-even.
        _mm512_maskz_cvtps_epi32(ordered, _mm512_min_ps(v, _mm512_set1_ps(hi)))
    }
}

#[cfg(all(test, feature = "avx2"))]
mod tests {
    extern crate std;
    use super::narrow_heads;
    use crate::config::Layout::{self, Half, Interleaved};
    use crate::spec::Run;
    use half::bf16;

    fn narrow(head_dim: usize, layout: Layout, pairs: usize) -> bool {
        narrow_heads::<f32>(head_dim, super::super::Pairing { layout, pairs }, &[])
    }

    /// As `narrow`, for consecutive sections of `lens` pairs on axes 0, 1, ….
    fn narrow_sections(head_dim: usize, layout: Layout, lens: &[usize]) -> bool {
        let mut runs = std::vec::Vec::new();
        let mut first = 0;
        for (axis, &len) in lens.iter().enumerate() {
            runs.push(Run {
                first,
                axis,
                column: 0,
                len,
            });
            first += len;
        }
        let pairing = super::super::Pairing {
            layout,
            pairs: first,
        };
        narrow_heads::<f32>(head_dim, pairing, &runs)
    }

    /// The 256-bit form is chosen exactly for full-rotary heads of at most eight 256-bit
    /// vectors that 512-bit vectors do not tile.
    #[test]
    fn narrow_heads_are_those_only_256_bit_registers_hold() {
        // Qwen2-VL's vision tower: 40 pairs, 5 vectors of 8, not whole vectors of 16.
        assert!(narrow(80, Half, 40));
        assert!(narrow(40, Interleaved, 20));
        assert!(narrow(56, Interleaved, 28));
        assert!(narrow(24, Interleaved, 12));
        assert!(narrow(112, Half, 56));
        // Whole 512-bit vectors: the 512-bit register form.
        assert!(!narrow(128, Half, 64));
        assert!(!narrow(64, Interleaved, 32));
        assert!(!narrow(80, Interleaved, 40));
        // More than eight 256-bit vectors (72 floats; 72 pairs): no register form either way.
        assert!(!narrow(72, Interleaved, 36));
        assert!(!narrow(144, Half, 72));
        // Partial rotary, or pair counts not a multiple of 8: no register form.
        assert!(!narrow(80, Half, 20));
        assert!(!narrow(20, Half, 10));
        // Interleaved bf16 is rotated as the half layout (pairs split on load).
        let pairing = |pairs| super::super::Pairing {
            layout: Interleaved,
            pairs,
        };
        assert!(narrow_heads::<bf16>(80, pairing(40), &[]));
        assert!(!narrow_heads::<bf16>(64, pairing(32), &[]));
    }

    /// Heads both widths hold take the 256-bit form exactly when their sections fall on whole
    /// 256-bit vectors and not on whole 512-bit ones.
    #[test]
    fn narrow_sections_are_those_only_256_bit_vectors_split() {
        // 2-D axial: sections of 4 and 12 pairs (8 and 24 floats) interleaved, 8 and 24 pairs
        // in the half layout.
        assert!(narrow_sections(16, Interleaved, &[4, 4]));
        assert!(narrow_sections(48, Interleaved, &[12, 12]));
        assert!(narrow_sections(32, Half, &[8, 8]));
        assert!(narrow_sections(96, Half, &[24, 24]));
        // Qwen2-VL's M-RoPE (16/24/24 pairs) and 16/24/24 floats interleaved.
        assert!(narrow_sections(128, Half, &[16, 24, 24]));
        assert!(narrow_sections(64, Interleaved, &[8, 12, 12]));
        // Sections on whole 512-bit vectors, or on neither width: unchanged.
        assert!(!narrow_sections(64, Half, &[16, 16]));
        assert!(!narrow_sections(32, Interleaved, &[8, 8]));
        assert!(!narrow_sections(64, Half, &[12, 20]));
        assert!(!narrow_sections(72, Interleaved, &[18, 18]));
        // More than eight 256-bit vectors (80 floats): no 256-bit register form.
        assert!(!narrow_sections(80, Interleaved, &[20, 20]));
        // Heads only 256-bit vectors hold take it whatever their sections.
        assert!(narrow_sections(80, Half, &[20, 20]));
        assert!(narrow_sections(40, Interleaved, &[10, 10]));
    }
}
