//! Frequencies and coordinate maps in fixed point, and the table fill.

#![forbid(unsafe_code)]

use crate::config::{AnglePrecision, Coords};
use crate::error::Error;
use crate::math::{self, Turns};
use crate::spec::{Assign, FreqIndex, Freqs};

/// The number format of a table's `[cos, sin]` entries: `[f32; 2]` ([`Table`](crate::Table))
/// or Q15 `[i16; 2]` ([`Q15Table`](crate::Q15Table), built and applied with integer
/// arithmetic only). Sealed.
pub trait TableEntry: sealed::TableEntryImpl {}

impl TableEntry for [f32; 2] {}
impl TableEntry for [i16; 2] {}

pub(crate) mod sealed {
    use super::*;

    /// What the table fill and the token loops need of an entry format.
    pub trait TableEntryImpl: Copy + core::fmt::Debug + 'static {
        /// The entry of angle 0 (a fallback the loops never reach on checked input).
        const IDENTITY: Self;
        /// Checks that the format holds entries of magnitude `mscale`.
        fn check_mscale(mscale: f32) -> Result<(), Error>;
        /// `mscale · [cos, sin]` of `phase` (turns, `2^64` = one turn).
        fn at_phase(phase: u64, mscale: f32) -> Self;
    }

    impl TableEntryImpl for [f32; 2] {
        const IDENTITY: Self = [1.0, 0.0];
        #[inline(always)]
        fn check_mscale(_: f32) -> Result<(), Error> {
            Ok(())
        }
        #[inline(always)]
        fn at_phase(phase: u64, mscale: f32) -> Self {
            scaled(math::cos_sin_turns(phase), mscale)
        }
    }

    impl TableEntryImpl for [i16; 2] {
        const IDENTITY: Self = [i16::MAX, 0];
        /// Q15 holds magnitudes below 1: `mscale` must be 1 (compared as bits, so that an
        /// FPU-less core links no float comparison).
        #[inline(always)]
        fn check_mscale(mscale: f32) -> Result<(), Error> {
            if mscale.to_bits() == 1f32.to_bits() {
                Ok(())
            } else {
                Err(Error::FixedPoint)
            }
        }
        #[inline(always)]
        fn at_phase(phase: u64, _: f32) -> Self {
            math::cos_sin_turns_q15(phase)
        }
    }
}

/// One frequency: exact, or as float32 reference code holds it.
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
            Freq::Float32(f) => float32_phase(m as f32 * f),
        }
    }

    /// The phase of a finite `f32` coordinate.
    #[inline]
    pub(crate) fn phase_of_coordinate(self, x: f32) -> u64 {
        match self {
            Freq::Exact(f) => math::decode_f32(x).map_or(0, |d| math::phase_of_coordinate(d, f)),
            Freq::Float32(f) => float32_phase(x * f),
        }
    }
}

/// The exact phase of an `f32` angle in radians (0 for a non-finite one).
fn float32_phase(angle: f32) -> u64 {
    math::decode_f32(angle).map_or(0, |a| math::phase_of_coordinate(a, ONE_RADIAN))
}

/// Radians per unit → turns, if finite and below 2³² in magnitude.
pub(crate) fn radians_f64(radians: f64) -> Option<Turns> {
    math::decode_f64(radians).and_then(math::radians_to_turns)
}

/// [`radians_f64`] for an `f32`.
pub(crate) fn radians_f32(radians: f32) -> Option<Turns> {
    math::decode_f32(radians).and_then(math::radians_to_turns)
}

/// `base` finite and above 1 as a decoded value, `freq_scale` as turns.
#[inline(always)]
fn decode_base(base: f64, freq_scale: f64) -> Result<(math::Decoded, u128), Error> {
    let base = math::decode_f64(base)
        .filter(|b| math::greater_than_one(*b))
        .ok_or(Error::InvalidBase)?;
    let scale = math::decode_f64(freq_scale)
        .filter(|s| !s.negative && s.mantissa != 0)
        .and_then(math::radians_to_turns)
        .ok_or(Error::InvalidFreqScale)?;
    Ok((base, scale.0.unsigned_abs()))
}

