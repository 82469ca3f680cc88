//! The general model every convention is an instance of: pair `k` of a head rotates by
//! `coord[a(k)] · f_k`, its cos and sin times a magnitude `m`.
//!
//! A [`Spec`] says which elements pair up ([`Layout`], inside a rotary dimension
//! `r = 2 · pairs ≤ head_dim`), which coordinate axis rotates each pair (the [`Plan`]), what
//! the frequencies are ([`Freqs`]), how each axis' indices become coordinates ([`Coords`]),
//! the magnitude and how angles are formed ([`AnglePrecision`]). The named model families in
//! [`preset`](crate::preset) are values of it.

#![forbid(unsafe_code)]

use crate::config::{AnglePrecision, Coords, Layout};
use crate::error::Error;

/// `count` consecutive pairs rotated by coordinate axis `axis`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Section {
    /// The coordinate axis (index into a position's coordinates).
    pub axis: usize,
    /// Pairs in the section (may be zero).
    pub pairs: usize,
}

impl Section {
    /// `pairs` pairs rotated by axis `axis`.
    pub const fn new(axis: usize, pairs: usize) -> Self {
        Self { axis, pairs }
    }
}

/// How the frequency index `e` and its denominator `n` of a pair are formed, for
/// [`Freqs::Base`] (`f = freq_scale · base^(−e/n)`): the one place where model families
/// with sections differ in their frequencies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FreqIndex {
    /// Reset per section: the `j`-th pair of a section of `n` pairs has `e = j` (axial 2-D,
    /// FLUX, Wan, HunyuanVideo, CogVideoX, 1-D).
    PerSection,
    /// One index over all `P` pairs: pair `k` has `e = k`, `n = P` (Qwen2-VL M-RoPE).
    Global,
    /// The sections take turns (Pixtral's even/odd split): the `j`-th pair of section `i`
    /// (of `S` sections) has `e = S·j + i`, `n = P`.
    Strided,
}

/// Consecutive sections: the first `sections[0].pairs` pairs are rotated by axis
/// `sections[0].axis`, the next by `sections[1].axis`, … One section per axis is what every
/// family here uses; the axes may come in any order (that order *is* the axis-order
/// convention: rope-vit's column first, EVA-02's row first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Sections<const A: usize> {
    /// The sections, in pair order.
    pub sections: [Section; A],
    /// How frequency indices run through them.
    pub index: FreqIndex,
}

impl<const A: usize> Sections<A> {
    /// `[cos, sin]` entries of tables over `extents` (coordinates `0 .. extents[a]` on each
    /// axis): `Σ_i extents[sections[i].axis] · sections[i].pairs`, for sizing a
    /// [`FixedTable`](crate::FixedTable) in a `const`. Saturates on overflow (which
    /// [`Table::storage_len`](crate::Table::storage_len) reports as an error); an axis
    /// index out of range counts nothing.
    pub const fn table_len(&self, extents: [usize; A]) -> usize {
        let mut total = 0usize;
        let mut i = 0;
        while i < A {
            let section = self.sections[i];
            if section.axis < A {
                total = total.saturating_add(extents[section.axis].saturating_mul(section.pairs));
            }
            i += 1;
        }
        total
    }
}

/// Qwen3-VL's interleaved M-RoPE: pair `k` is rotated by axis `a ≥ 1` when
/// `k ≡ a (mod A)` and `k < A · pairs[a]`, and by axis 0 otherwise; `P = Σ pairs` pairs in
/// all. Frequency index `e = k`, `n = P`.
///
/// As in the reference code (`freqs[..., a : A·pairs[a] : A]`, a slice clamped to `P`), an
/// unbalanced plan gives axis `a ≥ 1` fewer than `pairs[a]` pairs when `A · (pairs[a] − 1) + a ≥ P`
/// (e.g. `[1, 5, 0]`: axis 1 owns pairs 1 and 4 only), and axis 0 the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct InterleavedAxes<const A: usize> {
    /// Pairs per axis.
    pub pairs: [usize; A],
}

/// Every pair's axis listed explicitly (`axes[k] < A`), as a `pairs`-kind golden file lists
/// it. Frequency index `e = k`, `n = axes.len()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PerPair<'f> {
    /// The axis of each pair.
    pub axes: &'f [u8],
}

/// RoPE-Mixed (rope-vit): every pair `k` of head `h` rotates by the *sum* over both axes of
/// `coord[a] · f[a][h][k]`, with learned per-head frequencies ([`Freqs::Learned`]); `A = 2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Summed {
    /// Heads the learned frequencies are for (a buffer must have exactly these).
    pub heads: usize,
    /// Pairs per head.
    pub pairs: usize,
}

