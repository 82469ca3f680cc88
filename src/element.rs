//! The element types a buffer can hold: `f32`, `f16` and `bf16` (the `half` crate's), and
//! quantised `i16` and `i8`. A rotation by an `f32` table runs in `f32`: another type is
//! converted as the kernels load it and rounded as they store it ([`Element`]; the SIMD
//! backends' `Stored` vectors in `backend/simd.rs`, the scalar one pair by pair), so the
//! kernels exist once. Only a requantising call (integer scales whose ratio is not 1, or an
//! integer buffer whose spec's `mscale` is above [`FUSED_MSCALE_MAX`]) goes block by block
//! through a stack buffer (`rope.rs`, `staged`). A
//! [`Q15Table`](crate::Q15Table) rotates `i16` and `i8` in place in fixed point instead
//! (`backend/scalar.rs`, `Q15`).

#![forbid(unsafe_code)]

use half::{bf16, f16};

use crate::error::Error;

/// An element type rope2d rotates in place: `f32`, [`half::f16`], [`half::bf16`] (floats:
/// converted exactly to `f32`, rotated, each output rounded to nearest-even — the correctly
/// rounded value of the `f32` result), or `i16` / `i8` (symmetric quantisation: see
/// [`Scales`]; outputs rounded to nearest-even and saturated — or, by a
/// [`Q15Table`](crate::Q15Table), rotated in fixed point at their own scale).
///
/// Sealed: the crate implements it for exactly these five types.
pub trait Element: sealed::ElementImpl {}

impl Element for f32 {}
impl Element for f16 {}
impl Element for bf16 {}
impl Element for i16 {}
impl Element for i8 {}

/// The quantisation of an integer buffer: a stored value `q` means `q · input` before the
/// rotation, and an output value `v` is stored as `round(v / output)`, saturated to the type's
/// range. Q15 (`i16`, scale 2⁻¹⁵ both ways) and Q7 (`i8`, 2⁻⁷) are [`Scales::SAME`]: the
/// default of [`Shape`](crate::Shape); equal input and output scales give the same result.
///
/// Supported: `input` and `output` finite and positive, with `input / output` between 2⁻⁶⁴
/// and 2⁶⁴ (any ratio a model's requantisation uses; outputs beyond the type's range
/// saturate, by design, and no intermediate overflows to infinity unless the spec's `mscale`
/// exceeds 2⁴⁹). Anything else is [`Error::InvalidScales`], as are scales other than `SAME` on
/// a float buffer.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(C)] // The C interface reads its `rope2d_scales` arrays as `Scales`.
pub struct Scales {
    /// The scale of the stored inputs.
    pub input: f32,
    /// The scale of the stored outputs.
    pub output: f32,
}

/// 2⁻⁶⁴ and 2⁶⁴: the supported ratios of input to output scale.
const RATIO_MIN: f32 = f32::from_bits(0x1F80_0000);
const RATIO_MAX: f32 = f32::from_bits(0x5F80_0000);

impl Scales {
    /// The same scale in and out (Q15 for `i16`, Q7 for `i8`; the only scales of floats).
    pub const SAME: Scales = Scales {
        input: 1.0,
        output: 1.0,
    };

    /// Whether these are [`SAME`](Self::SAME), compared as bits.
    pub(crate) fn is_same(self) -> bool {
        let one = 1f32.to_bits();
        self.input.to_bits() == one && self.output.to_bits() == one
    }

    /// Whether input and output are one finite positive scale (a ratio of exactly 1: the
    /// result of [`SAME`](Self::SAME)), compared as bits: the check of a Q15 table (on a core
    /// without an FPU) links no float routine.
    pub(crate) fn is_unit_ratio(self) -> bool {
        let (input, output) = (self.input.to_bits(), self.output.to_bits());
        // Below the bits of +∞: the sign clear and the value finite.
        input == output && input != 0 && input < f32::INFINITY.to_bits()
    }

    /// `input / output`, the factor between a stored input and a stored output, checked.
    pub(crate) fn ratio<E: Element>(self) -> Result<f32, Error> {
        if self.is_same() {
            return Ok(1.0);
        }
        let ratio = self.input / self.output;
        let valid = self.input.is_finite()
            && self.input > 0.0
            && self.output.is_finite()
            && self.output > 0.0
            && (RATIO_MIN..=RATIO_MAX).contains(&ratio);
        if E::INTEGER && valid {
            Ok(ratio)
        } else {
            Err(Error::InvalidScales)
        }
    }
}

/// The largest spec `mscale` at which an integer buffer at ratio 1 is rotated in place by a
/// backend's loop (above it, through the staging buffer, as requantised buffers are): its
/// values are at most 2¹⁵ in magnitude, so each rotated value stays below 2³⁰ and a vector
/// conversion to 32-bit integers is exact, with a saturating narrow as its only clamp
/// (`mscale` is an attention factor near 1 in every model; at 2¹⁵ any nonzero input
/// saturates `i16`).
pub(crate) const FUSED_MSCALE_MAX: f32 = 16_384.0;

