//! Frequency schedules and the grid-index → coordinate maps, in fixed point.

#![forbid(unsafe_code)]

use crate::config::{AnglePrecision, Coords};
use crate::error::Error;
use crate::math::{self, Turns};

/// One frequency of a 1-D schedule, which may round angles like float32 reference code.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Freq {
    /// Exact, in turns per unit.
    Exact(Turns),
    /// Radians per unit as float32 reference code holds it; angles are rounded to `f32`
    /// before reduction ([`AnglePrecision::Float32`]).
    Float32(f32),
}

/// One radian per unit, in turns.
const ONE_RADIAN: Turns = Turns(0x28BE_60DB_9391_054A);

impl Freq {
    /// The phase of integer coordinate `m`.
    #[inline]
    pub(crate) fn phase_of_integer(self, m: i64) -> u64 {
        match self {
            Freq::Exact(f) => math::phase_of_integer(m, f),
            Freq::Float32(f) => match math::decode_f32(m as f32 * f) {
                Some(angle) => math::phase_of_coordinate(angle, ONE_RADIAN),
                None => 0,
            },
        }
    }
}

/// `f_j = freq_scale · base^(−j/len)` for `j < len`, exact.
///
/// 1-D RoPE uses `len = d/2` (`base^(−2j/d)`), axial 2-D `len = d/4` (`base^(−4j/d)`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Schedule {
    /// `freq_scale` in turns (positive), unsigned Q64.64.
    scale: u128,
    /// `log2(base) / len` as Q64.64.
    exponent: u128,
    /// `base^(−1/len)` as Q1.63.
    ratio: u64,
    len: usize,
}

impl Schedule {
    pub(crate) fn new(base: f64, freq_scale: f64, len: usize) -> Result<Self, Error> {
        let base = math::decode_f64(base)
            .filter(|b| math::greater_than_one(*b))
            .ok_or(Error::InvalidBase)?;
        let scale = math::decode_f64(freq_scale)
            .filter(|s| !s.negative && s.mantissa != 0)
            .and_then(math::radians_to_turns)
            .ok_or(Error::InvalidFreqScale)?;
        let len = len.max(1);
        let exponent =
            math::div_u128(math::log2_q64(base), len as u64).ok_or(Error::ShapeOverflow)?;
        Ok(Self {
            scale: scale.0.unsigned_abs(),
            exponent,
            ratio: math::exp2_neg_q63(exponent),
            len,
        })
    }

    /// The frequencies `f_0, f_1, …` (each from the previous by one fixed-point multiply).
    pub(crate) fn turns(self) -> impl Iterator<Item = Turns> {
        let mut power = 1u64 << 63;
        (0..self.len).map(move |_| {
            let f = math::mul_q63(self.scale, power);
            power = ((u128::from(power) * u128::from(self.ratio)) >> 63) as u64;
            f
        })
    }

    /// `1 / f32(base^(j/len))` in `f32`, as reference code computes `inv_freq`: the power
    /// correctly rounded to `f32` (from 63 fixed-point bits), then an `f32` division.
    fn float32_inverse(self, j: usize) -> f32 {
        let x = self.exponent * j as u128; // log2(base^(j/len)), Q64.64
        let whole = (x >> 64) as i32;
        let fraction = x as u64;
        // 2^x = 2^(whole + 1) · 2^−(1 − fraction); the second factor lies in (0.5, 1].
        let mantissa = math::exp2_neg_q63((1u128 << 64) - u128::from(fraction));
        let power = mantissa as f32 * pow2_f32(whole + 1 - 63);
        1.0 / power
    }
}

/// A 1-D schedule: exact, or rounded like float32 reference code.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Schedule1d {
    exact: Schedule,
    /// `Some(freq_scale)` for [`AnglePrecision::Float32`].
    float32_scale: Option<f32>,
}

impl Schedule1d {
    pub(crate) fn new(
        base: f64,
        freq_scale: f64,
        len: usize,
        precision: AnglePrecision,
    ) -> Result<Self, Error> {
        let exact = Schedule::new(base, freq_scale, len)?;
        let float32_scale = match precision {
            AnglePrecision::Exact => None,
            AnglePrecision::Float32 => Some(freq_scale as f32),
        };
        Ok(Self {
            exact,
            float32_scale,
        })
    }

