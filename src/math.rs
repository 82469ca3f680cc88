//! The only place where trigonometry and phase reduction live.
//!
//! Everything here is integer or `f32` arithmetic: no `f64` operation is executed, so table
//! construction stays cheap on FPUs without double precision (Cortex-M4F, M33) and on cores
//! without any FPU.
//!
//! Angles are carried as *phases in turns*: a `u64` whose full range is one turn (2π).
//! Frequencies are signed Q64.64 fixed-point numbers of turns per unit coordinate
//! ([`Turns`]). For an integer coordinate `m`, `frac(m · U)` is then an exact wrapping
//! integer multiply, so the reduced phase is as accurate at position 65 535 or 2³⁰ as at 0
//! (float32 reference code loses about 1e-3 at 65 535). Only the last step — `sin`/`cos` of
//! an angle in [0, π/4] — is done in `f32`; for Q15 tables it is integer too
//! ([`cos_sin_turns_q15`]), so that a core without an FPU runs no float operation at all.

#![forbid(unsafe_code)]

use core::num::NonZeroU32;

/// A frequency in turns per unit coordinate, as signed Q64.64 fixed point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Turns(pub(crate) i128);

/// `floor(2^64 / 2π)`: 1/(2π) as Q0.64.
const INV_TWO_PI_Q64: u64 = 0x28BE_60DB_9391_054A;

/// `sqrt(x)` rounded to nearest.
const fn nearest_sqrt(x: u128) -> u64 {
    let t = x.isqrt();
    (if x - t * t > t { t + 1 } else { t }) as u64
}

/// `EXP2_NEG[i] = 2^(-2^-(i+1))` as Q1.63, for the bit-by-bit `exp2` below.
const EXP2_NEG: [u64; 64] = {
    let mut table = [0u64; 64];
    // 2^-1/2 = sqrt(1/2): sqrt of (2^62 in Q1.63) is sqrt(2^62 · 2^63).
    table[0] = nearest_sqrt(1u128 << 125);
    let mut i = 1;
    while i < 64 {
        table[i] = nearest_sqrt((table[i - 1] as u128) << 63);
        i += 1;
    }
    table
};

/// A finite float split into `(-1)^negative · mantissa · 2^exponent`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Decoded {
    pub negative: bool,
    pub mantissa: u64,
    pub exponent: i32,
}

/// Splits a finite `f64` into sign, integer mantissa and binary exponent; `None` for NaN/Inf.
pub(crate) fn decode_f64(x: f64) -> Option<Decoded> {
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1 << 52) - 1);
    match biased {
        0x7ff => None,
        0 => Some(Decoded {
            negative: bits >> 63 != 0,
            mantissa: fraction,
            exponent: -1074,
        }),
        _ => Some(Decoded {
            negative: bits >> 63 != 0,
            mantissa: fraction | (1 << 52),
            exponent: biased - 1075,
        }),
    }
}

/// Splits a finite `f32` like [`decode_f64`]; `None` for NaN/Inf.
pub(crate) fn decode_f32(x: f32) -> Option<Decoded> {
    let bits = x.to_bits();
    let biased = ((bits >> 23) & 0xff) as i32;
    let fraction = u64::from(bits & ((1 << 23) - 1));
    match biased {
        0xff => None,
        0 => Some(Decoded {
            negative: bits >> 31 != 0,
            mantissa: fraction,
            exponent: -149,
        }),
        _ => Some(Decoded {
            negative: bits >> 31 != 0,
            mantissa: fraction | (1 << 23),
            exponent: biased - 150,
        }),
    }
}

/// `true` when the finite value `d` lies strictly above 1.
pub(crate) fn greater_than_one(d: Decoded) -> bool {
    !d.negative && d.mantissa != 0 && {
        let top = 63 - d.mantissa.leading_zeros() as i32;
        top + d.exponent > 0 || (top + d.exponent == 0 && d.mantissa != 1 << top)
    }
}

/// `true` when `|d| < 2^32`.
fn below_2_pow_32(d: Decoded) -> bool {
    d.mantissa == 0 || 63 - d.mantissa.leading_zeros() as i32 + d.exponent < 32
}

/// Whether the core lacks a 32 × 32 → 64-bit multiply (ARMv6-M: `build.rs`),
/// where LLVM calls `__aeabi_lmul`, a 64 × 64-bit routine of about 45 instructions, for each.
const NO_WIDE_MULTIPLY: bool = cfg!(rope2d_armv6m);

