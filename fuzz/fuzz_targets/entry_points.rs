//! Every public entry point with arbitrary specs, extents, storage and buffer lengths, shapes
//! and positions, on any backend: `Spec::check`, `Table::storage_len` / `build` / `entries`,
//! `Sections::table_len`, `FixedTable`, `Direct::new`, `rotate` (grids, runs, lists,
//! pieces, merge windows), `rotate_at`, `rotate_qk`, `rotate_head`, `rotate_coords` (real
//! coordinates), `with_backend`, and `preset::HfRope::spec`.
//!
//! Specs over A = 1, 2 and 3 axes: any head dim (partial rotary included), both layouts;
//! sections in any axis order with any `FreqIndex` and any sizes (zero, huge, naming axes
//! that do not exist), interleaved M-RoPE and per-pair plans, RoPE-Mixed (`Summed` with
//! learned frequencies); `Freqs::Base` with any (mostly valid) base and frequency scale,
//! explicit and learned frequencies of any length and value, mismatched with the plan too;
//! every coordinate mode per axis (`Rescale` with a zero reference, `Linspace` with
//! non-finite ends), any `mscale` and precision. Extents, heads (zero included), prefixes,
//! lengths and positions are mostly plausible and sometimes anything: out of range, near
//! `u32::MAX`, or sizes that overflow.
//!
//! Checked, per call:
//! - it never panics;
//! - it returns `Err` exactly when an oracle written here (from the documented rules,
//!   independently of the crate's checks) says a rule is broken, and then an error of one
//!   of the broken rules (with its exact fields; for a position out of range, its axis and
//!   the extent). The oracle models the fixed-point limits too (frequency denominators and
//!   divided extents above 65 535); only the few `ShapeOverflow`s of intermediate sizes it
//!   does not model (an extent past `i64::MAX`, `A · pairs[a]` of an interleaved plan, a
//!   grid with a zero extent whose other extents overflow when multiplied in axis order)
//!   are accepted without being required;
//! - on `Err` nothing was written (table storage and buffers compared with copies);
//! - nothing is ever written outside the slice given (guard values around it), into the
//!   unrotated prefix, or past the rotary dimension `2 · pairs` of a head;
//! - on `Ok`: every table entry is `[cos, sin]` times `mscale` (norm `mscale`); every
//!   rotated pair's norm is `mscale` times its input's; `rotate` at generated positions
//!   gives the bits of `rotate_at` at those positions enumerated here from the documented
//!   orders (row-major grids, runs, pieces, merge windows); a `FixedTable` gives the bits
//!   of the `Table`; and a table agrees with tableless rotation (`Direct`) of the same spec
//!   to within rounding;
//! - `rotate_with_head_scales` on an `i8` buffer gives each head exactly what `rotate_at`
//!   with that head's scales gives it, and fails (writing nothing) exactly when one of those
//!   calls fails or an entry is invalid.
#![no_main]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use rope2d::preset::{HfRope, HfScaling};
use rope2d::{
    AnglePrecision, Backend, Coords, Direct, Direction, Error, FixedTable, FreqIndex, Freqs, Grid,
    InterleavedAxes, Layout, LearnedFreqs, PerPair, Piece, Plan, Q15Table, Rope, Run, Scales,
    Section, Sections, Shape, Source, Spec, Summed, Table,
};

type Outcome<T> = core::result::Result<T, Error>;

/// Guard values either side of every buffer.
const GUARD: usize = 9;
const SENTINEL: f32 = -7.25;
/// Table storage before a build: a NaN that no table entry can be.
const UNWRITTEN: f32 = f32::from_bits(0x7fc0_1234);
/// Largest buffer (floats) and table (entries) this target allocates.
const MAX_BUFFER: usize = 1 << 14;
const MAX_TABLE: usize = 1 << 17;
/// 2³², the limit of frequencies, frequency scales and tableless coordinates.
const TWO_POW_32: f64 = 4_294_967_296.0;

fuzz_target!(|data: &[u8]| {
    // `Err` only means the input ran out of bytes.
    let _ = run(&mut Unstructured::new(data));
});

fn run(u: &mut Unstructured<'_>) -> Result<()> {
    let backend = *u.choose(Backend::ALL)?;
    match u.int_in_range(0..=9)? {
        0..=1 => plans::<1>(u, backend),
        2..=4 => plans::<2>(u, backend),
        5..=6 => plans::<3>(u, backend),
        7..=8 => {
            let plan = Summed {
                heads: if u.ratio(15, 16)? {
                    u.int_in_range(0..=3)?
                } else {
                    size(u)?
                },
                pairs: pair_count(u)?,
            };
            let facts = PlanFacts::summed(&plan);
            with_freqs(u, backend, plan, &facts)
        }
        _ => hf_rope(u, backend),
    }
}

// ---------------------------------------------------------------------------------------
// The oracle's verdicts.
// ---------------------------------------------------------------------------------------

/// An error the oracle admits.
#[derive(Clone, Copy, Debug)]
enum Allowed {
    /// Exactly this error.
    Exact(Error),
    /// `PositionOutOfRange` on `axis` against `extent`, with a value at or past it.
    OutOfRange { axis: usize, extent: usize },
}

impl Allowed {
    fn admits(self, error: Error) -> bool {
        match (self, error) {
            (Allowed::Exact(want), got) => want == got,
            (
                Allowed::OutOfRange { axis, extent },
                Error::PositionOutOfRange {
                    axis: a,
                    value,
                    extent: e,
                },
            ) => a == axis && e == extent && value >= extent as u64,
            _ => false,
        }
    }
}

/// What a call may return, by the oracle.
#[derive(Clone, Debug, Default)]
struct Expect {
    /// Rules the input breaks: the call must fail, with one of these.
    broken: Vec<Allowed>,
    /// Failures the oracle accepts without requiring them (see the module docs).
    tolerated: Vec<Allowed>,
}

impl Expect {
    fn breaks(&mut self, error: Error) {
        self.broken.push(Allowed::Exact(error));
    }

    fn tolerates(&mut self, error: Error) {
        self.tolerated.push(Allowed::Exact(error));
    }

    fn valid(&self) -> bool {
        self.broken.is_empty()
    }

    fn merge(&mut self, other: &Expect) {
        self.broken.extend_from_slice(&other.broken);
        self.tolerated.extend_from_slice(&other.tolerated);
    }

    /// Asserts that `result` is what the oracle allows.
    fn check<T>(&self, result: &Outcome<T>, what: &str) {
        match result {
            Ok(_) => assert!(
                self.broken.is_empty(),
                "{what}: Ok, but the input breaks {:?}",
                self.broken
            ),
            Err(e) => assert!(
                self.broken
                    .iter()
                    .chain(&self.tolerated)
                    .any(|a| a.admits(*e)),
                "{what}: returned {e:?}; the oracle expects one of {:?} (tolerated: {:?})",
                self.broken,
                self.tolerated
            ),
        }
    }
}

/// A learned, explicit or scale frequency the crate accepts: finite, below 2³² in magnitude.
fn frequency_ok(f: f64) -> bool {
    f.is_finite() && f.abs() < TWO_POW_32
}

/// `base` finite and above 1.
fn base_ok(base: f64) -> bool {
    base.is_finite() && base > 1.0
}

/// `freq_scale` finite, positive, below 2³².
fn scale_ok(scale: f64) -> bool {
    scale.is_finite() && scale > 0.0 && scale < TWO_POW_32
}

// ---------------------------------------------------------------------------------------
// Plans and what the documentation says about them.
// ---------------------------------------------------------------------------------------

/// The oracle's account of a plan, worked out here from its documentation.
struct PlanFacts<const A: usize> {
    /// The plan's own rules (axes, sizes, heads).
    expect: Expect,
    /// Rotated pairs, `None` when their count overflows.
    pairs: Option<usize>,
    /// `[cos, sin]` entries per table row of each axis.
    widths: [u128; A],
    /// Denominators `n` of `Freqs::Base` (each must be at most 65 535).
    denominators: Vec<u128>,
    /// RoPE-Mixed: the heads of the learned frequencies.
    heads: Option<usize>,
    /// Sections `(axis, pairs)`, and the plan's own `Sections::table_len`.
    sections: Option<Vec<(usize, usize)>>,
    table_len: Option<Box<dyn Fn([usize; A]) -> usize>>,
}

impl<const A: usize> PlanFacts<A> {
    fn new() -> Self {
        Self {
            expect: Expect::default(),
            pairs: None,
            widths: [0; A],
            denominators: Vec::new(),
            heads: None,
            sections: None,
            table_len: None,
        }
    }

    /// Total pairs `sizes` sum to, breaking `ShapeOverflow` when they overflow.
    fn total(&mut self, sizes: impl Iterator<Item = usize>) -> u128 {
        let total: u128 = sizes.map(|n| n as u128).sum();
        if total > usize::MAX as u128 {
            self.expect.breaks(Error::ShapeOverflow);
        } else {
            self.pairs = Some(total as usize);
        }
        total
    }

    fn sections(plan: &Sections<A>) -> Self {
        let mut facts = Self::new();
        for section in &plan.sections {
            if section.axis >= A {
                facts.expect.breaks(Error::InvalidAxis {
                    axis: section.axis,
                    axes: A,
                });
            } else {
                facts.widths[section.axis] += section.pairs as u128;
            }
        }
        let total = facts.total(plan.sections.iter().map(|s| s.pairs));
        // Per section: the section's own pairs; global and strided: all pairs.
        facts.denominators = match plan.index {
            FreqIndex::PerSection => plan
                .sections
                .iter()
                .filter(|s| s.pairs > 0)
                .map(|s| s.pairs as u128)
                .collect(),
            FreqIndex::Global | FreqIndex::Strided => vec![total],
        };
        facts.sections = Some(plan.sections.iter().map(|s| (s.axis, s.pairs)).collect());
        let plan = *plan;
        facts.table_len = Some(Box::new(move |extents| plan.table_len(extents)));
        facts
    }