/// Checks [`Freqs::Base`]'s parameters for `assign`'s pairs: the base and scale, and each
/// denominator `n` of the exponents `e / n` (a section's pairs with per-section indices,
/// else every pair's) below 2¹⁶, the limit of [`math::div_u128`]'s 16-bit digits.
#[inline(always)]
pub(crate) fn check_base<const A: usize>(
    base: f64,
    freq_scale: f64,
    assign: Assign<'_, A>,
) -> Result<(), Error> {
    decode_base(base, freq_scale)?;
    let largest = match assign {
        Assign::Sections(s) if s.index == FreqIndex::PerSection => s
            .sections
            .iter()
            .map(|section| section.pairs)
            .max()
            .unwrap_or(0),
        _ => assign.pairs(),
    };
    if largest >> 16 != 0 {
        return Err(Error::ShapeOverflow);
    }
    Ok(())
}

/// A group of consecutive pairs whose frequency indices run `e = e0 + stride · j` over one
/// denominator, precomputed: `unit = log2(base) / n` (Q64.64), the first power
/// `base^(−e0/n)` and the ratio `base^(−stride/n)` (Q1.63).
#[derive(Clone, Copy, Debug, Default)]
struct IndexRun {
    pairs: usize,
    e0: usize,
    stride: usize,
    unit: u128,
    power: u64,
    ratio: u64,
}

#[derive(Clone, Copy, Debug)]
enum Source<'s> {
    Base { scale: u128, scale_f32: f32 },
    Explicit(&'s [f64]),
}

/// The frequencies `f_0, f_1, …` of every pair of a plan other than
/// [`Summed`](crate::Summed), precomputed so that [`iter`](Self::iter) costs one fixed-point
/// multiply per pair.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PairFreqs<'s, const A: usize> {
    source: Source<'s>,
    precision: AnglePrecision,
    /// Index runs in pair order: one per non-empty section, or one for all pairs.
    runs: [IndexRun; A],
    count: usize,
}

impl<'s, const A: usize> PairFreqs<'s, A> {
    /// The frequencies of `assign`'s pairs. Errors: those of [`check_base`], `PlanMismatch`
    /// for learned frequencies, `ShapeOverflow` for a denominator above 65 535.
    #[inline(always)]
    pub(crate) fn new(
        freqs: Freqs<'s>,
        assign: Assign<'_, A>,
        precision: AnglePrecision,
    ) -> Result<Self, Error> {
        let total = assign.pairs();
        let mut runs = [IndexRun::default(); A];
        let mut count = 0;
        // (pairs, e0, stride, n) of each run.
        let mut push = |pairs: usize, e0: usize, stride: usize, n: usize| {
            if let Some(run) = runs.get_mut(count) {
                *run = IndexRun {
                    pairs,
                    e0,
                    stride,
                    unit: n as u128,
                    power: 0,
                    ratio: 0,
                };
                count += 1;
            }
        };
        match assign {
            Assign::Sections(s) if s.index != FreqIndex::Global => {
                let sections = s.sections.len();
                for (i, section) in s.sections.iter().enumerate() {
                    if section.pairs == 0 {
                        continue;
                    }
                    match s.index {
                        FreqIndex::PerSection => push(section.pairs, 0, 1, section.pairs),
                        _ => push(section.pairs, i, sections, total),
                    }
                }
            }
            _ => push(total, 0, 1, total),
        }
        let source = match freqs {
            Freqs::Base { base, freq_scale } => {
                let (base, scale) = decode_base(base, freq_scale)?;
                let log2_base = math::log2_q64(base);
                // (n, e0, stride) of the previous run and its results: equal sections (axial
                // 2-D) share one computation.
                let mut previous: Option<(u128, IndexRun)> = None;
                for run in runs.iter_mut().take(count) {
                    let n = run.unit;
                    if let Some((m, done)) = previous
                        && m == n
                        && done.e0 == run.e0
                        && done.stride == run.stride
                    {
                        *run = IndexRun {
                            pairs: run.pairs,
                            ..done
                        };
                        continue;
                    }
                    run.unit = math::div_u128(log2_base, n as u64).ok_or(Error::ShapeOverflow)?;
                    run.power = math::exp2_neg_q63(run.unit.wrapping_mul(run.e0 as u128));
                    run.ratio = math::exp2_neg_q63(run.unit.wrapping_mul(run.stride as u128));
                    previous = Some((n, *run));
                }
                Source::Base {
                    scale,
                    scale_f32: freq_scale as f32,
                }
            }
            Freqs::Explicit(values) => Source::Explicit(values),
            Freqs::Learned(_) => return Err(Error::PlanMismatch),
        };
        Ok(Self {
            source,
            precision,
            runs,
            count,
        })
    }