/// `a · b` of `u32`s as `u64`.
#[inline(always)]
fn mul_u32_wide(a: u32, b: u32) -> u64 {
    if NO_WIDE_MULTIPLY {
        mul_u32_halves(a, b)
    } else {
        u64::from(a) * u64::from(b)
    }
}

/// `a · b` of `u32`s as `u64` from four 16 × 16-bit products (one `muls` each on Thumb-1).
#[inline(always)]
fn mul_u32_halves(a: u32, b: u32) -> u64 {
    let (ah, al, bh, bl) = (a >> 16, a & 0xFFFF, b >> 16, b & 0xFFFF);
    let (middle, carry) = (ah * bl).overflowing_add(al * bh);
    let (low, carry_low) = (al * bl).overflowing_add(middle << 16);
    let high = ah * bh + (middle >> 16) + (u32::from(carry) << 16) + u32::from(carry_low);
    (u64::from(high) << 32) | u64::from(low)
}

/// `a · b` of `u64`s as `u128` (exact: the same bits on every core).
#[inline(always)]
pub(crate) fn mul_u64_wide(a: u64, b: u64) -> u128 {
    if NO_WIDE_MULTIPLY {
        mul_u64_limbs(a, b)
    } else {
        u128::from(a) * u128::from(b)
    }
}

/// `y²` as `u128`: [`mul_u64_wide`] with three products instead of four.
#[inline(always)]
fn square_u64_wide(y: u64) -> u128 {
    if NO_WIDE_MULTIPLY {
        square_limbs(y)
    } else {
        u128::from(y) * u128::from(y)
    }
}

/// `y²` as `u128` from three 32 × 32 → 64-bit products.
#[inline(always)]
fn square_limbs(y: u64) -> u128 {
    let (high, low) = ((y >> 32) as u32, y as u32);
    let middle = u128::from(mul_u32_wide(high, low)) << 33;
    (u128::from(mul_u32_wide(high, high)) << 64) + middle + u128::from(mul_u32_wide(low, low))
}

/// `a · b` of `u64`s as `u128` from four 32 × 32 → 64-bit products.
#[inline(always)]
fn mul_u64_limbs(a: u64, b: u64) -> u128 {
    let (ah, al, bh, bl) = ((a >> 32) as u32, a as u32, (b >> 32) as u32, b as u32);
    let high = u128::from(mul_u32_wide(ah, bh)) << 64;
    let middle = (u128::from(mul_u32_wide(ah, bl)) + u128::from(mul_u32_wide(al, bh))) << 32;
    high + middle + u128::from(mul_u32_wide(al, bl))
}

/// Radians per unit → turns per unit, exact up to the 2⁻⁶⁴ rounding of 1/(2π).
/// `None` when `|radians| ≥ 2^32`.
pub(crate) fn radians_to_turns(radians: Decoded) -> Option<Turns> {
    if !below_2_pow_32(radians) {
        return None;
    }
    // Q64.64 value = mantissa · 2^exponent · constant. For exponent ≥ 0 the scaled mantissa
    // is an integer below 2^32, so it is shifted before the multiply (exactly: one variable
    // 128-bit shift less on 32-bit cores); otherwise the product (mantissa < 2^53, the
    // constant < 2^62: at most 115 bits) is shifted right.
    let magnitude = match radians.exponent {
        0.. => mul_u64_wide(radians.mantissa << radians.exponent, INV_TWO_PI_Q64),
        -127..0 => mul_u64_wide(radians.mantissa, INV_TWO_PI_Q64) >> -radians.exponent,
        _ => 0,
    };
    let magnitude = magnitude as i128;
    Some(Turns(if radians.negative {
        -magnitude
    } else {
        magnitude
    }))
}

