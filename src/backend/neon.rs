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
    float32x4_t, uint32x4_t, vaddq_f32, vbslq_f32, vdupq_n_f32, vfmaq_f32, vld1q_f32, vmulq_f32,
    vnegq_f32, vrev64q_f32, vst1q_f32, vtrn1q_f32, vtrn2q_f32, vuzp1q_f32, vuzp2q_f32,
};

use core::arch::aarch64::{
    uint16x4_t, vaddq_u32, vandq_u32, vbslq_u32, vcgtq_u32, vcombine_s16, vcvtnq_s32_f32,
    vcvtq_f32_s32, vdup_n_u32, vdupq_n_u32, veorq_u32, vget_lane_u32, vget_low_s16, vld1_s16,
    vld1_u16, vmovl_s8, vmovl_s16, vmovn_u32, vorrq_u32, vqmovn_s16, vqmovn_s32,
    vreinterpret_s8_u32, vreinterpret_u32_s8, vreinterpretq_f32_u32, vreinterpretq_u32_f32,
    vshll_n_u16, vshrq_n_u32, vst1_s16, vst1_u16,
};

use core::arch::aarch64::{
    vcombine_u16, vld1q_u16, vreinterpretq_u16_u32, vreinterpretq_u32_u16, vshlq_n_u32,
    vshrn_n_u32, vsriq_n_u32, vst1_s8, vst1q_s16, vst1q_u16,
};

use super::simd::{Bf16Pairs, Simd, Stored, Vector};
use super::{AngleSource, Job, drive};
use crate::element::{Element, sealed::Format};

/// A NEON vector. Only constructed inside [`run_neon`], which runs only on CPUs with NEON:
/// every `unsafe` block below relies on that.
#[derive(Clone, Copy)]
struct V(float32x4_t);

super::simd::forms!(V, features = "neon");

/// Whether this CPU has NEON: always, as this backend is built only for targets that have
/// it at compile time (`build.rs`).
#[inline]
pub(crate) fn is_available() -> bool {
    true
}

/// The loop, for [`Backend::describe`](super::Backend::describe).
pub(crate) const FORM: &str = "128-bit FMA, eight vectors a step from memory; each token's angles loaded once, its heads rotated in address order";

/// How element types are converted.
pub(crate) fn conversions() -> &'static str {
    "f16 by fcvtl/fcvtn, bf16 by shifts (interleaved pairs split by a shift and a mask), i16 and i8 by fcvtns and saturating narrows, in the rotation loop; Q15 tables by smull/sqrshrn"
}

/// Whether [`run`] takes buffers of `E` at this scale ratio, converting in the rotation loop
/// (ratio 1); otherwise the caller stages them in `f32`.
// `E`: the registry asks every backend the same question.
#[allow(clippy::extra_unused_type_parameters)]
#[inline(always)]
pub(crate) fn fuses<E: Element>(ratio: f32) -> bool {
    ratio == 1.0 && is_available()
}

super::simd::staging!(V, features = "neon", available = is_available());