    /// The frequencies, in pair order.
    #[inline(always)]
    pub(crate) fn iter(&self) -> FreqIter<'s, A> {
        FreqIter {
            freqs: *self,
            run: 0,
            left: 0,
            k: 0,
            current: IndexRun::default(),
            e: 0,
        }
    }
}

/// [`PairFreqs::iter`].
pub(crate) struct FreqIter<'s, const A: usize> {
    freqs: PairFreqs<'s, A>,
    run: usize,
    left: usize,
    k: usize,
    current: IndexRun,
    e: usize,
}

impl<const A: usize> Iterator for FreqIter<'_, A> {
    type Item = Freq;

    #[inline]
    fn next(&mut self) -> Option<Freq> {
        while self.left == 0 {
            if self.run >= self.freqs.count {
                return None;
            }
            self.current = *self.freqs.runs.get(self.run)?;
            self.left = self.current.pairs;
            self.e = self.current.e0;
            self.run += 1;
        }
        self.left -= 1;
        let k = self.k;
        self.k += 1;
        let float32 = self.freqs.precision == AnglePrecision::Float32;
        Some(match self.freqs.source {
            Source::Base { scale, scale_f32 } => {
                let run = &mut self.current;
                let f = if float32 {
                    Freq::Float32(float32_inverse(run.unit, self.e) * scale_f32)
                } else {
                    Freq::Exact(math::mul_q63(scale, run.power))
                };
                run.power = math::mul_q63_nearest(run.power, run.ratio);
                self.e += run.stride;
                f
            }
            Source::Explicit(values) => {
                let radians = values.get(k).copied().unwrap_or(0.0);
                if float32 {
                    Freq::Float32(radians as f32)
                } else {
                    Freq::Exact(radians_f64(radians).unwrap_or(Turns(0)))
                }
            }
        })
    }
}

/// `1 / f32(base^(e·unit))` in `f32` (`unit = log2(base)/n`), as reference code computes
/// `inv_freq`: the power correctly rounded to `f32` (from 63 fixed-point bits), then an `f32`
/// division.
fn float32_inverse(unit: u128, e: usize) -> f32 {
    let x = unit * e as u128; // log2(base^(e/n)), Q64.64
    let whole = (x >> 64) as i32;
    let fraction = x as u64;
    // 2^x = 2^(whole + 1) · 2^−(1 − fraction); the second factor lies in (0.5, 1].
    let mantissa = math::exp2_neg_q63((1u128 << 64) - u128::from(fraction));
    let power = mantissa as f32 * pow2_f32(whole + 1 - 63);
    1.0 / power
}

/// `2^e` as `f32` (0 or ∞ outside the normal range), without `powi` (not in `core`).
fn pow2_f32(e: i32) -> f32 {
    match e {
        -126..=127 => f32::from_bits(((e + 127) as u32) << 23),
        ..-126 => 0.0,
        _ => f32::INFINITY,
    }
}

/// Index `i` on an axis of `n` cells → coordinate `(a·i + b) / q` ([`Coords::Index`],
/// [`Coords::Rescale`], [`Coords::Centered`]), so that phases stay exact integer arithmetic.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RationalMap {
    a: i64,
    b: i64,
    q: u32,
    /// `2^64 / q` as Q0.64, or `None` for `q = 1`.
    reciprocal: Option<u64>,
}