    /// The frequencies `f_0, f_1, …`.
    pub(crate) fn iter(self) -> impl Iterator<Item = Freq> {
        let exact = self.exact;
        exact
            .turns()
            .enumerate()
            .map(move |(j, f)| match self.float32_scale {
                None => Freq::Exact(f),
                Some(scale) => Freq::Float32(exact.float32_inverse(j) * scale),
            })
    }
}

/// `2^e` as `f32` (0 or ∞ outside the normal range), without `powi` (not in `core`).
fn pow2_f32(e: i32) -> f32 {
    match e {
        -126..=127 => f32::from_bits(((e + 127) as u32) << 23),
        ..-126 => 0.0,
        _ => f32::INFINITY,
    }
}

/// Maps index `i` on an axis of `n` cells to the coordinate `(a·i + b) / q` of a [`Coords`]
/// mode, so that phases stay exact integer arithmetic.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AxisMap {
    a: i64,
    b: i64,
    /// `2^64 / q` as Q0.64, or `None` for `q = 1`.
    reciprocal: Option<u64>,
}

impl AxisMap {
    /// The identity map of [`Coords::Index`].
    pub(crate) const INDEX: Self = Self {
        a: 1,
        b: 0,
        reciprocal: None,
    };

    /// The map for an axis of `n > 0` cells, with `reference` the reference grid side
    /// (only used by [`Coords::Rescale`]).
    pub(crate) fn new(coords: Coords, n: usize, reference: u32) -> Result<Self, Error> {
        let n_i64 = i64::try_from(n).map_err(|_| Error::ShapeOverflow)?;
        // `(a, b)` and whether the mode divides by `n`.
        let (a, b, divides) = match coords {
            Coords::Index => (1, 0, false),
            Coords::Rescale { .. } if reference == 0 => return Err(Error::InvalidRefGrid),
            Coords::Rescale { .. } => (i64::from(reference), 0, true),
            Coords::Centered => (2, 1 - n_i64, true),
        };
        // 2^64 / n as Q0.64 (one division call site, however many modes divide). Callers
        // have rejected n = 0 (an empty grid), so `None` means n is past the division's limit.
        let reciprocal = if divides {
            let q = math::div_u128(u128::from(u64::MAX), n as u64).ok_or(Error::ShapeOverflow)?;
            Some(q as u64)
        } else {
            None
        };
        Ok(Self { a, b, reciprocal })
    }

    /// Phase of index 0 and phase step per index for frequency `f`.
    #[inline]
    pub(crate) fn start_and_step(self, f: Turns) -> (u64, u64) {
        // Phases are integer multiples of the frequency per unit taken modulo one turn
        // (2^64), so its low 64 bits are all they need.
        let per_unit = match self.reciprocal {
            None => f.0 as u64,
            Some(r) => math::mul_q64_low(f, r),
        };
        (
            (self.b as u64).wrapping_mul(per_unit),
            (self.a as u64).wrapping_mul(per_unit),
        )
    }
}

/// Fills an axis table: `out[i · width + j] = [cos, sin]` of index `i`'s coordinate times the
/// `j`-th frequency, for `i < out.len() / width`.
pub(crate) fn fill_axis(
    out: &mut [[f32; 2]],
    width: usize,
    map: AxisMap,
    freqs: impl Iterator<Item = Turns>,
) {
    if width == 0 {
        return;
    }
    for (j, f) in freqs.take(width).enumerate() {
        let (start, step) = map.start_and_step(f);
        let mut phase = start;
        for row in out.chunks_exact_mut(width) {
            if let Some(entry) = row.get_mut(j) {
                *entry = math::cos_sin_turns(phase);
            }
            phase = phase.wrapping_add(step);
        }
    }
}