    fn interleaved(plan: &InterleavedAxes<A>) -> Self {
        let mut facts = Self::new();
        let total = facts.total(plan.pairs.iter().copied());
        if plan.pairs.iter().any(|&p| p.checked_mul(A).is_none()) {
            facts.expect.tolerates(Error::ShapeOverflow);
        }
        // Axis a ≥ 1 owns pairs k ≡ a (mod A) below min(A·pairs[a], P), the reference's
        // clamped slice; axis 0 the rest.
        let a_count = A as u128;
        let mut widths = [0u128; A];
        for a in 1..A {
            let end = (a_count * plan.pairs[a] as u128).min(total);
            widths[a] = end.saturating_sub(a as u128).div_ceil(a_count);
        }
        if A > 0 {
            widths[0] = total - widths[1..].iter().sum::<u128>();
        }
        facts.widths = widths;
        facts.denominators = vec![total];
        facts
    }

    fn per_pair(axes: &[u8]) -> Self {
        let mut facts = Self::new();
        for &axis in axes {
            match facts.widths.get_mut(usize::from(axis)) {
                Some(w) => *w += 1,
                None => facts.expect.breaks(Error::InvalidAxis {
                    axis: usize::from(axis),
                    axes: A,
                }),
            }
        }
        facts.pairs = Some(axes.len());
        facts.denominators = vec![axes.len() as u128];
        facts
    }
}

impl PlanFacts<2> {
    fn summed(plan: &Summed) -> Self {
        let mut facts = Self::new();
        if plan.heads == 0 {
            facts.expect.breaks(Error::ZeroHeads);
        }
        let width = plan.heads as u128 * plan.pairs as u128;
        if width > usize::MAX as u128 {
            facts.expect.breaks(Error::ShapeOverflow);
        }
        facts.pairs = Some(plan.pairs);
        facts.widths = [width; 2];
        facts.heads = Some(plan.heads);
        facts
    }
}

/// A small count mostly; sometimes a size at a limit or past one.
fn size(u: &mut Unstructured<'_>) -> Result<usize> {
    Ok(match u.int_in_range(0..=9)? {
        0 => 65_535,
        1 => 65_536,
        2 => 1 << 32,
        3 => i64::MAX as usize + 1,
        4 => usize::MAX / 2,
        5 => usize::MAX / 3 + 1,
        6 => usize::MAX,
        7 => usize::MAX - u.int_in_range(0..=3)?,
        _ => u.arbitrary()?,
    })
}

/// Pairs of a section or axis: mostly 0 to 6.
fn pair_count(u: &mut Unstructured<'_>) -> Result<usize> {
    if u.ratio(31, 32)? {
        u.int_in_range(0..=6)
    } else {
        size(u)
    }
}

fn plans<const A: usize>(u: &mut Unstructured<'_>, backend: Backend) -> Result<()> {
    match u.int_in_range(0..=5)? {
        0..=2 => {
            // The axes in any order, now and then one that does not exist.
            let mut order: [usize; A] = core::array::from_fn(|a| a);
            for i in (1..A).rev() {
                order.swap(i, u.int_in_range(0..=i)?);
            }
            let mut sections = [Section::new(0, 0); A];
            for (section, &axis) in sections.iter_mut().zip(&order) {
                let axis = if u.ratio(1, 24)? {
                    *u.choose(&[A, A + 1, usize::MAX])?
                } else {
                    axis
                };
                *section = Section::new(axis, pair_count(u)?);
            }
            let index =
                *u.choose(&[FreqIndex::PerSection, FreqIndex::Global, FreqIndex::Strided])?;
            let plan = Sections { sections, index };
            let facts = PlanFacts::sections(&plan);
            with_freqs(u, backend, plan, &facts)
        }
        3..=4 => {
            let mut pairs = [0; A];
            for p in &mut pairs {
                *p = pair_count(u)?;
            }
            let plan = InterleavedAxes { pairs };
            let facts = PlanFacts::interleaved(&plan);
            with_freqs(u, backend, plan, &facts)
        }
        _ => {
            let n = if u.ratio(63, 64)? {
                u.int_in_range(0..=10)?
            } else {
                *u.choose(&[65_535, 65_536])?
            };
            let mut axes = vec![0u8; n];
            let wild = u.ratio(1, 16)?;
            for axis in axes.iter_mut().take(64) {
                *axis = if wild {
                    u.arbitrary()?
                } else {
                    u.int_in_range(0..=A as u8 - 1)?
                };
            }
            let facts = PlanFacts::<A>::per_pair(&axes);
            with_freqs(u, backend, PerPair { axes: &axes }, &facts)
        }
    }
}

// ---------------------------------------------------------------------------------------
// Specs.
// ---------------------------------------------------------------------------------------

/// A float that is usually one of `ordinary` and sometimes any bit pattern.
fn float(u: &mut Unstructured<'_>, ordinary: &[f64]) -> Result<f64> {
    Ok(if u.ratio(7, 8)? {
        *u.choose(ordinary)?
    } else {
        f64::from_bits(u.arbitrary()?)
    })
}

fn float32(u: &mut Unstructured<'_>, ordinary: &[f32]) -> Result<f32> {
    Ok(if u.ratio(7, 8)? {
        *u.choose(ordinary)?
    } else {
        f32::from_bits(u.arbitrary()?)
    })
}

fn layout(u: &mut Unstructured<'_>) -> Result<Layout> {
    Ok(if u.arbitrary()? {
        Layout::Interleaved
    } else {
        Layout::Half
    })
}

fn direction(u: &mut Unstructured<'_>) -> Result<Direction> {
    Ok(if u.arbitrary()? {
        Direction::Forward
    } else {
        Direction::Inverse
    })
}

fn coords(u: &mut Unstructured<'_>) -> Result<Coords> {
    const ENDS: [f32; 8] = [0.0, 1.0, -1.0, 15.5, -3.25, 1e6, f32::NAN, f32::INFINITY];
    Ok(match u.int_in_range(0..=7)? {
        0..=3 => Coords::Index,
        4 => Coords::Centered,
        5 => Coords::Rescale {
            reference: if u.ratio(7, 8)? {
                u.int_in_range(0..=20)?
            } else {
                u.arbitrary()?
            },
        },
        _ => Coords::Linspace {
            start: float32(u, &ENDS)?,
            stop: float32(u, &ENDS)?,
        },
    })
}

/// Frequencies of either kind, mostly of the length the plan needs.
fn explicit(u: &mut Unstructured<'_>, pairs: Option<usize>) -> Result<Vec<f64>> {
    const VALUES: [f64; 9] = [
        0.5,
        1.0,
        -0.25,
        1e-3,
        0.0,
        3.0e9,
        4_294_967_295.0,
        TWO_POW_32,
        1e-300,
    ];
    let n = match pairs {
        Some(n) if n <= 64 && u.ratio(7, 8)? => n,
        _ => u.int_in_range(0..=8)?,
    };
    (0..n).map(|_| float(u, &VALUES)).collect()
}

fn learned(u: &mut Unstructured<'_>, len: Option<usize>) -> Result<Vec<f32>> {
    const VALUES: [f32; 8] = [0.5, -1.25, 0.0, 3.0, 1e-3, 100.0, 4e9, 4.3e9];
    let n = match len {
        Some(n) if n <= 64 && u.ratio(7, 8)? => n,
        _ => u.int_in_range(0..=8)?,
    };
    (0..n).map(|_| float32(u, &VALUES)).collect()
}

/// Builds a spec of `plan` with arbitrary frequencies, coordinates, magnitude and precision,
/// then exercises it.
fn with_freqs<const A: usize, P: Plan<A>>(
    u: &mut Unstructured<'_>,
    backend: Backend,
    plan: P,
    facts: &PlanFacts<A>,
) -> Result<()> {
    let learned_len = facts
        .heads
        .and_then(|h| h.checked_mul(facts.pairs.unwrap_or(0)));
    // RoPE-Mixed mostly gets learned frequencies, every other plan mostly the others.
    let kind = match (facts.heads.is_some(), u.int_in_range(0..=9)?) {
        (true, 0..=8) | (false, 0) => 2,
        (_, 1..=6) => 0,
        _ => 1,
    };
    let explicit = explicit(u, facts.pairs)?;
    let (x, y) = (learned(u, learned_len)?, learned(u, learned_len)?);
    let freqs = match kind {
        0 => Freqs::Base {
            base: float(u, &[10_000.0, 100.0, 2.0, 1.0001, 1e6, 1.0, 0.5])?,
            freq_scale: float(
                u,
                &[1.0, core::f64::consts::TAU, 0.125, 4_294_967_295.0, 5e9],
            )?,
        },
        1 => Freqs::Explicit(&explicit),
        _ => Freqs::Learned(LearnedFreqs { x: &x, y: &y }),
    };
    let pairs2 = facts.pairs.map_or(0, |p| p.saturating_mul(2));
    let head_dim = match u.int_in_range(0..=9)? {
        0..=6 => pairs2.saturating_add(u.int_in_range(0..=3)?),
        7 => pairs2.saturating_sub(1),
        8 => u.int_in_range(0..=24)?,
        _ => size(u)?,
    };
    let mut coordinates = [Coords::Index; A];
    for c in &mut coordinates {
        *c = coords(u)?;
    }
    let spec = Spec {
        head_dim,
        layout: layout(u)?,
        plan,
        freqs,
        coords: coordinates,
        mscale: float32(u, &[1.0, 1.25, 0.5, 0.75, 2.0])?,
        precision: if u.arbitrary()? {
            AnglePrecision::Exact
        } else {
            AnglePrecision::Float32
        },
    };
    exercise(u, backend, &spec, facts)
}