impl RationalMap {
    /// The map of `coords` for an axis of `n > 0` cells; `Ok(None)` for [`Coords::Linspace`].
    #[inline(always)]
    pub(crate) fn new(coords: Coords, n: usize) -> Result<Option<Self>, Error> {
        let n_i64 = i64::try_from(n).map_err(|_| Error::ShapeOverflow)?;
        // `(a, b)` and whether the mode divides by `n`.
        let (a, b, divides) = match coords {
            Coords::Index => (1, 0, false),
            Coords::Rescale { reference: 0 } => return Err(Error::InvalidRefGrid),
            Coords::Rescale { reference } => (i64::from(reference), 0, true),
            Coords::Centered => (2, 1 - n_i64, true),
            Coords::Linspace { .. } => return Ok(None),
        };
        if !divides {
            return Ok(Some(Self {
                a,
                b,
                q: 1,
                reciprocal: None,
            }));
        }
        // 2^64 / n as Q0.64 (one division call site, however many modes divide). Callers
        // have rejected n = 0 (an empty axis), so `None` means n is past the division's limit.
        let q = math::div_u128(u128::from(u64::MAX), n as u64).ok_or(Error::ShapeOverflow)?;
        Ok(Some(Self {
            a,
            b,
            q: n as u32,
            reciprocal: Some(q as u64),
        }))
    }

    /// The phase of cell 0's coordinate times `f` (turns, `2^64` = one turn) and the step
    /// from one cell to the next. Phases are integer multiples of the frequency per unit of
    /// the numerator `a·i + b` taken modulo one turn (2^64), so its low 64 bits are all they
    /// need: exact for index coordinates. Divided by `q` (rescaled and centred coordinates)
    /// through `2^64 / q` rounded down, the frequency per unit is up to `2·|f| + 1` units
    /// (2⁻⁶⁴ turn; `|f|` in turns) low, so a coordinate `x`'s phase is within
    /// `|a·i + b| · (2·|f| + 1)` units of the exact one: below `|angle| · 2⁻⁴⁷ + |x| · 2⁻⁴⁵`
    /// radians (`q < 2¹⁶`), under 1e-8 for angles up to 10⁶ radians and coordinates up to
    /// 10⁵, beyond every model's tables.
    #[inline(always)]
    fn steps(self, f: Turns) -> (u64, u64) {
        let per_unit = match self.reciprocal {
            None => f.0 as u64,
            Some(r) => math::mul_q64_low(f, r),
        };
        (
            (self.b as u64).wrapping_mul(per_unit),
            (self.a as u64).wrapping_mul(per_unit),
        )
    }

    /// Fills entry `column` of every row (`width` entries each) of `out` with
    /// `mscale · [cos, sin]` of row `i`'s coordinate times `f`: one phase step per row
    /// ([`steps`](Self::steps)).
    #[inline(always)]
    fn fill_column<T: TableEntry>(
        self,
        out: &mut [T],
        width: usize,
        column: usize,
        f: Turns,
        mscale: f32,
    ) {
        if width == 0 {
            return;
        }
        let (mut phase, step) = self.steps(f);
        for row in out.chunks_exact_mut(width) {
            if let Some(entry) = row.get_mut(column) {
                *entry = T::at_phase(phase, mscale);
            }
            phase = phase.wrapping_add(step);
        }
    }
}

/// Any [`Coords`] mode: a [`RationalMap`], or torch's `f32` linspace.
#[derive(Clone, Copy, Debug)]
enum AxisMap {
    Rational(RationalMap),
    Linspace {
        start: f32,
        stop: f32,
        step: f32,
        n: usize,
    },
}

impl AxisMap {
    /// The map for an axis of `n > 0` cells.
    fn new(coords: Coords, n: usize) -> Result<Self, Error> {
        if let Some(map) = RationalMap::new(coords, n)? {
            return Ok(Self::Rational(map));
        }
        let Coords::Linspace { start, stop } = coords else {
            return Err(Error::NonFiniteCoordinate);
        };
        if !(start.is_finite() && stop.is_finite() && (stop - start).is_finite()) {
            return Err(Error::NonFiniteCoordinate);
        }
        let intervals = n.saturating_sub(1).max(1) as f32;
        Ok(Self::Linspace {
            start,
            stop,
            step: (stop - start) / intervals,
            n,
        })
    }