/// `log2(x)` for `x > 1` as unsigned Q64.64, within 2⁻⁶⁰ (asserted on eleven values from
/// just above 1 to `f64::MAX`, the worst 3 units of 2⁻⁶⁴: each squaring truncates).
///
/// Out of line: used once per table, and its loop is not worth unrolling into every caller.
#[inline(never)]
pub(crate) fn log2_q64(x: Decoded) -> u128 {
    let top = 63 - x.mantissa.leading_zeros() as i32;
    // y = x / 2^(top + exponent) in [1, 2), as Q2.62.
    let mut y = x.mantissa << (62 - top);
    let integer = (top + x.exponent) as u128;
    // Each squaring of y in [1, 2) yields one more bit of log2(y).
    let square = |y: u64| {
        let y = (square_u64_wide(y) >> 62) as u64;
        if y >= 2 << 62 { (y >> 1, 1) } else { (y, 0) }
    };
    // 64 bits, shifted in behind a marker bit: the loop ends with the shift that pushes the
    // marker out of bit 63 (an exit that depends on the data, so LLVM does not unroll it).
    let mut fraction = 1u64;
    loop {
        let (next, bit) = square(y);
        y = next;
        let last = fraction >> 63 != 0;
        fraction = (fraction << 1) | bit;
        if last {
            break;
        }
    }
    (integer << 64) | u128::from(fraction)
}

/// `a · b` for Q1.63 `b` (`a` in any Q format, below 2⁶⁴ after the product), rounded to
/// nearest (ties up).
#[inline(always)]
pub(crate) fn mul_q63_nearest(a: u64, b: u64) -> u64 {
    ((mul_u64_wide(a, b) + (1 << 62)) >> 63) as u64
}

/// `2^(-x)` for unsigned Q64.64 `x`, as Q1.63 (so `1 << 63` is 1.0).
///
/// One multiply per set bit of the fraction, from the most significant down (the order fixes
/// the rounding of each product, so the bits of the result). Products rounded to nearest, table
/// entries too: each product's error is then at most one unit of 2⁻⁶³ (truncated, the errors
/// all had one sign, and a section's frequencies, a running product of these powers, drifted:
/// 64 pairs reached 1.5e-7 entries at position 2³² − 1). Out of line: used once per table.
#[inline(never)]
pub(crate) fn exp2_neg_q63(x: u128) -> u64 {
    let integer = x >> 64;
    let mut fraction = x as u64;
    let mut result = 1u64 << 63;
    // Bit 63 − i of the fraction is worth 2^−(i+1): factor `EXP2_NEG[i]`. The fraction is
    // shifted past each bit (not searched with `leading_zeros`: a library call on cores
    // without `clz`, such as the Cortex-M0).
    // The exit depends on the data, so LLVM does not unroll the loop.
    let mut i = 0;
    while fraction != 0 {
        if fraction >> 63 != 0
            && let Some(factor) = EXP2_NEG.get(i)
        {
            result = mul_q63_nearest(result, *factor);
        }
        fraction <<= 1;
        i += 1;
    }
    if integer >= 64 { 0 } else { result >> integer }
}

/// Whether [`div_u128`] divides `n` by `d` (without dividing).
#[inline(always)]
pub(crate) fn divisible(n: u128, d: u64) -> bool {
    n >> 112 == 0 && (1..1 << 16).contains(&d)
}

/// `n / d` for `n < 2^112` and `1 ≤ d < 2^16` (else `None`): long division by 16-bit
/// digits, each step a 32-bit division (one `udiv` on Cortex-M3 and up), where a `u128` or
/// `u64` division links a library routine of several hundred bytes on 32-bit cores. Used a
/// few times per table, never per entry, so out of line (one copy).
#[inline(never)]
pub(crate) fn div_u128(n: u128, d: u64) -> Option<u128> {
    if !divisible(n, d) {
        return None;
    }
    let d = NonZeroU32::new(d as u32)?;
    // Seven digits, shifted into the quotient behind a marker bit: the loop ends when the
    // marker reaches bit 112 (an exit that depends on the data, so LLVM does not unroll it).
    let (mut rest, mut quotient, mut remainder) = (n, 1u128, 0u32);
    while quotient >> 112 == 0 {
        // remainder < d < 2^16, so the partial dividend fits in 32 bits.
        let partial = (remainder << 16) | (rest >> 96) as u32 & 0xFFFF;
        rest <<= 16;
        quotient = (quotient << 16) | u128::from(partial / d);
        remainder = partial % d;
    }
    Some(quotient ^ 1 << 112)
}