// Interleaved bf16 pairs: split by a shift and a mask, merged by one `sri`. Loaded and stored
// as `u16` lanes (`p` need only be 2-byte aligned), reinterpreted as words.
// SAFETY: NEON (available: see `V`); `2·LANES` bf16 (16 bytes) readable or writable at `p`
// (the trait's contract).
unsafe impl Bf16Pairs for V {
    #[inline(always)]
    unsafe fn load_bf16_pairs(p: *const u16) -> (Self, Self) {
        // SAFETY: as stated on the impl: `2·LANES` bf16 (16 bytes) readable at `p`.
        unsafe {
            let w = vreinterpretq_u32_u16(vld1q_u16(p));
            let first = vshlq_n_u32::<16>(w);
            let second = vandq_u32(w, vdupq_n_u32(0xFFFF_0000));
            (
                V(vreinterpretq_f32_u32(first)),
                V(vreinterpretq_f32_u32(second)),
            )
        }
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    unsafe fn store_bf16_pairs(a: Self, b: Self, p: *mut u16) {
        // SAFETY: as stated on the impl: `2·LANES` bf16 (16 bytes) writable at `p`.
        unsafe {
            // The second element's rounded high half, the first's shifted into the low half.
            let words = vsriq_n_u32::<16>(bf16_nearest_even(b.0), bf16_nearest_even(a.0));
            vst1q_u16(p, vreinterpretq_u16_u32(words));
        }
    }
}

// SAFETY: every arm is NEON (available: see `V`; `fcvtl`/`fcvtn` are base aarch64 SIMD). A
// buffer of `E` has the layout of the integer type each arm reads (`f16`, `bf16`:
// `repr(transparent)` over `u16`), and the trait's contract makes 4 values readable or
// writable at `p`. Bit for bit the conversions of `element`: `fcvtn` and `fcvtns` round to
// nearest-even (FPCR's default), bf16 by `half`'s integer rounding.
unsafe impl<E: Element> Stored<E> for V {
    // Out of line in unoptimised builds: every inlined copy of every arm would take its
    // own stack slots there (no slot reuse), megabytes for the whole driver loop.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    unsafe fn load_values(p: *const E) -> Self {
        // SAFETY: as stated on the impl.
        unsafe {
            V(match E::FORMAT {
                Format::F32 => vld1q_f32(p.cast()),
                Format::F16 => f16_widened(vld1_u16(p.cast())),
                Format::Bf16 => vreinterpretq_f32_u32(vshll_n_u16::<16>(vld1_u16(p.cast()))),
                Format::I16 => vcvtq_f32_s32(vmovl_s16(vld1_s16(p.cast()))),
                Format::I8 => {
                    // Four bytes: no 32-bit NEON load of them, one scalar load.
                    let word = p.cast::<u32>().read_unaligned();
                    let bytes = vreinterpret_s8_u32(vdup_n_u32(word));
                    vcvtq_f32_s32(vmovl_s16(vget_low_s16(vmovl_s8(bytes))))
                }
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
                Format::F32 => vst1q_f32(p.cast(), v),
                Format::F16 => vst1_u16(p.cast(), f16_narrowed(v)),
                Format::Bf16 => vst1_u16(p.cast(), bf16_bits(v)),
                // `fcvtns` rounds to nearest-even, takes NaN to 0 and saturates to i32; the
                // saturating narrows do the rest of `element::store`'s clamp.
                Format::I16 => vst1_s16(p.cast(), vqmovn_s32(vcvtnq_s32_f32(v))),
                Format::I8 => {
                    let h = vqmovn_s32(vcvtnq_s32_f32(v));
                    let bytes = vqmovn_s16(vcombine_s16(h, h));
                    let word = vget_lane_u32::<0>(vreinterpret_u32_s8(bytes));
                    p.cast::<u32>().write_unaligned(word);
                }
            }
        }
    }

    // `bf16`: a rotation loop's NaNs need no case of their own (see the trait).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    unsafe fn store_rotated(self, p: *mut E) {
        // SAFETY: as stated on the impl.
        unsafe {
            match E::FORMAT {
                Format::Bf16 => vst1_u16(p.cast(), bf16_rotated_bits(self.0)),
                _ => self.store_values(p),
            }
        }
    }

    // Both vectors narrowed into one register and stored once: `i8` without the move of
    // each 4-byte word through a general register.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    unsafe fn store_rotated_pair(first: Self, second: Self, p: *mut E) {
        // SAFETY: as stated on the impl, for `2·LANES` values.
        unsafe {
            let words = |v: float32x4_t| vqmovn_s32(vcvtnq_s32_f32(v));
            match E::FORMAT {
                Format::Bf16 => vst1q_u16(
                    p.cast(),
                    vcombine_u16(bf16_rotated_bits(first.0), bf16_rotated_bits(second.0)),
                ),
                Format::I16 => vst1q_s16(p.cast(), vcombine_s16(words(first.0), words(second.0))),
                Format::I8 => {
                    let h = vcombine_s16(words(first.0), words(second.0));
                    vst1_s8(p.cast(), vqmovn_s16(h));
                }
                _ => {
                    first.store_rotated(p);
                    second.store_rotated(p.add(Self::LANES));
                }
            }
        }
    }
}

/// Four f16 (as bits) widened exactly by `fcvtl` (inline assembly: Rust's `float16x4_t`
/// intrinsics are unstable). The `vreg` operands need the feature on the function that holds
/// the assembly itself.
///
/// # Safety
///
/// The CPU supports NEON.
#[target_feature(enable = "neon")]
#[inline]
unsafe fn f16_widened(h: uint16x4_t) -> float32x4_t {
    let r: float32x4_t;
    // SAFETY: NEON (the caller); registers only.
    unsafe {
        core::arch::asm!("fcvtl {r:v}.4s, {h:v}.4h", r = out(vreg) r, h = in(vreg) h,
            options(pure, nomem, nostack));
    }
    r
}

