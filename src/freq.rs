//! Frequency schedules and the grid-index → coordinate maps, in fixed point.

use crate::config::Coords;
use crate::error::Error;
use crate::math::{self, Turns};

/// `f_j = freq_scale · base^(−j/len)` for `j < len`, in turns per unit.
///
/// 1-D RoPE uses `len = d/2` (`base^(−2j/d)`), axial 2-D `len = d/4` (`base^(−4j/d)`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Schedule {
    scale: Turns,
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
        let exponent = math::log2_q64(base) / len as u128;
        Ok(Self {
            scale,
            ratio: math::exp2_neg_q63(exponent),
            len,
        })
    }

    /// The frequencies `f_0, f_1, …` (each from the previous by one fixed-point multiply).
    pub(crate) fn iter(self) -> impl Iterator<Item = Turns> {
        let mut power = 1u64 << 63;
        (0..self.len).map(move |_| {
            let f = math::mul_q63(self.scale, power);
            power = ((u128::from(power) * u128::from(self.ratio)) >> 63) as u64;
            f
        })
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
    /// The map for an axis of `n > 0` cells, with `reference` the reference grid side
    /// (only used by [`Coords::Rescale`]).
    pub(crate) fn new(coords: Coords, n: usize, reference: u32) -> Result<Self, Error> {
        let n_i64 = i64::try_from(n).map_err(|_| Error::ShapeOverflow)?;
        let divide_by_n = Some(u64::MAX / n as u64);
        Ok(match coords {
            Coords::Index => Self {
                a: 1,
                b: 0,
                reciprocal: None,
            },
            Coords::Rescale { .. } if reference == 0 => return Err(Error::InvalidRefGrid),
            Coords::Rescale { .. } => Self {
                a: i64::from(reference),
                b: 0,
                reciprocal: divide_by_n,
            },
            Coords::Centered => Self {
                a: 2,
                b: 1 - n_i64,
                reciprocal: divide_by_n,
            },
        })
    }

    /// Phase of index 0 and phase step per index for frequency `f`.
    #[inline]
    pub(crate) fn start_and_step(self, f: Turns) -> (u64, u64) {
        let per_unit = match self.reciprocal {
            None => f,
            Some(r) => math::mul_q64(f, r),
        };
        (
            math::phase_of_integer(self.b, per_unit),
            math::phase_of_integer(self.a, per_unit),
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
            for (j, f) in s.iter().enumerate() {
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
    fn axis_maps_match_their_formulas() {
        let f = Schedule::new(100.0, 1.0, 1).unwrap().iter().next().unwrap();
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