/// The spec's own rules ([`Spec::check`]).
fn spec_expect<const A: usize, P: Plan<A>>(spec: &Spec<'_, A, P>, facts: &PlanFacts<A>) -> Expect {
    let mut e = facts.expect.clone();
    if let Some(pairs) = facts.pairs
        && (pairs == 0 || 2 * pairs as u128 > spec.head_dim as u128)
    {
        e.breaks(Error::RotaryDim {
            pairs,
            head_dim: spec.head_dim,
        });
    }
    match (spec.freqs, facts.heads) {
        (Freqs::Learned(learned), Some(heads)) => {
            if let Some(expected) = heads.checked_mul(facts.pairs.unwrap_or(0)) {
                for values in [learned.x, learned.y] {
                    if values.len() != expected {
                        e.breaks(Error::FrequencyLength {
                            expected,
                            actual: values.len(),
                        });
                    }
                    if !values.iter().all(|&f| frequency_ok(f64::from(f))) {
                        e.breaks(Error::InvalidFrequency);
                    }
                }
            }
        }
        (Freqs::Learned(_), None) | (_, Some(_)) => e.breaks(Error::PlanMismatch),
        (Freqs::Base { base, freq_scale }, None) => {
            if !base_ok(base) {
                e.breaks(Error::InvalidBase);
            }
            if !scale_ok(freq_scale) {
                e.breaks(Error::InvalidFreqScale);
            }
            denominator_limit(&mut e, spec, facts);
        }
        (Freqs::Explicit(values), None) => {
            if let Some(pairs) = facts.pairs
                && values.len() != pairs
            {
                e.breaks(Error::FrequencyLength {
                    expected: pairs,
                    actual: values.len(),
                });
            }
            if !values.iter().all(|&f| frequency_ok(f)) {
                e.breaks(Error::InvalidFrequency);
            }
        }
    }
    if !(spec.mscale.is_finite() && spec.mscale > 0.0) {
        e.breaks(Error::InvalidMscale);
    }
    for c in &spec.coords {
        match *c {
            Coords::Rescale { reference: 0 } => e.breaks(Error::InvalidRefGrid),
            // Ends below the real-coordinate limit, and a finite difference between them.
            Coords::Linspace { start, stop }
                if !(start.abs() < real_limit(spec.precision)
                    && stop.abs() < real_limit(spec.precision)
                    && (stop - start).is_finite()) =>
            {
                e.breaks(Error::NonFiniteCoordinate)
            }
            _ => {}
        }
    }
    e
}

/// The fixed-point limit on frequency denominators (`Freqs::Base` only): 65 535, checked by
/// `Spec::check` (so by everything that checks a spec).
fn denominator_limit<const A: usize, P: Plan<A>>(
    e: &mut Expect,
    spec: &Spec<'_, A, P>,
    facts: &PlanFacts<A>,
) {
    if matches!(spec.freqs, Freqs::Base { .. }) && facts.denominators.iter().any(|&n| n > 65_535) {
        e.breaks(Error::ShapeOverflow);
    }
}

fn exercise<const A: usize, P: Plan<A>>(
    u: &mut Unstructured<'_>,
    backend: Backend,
    spec: &Spec<'_, A, P>,
    facts: &PlanFacts<A>,
) -> Result<()> {
    let spec_e = spec_expect(spec, facts);
    spec_e.check(&spec.check(), "Spec::check");
    if spec_e.valid() {
        assert_eq!(Some(spec.pairs()), facts.pairs, "Spec::pairs");
    }
    if u.ratio(1, 3)? {
        direct_case(u, backend, spec, facts, &spec_e)
    } else {
        table_case(u, backend, spec, facts, &spec_e)
    }
}

// ---------------------------------------------------------------------------------------
// Tables.
// ---------------------------------------------------------------------------------------

/// A table extent: mostly 0 to 5, sometimes a size at or past a limit.
fn extent(u: &mut Unstructured<'_>) -> Result<usize> {
    if u.ratio(31, 32)? {
        u.int_in_range(0..=5)
    } else {
        size(u)
    }
}

/// `Table::storage_len`'s rules and, when the oracle finds none broken, its value.
fn storage_expect<const A: usize>(
    spec_e: &Expect,
    facts: &PlanFacts<A>,
    extents: [usize; A],
) -> (Expect, Option<usize>) {
    let mut e = spec_e.clone();
    if extents.contains(&0) {
        e.breaks(Error::EmptyTable);
    }
    let total = extents
        .iter()
        .zip(&facts.widths)
        .try_fold(0u128, |sum, (&n, &w)| {
            (n as u128).checked_mul(w)?.checked_add(sum)
        })
        .filter(|&t| t <= usize::MAX as u128);
    if total.is_none() {
        e.breaks(Error::ShapeOverflow);
    }
    let value = total.filter(|_| e.valid()).map(|t| t as usize);
    (e, value)
}

/// `Table::build`'s (and `FixedTable::new`'s) rules for `actual` entries of storage.
fn build_expect<const A: usize, P: Plan<A>>(
    storage_e: &Expect,
    total: Option<usize>,
    actual: usize,
    spec: &Spec<'_, A, P>,
    extents: [usize; A],
) -> Expect {
    let mut e = storage_e.clone();
    if let Some(expected) = total
        && expected != actual
    {
        e.breaks(Error::StorageLength { expected, actual });
    }
    for (c, &n) in spec.coords.iter().zip(&extents) {
        // Rescaled and centred coordinates divide by the extent: at most 65 535.
        if matches!(c, Coords::Rescale { .. } | Coords::Centered) && n > 65_535 {
            e.breaks(Error::ShapeOverflow);
        }
        if n > i64::MAX as usize {
            e.tolerates(Error::ShapeOverflow);
        }
    }
    e
}

/// `Sections::table_len`: `Σ extents[axis] · pairs` over sections with an existing axis,
/// saturating.
fn table_len_oracle<const A: usize>(sections: &[(usize, usize)], extents: [usize; A]) -> usize {
    let sum = sections
        .iter()
        .filter(|(axis, _)| *axis < A)
        .map(|&(axis, pairs)| extents[axis] as u128 * pairs as u128)
        .fold(0u128, u128::saturating_add);
    sum.min(usize::MAX as u128) as usize
}

fn with_backend<const A: usize, S: Source<A>>(rope: Rope<A, S>, backend: Backend) -> Rope<A, S> {
    match rope.with_backend(backend) {
        Ok(r) => {
            assert!(backend.is_available());
            assert_eq!(r.backend(), backend);
            r
        }
        Err(e) => {
            assert!(!backend.is_available(), "{} refused", backend.name());
            assert_eq!(e, Error::BackendUnavailable);
            rope
        }
    }
}

/// Asserts a table entry is `[cos, sin]` times `m`; `what` names it on failure (formatted
/// only then: tables have up to `MAX_TABLE` entries).
fn entry_ok(entry: [f32; 2], m: f32, what: impl Fn() -> String) {
    let [c, s] = entry;
    assert!(
        c.is_finite() && s.is_finite(),
        "{}: entry {entry:?}",
        what()
    );
    if m >= 1e-30 {
        let norm = f64::from(c).hypot(f64::from(s));
        let m = f64::from(m);
        assert!(
            (norm - m).abs() <= 1e-6 * m,
            "{}: entry {entry:?} has norm {norm}, mscale {m}",
            what()
        );
    }
}

fn table_case<const A: usize, P: Plan<A>>(
    u: &mut Unstructured<'_>,
    backend: Backend,
    spec: &Spec<'_, A, P>,
    facts: &PlanFacts<A>,
    spec_e: &Expect,
) -> Result<()> {
    let mut extents = [0; A];
    for n in &mut extents {
        *n = extent(u)?;
    }
    let (len_e, total) = storage_expect(spec_e, facts, extents);
    let storage_len = Table::storage_len(spec, extents);
    len_e.check(&storage_len, "Table::storage_len");
    // (A tolerated error, checked above, may still come instead.)
    if let (Some(total), Ok(_)) = (total, storage_len) {
        assert_eq!(
            storage_len,
            Ok(total),
            "Table::storage_len of {spec:?} over {extents:?}"
        );
    }
    if let (Some(sections), Some(table_len)) = (&facts.sections, &facts.table_len) {
        let want = table_len_oracle(sections, extents);
        assert_eq!(table_len(extents), want, "Sections::table_len");
    }
    let len = match total.filter(|&t| t <= MAX_TABLE) {
        Some(t) if u.ratio(7, 8)? => t,
        Some(t) if u.arbitrary()? => t + 1,
        Some(t) => t.saturating_sub(1),
        None => u.int_in_range(0..=64)?,
    };
    let build_e = build_expect(&len_e, total, len, spec, extents);
    let mut storage = vec![[UNWRITTEN; 2]; len];
    let fixed16 = FixedTable::<16, A, P>::new(spec, extents);
    build_expect(&len_e, total, 16, spec, extents).check(&fixed16, "FixedTable<16>");
    let fixed48 = FixedTable::<48, A, P>::new(spec, extents);
    build_expect(&len_e, total, 48, spec, extents).check(&fixed48, "FixedTable<48>");
    let table = match Table::build(&mut storage, spec, extents) {
        Ok(table) => table,
        Err(e) => {
            build_e.check(&Err::<(), _>(e), "Table::build");
            assert!(
                storage
                    .iter()
                    .flatten()
                    .all(|v| v.to_bits() == UNWRITTEN.to_bits()),
                "Table::build wrote storage on {e:?}"
            );
            return Ok(());
        }
    };
    build_e.check(&Ok(()), "Table::build");
    let _ = format!("{table:?}");
    assert_eq!(table.extents(), extents);
    assert_eq!(table.head_dim(), spec.head_dim);
    assert_eq!(table.pairs(), spec.pairs());
    assert_eq!(table.layout(), spec.layout);
    // Every entry, through `entries` (which covers the whole storage).
    for (axis, (&n, &width)) in extents.iter().zip(&facts.widths).enumerate() {
        if width == 0 {
            // An axis that rotates no pairs has an empty table.
            for index in [0, n - 1, n] {
                assert!(table.entries(axis, index).is_none_or(|e| e.is_empty()));
            }
            continue;
        }
        for index in 0..n {
            let row = table
                .entries(axis, index)
                .expect("entries inside the table");
            assert_eq!(row.len() as u128, width, "entries of axis {axis}");
            // RoPE-Mixed sums the axes' angles: its mscale is applied once, on axis 0.
            let m = if facts.heads.is_some() && axis > 0 {
                1.0
            } else {
                spec.mscale
            };
            for &entry in row {
                entry_ok(entry, m, || {
                    format!("table of {spec:?} over {extents:?}: axis {axis} index {index}")
                });
            }
        }
        assert!(table.entries(axis, n).is_none(), "entries past the extent");
        assert!(table.entries(axis, usize::MAX).is_none());
    }
    assert!(table.entries(A, 0).is_none(), "entries of an axis past A");
    let table = with_backend(table, backend);
    let fixed16 = fixed16.ok().map(|f| fixed_with_backend(f, backend));
    let fixed48 = fixed48.ok().map(|f| fixed_with_backend(f, backend));
    let views: Vec<Table<'_, A, P>> = [
        fixed16.as_ref().map(|f| f.view()),
        fixed48.as_ref().map(|f| f.view()),
    ]
    .into_iter()
    .flatten()
    .collect();
    for view in &views {
        assert_eq!(view.backend(), table.backend());
        for axis in 0..A {
            for index in 0..extents[axis].min(64) {
                assert_eq!(
                    view.entries(axis, index).map(bits2),
                    table.entries(axis, index).map(bits2),
                    "FixedTable entries"
                );
            }
        }
    }
    q15_case(u, spec, facts, extents, &table)?;
    per_head_case(u, &table, facts.heads, extents)?;
    // The same spec without a table, where it can go without one.
    let direct = if spec.coords.iter().all(|c| *c == Coords::Index) {
        let e = spec_e.clone();
        let made = Direct::new(spec);
        e.check(&made, "Direct::new");
        made.ok()
            .map(|d| d.with_backend(Backend::Scalar).expect("scalar"))
    } else {
        None
    };
    let rot = Rot {
        head_dim: spec.head_dim,
        pairs: spec.pairs(),
        layout: spec.layout,
        limits: extents.map(|n| n as u64),
        extents: Some(extents),
        heads: facts.heads,
        mscale: spec.mscale,
        real_limit: real_limit(spec.precision),
    };
    let view = views.first();
    let mut twins: Vec<Twin<'_, A>> = Vec::new();
    let at = |x: &mut [f32], s: Shape, p: &[[u32; A]], d: Direction| table.rotate_at(x, s, p, d);
    twins.push(Twin {
        name: "rotate_at",
        exact: true,
        rotate_at: &at,
    });
    let fixed_at = |x: &mut [f32], s: Shape, p: &[[u32; A]], d: Direction| {
        view.expect("view").rotate_at(x, s, p, d)
    };
    if view.is_some() {
        twins.push(Twin {
            name: "FixedTable",
            exact: true,
            rotate_at: &fixed_at,
        });
    }
    let direct_at = |x: &mut [f32], s: Shape, p: &[[u32; A]], d: Direction| {
        direct.as_ref().expect("direct").rotate_at(x, s, p, d)
    };
    if direct.is_some() {
        twins.push(Twin {
            name: "Direct",
            exact: false,
            rotate_at: &direct_at,
        });
    }
    calls(u, &table, &rot, &twins, None)
}