/// Four floats narrowed to f16 bits by `fcvtn` (nearest-even), as [`f16_widened`].
///
/// # Safety
///
/// The CPU supports NEON.
#[target_feature(enable = "neon")]
#[inline]
unsafe fn f16_narrowed(v: float32x4_t) -> uint16x4_t {
    let h: uint16x4_t;
    // SAFETY: NEON (the caller); registers only.
    unsafe {
        core::arch::asm!("fcvtn {h:v}.4h, {v:v}.4s", h = out(vreg) h, v = in(vreg) v,
            options(pure, nomem, nostack));
    }
    h
}

/// Four floats rounded to bf16 nearest-even, each in the high half of its lane (the low half
/// garbage): `0x7FFF` and the kept part's lowest bit added. As `half` rounds them but for
/// NaNs, unless they are quiet with zero low 16 bits (a rotation loop's: see
/// [`Stored::store_rotated`]).
///
/// # Safety
///
/// The CPU supports NEON.
#[inline(always)]
unsafe fn bf16_nearest_even(v: float32x4_t) -> uint32x4_t {
    // SAFETY: NEON (see `V`).
    unsafe {
        let x = vreinterpretq_u32_f32(v);
        let lsb = vandq_u32(vshrq_n_u32::<16>(x), vdupq_n_u32(1));
        vaddq_u32(x, vaddq_u32(vdupq_n_u32(0x7FFF), lsb))
    }
}

/// bf16 bits of four floats of a rotation loop's output, rounded as [`bf16_nearest_even`]
/// rounds them (see [`Stored::store_rotated`]).
///
/// # Safety
///
/// The CPU supports NEON.
#[inline(always)]
unsafe fn bf16_rotated_bits(v: float32x4_t) -> uint16x4_t {
    // SAFETY: NEON (see `V`).
    unsafe { vshrn_n_u32::<16>(bf16_nearest_even(v)) }
}

/// bf16 bits of four floats: `half`'s rounding (nearest-even on the top 16 bits; a NaN keeps
/// its top bits and becomes quiet).
///
/// # Safety
///
/// The CPU supports NEON.
#[inline(always)]
unsafe fn bf16_bits(v: float32x4_t) -> uint16x4_t {
    // SAFETY: NEON (see `V`).
    unsafe {
        let x = vreinterpretq_u32_f32(v);
        let rounded = vshrq_n_u32::<16>(bf16_nearest_even(v));
        let nan = vcgtq_u32(
            vandq_u32(x, vdupq_n_u32(0x7FFF_FFFF)),
            vdupq_n_u32(0x7F80_0000),
        );
        let quieted = vorrq_u32(vshrq_n_u32::<16>(x), vdupq_n_u32(0x40));
        vmovn_u32(vbslq_u32(nan, quieted, rounded))
    }
}

// Inlined: the job goes straight to the `#[target_feature]` loop, not through one more
// out-of-line copy (a few ns of a small call).
#[inline(always)]
pub(crate) fn run<E: Element, A: AngleSource>(job: Job<'_, A, E>) {
    if is_available() {
        // SAFETY: the CPU supports NEON, checked just above.
        unsafe { run_neon(job) }
    } else {
        // Unreachable through the public API; keeps this safe function sound everywhere.
        super::scalar::run(job);
    }
}

/// The whole driver loop, compiled with NEON so every vector operation inlines (the loops
/// over heads out of line, [`Forms`](super::simd::Forms), compiled with the same).
///
/// # Safety
///
/// The CPU must support NEON.
#[target_feature(enable = "neon")]
unsafe fn run_neon<E: Element, A: AngleSource>(job: Job<'_, A, E>) {
    // SAFETY: the CPU supports NEON (this function's contract), `V`'s instruction set.
    let kernel = unsafe { Simd::<V, E>::new() };
    drive(kernel, job);
}

pub(crate) use q15::run_q15;

/// Q15 tables on `i16` and `i8` buffers: the scalar kernel with its pair loop in NEON
/// ([`Q15Blocks`](super::simd::Q15Blocks)), 8 pairs per block in either layout. `vld2q`
/// de-interleaves pairs and entries, `smull` + `smlsl` / `smlal` form each output's
/// `a·c − b·s` exactly in 32 bits, and `sqrshrn #15` rounds (ties up) and saturates as the
/// scalar code does: bit for bit the scalar results.
mod q15 {
    use core::arch::aarch64::{int8x8x2_t, int16x8x2_t};
    use core::arch::aarch64::{
        int16x8_t, vget_low_s16, vld1_s8, vld1q_s16, vld2_s8, vld2q_s16, vmlal_high_s16, vmlal_s16,
        vmlsl_high_s16, vmlsl_s16, vmovl_s8, vmull_high_s16, vmull_s16, vnegq_s16, vqmovn_s16,
        vqrshrn_high_n_s32, vqrshrn_n_s32, vst1_s8, vst1q_s16, vst2_s8, vst2q_s16,
    };