/// `(a · b) >> 63` for Q1.63 `b`; `a` unsigned Q64.64 below `2^96` (what
/// [`radians_to_turns`] returns: below `2^32 / 2π` turns).
pub(crate) fn mul_q63(a: u128, b: u64) -> Turns {
    debug_assert!(a >> 96 == 0, "frequency scale out of range");
    let high = mul_u64_wide(u64::from((a >> 64) as u32), b);
    let low = mul_u64_wide(a as u64, b) >> 63;
    Turns(((high << 1) + low) as i128)
}

/// The low 64 bits of `floor(a · b / 2^64)` for Q0.64 `b` (two's complement for `a < 0`): a
/// frequency scaled by `b`, modulo one turn per unit — all that the phase of an integer
/// coordinate needs of it.
pub(crate) fn mul_q64_low(a: Turns, b: u64) -> u64 {
    // a = high·2^64 + low with `high` signed: floor(a·b / 2^64) = high·b + floor(low·b / 2^64).
    let (high, low) = ((a.0 >> 64) as u64, a.0 as u64);
    let low_product = (mul_u64_wide(low, b) >> 64) as u64;
    high.wrapping_mul(b).wrapping_add(low_product)
}

/// `frac(m · u)` as a phase: exact modulo the Q64.64 rounding of `u`.
#[inline]
pub(crate) fn phase_of_integer(m: i64, u: Turns) -> u64 {
    (i128::from(m).wrapping_mul(u.0)) as u64
}

/// `frac(x · u)` for any finite `f32` coordinate `x`, exact in the same sense: an `f32` is a
/// dyadic rational `m · 2^e`, so the product is formed in wrapping fixed point. Precision
/// degrades only past |x| ≈ 2^40, where the 2⁻⁶⁴ rounding of `u` itself shows.
pub(crate) fn phase_of_coordinate(x: Decoded, u: Turns) -> u64 {
    let m = x.mantissa as i128;
    let m = if x.negative { -m } else { m };
    let product = m.wrapping_mul(u.0);
    if x.exponent >= 0 {
        if x.exponent >= 64 {
            0
        } else {
            (product << x.exponent) as u64
        }
    } else if x.exponent > -128 {
        (product >> -x.exponent) as u64
    } else if product < 0 {
        u64::MAX
    } else {
        0
    }
}

/// `[cos, sin]` of a phase in turns (`2^64` = one turn).
///
/// Octant reduction is exact integer arithmetic; the remaining angle in [0, π/4] goes through
/// Cephes' single-precision minimax polynomials. Max abs error against `f64` ≈ 1.2e-7
/// (asserted in the tests below); no `f64` and no library call is involved.
#[inline]
pub(crate) fn cos_sin_turns(phase: u64) -> [f32; 2] {
    const RADIANS_PER_QUADRANT_UNIT: f32 = core::f32::consts::FRAC_PI_2 / 4_294_967_296.0;
    let quadrant = phase >> 62;
    let within = phase << 2;
    let reflected = within > 1 << 63;
    let within = if reflected {
        within.wrapping_neg()
    } else {
        within
    };
    let theta = ((within >> 32) as u32) as f32 * RADIANS_PER_QUADRANT_UNIT;
    let z = theta * theta;
    let sin = ((-1.951_529_6e-4 * z + 8.332_161e-3) * z - 1.666_665_5e-1) * z * theta + theta;
    let cos = ((2.443_315_7e-5 * z - 1.388_731_6e-3) * z + 4.166_664_6e-2) * z * z - 0.5 * z + 1.0;
    // Quadrants 0–3 give [cos, sin], [−sin, cos], [−cos, −sin], [sin, −cos]: a swap for odd
    // quadrants (undoing the reflection's), and sign flips, done on the sign bits.
    let quadrant = quadrant as u32;
    let (cos, sin) = if reflected != (quadrant & 1 != 0) {
        (sin, cos)
    } else {
        (cos, sin)
    };
    let cos_sign = ((quadrant >> 1) ^ (quadrant & 1)) << 31;
    let sin_sign = (quadrant >> 1) << 31;
    [
        f32::from_bits(cos.to_bits() ^ cos_sign),
        f32::from_bits(sin.to_bits() ^ sin_sign),
    ]
}