/// Fills a 1-D table for positions `0 .. out.len() / width`, exact or float32-rounded.
pub(crate) fn fill_1d(out: &mut [[f32; 2]], width: usize, schedule: Schedule1d) {
    match schedule.float32_scale {
        None => fill_axis(out, width, AxisMap::INDEX, schedule.exact.turns()),
        Some(_) => {
            if width == 0 {
                return;
            }
            for (j, f) in schedule.iter().take(width).enumerate() {
                for (i, row) in out.chunks_exact_mut(width).enumerate() {
                    if let Some(entry) = row.get_mut(j) {
                        *entry = math::cos_sin_turns(f.phase_of_integer(i as i64));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    #[test]
    fn schedule_matches_f64_pow() {
        for (base, scale, len) in [
            (100.0, 1.0, 16),
            (10_000.0, 1.0, 32),
            (100.0, core::f64::consts::TAU, 16),
            (500_000.0, 0.25, 64),
        ] {
            let s = Schedule::new(base, scale, len).unwrap();
            for (j, f) in s.turns().enumerate() {
                let got = f.0 as f64 / 18_446_744_073_709_551_616.0 * core::f64::consts::TAU;
                let want = scale * base.powf(-(j as f64) / len as f64);
                assert!(
                    (got - want).abs() <= 1e-15 * want.max(1.0),
                    "{base} {j}: {got} {want}"
                );
            }
        }
    }

    #[test]
    fn schedule_rejects_bad_base_and_scale() {
        for base in [1.0, 0.5, -100.0, f64::NAN, f64::INFINITY, 0.0] {
            assert_eq!(
                Schedule::new(base, 1.0, 4).err(),
                Some(Error::InvalidBase),
                "{base}"
            );
        }
        for scale in [0.0, -1.0, f64::NAN, f64::INFINITY, 5e9] {
            assert_eq!(
                Schedule::new(100.0, scale, 4).err(),
                Some(Error::InvalidFreqScale),
                "{scale}"
            );
        }
    }

    #[test]
    fn float32_inverse_matches_reference_inv_freq() {
        // inv_freq_f32 of the LLaMA golden file: 1 / (10000 ** (arange(0, 64, 2) / 64)) in float32.
        let s = Schedule1d::new(10_000.0, 1.0, 32, AnglePrecision::Float32).unwrap();
        let want: [f64; 32] = [
            1.0,
            0.7498942017555237,
            0.5623413324356079,
            0.4216965138912201,
            0.3162277638912201,
            0.23713736236095428,
            0.17782793939113617,
            0.1333521455526352,
            0.10000000149011612,
            0.07498941570520401,
            0.05623412877321243,
            0.04216964915394783,
            0.03162277862429619,
            0.0237137358635664,
            0.017782794311642647,
            0.01333521492779255,
            0.009999999776482582,
            0.007498942315578461,
            0.005623413249850273,
            0.0042169648222625256,
            0.003162277862429619,
            0.0023713738191872835,
            0.0017782794311642647,
            0.0013335214462131262,
            0.0010000000474974513,
            0.0007498941849917173,
            0.000562341301701963,
            0.00042169648804701865,
            0.0003162277862429619,
            0.0002371373848291114,
            0.00017782794020604342,
            0.0001333521504420787,
        ];
        for (f, want) in s.iter().zip(want) {
            let Freq::Float32(f) = f else { panic!() };
            assert_eq!(f, want as f32);
        }
    }

    #[test]
    fn axis_maps_match_their_formulas() {
        let f = Schedule::new(100.0, 1.0, 1)
            .unwrap()
            .turns()
            .next()
            .unwrap();
        let cases = [
            (Coords::Index, 14, 0, 5, 5.0),
            (
                Coords::Rescale {
                    ref_rows: 16,
                    ref_cols: 16,
                },
                14,
                16,
                5,
                5.0 * 16.0 / 14.0,
            ),
            (Coords::Centered, 14, 0, 0, 2.0 * 0.5 / 14.0 - 1.0),
            (Coords::Centered, 14, 0, 13, 2.0 * 13.5 / 14.0 - 1.0),
        ];
        for (coords, n, reference, i, coordinate) in cases {
            let (start, step) = AxisMap::new(coords, n, reference)
                .unwrap()
                .start_and_step(f);
            let phase =
                start.wrapping_add(step.wrapping_mul(i)) as f64 / 18_446_744_073_709_551_616.0;
            let want = (coordinate / core::f64::consts::TAU).rem_euclid(1.0);
            assert!(
                (phase - want).abs() < 1e-15,
                "{coords:?} {i}: {phase} {want}"
            );
        }
        assert_eq!(
            AxisMap::new(
                Coords::Rescale {
                    ref_rows: 0,
                    ref_cols: 0
                },
                4,
                0
            )
            .err(),
            Some(Error::InvalidRefGrid)
        );
    }
}