/// How pairs are assigned to axes: [`Sections`], [`InterleavedAxes`], [`PerPair`] or [`Summed`].
/// Sealed.
///
/// The plan is a type parameter of [`Spec`] and of the tables, so a program links the code of
/// the plans it uses only (firmware with axial sections carries nothing else).
pub trait Plan<const A: usize>: sealed::PlanImpl<A> {}

impl<const A: usize> Plan<A> for Sections<A> {}
impl<const A: usize> Plan<A> for InterleavedAxes<A> {}
impl<const A: usize> Plan<A> for PerPair<'_> {}
impl Plan<2> for Summed {}

/// The plan, as data the crate's loops can match on (the match folds away per plan type).
#[derive(Clone, Copy, Debug)]
pub enum Assign<'p, const A: usize> {
    Sections(&'p Sections<A>),
    InterleavedAxes(&'p InterleavedAxes<A>),
    PerPair(&'p [u8]),
    Summed(&'p Summed),
}

pub(crate) mod sealed {
    use super::*;

    /// The plan's description for the crate's loops.
    pub trait PlanImpl<const A: usize>: Copy + core::fmt::Debug {
        /// The plan as data.
        fn assign(&self) -> Assign<'_, A>;
    }

    impl<const A: usize> PlanImpl<A> for Sections<A> {
        #[inline(always)]
        fn assign(&self) -> Assign<'_, A> {
            Assign::Sections(self)
        }
    }
    impl<const A: usize> PlanImpl<A> for InterleavedAxes<A> {
        #[inline(always)]
        fn assign(&self) -> Assign<'_, A> {
            Assign::InterleavedAxes(self)
        }
    }
    impl<const A: usize> PlanImpl<A> for PerPair<'_> {
        #[inline(always)]
        fn assign(&self) -> Assign<'_, A> {
            Assign::PerPair(self.axes)
        }
    }
    impl PlanImpl<2> for Summed {
        #[inline(always)]
        fn assign(&self) -> Assign<'_, 2> {
            Assign::Summed(self)
        }
    }
}

/// The frequencies of a [`Spec`].
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Freqs<'f> {
    /// `f = freq_scale · base^(−e/n)` with the pair's frequency index `e` and denominator
    /// `n` from the plan ([`FreqIndex`]), formed in fixed point without `f64` arithmetic.
    /// `base` finite and > 1; `freq_scale` finite, > 0 and below 2³² (2π for DINOv3).
    Base {
        /// The base ("theta", "temperature").
        base: f64,
        /// Multiplies every frequency.
        freq_scale: f64,
    },
    /// Radians per unit coordinate, one per pair in pair order (loaded from a model or
    /// config, or computed by [`HfRope`](crate::preset::HfRope)); each finite and below 2³²
    /// in magnitude.
    Explicit(&'f [f64]),
    /// RoPE-Mixed's learned frequencies, for the [`Summed`] plan only.
    Learned(LearnedFreqs<'f>),
}

/// Learned RoPE-Mixed frequencies as stored in a model, radians per unit coordinate: `x`
/// multiplies the column (axis 1), `y` the row (axis 0); each `[heads][pairs]`, flattened
/// head-major (rope-vit's `freqs[0]`, `freqs[1]`). Each finite and below 2³² in magnitude.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LearnedFreqs<'f> {
    /// Column frequencies.
    pub x: &'f [f32],
    /// Row frequencies.
    pub y: &'f [f32],
}

/// A RoPE convention over `A` coordinate axes: 1 for text, 2 for images, 3 for video and
/// M-RoPE. See the [crate docs](crate) and [`preset`](crate::preset) for the named families.
///
/// Pair `k < P` (`P` from the plan, rotary dimension `r = 2P ≤ head_dim`) of a token at
/// coordinates `c` becomes `(a·m·cos φ − b·m·sin φ, a·m·sin φ + b·m·cos φ)` with
/// `φ = c[a(k)] · f_k` and `m = mscale`; elements `r .. head_dim` are left as they are.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Spec<'f, const A: usize, P: Plan<A> = Sections<A>> {
    /// The length of one head vector.
    pub head_dim: usize,
    /// Which elements pair up (within the rotary dimension).
    pub layout: Layout,
    /// Which axis rotates each pair.
    pub plan: P,
    /// The frequencies.
    pub freqs: Freqs<'f>,
    /// How each axis' indices become coordinates (tables; tableless rotation takes
    /// coordinates as they are).
    pub coords: [Coords; A],
    /// Multiplies cos and sin (YaRN's and LongRoPE's attention factor); finite and > 0.
    pub mscale: f32,
    /// How angles are formed.
    pub precision: AnglePrecision,
}