/// Converts `src` into `dst` (the same length), times `ratio` for integer types (floats:
/// exactly, `ratio` is 1).
#[inline]
pub(crate) fn load<E: Element>(src: &[E], dst: &mut [f32], ratio: f32) {
    if E::INTEGER {
        for (d, s) in dst.iter_mut().zip(src) {
            *d = s.to_f32() * ratio;
        }
    } else {
        for (d, s) in dst.iter_mut().zip(src) {
            *d = s.to_f32();
        }
    }
}

/// Rounds `src` into `dst` (the same length): nearest-even, integers saturated.
#[inline]
pub(crate) fn store<E: Element>(src: &[f32], dst: &mut [E]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = E::from_f32(s);
    }
}

pub(crate) mod sealed {
    use super::*;

    /// How the arch backends recognise a type they convert with vector instructions.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Format {
        F32,
        F16,
        Bf16,
        I16,
        I8,
    }

    /// What the crate needs of an element type.
    pub trait ElementImpl: Copy + Default + PartialEq + core::fmt::Debug + 'static {
        /// Which type this is.
        const FORMAT: Format;
        /// Quantised: loads take a scale ratio, stores saturate.
        const INTEGER: bool;
        /// The buffer itself when it is `f32` (rotated without staging).
        #[inline(always)]
        fn as_f32(_: &mut [Self]) -> Option<&mut [f32]> {
            None
        }
        /// The buffer itself when it is `f16` (which AVX2 converts in a loop built with F16C).
        #[inline(always)]
        fn as_f16(_: &mut [Self]) -> Option<&mut [f16]> {
            None
        }
        /// The buffer itself when it is `bf16` (which AVX-512 BF16 rounds with its own loop).
        #[inline(always)]
        fn as_bf16(_: &mut [Self]) -> Option<&mut [bf16]> {
            None
        }
        /// The buffer itself when it is `i16` or `i8` (what a Q15 table rotates).
        #[inline(always)]
        fn as_fixed(_: &mut [Self]) -> Option<FixedSlice<'_>> {
            None
        }
        /// The exact `f32` value.
        fn to_f32(self) -> f32;
        /// `v` rounded to nearest-even (integers: saturated; NaN becomes 0).
        fn from_f32(v: f32) -> Self;
    }

    impl ElementImpl for f32 {
        const FORMAT: Format = Format::F32;
        const INTEGER: bool = false;
        #[inline(always)]
        fn as_f32(x: &mut [Self]) -> Option<&mut [f32]> {
            Some(x)
        }
        #[inline(always)]
        fn to_f32(self) -> f32 {
            self
        }
        #[inline(always)]
        fn from_f32(v: f32) -> Self {
            v
        }
    }

    /// A buffer of `i16` or `i8`.
    pub enum FixedSlice<'x> {
        I16(&'x mut [i16]),
        I8(&'x mut [i8]),
    }

    /// The converted types: a format, whether it is quantised, the two scalar conversions,
    /// (integers) the [`FixedSlice`] variant, and (`bf16`) the method that returns the
    /// buffer as itself.
    macro_rules! converted {
        ($($t:ty: $format:ident, integer $integer:literal, $to:expr, $from:expr
            $(, fixed $fixed:ident)? $(, itself $itself:ident)?;)*) => {$(
            impl ElementImpl for $t {
                const FORMAT: Format = Format::$format;
                const INTEGER: bool = $integer;
                $(
                #[inline(always)]
                fn as_fixed(x: &mut [Self]) -> Option<FixedSlice<'_>> {
                    Some(FixedSlice::$fixed(x))
                }
                )?
                $(
                #[inline(always)]
                fn $itself(x: &mut [Self]) -> Option<&mut [Self]> {
                    Some(x)
                }
                )?
                #[inline(always)]
                fn to_f32(self) -> f32 {
                    $to(self)
                }
                #[inline(always)]
                fn from_f32(v: f32) -> Self {
                    $from(v)
                }
            }
        )*};
    }

    // Integers: `as` saturates (and maps NaN to 0) after the rounding.
    converted! {
        f16: F16, integer false, f16::to_f32, f16::from_f32, itself as_f16;
        bf16: Bf16, integer false, bf16::to_f32, bf16::from_f32, itself as_bf16;
        i16: I16, integer true, f32::from, |v| round_ties_even(v) as i16, fixed I16;
        i8: I8, integer true, f32::from, |v| round_ties_even(v) as i8, fixed I8;
    }

    /// `v` rounded to an integer, nearest-even, in `f32` without `libm`: adding and removing
    /// 1.5·2²³ leaves the rounded value (below 2²³ in magnitude; above, `v` is an integer).
    #[inline(always)]
    fn round_ties_even(v: f32) -> f32 {
        const MAGIC: f32 = 12_582_912.0;
        if v.abs() < 8_388_608.0 {
            (v + MAGIC) - MAGIC
        } else {
            v
        }
    }
}