/// `sin(k/256 · π/2)` for `k = 0 ..= 256` as Q8.24 (plus a copy of the last, so that an
/// interpolation at the end of the quadrant reads in bounds): 1 032 bytes, computed at
/// compile time from the Taylor series in Q2.62 (`u128` arithmetic, 13 terms: exact to
/// 2⁻⁵⁰ before the rounding to Q24).
static SIN_Q24: [u32; 258] = {
    // π/2 as Q2.62.
    const HALF_PI_Q62: u128 = 0x6487_ED51_10B4_611A;
    let mut table = [0u32; 258];
    let mut k = 0usize;
    while k <= 256 {
        let x = HALF_PI_Q62 * k as u128 / 256;
        let x2 = (x * x) >> 62;
        let (mut term, mut sum, mut n) = (x, x as i128, 3u128);
        while n <= 27 {
            term = ((term * x2) >> 62) / ((n - 1) * n);
            sum += if n % 4 == 3 {
                -(term as i128)
            } else {
                term as i128
            };
            n += 2;
        }
        table[k] = ((sum + (1 << 37)) >> 38) as u32;
        k += 1;
    }
    table[257] = table[256];
    table
};

/// `sin` of quadrant position `position / 2²²` (0 ..= 2²²) as Q24: linear interpolation
/// between the two [`SIN_Q24`] entries around it (a 17-bit difference times a 14-bit
/// fraction: no overflow, no 64-bit multiply).
#[inline(always)]
fn sin_quadrant_q24(position: u32) -> u32 {
    let (k, fraction) = ((position >> 14) as usize, position & 0x3FFF);
    let (Some(&lo), Some(&hi)) = (SIN_Q24.get(k), SIN_Q24.get(k + 1)) else {
        return 0;
    };
    lo + (((hi - lo) * fraction) >> 14)
}

/// `[cos, sin]` of a phase in turns (`2^64` = one turn) as Q15 (`32 767` is 1 − 2⁻¹⁵),
/// with integer arithmetic only: no `f32`, no `f64`, no 64-bit multiply, about 60
/// instructions on a Cortex-M0.
///
/// The quadrant comes from the top two bits of the phase; within it, `sin` and `cos` are
/// interpolated linearly in a 257-point quarter-wave table ([`SIN_Q24`]: step π/512, so the
/// interpolation is at most 4.8e-6 off, 0.16 LSB), each rounded to Q15 (half up) and
/// saturated at 32 767. Each entry is within 0.68 LSB (2⁻¹⁵) of `2¹⁵ ·` the `f64` value, and
/// within 1 LSB where that exceeds 32 767.5: asserted in the tests below.
#[inline]
pub(crate) fn cos_sin_turns_q15(phase: u64) -> [i16; 2] {
    let quadrant = (phase >> 62) as u32;
    // The position within the quadrant, 22 bits.
    let position = ((phase >> 40) as u32) & 0x3F_FFFF;
    let sin = sin_quadrant_q24(position);
    let cos = sin_quadrant_q24((1 << 22) - position);
    let q15 = |v: u32| ((v + (1 << 8)) >> 9).min(32_767) as i16;
    let (cos, sin) = (q15(cos), q15(sin));
    // Quadrants 0–3 give [cos, sin], [−sin, cos], [−cos, −sin], [sin, −cos].
    match quadrant {
        0 => [cos, sin],
        1 => [-sin, cos],
        2 => [-cos, -sin],
        _ => [sin, -cos],
    }
}

/// `log2(x)` of a finite `x > 0` in `f64`, through [`log2_q64`] (about 1e-16 relative);
/// `None` otherwise. For the configuration arithmetic of [`preset`](crate::preset)'s
/// scalings, never on a table-building or rotation path.
pub(crate) fn log2_f64(x: f64) -> Option<f64> {
    let d = decode_f64(x).filter(|d| !d.negative && d.mantissa != 0)?;
    // x = m · 2^e with the integer mantissa m ≥ 1.
    let m = Decoded {
        negative: false,
        mantissa: d.mantissa,
        exponent: 0,
    };
    let q = log2_q64(m);
    // The integer parts first, so that nothing cancels in floating point.
    let whole = (q >> 64) as i64 + i64::from(d.exponent);
    let fraction = (q as u64) as f64 / 18_446_744_073_709_551_616.0;
    Some(whole as f64 + fraction)
}