    use super::super::scalar::Fixed;
    use super::super::{Pairing, Tokens};
    use crate::config::{Direction, Layout};

    super::super::simd::q15_loop!(
        features = "neon",
        available = super::is_available(),
        blocks = blocks,
        fallback = crate::backend::scalar::run_q15
    );

    /// Rotates, in every head of `x`, the whole blocks of 8 pairs of pairs `first_pair ..`
    /// by `angles`, as the scalar kernel does; returns how many of `angles` it took. Blocks
    /// outer, heads inner: a block's entries stay in registers across the token's heads.
    ///
    /// # Safety
    ///
    /// The CPU must support NEON.
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
        let rotary = pairing.pairs.min(head_dim / 2);
        let n = angles.len().min(rotary.saturating_sub(first_pair));
        let done = n - n % 8;
        for i in (0..done).step_by(8) {
            let e = &angles[i..i + 8];
            // SAFETY: NEON (caller); 8 entries, 16 `i16`, readable at `e`.
            let cs = unsafe { vld2q_s16(e.as_ptr().cast()) };
            let (c, s) = match dir {
                Direction::Forward => (cs.0, cs.1),
                // SAFETY: NEON. Entries are at most 32 767 in magnitude: negating is exact.
                Direction::Inverse => (cs.0, unsafe { vnegq_s16(cs.1) }),
            };
            let p = first_pair + i;
            for head in Tokens::new(&mut *x, head_dim) {
                match pairing.layout {
                    Layout::Interleaved => {
                        let v = &mut head[2 * p..2 * p + 16];
                        // SAFETY: NEON (caller); `v` holds 16 values (sliced).
                        unsafe {
                            let (a, b) = load_pairs(v);
                            let (a, b) = rotate(a, b, c, s);
                            store_pairs(v, a, b);
                        }
                    }
                    Layout::Half => {
                        let (lo, hi) = head.split_at_mut(rotary);
                        let (va, vb) = (&mut lo[p..p + 8], &mut hi[p..p + 8]);
                        // SAFETY: NEON (caller); `va` and `vb` hold 8 values each (sliced).
                        unsafe {
                            let (a, b) = rotate(load(va), load(vb), c, s);
                            store(va, a);
                            store(vb, b);
                        }
                    }
                }
            }
        }
        done
    }

    /// Eight pairs rotated: `round((a·c − b·s) / 2¹⁵)` and `round((a·s + b·c) / 2¹⁵)`, ties
    /// up, saturated to `i16` (products and sums exact in 32 bits).
    ///
    /// # Safety
    ///
    /// The CPU supports NEON.
    #[inline(always)]
    unsafe fn rotate(
        a: int16x8_t,
        b: int16x8_t,
        c: int16x8_t,
        s: int16x8_t,
    ) -> (int16x8_t, int16x8_t) {
        // SAFETY: NEON (caller).
        unsafe {
            let (al, bl) = (vget_low_s16(a), vget_low_s16(b));
            let (cl, sl) = (vget_low_s16(c), vget_low_s16(s));
            let a_lo = vmlsl_s16(vmull_s16(al, cl), bl, sl);
            let a_hi = vmlsl_high_s16(vmull_high_s16(a, c), b, s);
            let b_lo = vmlal_s16(vmull_s16(al, sl), bl, cl);
            let b_hi = vmlal_high_s16(vmull_high_s16(a, s), b, c);
            (
                vqrshrn_high_n_s32::<15>(vqrshrn_n_s32::<15>(a_lo), a_hi),
                vqrshrn_high_n_s32::<15>(vqrshrn_n_s32::<15>(b_lo), b_hi),
            )
        }
    }

    /// Eight interleaved pairs of `v` (16 values) as their `a` and `b` lanes, widened to `i16`.
    ///
    /// # Safety
    ///
    /// The CPU supports NEON; `v` holds 16 values.
    #[inline(always)]
    unsafe fn load_pairs<V: Fixed>(v: &[V]) -> (int16x8_t, int16x8_t) {
        debug_assert_eq!(v.len(), 16);
        // SAFETY: NEON (caller); `V` is `i16` or `i8` (`Fixed`'s only types), 16 of them
        // readable at `v`.
        unsafe {
            if size_of::<V>() == 2 {
                let ab: int16x8x2_t = vld2q_s16(v.as_ptr().cast());
                (ab.0, ab.1)
            } else {
                let ab: int8x8x2_t = vld2_s8(v.as_ptr().cast());
                (vmovl_s8(ab.0), vmovl_s8(ab.1))
            }
        }
    }

    /// Stores eight pairs interleaved into `v` (16 values), saturated to `V`.
    ///
    /// # Safety
    ///
    /// The CPU supports NEON; `v` holds 16 values.
    #[inline(always)]
    unsafe fn store_pairs<V: Fixed>(v: &mut [V], a: int16x8_t, b: int16x8_t) {
        debug_assert_eq!(v.len(), 16);
        // SAFETY: as in `load_pairs`, 16 values writable at `v`.
        unsafe {
            if size_of::<V>() == 2 {
                vst2q_s16(v.as_mut_ptr().cast(), int16x8x2_t(a, b));
            } else {
                vst2_s8(
                    v.as_mut_ptr().cast(),
                    int8x8x2_t(vqmovn_s16(a), vqmovn_s16(b)),
                );
            }
        }
    }

    /// Eight values of `v`, widened to `i16`.
    ///
    /// # Safety
    ///
    /// The CPU supports NEON; `v` holds 8 values.
    #[inline(always)]
    unsafe fn load<V: Fixed>(v: &[V]) -> int16x8_t {
        debug_assert_eq!(v.len(), 8);
        // SAFETY: as in `load_pairs`, 8 values readable at `v`.
        unsafe {
            if size_of::<V>() == 2 {
                vld1q_s16(v.as_ptr().cast())
            } else {
                vmovl_s8(vld1_s8(v.as_ptr().cast()))
            }
        }
    }

    /// Stores eight values into `v`, saturated to `V`.
    ///
    /// # Safety
    ///
    /// The CPU supports NEON; `v` holds 8 values.
    #[inline(always)]
    unsafe fn store<V: Fixed>(v: &mut [V], r: int16x8_t) {
        debug_assert_eq!(v.len(), 8);
        // SAFETY: as in `load_pairs`, 8 values writable at `v`.
        unsafe {
            if size_of::<V>() == 2 {
                vst1q_s16(v.as_mut_ptr().cast(), r);
            } else {
                vst1_s8(v.as_mut_ptr().cast(), vqmovn_s16(r));
            }
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
#[target_feature(enable = "neon")]
pub unsafe extern "C" fn rope2d_mca_neon(x: *mut f32, a: *const f32, b: *const f32, n: usize) {
    // SAFETY: as the caller guarantees.
    unsafe { super::simd::mca_regions::<V>(x, a, b, n) }
}

// SAFETY: every method is a NEON intrinsic (available: see `V`) on the pointers the trait's
// contract makes valid.
unsafe impl Vector for V {
    const LANES: usize = 4;
    // llvm-mca 19, cycles per 16 floats of the loops from memory, narrow steps against wide
    // (`.ci/mca.sh`; a model: no Arm hardware here). Interleaved: in-order cortex-a53 110 →
    // 37, cortex-a55 72 → 41, neoverse-n1 36 → 10, neoverse-v1 32 → 4.7, cortex-a57/a72/a76
    // 44 → 18.5 (a four-vector step rated 17 there, and as the eight-vector one elsewhere but
    // 2.6× slower on cortex-a53; LLVM models those three cores with cortex-a57's tables,
    // while neoverse-n1, the cortex-a76's server twin, rates both 10). Half layout:
    // cortex-a53 70 → 33, cortex-a55 54 → 29.5, neoverse-n2 12 → 7, no core slower.
    const WIDE_STEPS: bool = true;

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
    unsafe fn xor(self, other: Self) -> Self {
        // SAFETY: NEON.
        V(unsafe {
            vreinterpretq_f32_u32(veorq_u32(
                vreinterpretq_u32_f32(self.0),
                vreinterpretq_u32_f32(other.0),
            ))
        })
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
        // SAFETY: NEON: `self·b + (−c)`, one rounding, as x86's `vfmsub` (negating `c` is
        // exact). Not `−(c − self·b)`: where `self·b = c` that is −0, not +0.
        V(unsafe { vfmaq_f32(vnegq_f32(c.0), self.0, b.0) })
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
    #[inline(always)]
    unsafe fn select(mask: Self, a: Self, b: Self) -> Self {
        // SAFETY: NEON; `bsl` takes each bit from `a` where `mask`'s is set.
        V(unsafe { vbslq_f32(vreinterpretq_u32_f32(mask.0), a.0, b.0) })
    }
}