#[cfg(test)]
mod tests {
    use super::sealed::ElementImpl;
    use super::*;

    #[test]
    fn integer_rounding_is_nearest_even_and_saturating() {
        let cases = [
            (0.5f32, 0i16),
            (1.5, 2),
            (2.5, 2),
            (-0.5, 0),
            (-1.5, -2),
            (-2.5, -2),
            (0.49999997, 0),
            (32766.5, 32766),
            (32767.4, 32767),
            (40000.0, 32767),
            (-40000.0, -32768),
            (1e30, 32767),
            (f32::NAN, 0),
        ];
        for (v, want) in cases {
            assert_eq!(i16::from_f32(v), want, "{v}");
        }
        assert_eq!(i8::from_f32(127.5), 127);
        assert_eq!(i8::from_f32(-128.5), -128);
        assert_eq!(i8::from_f32(-3.5), -4);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "65 536 values each way, and half's F16C path is not in Miri"
    )]
    fn float_conversions_round_to_nearest_even() {
        // 1 + 2^-11 is halfway between two f16 values: ties to the even one (1.0).
        assert_eq!(f16::from_f32(1.0 + 2f32.powi(-11)), f16::ONE);
        assert_eq!(bf16::from_f32(1.0 + 2f32.powi(-8)), bf16::ONE);
        for bits in 0..=u16::MAX {
            let h = f16::from_bits(bits);
            let round_trip = <f16 as ElementImpl>::from_f32(h.to_f32());
            assert!(
                round_trip == h || h.is_nan() && round_trip.is_nan(),
                "f16 {bits:#x}"
            );
            let b = bf16::from_bits(bits);
            let round_trip = <bf16 as ElementImpl>::from_f32(b.to_f32());
            assert!(
                round_trip == b || b.is_nan() && round_trip.is_nan(),
                "bf16 {bits:#x}"
            );
        }
    }

    #[test]
    fn scales_are_checked() {
        // Exact powers of two (not `powi`, which Miri perturbs on purpose).
        assert_eq!(RATIO_MAX, 18_446_744_073_709_551_616.0);
        assert_eq!(RATIO_MIN * RATIO_MAX, 1.0);
        assert_eq!(Scales::SAME.ratio::<f16>(), Ok(1.0));
        assert_eq!(Scales::SAME.ratio::<i8>(), Ok(1.0));
        let s = Scales {
            input: 0.05,
            output: 0.04,
        };
        assert_eq!(s.ratio::<i16>(), Ok(0.05 / 0.04));
        assert_eq!(s.ratio::<f32>(), Err(Error::InvalidScales));
        for (input, output) in [
            (0.0, 1.0),
            (1.0, 0.0),
            (-1.0, 1.0),
            (f32::NAN, 1.0),
            (1.0, f32::INFINITY),
            (f32::MAX, 1e-30),
            (1e-30, f32::MAX),
            (1e20, 1e-2),
            (1e-2, 1e20),
        ] {
            assert_eq!(
                Scales { input, output }.ratio::<i8>(),
                Err(Error::InvalidScales),
                "{input} / {output}"
            );
        }
        // The ends of [2⁻⁶⁴, 2⁶⁴] are taken; the next ratios out are not.
        let above = f32::from_bits(RATIO_MAX.to_bits() + 1);
        let below = f32::from_bits(RATIO_MIN.to_bits() - 1);
        for (input, output, ok) in [
            (RATIO_MAX, 1.0, true),
            (1.0, RATIO_MAX, true),
            (above, 1.0, false),
            (1.0, above, false),
            (RATIO_MIN, 1.0, true),
            (below, 1.0, false),
        ] {
            let want = if ok {
                Ok(input / output)
            } else {
                Err(Error::InvalidScales)
            };
            assert_eq!(
                Scales { input, output }.ratio::<i16>(),
                want,
                "{input} / {output}"
            );
        }
        // One finite positive scale in and out is a unit ratio (a Q15 table's check); zero,
        // negative, infinite and NaN scales, and unequal ones, are not.
        for (input, output, unit) in [
            (1.0, 1.0, true),
            (3.0e-5, 3.0e-5, true),
            (f32::MAX, f32::MAX, true),
            (f32::from_bits(1), f32::from_bits(1), true),
            (0.0, 0.0, false),
            (-0.5, -0.5, false),
            (f32::INFINITY, f32::INFINITY, false),
            (f32::NAN, f32::NAN, false),
            (0.5, 0.25, false),
        ] {
            assert_eq!(
                Scales { input, output }.is_unit_ratio(),
                unit,
                "{input} {output}"
            );
        }
    }
}