/// `2^y` in `f64` (about 1e-16 relative) for `|y| < 1000`; 0 or ∞ beyond, NaN for NaN.
pub(crate) fn exp2_f64(y: f64) -> f64 {
    if y.is_nan() {
        return y;
    }
    if y >= 1000.0 {
        return f64::INFINITY;
    }
    if y <= -1000.0 {
        return 0.0;
    }
    // y = i + f, f in [0, 1): 2^y = 2^(i + 1) · 2^−(1 − f).
    let mut i = y as i64;
    if (i as f64) > y {
        i -= 1;
    }
    let f = y - i as f64;
    let negated = ((1.0 - f) * 18_446_744_073_709_551_616.0) as u128;
    let mantissa = exp2_neg_q63(negated) as f64; // 2^−(1−f) · 2^63
    mantissa * pow2_f64(i + 1 - 63)
}

/// `2^e` in `f64` for `|e| ≤ 1100` (exact where representable).
fn pow2_f64(e: i64) -> f64 {
    let half = e / 2;
    let one = |e: i64| match e {
        -1022..=1023 => f64::from_bits(((e + 1023) as u64) << 52),
        ..-1022 => 0.0,
        _ => f64::INFINITY,
    };
    one(half) * one(e - half)
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    fn turns_to_f64(u: Turns) -> f64 {
        u.0 as f64 / 18_446_744_073_709_551_616.0
    }

    #[test]
    // Miri deliberately perturbs std's `log2`/`exp2` by a few ulps: the reference moves.
    #[cfg_attr(miri, ignore)]
    fn float_log2_and_exp2_match_std() {
        for x in [
            1.0f64,
            1.5,
            2.0,
            10_000.0,
            0.001,
            123_456.789,
            1e-300,
            5e-324,
        ] {
            let got = log2_f64(x).unwrap();
            assert!(
                (got - x.log2()).abs() <= 1e-15 * x.log2().abs().max(1.0),
                "{x}"
            );
        }
        assert!(log2_f64(0.0).is_none() && log2_f64(-1.0).is_none());
        for y in [0.0f64, 1.0, -1.0, 0.5, 13.287, -13.287, 52.5, -40.1] {
            let got = exp2_f64(y);
            assert!((got - y.exp2()).abs() <= 4e-16 * y.exp2(), "{y}: {got}");
        }
    }

    #[test]
    fn decode_round_trips() {
        let value = |d: Decoded| {
            let half = d.exponent / 2;
            let sign = if d.negative { -1.0 } else { 1.0 };
            // Exact powers of two (`powi` is not exact under Miri).
            let pow2 = |e: i32| f64::from_bits(((e + 1023) as u64) << 52);
            sign * d.mantissa as f64 * pow2(half) * pow2(d.exponent - half)
        };
        for x in [
            1.0f64,
            100.0,
            10_000.0,
            core::f64::consts::TAU,
            1e-300,
            5e-324,
            -3.5,
        ] {
            assert_eq!(value(decode_f64(x).unwrap()), x);
        }
        for x in [1.0f32, 0.5, -2.75, 1e-45, 3.4e38] {
            assert_eq!(value(decode_f32(x).unwrap()), f64::from(x));
        }
        assert!(decode_f64(f64::NAN).is_none() && decode_f32(f32::INFINITY).is_none());
    }

    #[test]
    fn greater_than_one_matches_f64() {
        for x in [0.0, 0.5, 1.0, 1.0000000000000002, 2.0, 100.0, 1e-310, -5.0] {
            assert_eq!(greater_than_one(decode_f64(x).unwrap()), x > 1.0, "{x}");
        }
    }

    #[test]
    fn log2_and_exp2_are_accurate() {
        for base in [1.5f64, 2.0, 10.0, 100.0, 10_000.0, 500_000.0, 1e300] {
            let l = log2_q64(decode_f64(base).unwrap());
            let got = l as f64 / 18_446_744_073_709_551_616.0;
            assert!(
                (got - base.log2()).abs() <= 1e-15 * base.log2().max(1.0),
                "{base}"
            );
        }
        for x in [0.0f64, 0.25, 0.5, 1.0, 3.3, 13.2877, 40.0] {
            let q = (x * 18_446_744_073_709_551_616.0) as u128;
            let got = exp2_neg_q63(q) as f64 / 9_223_372_036_854_775_808.0;
            assert!(
                (got - (-x).exp2()).abs() <= 1e-17 + 1e-15 * (-x).exp2(),
                "{x}: {got}"
            );
        }
    }

    /// `log2_q64` within 2⁻⁶⁰ of `log2 x`, as its docs state (16 units of its Q64.64), against
    /// values from 120-digit decimal arithmetic (Python's `decimal`: `Decimal(x).ln() /
    /// Decimal(2).ln()` of the exact `f64`, times 2⁶⁴, rounded): the frequencies' tests see
    /// its error only through `exp2`. Measured: at most 3 units (1e300), one or two for bases.
    #[test]
    fn log2_is_within_2_pow_minus_60() {
        const EXACT: [(f64, u128); 11] = [
            (1.000_000_000_000_000_2, 0x1715),
            (1.5, 0x95c0_1a39_fbd6_87a0),
            (2.0, 0x1_0000_0000_0000_0000),
            (10.0, 0x3_5269_e12f_346e_2bf9),
            (100.0, 0x6_a4d3_c25e_68dc_57f2),
            (10_000.0, 0xd_49a7_84bc_d1b8_afe5),
            (65_535.0, 0xf_fffe_8eaa_d102_918a),
            (500_000.0, 0x12_ee7b_471b_3a95_07d7),
            (1_000_000.0, 0x13_ee7b_471b_3a95_07d7),
            (1e300, 0x3e4_9413_e351_711b_8d6c),
            (f64::MAX, 0x3ff_ffff_ffff_ffff_f475),
        ];
        for (x, want) in EXACT {
            let got = log2_q64(decode_f64(x).unwrap());
            assert!(got.abs_diff(want) <= 16, "{x}: {got:#x}, exact {want:#x}");
        }
    }

    #[test]
    fn div_u128_matches_hardware_division() {
        for (n, d) in [
            (0u128, 1u64),
            (1, 1),
            ((1 << 111) + 12_345, 3),
            (u128::from(u64::MAX), 14),
            (1 << 75, 16),
            (12345, 65_535),
            ((1 << 112) - 1, 65_535),
            ((1 << 112) - 1, 1),
            (7, 9),
        ] {
            assert_eq!(div_u128(n, d), Some(n / u128::from(d)), "{n} / {d}");
        }
        for (n, d) in [
            (5, 0),
            (5, 1 << 16),
            (5, 1 << 40),
            (5, u64::MAX),
            (1 << 112, 3),
        ] {
            assert_eq!(div_u128(n, d), None, "{n} / {d}");
        }
    }

    #[test]
    fn radians_to_turns_matches_f64() {
        for r in [1.0f64, -0.98, core::f64::consts::TAU, 1e-3, 12345.678] {
            let u = radians_to_turns(decode_f64(r).unwrap()).unwrap();
            let want = r / core::f64::consts::TAU;
            assert!(
                (turns_to_f64(u) - want).abs() <= 1e-16 * want.abs().max(1.0),
                "{r}"
            );
        }
        assert!(radians_to_turns(decode_f64(5e9).unwrap()).is_none());
    }

    #[test]
    fn cos_sin_error_is_below_1_2e_7() {
        let mut worst = 0f64;
        let mut phase = 0u64;
        let samples = if cfg!(miri) { 2_000 } else { 2_000_000 };
        for _ in 0..samples {
            phase = phase.wrapping_add(0x0000_8a3d_70a3_d70a_u64.wrapping_mul(7919));
            let [c, s] = cos_sin_turns(phase);
            let angle = phase as f64 / 18_446_744_073_709_551_616.0 * core::f64::consts::TAU;
            worst = worst
                .max((f64::from(c) - angle.cos()).abs())
                .max((f64::from(s) - angle.sin()).abs());
        }
        for phase in [
            0,
            1 << 61,
            1 << 62,
            3 << 62,
            1 << 63,
            u64::MAX,
            (1 << 61) + 1,
            (1 << 61) - 1,
        ] {
            let [c, s] = cos_sin_turns(phase);
            let angle = phase as f64 / 18_446_744_073_709_551_616.0 * core::f64::consts::TAU;
            worst = worst
                .max((f64::from(c) - angle.cos()).abs())
                .max((f64::from(s) - angle.sin()).abs());
        }
        assert!(worst <= 1.2e-7, "worst {worst:e}");
    }

    #[test]
    fn integer_phase_is_exact_at_large_positions() {
        // f = 1 rad per unit; frac(pos / 2π) from 60-digit decimal arithmetic.
        let u = radians_to_turns(decode_f64(1.0).unwrap()).unwrap();
        let exact = [
            (65_535i64, 0.219_195_527_360_829_6),
            (1 << 24, 0.857_720_435_897_587_1),
            ((1 << 30) + 7, 0.008_192_499_088_841_045),
            (-12_345, 0.232_227_530_552_079_93),
        ];
        for (pos, want) in exact {
            let got = phase_of_integer(pos, u) as f64 / 18_446_744_073_709_551_616.0;
            // The only error left is the 2^-64 rounding of 1/(2π), times the position.
            assert!((got - want).abs() < 1e-10, "{pos}: {got} vs {want}");
        }
    }

    #[test]
    fn coordinate_phase_matches_integer_phase() {
        let u = radians_to_turns(decode_f64(0.37).unwrap()).unwrap();
        for pos in [0i64, 1, 13, 65_535, -7] {
            let x = decode_f32(pos as f32).unwrap();
            assert_eq!(phase_of_coordinate(x, u), phase_of_integer(pos, u));
        }
        let half = phase_of_coordinate(decode_f32(0.5).unwrap(), u);
        let one = phase_of_integer(1, u);
        assert_eq!(half.wrapping_mul(2) >> 1, one >> 1);
    }
    #[test]
    fn q15_cos_sin_is_within_one_lsb() {
        let check = |phase: u64, worst: &mut f64, worst_unsaturated: &mut f64| {
            let [c, s] = cos_sin_turns_q15(phase);
            let angle = phase as f64 / 18_446_744_073_709_551_616.0 * core::f64::consts::TAU;
            for (got, exact) in [(c, angle.cos()), (s, angle.sin())] {
                let exact = exact * 32_768.0;
                let error = (f64::from(got) - exact).abs();
                *worst = worst.max(error);
                if exact.abs() <= 32_767.5 {
                    *worst_unsaturated = worst_unsaturated.max(error);
                }
            }
        };
        let (mut worst, mut unsaturated) = (0f64, 0f64);
        let samples = if cfg!(miri) { 2_000 } else { 1 << 21 };
        // Every 2^-21 of a turn, shifted off the grid, plus the octant edges.
        for i in 0..samples {
            let phase = (i as u64).wrapping_mul(u64::MAX / samples as u64) ^ 0x5555;
            check(phase, &mut worst, &mut unsaturated);
        }
        for octant in 0..8u64 {
            for nudge in [0u64, 1, 1 << 20, 1 << 40] {
                let edge = octant << 61;
                check(edge.wrapping_add(nudge), &mut worst, &mut unsaturated);
                check(edge.wrapping_sub(nudge), &mut worst, &mut unsaturated);
            }
        }
        std::println!("Q15 entries: worst {worst:.3} LSB, {unsaturated:.3} unsaturated");
        assert!(worst <= 1.0, "worst {worst} LSB");
        assert!(unsaturated <= 0.68, "worst unsaturated {unsaturated} LSB");
    }

    #[test]
    fn wide_products_are_exact() {
        let values = [
            0u64,
            1,
            0xFFFF,
            0x1_0000,
            0xFFFF_FFFF,
            0x1_0000_0000,
            u64::MAX,
            0x9E37_79B9_7F4A_7C15,
        ];
        // The limb forms (what ARMv6-M runs), checked on every host.
        for &a in &values {
            for &b in &values {
                assert_eq!(mul_u64_limbs(a, b), u128::from(a) * u128::from(b));
                assert_eq!(mul_u64_wide(a, b), u128::from(a) * u128::from(b));
                let (a32, b32) = (a as u32, b as u32);
                assert_eq!(mul_u32_halves(a32, b32), u64::from(a32) * u64::from(b32));
            }
            assert_eq!(square_limbs(a), u128::from(a) * u128::from(a));
        }
    }

    #[test]
    fn quarter_wave_table_is_exact_to_half_a_q24_unit() {
        for (k, &v) in SIN_Q24.iter().enumerate().take(257) {
            let exact = (k as f64 / 256.0 * core::f64::consts::FRAC_PI_2).sin() * 16_777_216.0;
            assert!(
                (f64::from(v) - exact).abs() <= 0.5 + 1e-6,
                "{k}: {v} vs {exact}"
            );
        }
    }
}