impl<'f, const A: usize, P: Plan<A>> Spec<'f, A, P> {
    /// A spec with index coordinates, magnitude 1 and exact angles.
    pub const fn new(head_dim: usize, layout: Layout, plan: P, freqs: Freqs<'f>) -> Self {
        Self {
            head_dim,
            layout,
            plan,
            freqs,
            coords: [Coords::Index; A],
            mscale: 1.0,
            precision: AnglePrecision::Exact,
        }
    }

    /// The same spec with other coordinate maps.
    pub const fn with_coords(mut self, coords: [Coords; A]) -> Self {
        self.coords = coords;
        self
    }

    /// The same spec with another magnitude.
    pub const fn with_mscale(mut self, mscale: f32) -> Self {
        self.mscale = mscale;
        self
    }

    /// The same spec with angles formed at another precision.
    pub const fn with_precision(mut self, precision: AnglePrecision) -> Self {
        self.precision = precision;
        self
    }

    /// Rotated pairs per head, `P` (the rotary dimension is `2P`).
    pub fn pairs(&self) -> usize {
        self.plan.assign().pairs()
    }

    /// Checks everything about the spec that does not depend on a table's extents.
    ///
    /// Errors: [`Error::RotaryDim`], [`Error::InvalidAxis`], [`Error::PlanMismatch`],
    /// [`Error::FrequencyLength`], [`Error::InvalidBase`], [`Error::InvalidFreqScale`],
    /// [`Error::InvalidFrequency`], [`Error::InvalidMscale`], [`Error::InvalidRefGrid`],
    /// [`Error::NonFiniteCoordinate`], [`Error::ShapeOverflow`], [`Error::ZeroHeads`] (a
    /// [`Summed`] plan of no heads).
    #[inline(always)]
    pub fn check(&self) -> Result<(), Error> {
        let assign = self.plan.assign();
        assign.check()?;
        let pairs = assign.pairs();
        if pairs == 0 || pairs.checked_mul(2).is_none_or(|r| r > self.head_dim) {
            return Err(Error::RotaryDim {
                pairs,
                head_dim: self.head_dim,
            });
        }
        match (self.freqs, assign) {
            (Freqs::Learned(learned), Assign::Summed(summed)) => {
                let expected = summed
                    .heads
                    .checked_mul(summed.pairs)
                    .ok_or(Error::ShapeOverflow)?;
                for values in [learned.x, learned.y] {
                    if values.len() != expected {
                        return Err(Error::FrequencyLength {
                            expected,
                            actual: values.len(),
                        });
                    }
                    if values
                        .iter()
                        .any(|&f| crate::freq::radians_f32(f).is_none())
                    {
                        return Err(Error::InvalidFrequency);
                    }
                }
            }
            (Freqs::Learned(_), _) | (_, Assign::Summed(_)) => return Err(Error::PlanMismatch),
            (Freqs::Base { base, freq_scale }, _) => {
                crate::freq::check_base(base, freq_scale, assign)?;
            }
            (Freqs::Explicit(values), _) => {
                if values.len() != pairs {
                    return Err(Error::FrequencyLength {
                        expected: pairs,
                        actual: values.len(),
                    });
                }
                if values
                    .iter()
                    .any(|&f| crate::freq::radians_f64(f).is_none())
                {
                    return Err(Error::InvalidFrequency);
                }
            }
        }
        if !(self.mscale.is_finite() && self.mscale > 0.0) {
            return Err(Error::InvalidMscale);
        }
        // Every value of a linspace lies between its ends (torch's formula, rounded
        // monotonically), so the ends bound them all.
        let limit = crate::freq::coordinate_limit(self.precision);
        for coords in &self.coords {
            match *coords {
                Coords::Rescale { reference: 0 } => return Err(Error::InvalidRefGrid),
                Coords::Linspace { start, stop }
                    if !(start.abs() < limit
                        && stop.abs() < limit
                        && (stop - start).is_finite()) =>
                {
                    return Err(Error::NonFiniteCoordinate);
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// A maximal run of consecutive pairs rotated by one axis whose table columns are
/// consecutive too: pairs `first .. first + len` use columns `column .. column + len` of
/// `axis`' table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub first: usize,
    pub axis: usize,
    pub column: usize,
    pub len: usize,
}

impl Run {
    /// No pairs.
    pub(crate) const EMPTY: Self = Self {
        first: 0,
        axis: 0,
        column: 0,
        len: 0,
    };
}

/// [`Assign::pair_axes`]: `(axis, column)` of pairs `0, 1, …`.
pub(crate) struct PairAxes<'p, const A: usize> {
    assign: Assign<'p, A>,
    k: usize,
    pairs: usize,
    /// Pairs seen so far on each axis: the next column.
    columns: [usize; A],
}

impl<const A: usize> Iterator for PairAxes<'_, A> {
    type Item = (usize, usize);

    #[inline]
    fn next(&mut self) -> Option<(usize, usize)> {
        let k = self.k;
        if k >= self.pairs {
            return None;
        }
        self.k += 1;
        let axis = match self.assign {
            Assign::Sections(s) => {
                let mut first = 0;
                let mut axis = 0;
                for section in &s.sections {
                    if k < first + section.pairs {
                        axis = section.axis;
                        break;
                    }
                    first += section.pairs;
                }
                axis
            }
            // Axis a ≥ 1 owns k = a, a + A, … below A·pairs[a]; axis 0 owns the rest.
            Assign::InterleavedAxes(s) => match k % A {
                a if a != 0 && k < A * s.pairs.get(a).copied().unwrap_or(0) => a,
                _ => 0,
            },
            Assign::PerPair(axes) => axes.get(k).map_or(0, |&a| usize::from(a)),
            Assign::Summed(_) => 0,
        };
        let column = self.columns.get_mut(axis)?;
        let this = *column;
        *column += 1;
        Some((axis, this))
    }
}

impl<'p, const A: usize> Assign<'p, A> {
    /// Rotated pairs per head.
    #[inline(always)]
    pub(crate) fn pairs(self) -> usize {
        match self {
            // Saturating: `Spec::pairs` is public and may come before `Spec::check`, which
            // refuses a sum that overflows.
            Assign::Sections(s) => s
                .sections
                .iter()
                .fold(0, |n: usize, s| n.saturating_add(s.pairs)),
            Assign::InterleavedAxes(s) => {
                s.pairs.iter().fold(0, |n: usize, &p| n.saturating_add(p))
            }
            Assign::PerPair(axes) => axes.len(),
            Assign::Summed(s) => s.pairs,
        }
    }

    /// `[cos, sin]` entries per table row of each axis.
    #[inline]
    pub(crate) fn widths(self) -> [usize; A] {
        let mut widths = [0; A];
        match self {
            Assign::Sections(s) => {
                for section in &s.sections {
                    if let Some(w) = widths.get_mut(section.axis) {
                        *w += section.pairs;
                    }
                }
            }
            Assign::InterleavedAxes(s) => {
                // Axis a ≥ 1 owns k ≡ a (mod A) below min(P, A·pairs[a]): fewer than
                // `pairs[a]` when the plan is unbalanced, the rest going to axis 0.
                let total: usize = s.pairs.iter().sum();
                if let (Some((w0, later)), Some((_, pairs))) =
                    (widths.split_first_mut(), s.pairs.split_first())
                {
                    let mut others = 0;
                    for (i, (w, &pairs)) in later.iter_mut().zip(pairs).enumerate() {
                        let a = i + 1;
                        let end = total.min(A.saturating_mul(pairs));
                        *w = if end > a { (end - a - 1) / A + 1 } else { 0 };
                        others += *w;
                    }
                    *w0 = total - others;
                }
            }
            Assign::PerPair(axes) => {
                for &axis in axes {
                    if let Some(w) = widths.get_mut(usize::from(axis)) {
                        *w += 1;
                    }
                }
            }
            Assign::Summed(s) => widths = [s.heads.saturating_mul(s.pairs); A],
        }
        widths
    }

    /// Axis indices in range, no overflow.
    #[inline(always)]
    fn check(self) -> Result<(), Error> {
        let bad_axis = |axis: usize| Error::InvalidAxis { axis, axes: A };
        match self {
            Assign::Sections(s) => {
                let mut total = 0usize;
                for section in &s.sections {
                    if section.axis >= A {
                        return Err(bad_axis(section.axis));
                    }
                    total = total
                        .checked_add(section.pairs)
                        .ok_or(Error::ShapeOverflow)?;
                }
            }
            Assign::InterleavedAxes(s) => {
                let mut total = 0usize;
                for &pairs in &s.pairs {
                    total = total.checked_add(pairs).ok_or(Error::ShapeOverflow)?;
                }
                // A·pairs[a] must not overflow either.
                for &pairs in &s.pairs {
                    pairs.checked_mul(A).ok_or(Error::ShapeOverflow)?;
                }
            }
            Assign::PerPair(axes) => {
                if let Some(&axis) = axes.iter().find(|&&a| usize::from(a) >= A) {
                    return Err(bad_axis(usize::from(axis)));
                }
            }
            Assign::Summed(s) => {
                if s.heads == 0 {
                    return Err(Error::ZeroHeads);
                }
                s.heads.checked_mul(s.pairs).ok_or(Error::ShapeOverflow)?;
            }
        }
        Ok(())
    }

    /// The axis and table column of every pair, in pair order (plans other than `Summed`).
    #[inline(always)]
    pub(crate) fn pair_axes(self) -> PairAxes<'p, A> {
        PairAxes {
            assign: self,
            k: 0,
            pairs: self.pairs(),
            columns: [0; A],
        }
    }

    /// The plan's runs, in pair order, when it has at most `N` of them (sections always do,
    /// one per non-empty section); `None` otherwise.
    #[inline(always)]
    pub(crate) fn runs<const N: usize>(self) -> Option<([Run; N], usize)> {
        let mut runs = [Run::EMPTY; N];
        let mut count = 0;
        match self {
            Assign::Sections(s) => {
                let mut first = 0;
                let mut columns = [0usize; A];
                for section in &s.sections {
                    if section.pairs == 0 {
                        continue;
                    }
                    let column = columns.get(section.axis).copied().unwrap_or(0);
                    *runs.get_mut(count)? = Run {
                        first,
                        axis: section.axis,
                        column,
                        len: section.pairs,
                    };
                    count += 1;
                    first += section.pairs;
                    if let Some(c) = columns.get_mut(section.axis) {
                        *c += section.pairs;
                    }
                }
                Some((runs, count))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    fn locate_all<const A: usize>(assign: Assign<'_, A>) -> Vec<(usize, usize)> {
        assign.pair_axes().collect()
    }

    /// Columns are each axis' pairs counted in pair order.
    fn check_columns(located: &[(usize, usize)]) {
        let mut next = [0usize; 8];
        for &(axis, column) in located {
            assert_eq!(column, next[axis], "{located:?}");
            next[axis] += 1;
        }
    }

    #[test]
    fn interleaved_matches_qwen3_rule() {
        let plan = InterleavedAxes {
            pairs: [24, 20, 20],
        };
        let located = locate_all(Assign::InterleavedAxes(&plan));
        for (k, &(axis, _)) in located.iter().enumerate() {
            let want = if k % 3 == 1 && k < 60 {
                1
            } else if k % 3 == 2 && k < 60 {
                2
            } else {
                0
            };
            assert_eq!(axis, want, "pair {k}");
        }
        check_columns(&located);
        assert_eq!(Assign::InterleavedAxes(&plan).widths(), [24, 20, 20]);
    }

    #[test]
    fn unbalanced_interleaved_clamps_like_the_reference_slice() {
        // freqs[..., a : 3·pairs[a] : 3] over P = 6 pairs: axis 1 gets k = 1, 4; axis 2
        // gets k = 2; axis 0 the rest.
        for (pairs, axes) in [
            ([1, 5, 0], [0, 1, 0, 0, 1, 0]),
            ([0, 3, 3], [0, 1, 2, 0, 1, 2]),
            ([0, 0, 6], [0, 0, 2, 0, 0, 2]),
            ([2, 1, 3], [0, 1, 2, 0, 0, 2]),
        ] {
            let plan = InterleavedAxes { pairs };
            let located = locate_all(Assign::InterleavedAxes(&plan));
            let got: Vec<usize> = located.iter().map(|&(axis, _)| axis).collect();
            assert_eq!(got, axes, "{pairs:?}");
            check_columns(&located);
            let mut counts = [0; 3];
            for &axis in &axes {
                counts[axis] += 1;
            }
            assert_eq!(Assign::InterleavedAxes(&plan).widths(), counts, "{pairs:?}");
        }
    }

    #[test]
    fn sections_and_per_pair_agree() {
        let plan = Sections {
            sections: [Section::new(2, 3), Section::new(0, 2), Section::new(1, 4)],
            index: FreqIndex::PerSection,
        };
        let located = locate_all(Assign::Sections(&plan));
        check_columns(&located);
        let axes: Vec<u8> = located.iter().map(|&(a, _)| a as u8).collect();
        assert_eq!(locate_all(Assign::<3>::PerPair(&axes)), located);
        let (runs, count) = Assign::Sections(&plan).runs::<3>().unwrap();
        assert_eq!(count, 3);
        assert_eq!(
            runs[2],
            Run {
                first: 5,
                axis: 1,
                column: 0,
                len: 4
            }
        );
        assert_eq!(Assign::Sections(&plan).widths(), [2, 4, 3]);
    }
}