    /// The coordinate of index `i` rounded to `f32` (linspace: its value).
    fn coordinate_f32(self, i: usize) -> f32 {
        match self {
            AxisMap::Rational(RationalMap { a, b, q, .. }) => {
                let numerator = (a * i as i64 + b) as f32;
                if q == 1 {
                    numerator
                } else {
                    numerator / q as f32
                }
            }
            AxisMap::Linspace {
                start,
                stop,
                step,
                n,
            } => {
                // torch fills a linspace of one value with `start`.
                if i < n / 2 || n == 1 {
                    start + i as f32 * step
                } else {
                    stop - (n - 1 - i) as f32 * step
                }
            }
        }
    }

    /// [`RationalMap::fill_column`] for any map and frequency: exact phase steps where
    /// possible, else each coordinate formed as an `f32` and reduced on its own.
    fn fill_column<T: TableEntry>(
        self,
        out: &mut [T],
        width: usize,
        column: usize,
        f: Freq,
        mscale: f32,
    ) {
        if width == 0 {
            return;
        }
        if let (AxisMap::Rational(map), Freq::Exact(f)) = (self, f) {
            return map.fill_column(out, width, column, f, mscale);
        }
        for (i, row) in out.chunks_exact_mut(width).enumerate() {
            if let Some(entry) = row.get_mut(column) {
                let phase = f.phase_of_coordinate(self.coordinate_f32(i));
                *entry = T::at_phase(phase, mscale);
            }
        }
    }
}

/// `[m · cos, m · sin]` (exact for `m = 1`).
#[inline(always)]
pub(crate) fn scaled([c, s]: [f32; 2], m: f32) -> [f32; 2] {
    [c * m, s * m]
}

/// Fills the per-axis tables of a spec: `tables[a]` holds `extents[a]` rows of
/// `widths[a]` entries; column `c` of axis `a` is the `c`-th pair rotated by `a`. Everything
/// was checked by the caller except what [`PairFreqs::new`] and [`AxisMap::new`] check;
/// on error nothing is written.
///
/// Inlined into [`Table::build`](crate::Table::build): the common conventions — sections,
/// [`Freqs::Base`], exact angles, index / rescaled / centred coordinates — take a lean path
/// (one geometric frequency sequence per section, one phase step per row), and when the spec
/// is a constant that is all a program links; everything else goes to [`fill_general`].
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) fn fill<const A: usize, T: TableEntry>(
    tables: [&mut [T]; A],
    extents: [usize; A],
    widths: [usize; A],
    assign: Assign<'_, A>,
    freqs: Freqs<'_>,
    coords: [Coords; A],
    mscale: f32,
    precision: AnglePrecision,
) -> Result<(), Error> {
    let rational = !coords.iter().any(|c| matches!(c, Coords::Linspace { .. }));
    let (Assign::Sections(sections), Freqs::Base { base, freq_scale }, AnglePrecision::Exact, true) =
        (assign, freqs, precision, rational)
    else {
        return fill_general(
            tables, extents, widths, assign, freqs, coords, mscale, precision,
        );
    };
    let mut maps = [None; A];
    for ((map, &coords), &n) in maps.iter_mut().zip(&coords).zip(&extents) {
        *map = RationalMap::new(coords, n)?;
    }
    let (base, scale) = decode_base(base, freq_scale)?;
    let log2_base = math::log2_q64(base);
    let total = assign.pairs();
    let count = sections.sections.len();
    // Every denominator first, so that nothing is written on error.
    for section in &sections.sections {
        let n = match sections.index {
            FreqIndex::PerSection => section.pairs,
            _ => total,
        };
        if n > 0 && !math::divisible(log2_base, n as u64) {
            return Err(Error::ShapeOverflow);
        }
    }
    let mut tables = tables;
    let mut columns = [0usize; A];
    // `power` continues from section to section for the global index.
    let mut power = 1u64 << 63;
    let mut previous: Option<(usize, usize, u128, u64)> = None;
    for (i, section) in sections.sections.iter().enumerate() {
        if section.pairs == 0 {
            continue;
        }
        let (n, e0, stride) = match sections.index {
            FreqIndex::PerSection => (section.pairs, 0, 1),
            FreqIndex::Global => (total, usize::MAX, 1),
            FreqIndex::Strided => (total, i, count),
        };
        // The unit, ratio and first power of this section (equal sections share them).
        let (unit, ratio) = match previous {
            Some((m, s, unit, ratio)) if m == n && s == stride => (unit, ratio),
            _ => {
                let unit = math::div_u128(log2_base, n as u64).unwrap_or(0);
                (unit, math::exp2_neg_q63(unit.wrapping_mul(stride as u128)))
            }
        };
        previous = Some((n, stride, unit, ratio));
        if e0 != usize::MAX {
            power = math::exp2_neg_q63(unit.wrapping_mul(e0 as u128));
        }
        let axis = section.axis;
        let (Some(table), Some(Some(map)), Some(&width), Some(column)) = (
            tables.get_mut(axis),
            maps.get(axis),
            widths.get(axis),
            columns.get_mut(axis),
        ) else {
            continue;
        };
        for _ in 0..section.pairs {
            let f = math::mul_q63(scale, power);
            map.fill_column(table, width, *column, f, mscale);
            *column += 1;
            power = math::mul_q63_nearest(power, ratio);
        }
    }
    Ok(())
}