/// Per-head scales on an `i8` buffer of a few tokens at random positions of the table: each
/// head bit for bit what `rotate_at` at that head's scales gives it; an error (nothing
/// written) exactly when an entry is invalid or one of those calls fails.
fn per_head_case<const A: usize, P: Plan<A>>(
    u: &mut Unstructured<'_>,
    table: &Table<'_, A, P>,
    fixed_heads: Option<usize>,
    extents: [usize; A],
) -> Result<()> {
    let heads = match fixed_heads {
        Some(h) => h,
        None => u.int_in_range(1..=3)?,
    };
    let tokens: usize = u.int_in_range(1..=3)?;
    let len = tokens
        .checked_mul(heads)
        .and_then(|n| n.checked_mul(table.head_dim()));
    let Some(len) = len.filter(|&n| n <= 1 << 14) else {
        return Ok(());
    };
    let mut positions = vec![[0u32; A]; tokens];
    for p in &mut positions {
        for (c, &n) in p.iter_mut().zip(&extents) {
            *c = u.int_in_range(0..=n.saturating_sub(1).min(u32::MAX as usize) as u32)?;
        }
    }
    let input: Vec<i8> = (0..len).map(|_| u.arbitrary()).collect::<Result<_>>()?;
    const CHOICES: [(f32, f32); 5] = [
        (1.0, 1.0),
        (0.02, 0.01),
        (0.3, 0.7),
        (1.0, 3.0),
        (-1.0, 1.0),
    ];
    let mut scales = Vec::with_capacity(heads);
    for _ in 0..heads {
        let &(input, output) = u.choose(&CHOICES)?;
        scales.push(Scales { input, output });
    }
    let dir = direction(u)?;
    let shape = Shape::heads(heads);
    let mut got = input.clone();
    let outcome =
        table.rotate_with_head_scales(&mut got, shape, positions.as_slice(), &scales, dir);
    let mut failed = Vec::new();
    for (h, s) in scales.iter().enumerate() {
        let mut want = input.clone();
        let one = shape.with_scales(s.input, s.output);
        match table.rotate_at(&mut want, one, &positions, dir) {
            Ok(()) if outcome.is_ok() => {
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    if i / table.head_dim() % heads == h {
                        assert_eq!(g, w, "per-head scales {scales:?}: head {h} value {i}");
                    }
                }
            }
            Ok(()) => {}
            Err(e) => failed.push(e),
        }
    }
    // Invalid entries are reported before the staging limit: any head's error may come.
    match outcome {
        Ok(()) => assert!(
            failed.is_empty(),
            "per-head scales {scales:?}: Ok, but per tensor {failed:?}"
        ),
        Err(e) => {
            assert!(
                failed.contains(&e),
                "per-head scales {scales:?}: {e:?}, per tensor {failed:?}"
            );
            assert_eq!(got, input, "per-head scales: written on {e:?}");
        }
    }
    Ok(())
}

/// The Q15 table of a spec whose `f32` table built: refused (storage untouched) unless
/// `mscale` is 1; else every entry within 1 LSB of the `f32` entry, and one head of random
/// `i16` values at a random position within the stated bound of its `f32` rotation —
/// `0.5 + ε·(|a| + |b|)/2¹⁵` LSB, ε = 1 (2.5 for RoPE-Mixed's summed entries) — or refused
/// with the same error as the `f32` table.
fn q15_case<const A: usize, P: Plan<A>>(
    u: &mut Unstructured<'_>,
    spec: &Spec<'_, A, P>,
    facts: &PlanFacts<A>,
    extents: [usize; A],
    table: &Table<'_, A, P>,
) -> Result<()> {
    let len = Table::storage_len(spec, extents).expect("the f32 table built");
    let mut storage = vec![[0x5A5Ai16; 2]; len];
    let built = Q15Table::build(&mut storage, spec, extents);
    if spec.mscale.to_bits() != 1f32.to_bits() {
        assert_eq!(
            built.err(),
            Some(Error::FixedPoint),
            "Q15Table::build, mscale"
        );
        assert!(
            storage.iter().flatten().all(|&v| v == 0x5A5A),
            "Q15 storage written"
        );
        return Ok(());
    }
    let q15 = built.expect("Q15Table::build where Table::build succeeds");
    for (axis, &n) in extents.iter().enumerate() {
        for index in (0..n).take(64) {
            let (Some(f), Some(q)) = (table.entries(axis, index), q15.entries(axis, index)) else {
                panic!("Q15 entries missing at axis {axis} index {index}");
            };
            assert_eq!(f.len(), q.len());
            for (f, q) in f.iter().flatten().zip(q.iter().flatten()) {
                let error = (f64::from(*q) - f64::from(*f) * 32_768.0).abs();
                assert!(error <= 1.01, "Q15 entry {q} vs {f} of {spec:?}");
            }
        }
    }
    let position: [u32; A] =
        core::array::from_fn(|a| u.int_in_range(0..=extents[a] as u32 - 1).unwrap_or(0));
    let d = spec.head_dim;
    if d > MAX_BUFFER {
        return Ok(());
    }
    let mut x = vec![0i16; d];
    for v in &mut x {
        *v = u.arbitrary()?;
    }
    let mut f: Vec<f32> = x.iter().map(|&v| f32::from(v)).collect();
    let mut y = x.clone();
    let dir = direction(u)?;
    let (got, want) = (
        q15.rotate_head(&mut y, position, dir),
        table.rotate_head(&mut f, position, dir),
    );
    assert_eq!(got, want, "Q15 and f32 rotate_head of {spec:?}");
    if got.is_err() {
        assert_eq!(x, y, "a refused Q15 rotate_head wrote");
        return Ok(());
    }
    let epsilon = if facts.heads.is_some() { 2.5 } else { 1.0 };
    let pairs = spec.pairs();
    for k in 0..pairs {
        let (i, j) = match spec.layout {
            Layout::Interleaved => (2 * k, 2 * k + 1),
            Layout::Half => (k, k + pairs),
        };
        let size = f64::from(x[i]).abs() + f64::from(x[j]).abs();
        let bound = 0.5 + epsilon * size / 32_768.0 + 0.02;
        for idx in [i, j] {
            let exact = f64::from(f[idx]).clamp(-32_768.0, 32_767.0);
            let error = (f64::from(y[idx]) - exact).abs();
            assert!(
                error <= bound,
                "Q15 value {} vs {exact} of {spec:?}",
                y[idx]
            );
        }
    }
    assert_eq!(&y[2 * pairs..], &x[2 * pairs..], "Q15 unrotated values");
    Ok(())
}

/// A `FixedTable` on `backend` (where available).
fn fixed_with_backend<const N: usize, const A: usize, P: Plan<A>>(
    fixed: FixedTable<N, A, P>,
    backend: Backend,
) -> FixedTable<N, A, P> {
    let _ = format!("{fixed:?}");
    assert_eq!(FixedTable::<N, A, P>::BYTES, N * 8);
    match fixed.clone().with_backend(backend) {
        Ok(f) => f,
        Err(e) => {
            assert!(!backend.is_available());
            assert_eq!(e, Error::BackendUnavailable);
            fixed
        }
    }
}