/// The magnitude a real coordinate must stay below. With `f32` angles
/// ([`AnglePrecision::Float32`]) 2⁹⁶: every frequency is below 2³² radians (checked by
/// [`Spec::check`](crate::Spec::check)), so below 2⁹⁶ every angle `fl(c · f)` is finite
/// (one that overflowed would be reduced as angle 0). Exact angles take any finite
/// coordinate.
pub(crate) fn coordinate_limit(precision: AnglePrecision) -> f32 {
    match precision {
        AnglePrecision::Exact => f32::INFINITY,
        AnglePrecision::Float32 => pow2_f32(96),
    }
}

/// [`fill`] for every spec: any plan, frequencies, precision and coordinates.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn fill_general<const A: usize, T: TableEntry>(
    tables: [&mut [T]; A],
    extents: [usize; A],
    widths: [usize; A],
    assign: Assign<'_, A>,
    freqs: Freqs<'_>,
    coords: [Coords; A],
    mscale: f32,
    precision: AnglePrecision,
) -> Result<(), Error> {
    let mut maps = [AxisMap::Linspace {
        start: 0.0,
        stop: 0.0,
        step: 0.0,
        n: 0,
    }; A];
    for ((map, &coords), &n) in maps.iter_mut().zip(&coords).zip(&extents) {
        *map = AxisMap::new(coords, n)?;
    }
    if let (Freqs::Learned(learned), Assign::Summed(_)) = (freqs, assign) {
        // Axis 0 is the row (learned `y`), axis 1 the column (`x`). The kernels multiply a
        // row entry by a column entry, so only the row carries `mscale`.
        for (((table, map), (values, width)), mscale) in tables
            .into_iter()
            .zip(maps)
            .zip([learned.y, learned.x].into_iter().zip(widths))
            .zip([mscale, 1.0])
        {
            for (column, &radians) in values.iter().enumerate() {
                let f = match precision {
                    AnglePrecision::Exact => Freq::Exact(radians_f32(radians).unwrap_or(Turns(0))),
                    AnglePrecision::Float32 => Freq::Float32(radians),
                };
                map.fill_column(table, width, column, f, mscale);
            }
        }
        return Ok(());
    }
    let freqs = PairFreqs::new(freqs, assign, precision)?;
    let mut tables = tables;
    for ((axis, column), f) in assign.pair_axes().zip(freqs.iter()) {
        if let (Some(table), Some(map), Some(&width)) =
            (tables.get_mut(axis), maps.get(axis), widths.get(axis))
        {
            map.fill_column(table, width, column, f, mscale);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `floor((a·i + b) · f / q)` modulo one turn, in wide integers.
    fn exact_phase(map: RationalMap, f: Turns, i: i64) -> u64 {
        let q = i128::from(map.q);
        let c = i128::from(map.a * i + map.b);
        // f modulo q · 2^64 (below 2^80): the phase modulo 2^64 is the same.
        let reduced = f.0.rem_euclid(q << 64);
        (c * reduced).div_euclid(q) as u64
    }

    /// The phase steps of rescaled and centred coordinates against the bound `steps` states:
    /// cell `i`'s phase within `|a·i + b| · (2·|f| + 1)` units (2⁻⁶⁴ turn) of the exact one,
    /// for frequencies of either sign and any reference; exact for index coordinates.
    #[test]
    fn rational_phases_stay_within_their_bound() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        // Miri is ~1000× slower: a few cases there.
        let (cases, cells) = if cfg!(miri) { (9, 64) } else { (600, 1 << 10) };
        for case in 0..cases {
            let n = 1 + (next() % 0xFFFF) as usize;
            let coords = match case % 3 {
                0 => Coords::Index,
                1 => Coords::Rescale {
                    reference: [1, 16, 1_000_000, u32::MAX][case / 3 % 4],
                },
                _ => Coords::Centered,
            };
            let map = RationalMap::new(coords, n).unwrap().unwrap();
            // Below 2^16 turns a unit, so that the bound stays below 2^63 units.
            let magnitude = (u128::from(next()) << 64 | u128::from(next())) >> (48 + case % 64);
            for f in [Turns(magnitude as i128), Turns(-(magnitude as i128))] {
                let turns = (magnitude >> 64) as u64;
                let (mut phase, step) = map.steps(f);
                for i in 0..cells {
                    let exact = exact_phase(map, f, i);
                    let off = (exact.wrapping_sub(phase) as i64).unsigned_abs();
                    let numerator = (map.a * i + map.b).unsigned_abs();
                    let bound = if map.q == 1 {
                        0
                    } else {
                        numerator * (2 * turns + 2)
                    };
                    assert!(
                        off <= bound,
                        "{map:?} {f:?} cell {i}: {off} > {bound} units"
                    );
                    phase = phase.wrapping_add(step);
                }
            }
        }
    }

    /// High bits of a 256-bit product: `(a · b) >> 128`.
    fn mul_high(a: u128, b: u128) -> u128 {
        let (a1, a0, b1, b0) = (a >> 64, a as u64 as u128, b >> 64, b as u64 as u128);
        let low64 = |v: u128| v as u64 as u128;
        let middle = ((a0 * b0) >> 64) + low64(a1 * b0) + low64(a0 * b1);
        a1 * b1 + ((a1 * b0) >> 64) + ((a0 * b1) >> 64) + (middle >> 64)
    }

    /// `base^(−k/n) / 2π` turns per unit, times 2⁹⁶, to about 2⁻¹⁰⁰ relative: 128-bit fixed
    /// point throughout (`log2 base` and the constants from 100-digit decimal arithmetic,
    /// `2^−x` as the series of `e^(−x·ln 2)`), sharing nothing with the crate's `log2`/`exp2`.
    fn reference_turns(log2_base: u128, k: u128, n: u128) -> u128 {
        // 1/2π as Q0.128, ln 2 as Q0.128.
        const INV_TWO_PI: u128 = 0x28be_60db_9391_054a_7f09_d5f4_7d4d_3770;
        const LN2: u128 = 0xb172_17f7_d1cf_79ab_c9e3_b398_03f2_f6af;
        // log2(base) · k / n as Q8.120.
        let x = log2_base / n * k + log2_base % n * k / n;
        let (whole, fraction) = (x >> 120, x << 8);
        // e^(−t), t = fraction · ln 2 < 0.7, in Q2.126: alternating terms tᵐ/m!.
        let t = mul_high(fraction, LN2);
        let (mut term, mut plus, mut minus) = (1u128 << 126, 1u128 << 126, 0u128);
        for m in 1..48 {
            term = mul_high(term, t) / m;
            if m % 2 == 1 {
                minus += term
            } else {
                plus += term
            }
        }
        let power = plus - minus;
        // 2^−whole · e^(−t) / 2π, Q2.126 → units of 2⁻⁹⁶.
        (mul_high(power, INV_TWO_PI) >> 30) >> whole
    }

    /// `log2 base` as Q8.120, from 100-digit decimal arithmetic.
    const LOG2_BASES: [(f64, u128); 4] = [
        (100.0, 0x06a4_d3c2_5e68_dc57_f249_5fb7_fa6d_7eda),
        (10_000.0, 0x0d49_a784_bcd1_b8af_e492_bf6f_f4da_fdb4),
        (500_000.0, 0x12ee_7b47_1b3a_9507_d6dc_1f27_ef48_7c8f),
        (1_000_000.0, 0x13ee_7b47_1b3a_9507_d6dc_1f27_ef48_7c8f),
    ];

    /// Every `Freq::Exact` of the base formula (`freq_scale` 1: `base^(−k/n)` radians per
    /// unit, pair `k` of `n`) against a 128-bit reference: within `(k + 1) · (2⁻⁵⁸ · f +
    /// 2⁻⁶⁴ turns)`, as the crate docs state — the fixed-point `exp2` rounds each of its
    /// products (at most 2⁻⁵⁸ of the ratio between pairs) and each pair's power is the
    /// previous one times that ratio, rounded. And the entries these frequencies give: within
    /// 1.2e-7 of the exact `cos`/`sin` at every `u32` position for sections of up to 256
    /// pairs, up to position 2²⁴ for 4 096 and 2²⁰ for 65 535 (measured at the worst: 8.5e-8,
    /// 9.3e-8, 1.03e-7; 4 096 pairs reach 2.4e-7 at 2³⁰, 65 535 pairs 1.1e-7 at 2²⁴). With
    /// truncated products, as before, 64 pairs reached 1.5e-7 at 2³² − 1 and 128 pairs 2.5e-7.
    /// An `f64` reference could check no better than 2⁻⁵³.
    #[test]
    fn base_frequencies_are_within_their_stated_error() {
        // The reference itself, against one value from 80-digit decimal arithmetic
        // (`10 000^(−10/64) / 2π` turns, times 2⁹⁶).
        let spot = reference_turns(LOG2_BASES[1].1, 10, 64);
        assert!(
            spot.abs_diff(0x09a9_6eb8_0f7e_faf2_bdf9_8c4e) <= 2,
            "{spot:#x}"
        );
        // (pairs, the last position checked)
        let sections: &[(usize, i64)] = if cfg!(miri) {
            &[(8, u32::MAX as i64), (64, u32::MAX as i64)]
        } else {
            &[
                (8, u32::MAX as i64),
                (20, u32::MAX as i64),
                (32, u32::MAX as i64),
                (48, u32::MAX as i64),
                (64, u32::MAX as i64),
                (128, u32::MAX as i64),
                (256, u32::MAX as i64),
                (4096, 1 << 24),
                (65_535, 1 << 20),
            ]
        };
        for &(base, log2_base) in &LOG2_BASES {
            for &(n, last) in sections {
                let spec = crate::preset::rope_1d(2 * n, crate::Layout::Half, base);
                let assign = crate::spec::sealed::PlanImpl::assign(&spec.plan);
                let freqs = PairFreqs::new(spec.freqs, assign, spec.precision).unwrap();
                let mut count = 0;
                for (k, f) in freqs.iter().enumerate() {
                    count += 1;
                    let Freq::Exact(f) = f else {
                        panic!("exact frequencies asked");
                    };
                    let want = reference_turns(log2_base, k as u128, n as u128);
                    // In units of 2⁻⁹⁶ turn.
                    let off = ((f.0 as u128) << 32).abs_diff(want);
                    let bound = (k as u128 + 1) * ((want >> 58) + (1 << 32));
                    assert!(
                        off <= bound,
                        "base {base}, {n} pairs, pair {k}: {off:#x} > {bound:#x} (2^-96 turn)"
                    );
                    let positions = [131_071, 1 << 20, 1 << 24, 1 << 27, 1 << 30, u32::MAX as i64];
                    for p in positions.into_iter().filter(|&p| p <= last) {
                        let [c, s] = math::cos_sin_turns(Freq::Exact(f).phase_of_integer(p));
                        // The exact phase, in turns: its fraction is all that counts.
                        let exact = (p as u128).wrapping_mul(want) & ((1 << 96) - 1);
                        let angle = exact as f64 / 2f64.powi(96) * core::f64::consts::TAU;
                        let err = (f64::from(c) - angle.cos())
                            .abs()
                            .max((f64::from(s) - angle.sin()).abs());
                        assert!(
                            err <= 1.2e-7,
                            "base {base}, {n} pairs, pair {k}, position {p}: {err:e}"
                        );
                    }
                }
                assert_eq!(count, n);
            }
        }
    }
}