fn bits2(entries: &[[f32; 2]]) -> Vec<[u32; 2]> {
    entries.iter().map(|e| e.map(f32::to_bits)).collect()
}

// ---------------------------------------------------------------------------------------
// Tableless rotation.
// ---------------------------------------------------------------------------------------

fn direct_case<const A: usize, P: Plan<A>>(
    u: &mut Unstructured<'_>,
    backend: Backend,
    spec: &Spec<'_, A, P>,
    facts: &PlanFacts<A>,
    spec_e: &Expect,
) -> Result<()> {
    let mut e = spec_e.clone();
    if spec.coords.iter().any(|c| *c != Coords::Index) {
        e.breaks(Error::TableCoords);
    }
    let made = Direct::new(spec);
    e.check(&made, "Direct::new");
    let Ok(direct) = made else { return Ok(()) };
    let _ = format!("{direct:?}");
    let direct = with_backend(direct, backend);
    let rot = Rot {
        head_dim: spec.head_dim,
        pairs: spec.pairs(),
        layout: spec.layout,
        limits: [1 << 32; A],
        extents: None,
        heads: facts.heads,
        mscale: spec.mscale,
        real_limit: real_limit(spec.precision),
    };
    let at = |x: &mut [f32], s: Shape, p: &[[u32; A]], d: Direction| direct.rotate_at(x, s, p, d);
    let twins = [Twin {
        name: "rotate_at",
        exact: true,
        rotate_at: &at,
    }];
    let coords =
        |x: &mut [f32], s: Shape, c: &[[f32; A]], d: Direction| direct.rotate_coords(x, s, c, d);
    calls(u, &direct, &rot, &twins, Some(&coords))
}

// ---------------------------------------------------------------------------------------
// Positions.
// ---------------------------------------------------------------------------------------

/// Where a buffer's tokens are, as given to `rotate`.
#[derive(Clone, Debug)]
enum Where<const A: usize> {
    Grid(Grid<A>),
    Run(Run<A>),
    List(Vec<[u32; A]>),
    Pieces(Vec<Piece<A>>),
}

/// A coordinate below `limit` mostly; sometimes at or past it, or near `u32::MAX`.
fn coordinate(u: &mut Unstructured<'_>, limit: u64) -> Result<u32> {
    let top = limit.saturating_sub(1).min(u64::from(u32::MAX)) as u32;
    Ok(match u.int_in_range(0..=15)? {
        0..=11 => u.int_in_range(0..=top.min(12))?,
        12 => top,
        13 => top.saturating_add(1),
        14 => u32::MAX - u.int_in_range(0..=3)?,
        _ => u.arbitrary()?,
    })
}

fn position<const A: usize>(u: &mut Unstructured<'_>, limits: [u64; A]) -> Result<[u32; A]> {
    let mut p = [0; A];
    for (c, &limit) in p.iter_mut().zip(&limits) {
        *c = coordinate(u, limit)?;
    }
    Ok(p)
}

fn grid<const A: usize>(u: &mut Unstructured<'_>, rot: &Rot<A>) -> Result<Grid<A>> {
    if let Some(extents) = rot.extents
        && extents.iter().all(|&n| n <= 8)
        && u.ratio(1, 3)?
    {
        return Ok(Grid::new(extents));
    }
    let mut extents = [0; A];
    for n in &mut extents {
        *n = if u.ratio(63, 64)? {
            u.int_in_range(0..=4)?
        } else {
            size(u)?
        };
    }
    let origin = if u.arbitrary()? {
        [0; A]
    } else {
        position(u, rot.limits)?
    };
    Ok(Grid::new(extents).at(origin))
}

fn run_positions<const A: usize>(u: &mut Unstructured<'_>, rot: &Rot<A>) -> Result<Run<A>> {
    let start = position(u, rot.limits)?;
    let mut step = [0; A];
    for s in &mut step {
        *s = if u.ratio(7, 8)? {
            u.int_in_range(0..=2)?
        } else {
            u.arbitrary()?
        };
    }
    Ok(Run { start, step })
}

/// A count or repeat: mostly 0 to 4.
fn count(u: &mut Unstructured<'_>) -> Result<usize> {
    if u.ratio(31, 32)? {
        u.int_in_range(0..=4)
    } else {
        size(u)
    }
}

fn where_<const A: usize>(u: &mut Unstructured<'_>, rot: &Rot<A>) -> Result<Where<A>> {
    Ok(match u.int_in_range(0..=3)? {
        0 => Where::Grid(grid(u, rot)?),
        1 => Where::Run(run_positions(u, rot)?),
        2 => Where::List(
            (0..u.int_in_range(0..=6)?)
                .map(|_| position(u, rot.limits))
                .collect::<Result<_>>()?,
        ),
        _ => Where::Pieces(
            (0..u.int_in_range(0..=3)?)
                .map(|_| {
                    Ok(match u.int_in_range(0..=2)? {
                        0 => Piece::Run {
                            run: run_positions(u, rot)?,
                            count: count(u)?,
                        },
                        1 => Piece::Grid {
                            grid: grid(u, rot)?,
                            repeat: count(u)?,
                        },
                        _ => Piece::Windows {
                            grid: grid(u, rot)?,
                            window: if u.ratio(15, 16)? {
                                u.int_in_range(0..=3)?
                            } else {
                                size(u)?
                            },
                            repeat: count(u)?,
                        },
                    })
                })
                .collect::<Result<_>>()?,
        ),
    })
}

/// `Π extents`, or `None` past `usize::MAX`.
fn grid_tokens<const A: usize>(grid: &Grid<A>) -> Option<usize> {
    if grid.extents.contains(&0) {
        return Some(0);
    }
    let mut n = 1u128;
    for &e in &grid.extents {
        n = n.checked_mul(e as u128)?;
    }
    usize::try_from(n).ok()
}

/// Whether `Grid::tokens` (which multiplies in axis order) overflows on a grid whose true
/// product is zero: an answer the oracle tolerates (see the module docs).
fn zero_grid_overflows<const A: usize>(grid: &Grid<A>) -> bool {
    grid.extents.contains(&0)
        && grid
            .extents
            .iter()
            .try_fold(1usize, |n, &e| n.checked_mul(e))
            .is_none()
}

fn grids<const A: usize>(w: &Where<A>) -> Vec<Grid<A>> {
    match w {
        Where::Grid(g) => vec![*g],
        Where::Pieces(pieces) => pieces
            .iter()
            .filter_map(|p| match p {
                Piece::Grid { grid, .. } | Piece::Windows { grid, .. } => Some(*grid),
                Piece::Run { .. } => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Tokens the positions describe: `Ok(None)` for a bare run (any number), `Err` when the
/// count overflows `usize`.
fn described<const A: usize>(w: &Where<A>) -> core::result::Result<Option<usize>, ()> {
    Ok(match w {
        Where::Grid(g) => Some(grid_tokens(g).ok_or(())?),
        Where::Run(_) => None,
        Where::List(list) => Some(list.len()),
        Where::Pieces(pieces) => {
            let mut total = 0usize;
            for piece in pieces {
                let n = match piece {
                    Piece::Run { count, .. } => *count,
                    Piece::Grid { grid, repeat } | Piece::Windows { grid, repeat, .. } => {
                        grid_tokens(grid)
                            .ok_or(())?
                            .checked_mul(*repeat)
                            .ok_or(())?
                    }
                };
                total = total.checked_add(n).ok_or(())?;
            }
            Some(total)
        }
    })
}

/// Out-of-range rules of a grid walked at least once.
fn grid_range<const A: usize>(e: &mut Expect, grid: &Grid<A>, limits: [u64; A]) {
    for a in 0..A {
        let max = u128::from(grid.origin[a]) + grid.extents[a] as u128 - 1;
        range_rule(e, a, max, limits[a]);
    }
}

/// Out-of-range rules of `count > 0` tokens of a run.
fn run_range<const A: usize>(e: &mut Expect, run: &Run<A>, count: usize, limits: [u64; A]) {
    for a in 0..A {
        let max = u128::from(run.start[a]) + u128::from(run.step[a]) * (count as u128 - 1);
        range_rule(e, a, max, limits[a]);
    }
}

/// A largest coordinate `max` on `axis`: past `u32::MAX` or at/past the limit is broken.
fn range_rule(e: &mut Expect, axis: usize, max: u128, limit: u64) {
    if max > u128::from(u32::MAX) || max >= u128::from(limit) {
        e.broken.push(Allowed::OutOfRange {
            axis,
            extent: limit as usize,
        });
    }
}

/// The range rules of `count` tokens at `w`.
fn range_expect<const A: usize>(e: &mut Expect, w: &Where<A>, count: usize, limits: [u64; A]) {
    match w {
        Where::Grid(g) if count > 0 => grid_range(e, g, limits),
        Where::Run(r) if count > 0 => run_range(e, r, count, limits),
        Where::List(list) => {
            for p in list {
                for a in 0..A {
                    range_rule(e, a, u128::from(p[a]), limits[a]);
                }
            }
        }
        Where::Pieces(pieces) => {
            for piece in pieces {
                match piece {
                    Piece::Run { run, count } if *count > 0 => run_range(e, run, *count, limits),
                    Piece::Grid { grid, repeat } => {
                        if *repeat > 0 && grid_tokens(grid) != Some(0) {
                            grid_range(e, grid, limits);
                        }
                    }
                    Piece::Windows {
                        grid,
                        window,
                        repeat,
                    } => {
                        if *window == 0 {
                            e.breaks(Error::EmptyTable);
                        }
                        if *repeat > 0 && grid_tokens(grid) != Some(0) {
                            grid_range(e, grid, limits);
                        }
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

/// Cell `index` of `grid` in row-major order (the last axis fastest).
fn cell<const A: usize>(grid: &Grid<A>, mut index: usize) -> [u32; A] {
    let mut p = grid.origin;
    for a in (0..A).rev() {
        p[a] += (index % grid.extents[a]) as u32;
        index /= grid.extents[a];
    }
    p
}

/// A grid's cells walked in `window × window` blocks over its last two axes: blocks
/// row-major, cells row-major within each block (clipped at the far edges), the other axes
/// outermost. One axis, or a window of 1: row-major.
fn windows<const A: usize>(grid: &Grid<A>, window: usize, out: &mut Vec<[u32; A]>) {
    let n = grid_tokens(grid).unwrap_or(0);
    if A < 2 || window <= 1 {
        out.extend((0..n).map(|i| cell(grid, i)));
        return;
    }
    let (rows, cols) = (grid.extents[A - 2], grid.extents[A - 1]);
    let outer = Grid {
        origin: grid.origin,
        extents: core::array::from_fn(|a| if a + 2 >= A { 1 } else { grid.extents[a] }),
    };
    for o in 0..grid_tokens(&outer).unwrap_or(0) {
        let base = cell(&outer, o);
        for band in (0..rows).step_by(window) {
            for block in (0..cols).step_by(window) {
                for r in band..band.saturating_add(window).min(rows) {
                    for c in block..block.saturating_add(window).min(cols) {
                        let mut p = base;
                        p[A - 2] += r as u32;
                        p[A - 1] += c as u32;
                        out.push(p);
                    }
                }
            }
        }
    }
}

/// The positions of `count` tokens at `w`, worked out here from the documented orders.
fn enumerate<const A: usize>(w: &Where<A>, count: usize) -> Vec<[u32; A]> {
    let run = |run: &Run<A>, n: usize, out: &mut Vec<[u32; A]>| {
        out.extend((0..n as u64).map(|t| {
            core::array::from_fn(|a| (u64::from(run.start[a]) + u64::from(run.step[a]) * t) as u32)
        }))
    };
    let mut out = Vec::new();
    match w {
        Where::Grid(g) => out.extend((0..count).map(|i| cell(g, i))),
        Where::Run(r) => run(r, count, &mut out),
        Where::List(list) => out.extend_from_slice(list),
        Where::Pieces(pieces) => {
            for piece in pieces {
                match *piece {
                    Piece::Run { run: r, count } => run(&r, count, &mut out),
                    Piece::Grid { grid, repeat } if grid_tokens(&grid) != Some(0) => {
                        for _ in 0..repeat {
                            windows(&grid, 1, &mut out);
                        }
                    }
                    Piece::Windows {
                        grid,
                        window,
                        repeat,
                    } if grid_tokens(&grid) != Some(0) => {
                        for _ in 0..repeat {
                            windows(&grid, window, &mut out);
                        }
                    }
                    Piece::Grid { .. } | Piece::Windows { .. } => {}
                }
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// Rotations.
// ---------------------------------------------------------------------------------------

/// What the oracle knows of a table or tableless rotation.
struct Rot<const A: usize> {
    head_dim: usize,
    pairs: usize,
    layout: Layout,
    /// Coordinates must be below these (a table's extents; 2³² without a table).
    limits: [u64; A],
    /// A table's extents.
    extents: Option<[usize; A]>,
    /// RoPE-Mixed: the heads a buffer must have.
    heads: Option<usize>,
    mscale: f32,
    /// Real coordinates must be below this in magnitude (`AnglePrecision::Float32`: 2⁹⁶).
    real_limit: f32,
}

/// What a real coordinate's magnitude must stay below: 2⁹⁶ with `f32` angles (every
/// frequency is below 2³² radians, so every angle stays finite), any finite value else.
fn real_limit(precision: AnglePrecision) -> f32 {
    match precision {
        AnglePrecision::Exact => f32::INFINITY,
        AnglePrecision::Float32 => f32::from_bits((127 + 96) << 23),
    }
}

/// Another way to the same rotation, compared after every successful one: `rotate_at` of
/// the same rotation and a `FixedTable`'s view (the same bits), tableless rotation (within
/// rounding).
struct Twin<'t, const A: usize> {
    name: &'static str,
    exact: bool,
    rotate_at: &'t dyn Fn(&mut [f32], Shape, &[[u32; A]], Direction) -> Outcome<()>,
}

type RotateCoords<'t, const A: usize> =
    &'t dyn Fn(&mut [f32], Shape, &[[f32; A]], Direction) -> Outcome<()>;

/// Heads and prefix of a call: mostly plausible, sometimes zero heads or sizes that overflow.
fn shape<const A: usize>(u: &mut Unstructured<'_>, rot: &Rot<A>) -> Result<Shape> {
    let heads = match (rot.heads, u.int_in_range(0..=15)?) {
        (Some(h), 0..=11) => h,
        (_, 0..=13) => u.int_in_range(1..=3)?,
        (_, 14) => 0,
        _ => size(u)?,
    };
    let prefix = if u.ratio(31, 32)? {
        u.int_in_range(0..=2)?
    } else {
        size(u)?
    };
    Ok(Shape::heads(heads).with_prefix(prefix))
}

/// The buffer rules of `len` values of `shape` holding `described` tokens after the prefix;
/// the rotated tokens when none is broken.
fn buffer_expect(
    e: &mut Expect,
    len: usize,
    shape: Shape,
    head_dim: usize,
    described: Option<usize>,
) -> Option<usize> {
    if shape.heads == 0 {
        e.breaks(Error::ZeroHeads);
        return None;
    }
    let Some(token_len) = shape.heads.checked_mul(head_dim) else {
        e.breaks(Error::ShapeOverflow);
        return None;
    };
    if len % token_len != 0 {
        e.breaks(Error::BufferLength {
            actual: len,
            token_len,
        });
        return None;
    }
    let tokens = len / token_len;
    let expected = match described {
        Some(n) => match shape.prefix.checked_add(n) {
            Some(t) => t,
            None => {
                e.breaks(Error::ShapeOverflow);
                return None;
            }
        },
        None => tokens.max(shape.prefix),
    };
    if tokens != expected {
        e.breaks(Error::TokenCount {
            expected,
            actual: tokens,
        });
        return None;
    }
    Some(tokens - shape.prefix)
}

/// The RoPE-Mixed rule: a buffer has exactly the learned frequencies' heads.
fn heads_expect<const A: usize>(e: &mut Expect, rot: &Rot<A>, heads: usize) {
    if let Some(expected) = rot.heads
        && expected != heads
    {
        e.breaks(Error::HeadCount {
            expected,
            actual: heads,
        });
    }
}

/// The rules of a `rotate` of `len` values at `w`; the rotated tokens when none is broken.
fn rotate_expect<const A: usize>(
    rot: &Rot<A>,
    len: usize,
    shape: Shape,
    w: &Where<A>,
) -> (Expect, Option<usize>) {
    let mut e = Expect::default();
    heads_expect(&mut e, rot, shape.heads);
    if grids(w).iter().any(zero_grid_overflows) {
        e.tolerates(Error::ShapeOverflow);
    }
    let Ok(described) = described(w) else {
        e.breaks(Error::ShapeOverflow);
        return (e, None);
    };
    let count = buffer_expect(&mut e, len, shape, rot.head_dim, described);
    if let Some(count) = count {
        range_expect(&mut e, w, count, rot.limits);
    }
    let valid = e.valid();
    (e, count.filter(|_| valid))
}

/// The length of a buffer of `shape` with `described` tokens after the prefix (a bare run:
/// 0 to 6), if small enough to allocate.
fn right_len(
    u: &mut Unstructured<'_>,
    shape: Shape,
    head_dim: usize,
    described: Option<usize>,
) -> Result<Option<usize>> {
    let tokens = match described {
        Some(n) => n,
        None => u.int_in_range(0..=6)?,
    };
    Ok(shape
        .prefix
        .checked_add(tokens)
        .and_then(|t| t.checked_mul(shape.heads)?.checked_mul(head_dim))
        .filter(|&n| n <= MAX_BUFFER))
}

/// A buffer length: mostly the right one, sometimes one off, sometimes anything small.
fn length(u: &mut Unstructured<'_>, right: Option<usize>) -> Result<usize> {
    Ok(match (right, u.int_in_range(0..=15)?) {
        (Some(n), 0..=12) => n,
        (Some(n), 13) => n + 1,
        (Some(n), 14) => n.saturating_sub(1),
        _ => u.int_in_range(0..=300)?,
    })
}

/// A buffer of `len` values from the input, framed by guards; returns (buffer, offset).
fn framed(u: &mut Unstructured<'_>, len: usize) -> Result<(Vec<f32>, usize)> {
    let offset = GUARD + u.int_in_range(0..=3)?; // misaligned starts too
    let mut buffer = vec![SENTINEL; offset + len + GUARD];
    for v in &mut buffer[offset..offset + len] {
        *v = if u.ratio(1, 16)? {
            f32::from_bits(u.arbitrary()?)
        } else {
            f32::from(u.int_in_range(-64i8..=64)?) / 16.0
        };
    }
    Ok((buffer, offset))
}

fn bits(x: &[f32]) -> Vec<u32> {
    x.iter().map(|v| v.to_bits()).collect()
}

/// Checks what a call did to `buffer[offset .. offset + len]` (`before`: the whole framed
/// buffer before it): nothing outside the slice; nothing at all on `Err`; on `Ok`, see
/// [`rotated_ok`].
fn written<const A: usize>(
    ok: bool,
    before: &[f32],
    after: &[f32],
    offset: usize,
    len: usize,
    rot: &Rot<A>,
    shape: Shape,
    what: &str,
) {
    let (b, a) = (bits(before), bits(after));
    assert_eq!(b[..offset], a[..offset], "{what}: wrote before the slice");
    assert_eq!(
        b[offset + len..],
        a[offset + len..],
        "{what}: wrote after the slice"
    );
    if ok {
        let range = offset..offset + len;
        rotated_ok(rot, shape, &before[range.clone()], &after[range], what);
    } else {
        assert_eq!(b, a, "{what}: wrote on error");
    }
}

/// Elements `(i, j)` of pair `k` within a head.
fn pair(layout: Layout, pairs: usize, k: usize) -> (usize, usize) {
    match layout {
        Layout::Interleaved => (2 * k, 2 * k + 1),
        Layout::Half => (k, k + pairs),
    }
}

/// After a successful rotation of `input` into `output`: the prefix and every element past
/// the rotary dimension are untouched, and every finite pair's norm is `mscale` times its
/// input's.
fn rotated_ok<const A: usize>(
    rot: &Rot<A>,
    shape: Shape,
    input: &[f32],
    output: &[f32],
    what: &str,
) {
    let d = rot.head_dim;
    let keep = shape.prefix * shape.heads * d;
    assert_eq!(
        bits(&input[..keep]),
        bits(&output[..keep]),
        "{what}: touched the prefix"
    );
    let m = f64::from(rot.mscale);
    for (h, (x, y)) in input[keep..]
        .chunks_exact(d)
        .zip(output[keep..].chunks_exact(d))
        .enumerate()
    {
        assert_eq!(
            bits(&x[2 * rot.pairs..]),
            bits(&y[2 * rot.pairs..]),
            "{what}: head {h}: wrote past the rotary dimension"
        );
        for k in 0..rot.pairs {
            let (i, j) = pair(rot.layout, rot.pairs, k);
            let (a, b) = (f64::from(x[i]), f64::from(x[j]));
            if !(a.is_finite() && b.is_finite()) || m * (a.abs() + b.abs()) > 1e37 {
                continue;
            }
            let (norm_in, norm_out) = (a.hypot(b), f64::from(y[i]).hypot(f64::from(y[j])));
            // A subnormal mscale leaves entries with an absolute rounding error of 2⁻¹⁵⁰.
            let entry_rounding = (a.abs() + b.abs()) * 2f64.powi(-148);
            assert!(
                (norm_out - m * norm_in).abs() <= 1e-5 * m * norm_in + entry_rounding + 1e-43,
                "{what}: head {h} pair {k}: ({a:e}, {b:e}) -> ({:e}, {:e}): norm {norm_out:e}, \
                 want mscale {m} x {norm_in:e}",
                y[i],
                y[j],
            );
        }
    }
}

/// Compares `output` (the rotation of `input` at `positions`) with each twin's.
fn twins_agree<const A: usize>(
    twins: &[Twin<'_, A>],
    rot: &Rot<A>,
    shape: Shape,
    positions: &[[u32; A]],
    dir: Direction,
    input: &[f32],
    output: &[f32],
    what: &str,
) {
    let d = rot.head_dim;
    let m = f64::from(rot.mscale).max(1.0);
    for twin in twins {
        let mut other = input.to_vec();
        let r = (twin.rotate_at)(&mut other, shape, positions, dir);
        assert_eq!(r, Ok(()), "{what}: {} at {positions:?}", twin.name);
        for (i, (&w, &g)) in output.iter().zip(&other).enumerate() {
            if w.to_bits() == g.to_bits() || (w.is_nan() && g.is_nan()) {
                continue;
            }
            let context = format!(
                "{what}: element {i}: {g:e} by {} at {positions:?}, {w:e} here",
                twin.name
            );
            assert!(!twin.exact, "{context}");
            // Within rounding: about 2.5e-7 · (|a| + |b|) · m each (plus a fused product).
            let j = i % d;
            let head = i - j;
            let k = match rot.layout {
                _ if j >= 2 * rot.pairs => panic!("{context}: past the rotary dimension"),
                Layout::Interleaved => j / 2,
                Layout::Half => j % rot.pairs,
            };
            let (p, q) = pair(rot.layout, rot.pairs, k);
            let (a, b) = (f64::from(input[head + p]), f64::from(input[head + q]));
            if !(a.is_finite() && b.is_finite()) || m * (a.abs() + b.abs()) > 1e37 {
                continue;
            }
            let bound = 4e-6 * m * (a.abs() + b.abs()) + 1e-43;
            let diff = (f64::from(w) - f64::from(g)).abs();
            assert!(diff <= bound, "{context}: |diff| {diff:e} > {bound:e}");
        }
    }
}

/// A few calls on one rotation.
fn calls<const A: usize, S: Source<A>>(
    u: &mut Unstructured<'_>,
    rope: &Rope<A, S>,
    rot: &Rot<A>,
    twins: &[Twin<'_, A>],
    coords: Option<RotateCoords<'_, A>>,
) -> Result<()> {
    for _ in 0..u.int_in_range(1..=3)? {
        let shape = shape(u, rot)?;
        let dir = direction(u)?;
        match u.int_in_range(0..=5)? {
            0..=1 => one_buffer(u, rope, rot, twins, shape, dir)?,
            2 => qk(u, rope, rot, twins, shape, dir)?,
            3 => head(u, rope, rot, twins, dir)?,
            _ => match coords {
                Some(coords) => real_coords(u, coords, rot, shape, dir)?,
                None => one_buffer(u, rope, rot, twins, shape, dir)?,
            },
        }
    }
    Ok(())
}

/// `rotate` at `w` (a list: `rotate_at`, or `rotate` with the slice when `at` is false).
fn rotate_where<const A: usize, S: Source<A>>(
    rope: &Rope<A, S>,
    x: &mut [f32],
    shape: Shape,
    w: &Where<A>,
    dir: Direction,
    at: bool,
) -> Outcome<()> {
    match w {
        Where::Grid(g) => {
            assert!(zero_grid_overflows(g) || g.tokens() == grid_tokens(g));
            rope.rotate(x, shape, *g, dir)
        }
        Where::Run(r) => rope.rotate(x, shape, *r, dir),
        Where::List(list) if at => rope.rotate_at(x, shape, list, dir),
        Where::List(list) => rope.rotate(x, shape, &list[..], dir),
        Where::Pieces(pieces) => rope.rotate(x, shape, &pieces[..], dir),
    }
}

fn one_buffer<const A: usize, S: Source<A>>(
    u: &mut Unstructured<'_>,
    rope: &Rope<A, S>,
    rot: &Rot<A>,
    twins: &[Twin<'_, A>],
    shape: Shape,
    dir: Direction,
) -> Result<()> {
    let w = where_(u, rot)?;
    let right = match described(&w) {
        Ok(n) => right_len(u, shape, rot.head_dim, n)?,
        Err(()) => None,
    };
    let len = length(u, right)?;
    let (mut buffer, offset) = framed(u, len)?;
    let before = buffer.clone();
    let at = u.arbitrary()?;
    let result = rotate_where(rope, &mut buffer[offset..offset + len], shape, &w, dir, at);
    let (expect, count) = rotate_expect(rot, len, shape, &w);
    let what = format!("rotate {shape:?} {dir:?} {w:?}, {len} values");
    expect.check(&result, &what);
    written(
        result.is_ok(),
        &before,
        &buffer,
        offset,
        len,
        rot,
        shape,
        &what,
    );
    if let (Ok(()), Some(count)) = (result, count) {
        let positions = enumerate(&w, count);
        assert_eq!(positions.len(), count, "{what}: positions enumerated");
        let range = offset..offset + len;
        twins_agree(
            twins,
            rot,
            shape,
            &positions,
            dir,
            &before[range.clone()],
            &buffer[range],
            &what,
        );
    }
    Ok(())
}

fn qk<const A: usize, S: Source<A>>(
    u: &mut Unstructured<'_>,
    rope: &Rope<A, S>,
    rot: &Rot<A>,
    twins: &[Twin<'_, A>],
    shape: Shape,
    dir: Direction,
) -> Result<()> {
    let w = where_(u, rot)?;
    let right = match described(&w) {
        Ok(n) => right_len(u, shape, rot.head_dim, n)?,
        Err(()) => None,
    };
    let (len_q, len_k) = (length(u, right)?, length(u, right)?);
    let (mut q, off_q) = framed(u, len_q)?;
    let (mut k, off_k) = framed(u, len_k)?;
    let (before_q, before_k) = (q.clone(), k.clone());
    let result: Outcome<()> = match &w {
        Where::Grid(g) => rope.rotate_qk(
            &mut q[off_q..off_q + len_q],
            &mut k[off_k..off_k + len_k],
            shape,
            *g,
            dir,
        ),
        Where::Run(r) => rope.rotate_qk(
            &mut q[off_q..off_q + len_q],
            &mut k[off_k..off_k + len_k],
            shape,
            *r,
            dir,
        ),
        Where::List(list) => rope.rotate_qk(
            &mut q[off_q..off_q + len_q],
            &mut k[off_k..off_k + len_k],
            shape,
            &list[..],
            dir,
        ),
        Where::Pieces(pieces) => rope.rotate_qk(
            &mut q[off_q..off_q + len_q],
            &mut k[off_k..off_k + len_k],
            shape,
            &pieces[..],
            dir,
        ),
    };
    let (mut expect, count_q) = rotate_expect(rot, len_q, shape, &w);
    let (expect_k, count_k) = rotate_expect(rot, len_k, shape, &w);
    expect.merge(&expect_k);
    let what = format!("rotate_qk {shape:?} {dir:?} {w:?}, {len_q} + {len_k} values");
    expect.check(&result, &what);
    let ok = result.is_ok();
    written(ok, &before_q, &q, off_q, len_q, rot, shape, &what);
    written(ok, &before_k, &k, off_k, len_k, rot, shape, &what);
    if let (true, Some(count), Some(_)) = (ok, count_q, count_k) {
        let positions = enumerate(&w, count);
        for (before, after, off, len) in
            [(&before_q, &q, off_q, len_q), (&before_k, &k, off_k, len_k)]
        {
            twins_agree(
                twins,
                rot,
                shape,
                &positions,
                dir,
                &before[off..off + len],
                &after[off..off + len],
                &what,
            );
        }
    }
    Ok(())
}

fn head<const A: usize, S: Source<A>>(
    u: &mut Unstructured<'_>,
    rope: &Rope<A, S>,
    rot: &Rot<A>,
    twins: &[Twin<'_, A>],
    dir: Direction,
) -> Result<()> {
    let right = Some(rot.head_dim).filter(|&d| d <= MAX_BUFFER);
    let len = length(u, right)?;
    let at = position(u, rot.limits)?;
    let (mut buffer, offset) = framed(u, len)?;
    let before = buffer.clone();
    let result = rope.rotate_head(&mut buffer[offset..offset + len], at, dir);
    let mut expect = Expect::default();
    if len != rot.head_dim {
        expect.breaks(Error::HeadLength {
            expected: rot.head_dim,
            actual: len,
        });
    }
    heads_expect(&mut expect, rot, 1);
    range_expect(&mut expect, &Where::List(vec![at]), 1, rot.limits);
    let what = format!("rotate_head {dir:?} at {at:?}, {len} values");
    expect.check(&result, &what);
    let shape = Shape::heads(1);
    written(
        result.is_ok(),
        &before,
        &buffer,
        offset,
        len,
        rot,
        shape,
        &what,
    );
    if result.is_ok() {
        let range = offset..offset + len;
        twins_agree(
            twins,
            rot,
            shape,
            &[at],
            dir,
            &before[range.clone()],
            &buffer[range],
            &what,
        );
    }
    Ok(())
}

/// A real coordinate: ordinary, large, tiny, or any bit pattern (NaN and ±∞ included).
fn real(u: &mut Unstructured<'_>) -> Result<f32> {
    float32(
        u,
        &[
            0.0,
            -0.0,
            3.5,
            0.25,
            -2.0,
            -1e6,
            16_777_217.0,
            4.2949673e9,
            1e30,
            f32::MAX,
            1e-45,
        ],
    )
}

fn real_coords<const A: usize>(
    u: &mut Unstructured<'_>,
    rotate_coords: RotateCoords<'_, A>,
    rot: &Rot<A>,
    shape: Shape,
    dir: Direction,
) -> Result<()> {
    let coords: Vec<[f32; A]> = (0..u.int_in_range(0..=5)?)
        .map(|_| {
            let mut c = [0.0; A];
            for v in &mut c {
                *v = real(u)?;
            }
            Ok(c)
        })
        .collect::<Result<_>>()?;
    let right = right_len(u, shape, rot.head_dim, Some(coords.len()))?;
    let len = length(u, right)?;
    let (mut buffer, offset) = framed(u, len)?;
    let before = buffer.clone();
    let result = rotate_coords(&mut buffer[offset..offset + len], shape, &coords, dir);
    let mut expect = Expect::default();
    if coords.iter().flatten().any(|c| !(c.abs() < rot.real_limit)) {
        expect.breaks(Error::NonFiniteCoordinate);
    }
    heads_expect(&mut expect, rot, shape.heads);
    buffer_expect(&mut expect, len, shape, rot.head_dim, Some(coords.len()));
    let what = format!("rotate_coords {shape:?} {dir:?} at {coords:?}, {len} values");
    expect.check(&result, &what);
    written(
        result.is_ok(),
        &before,
        &buffer,
        offset,
        len,
        rot,
        shape,
        &what,
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Hugging Face configurations.
// ---------------------------------------------------------------------------------------

/// A sentinel for `f64` storage: a NaN no frequency can be.
const UNWRITTEN_F64: f64 = f64::from_bits(0x7ff8_0000_dead_beef);

fn hf_rope(u: &mut Unstructured<'_>, backend: Backend) -> Result<()> {
    let head_dim = if u.ratio(31, 32)? {
        u.int_in_range(0..=24)?
    } else {
        u.int_in_range(0..=4096)?
    };
    let partial = float(u, &[1.0, 0.5, 0.25, 0.0, 0.75, 2.0])?;
    // `int(head_dim · factor) / 2` (Hugging Face), at most head_dim / 2.
    let r = (head_dim as f64 * partial) as usize;
    let pairs = r.min(head_dim) / 2;
    let factors = |u: &mut Unstructured<'_>| -> Result<Vec<f64>> {
        let n = if u.ratio(7, 8)? {
            pairs
        } else {
            u.int_in_range(0..=8)?
        };
        (0..n).map(|_| float(u, &[1.0, 1.5, 4.0, 0.5])).collect()
    };
    let (short, long) = (factors(u)?, factors(u)?);
    let factor = |u: &mut Unstructured<'_>| float(u, &[2.0, 4.0, 8.0, 1.0, 0.5, 32.0]);
    let optional = |u: &mut Unstructured<'_>, values: &[f64]| -> Result<Option<f64>> {
        Ok(if u.arbitrary()? {
            Some(float(u, values)?)
        } else {
            None
        })
    };
    let positions = |u: &mut Unstructured<'_>| -> Result<usize> {
        Ok(if u.ratio(7, 8)? {
            *u.choose(&[4096, 2048, 8192, 131_072, 1, 0])?
        } else {
            u.arbitrary()?
        })
    };
    let original = |u: &mut Unstructured<'_>| -> Result<Option<usize>> {
        Ok(if u.arbitrary()? {
            Some(positions(u)?)
        } else {
            None
        })
    };
    let scaling = match u.int_in_range(0..=5)? {
        0 => HfScaling::Default,
        1 => HfScaling::Linear { factor: factor(u)? },
        2 => HfScaling::Dynamic { factor: factor(u)? },
        3 => HfScaling::Yarn {
            factor: factor(u)?,
            original_max_position_embeddings: original(u)?,
            beta_fast: float(u, &[32.0, 16.0, 1.0])?,
            beta_slow: float(u, &[1.0, 2.0, 0.5])?,
            attention_factor: optional(u, &[1.0, 0.5, 1.2])?,
            mscale: optional(u, &[1.0, 0.707, 0.0])?,
            mscale_all_dim: optional(u, &[1.0, 0.707, 0.0])?,
            truncate: u.arbitrary()?,
        },
        4 => HfScaling::Llama3 {
            factor: factor(u)?,
            low_freq_factor: float(u, &[1.0, 2.0])?,
            high_freq_factor: float(u, &[4.0, 1.0])?,
            original_max_position_embeddings: positions(u)?,
        },
        _ => HfScaling::LongRope {
            short_factor: &short,
            long_factor: &long,
            factor: optional(u, &[32.0, 4.0, 1.0, 0.5, 0.0])?,
            original_max_position_embeddings: original(u)?,
            attention_factor: optional(u, &[1.0, 1.19])?,
        },
    };
    let hf = HfRope {
        rope_theta: float(u, &[10_000.0, 500_000.0, 1e6, 2.0, 1.0, 0.5])?,
        head_dim,
        partial_rotary_factor: partial,
        max_position_embeddings: positions(u)?,
        layout: layout(u)?,
        scaling,
    };
    let seq_len = positions(u)?;
    assert_eq!(hf.pairs(), pairs, "HfRope::pairs");
    let len = if u.ratio(7, 8)? {
        pairs
    } else {
        u.int_in_range(0..=8)?
    };
    // The clear-cut rules; other failures (a non-positive or non-finite parameter or
    // result) are `InvalidFrequency`, and a base just above 1 may be refused too.
    let mut expect = Expect::default();
    if pairs == 0 {
        expect.breaks(Error::RotaryDim { pairs, head_dim });
    }
    if len != pairs {
        expect.breaks(Error::FrequencyLength {
            expected: pairs,
            actual: len,
        });
    }
    if !base_ok(hf.rope_theta) {
        expect.breaks(Error::InvalidBase);
    } else if hf.rope_theta < 1.000_001 {
        expect.tolerates(Error::InvalidBase);
    }
    let positive = |x: f64| x.is_finite() && x > 0.0;
    match hf.scaling {
        HfScaling::Linear { factor }
        | HfScaling::Dynamic { factor }
        | HfScaling::Yarn { factor, .. }
        | HfScaling::Llama3 { factor, .. }
            if !positive(factor) =>
        {
            expect.breaks(Error::InvalidFrequency)
        }
        HfScaling::Llama3 {
            original_max_position_embeddings: 0,
            ..
        } => expect.breaks(Error::InvalidFrequency),
        HfScaling::LongRope {
            short_factor,
            long_factor,
            factor,
            original_max_position_embeddings,
            attention_factor,
        } => {
            let original = original_max_position_embeddings.unwrap_or(hf.max_position_embeddings);
            // Both lists are checked, whichever the sequence length selects.
            for factors in [short_factor, long_factor] {
                if factors.len() != pairs {
                    expect.breaks(Error::FrequencyLength {
                        expected: pairs,
                        actual: factors.len(),
                    });
                }
            }
            if original == 0 {
                expect.breaks(Error::InvalidFrequency);
            }
            if factor.is_some_and(|f| f <= 0.0) && attention_factor.is_none() {
                expect.breaks(Error::InvalidFrequency);
            }
        }
        _ => {}
    }
    expect.tolerates(Error::InvalidFrequency);
    // An attention factor that is not a positive finite f32 (an extreme YaRN `mscale`).
    expect.tolerates(Error::InvalidMscale);
    let mut storage = vec![UNWRITTEN_F64; len];
    let what = format!("HfRope::spec({seq_len}) of {hf:?}");
    let result = hf.spec(seq_len, &mut storage);
    expect.check(&result, &what);
    let spec = match result {
        Ok(spec) => spec,
        Err(_) => {
            assert!(
                storage
                    .iter()
                    .all(|f| f.to_bits() == UNWRITTEN_F64.to_bits()),
                "{what}: wrote storage on error"
            );
            return Ok(());
        }
    };
    assert_eq!(spec.head_dim, head_dim, "{what}");
    assert_eq!(spec.layout, hf.layout, "{what}");
    assert_eq!(spec.pairs(), pairs, "{what}");
    let Freqs::Explicit(values) = spec.freqs else {
        panic!("{what}: not explicit frequencies")
    };
    assert!(
        values.iter().all(|&f| frequency_ok(f)),
        "{what}: frequencies {values:?}"
    );
    // What `spec` returns is a valid spec: every table and tableless rotation takes it.
    assert_eq!(spec.check(), Ok(()), "{what}: returned {spec:?}");
    let direct = with_backend(
        Direct::new(&spec).expect("Direct of an HfRope spec"),
        backend,
    );
    let rot = Rot {
        head_dim,
        pairs,
        layout: hf.layout,
        limits: [1 << 32],
        extents: None,
        heads: None,
        mscale: spec.mscale,
        real_limit: real_limit(spec.precision),
    };
    let twins = [];
    let dir = direction(u)?;
    head(u, &direct, &rot, &twins, dir)
}
