//! Every SIMD backend against the scalar reference, through the public API, on arbitrary
//! data: each backend in `Backend::ALL` other than `Scalar` that `is_available()` on this CPU
//! (`portable` everywhere; `avx2` on x86_64 with AVX2 + FMA; `avx512` on x86_64 with
//! AVX-512F + AVX2 + FMA; `neon` on aarch64).
//!
//! Per input: one rotation with a fuzzed valid spec, built once — a `Table` of sections over
//! 1, 2 or 3 axes (any axis order, `FreqIndex`, sizes, partial rotary, both layouts, every
//! coordinate mode), of a gathered plan (interleaved M-RoPE, per-pair axes) or of RoPE-Mixed
//! (`Summed`, learned frequencies), or tableless (`Direct`) over any of these plans; base or
//! explicit frequencies, any magnitude and precision — then a few calls (`rotate` at grids,
//! runs, lists and pieces with merge windows, with an unrotated prefix; `rotate_qk`;
//! `rotate_at`; `rotate_head`; `rotate_coords` at real coordinates; either direction), each
//! run with `Scalar` and with every other backend (via `with_backend`) on sub-slices
//! starting 0–3 floats into an allocation framed by guards. Data mixes ordinary values with
//! NaN (several payloads), ±Inf, ±0, subnormals, huge values up to `f32::MAX`, values of any
//! exponent and raw bit patterns; tableless positions go up to `u32::MAX` (runs and grids
//! ending there, sometimes one past, which every backend must refuse alike), real
//! coordinates are any `f32` (huge, subnormal, and non-finite, which must be refused alike).
//!
//! Asserted, per call: every backend returns what scalar returns (`Ok`, or the same `Err`
//! with the buffer untouched), writes nothing outside its slice and nothing in the prefix,
//! leaves every element past the rotary dimension `2 · pairs` bit for bit as it was, and per
//! output `w` (scalar) / `g` (backend), `(a, b)` the input pair of that output (half layout:
//! element `k` pairs with `k + pairs`) — the bounds stated in the crate docs:
//! - `portable`: `g` has exactly the bits of `w` (NaN: NaN at the same place, any payload);
//! - `avx2`, `avx512`, `neon`: NaN exactly where scalar has NaN, the same infinity where
//!   scalar has an infinity, else `|g − w| ≤ 2⁻²²·(|a| + |b|)·M + 2⁻¹⁴⁸`;
//! - `avx512` gives the bits of `avx2` (NaN: NaN at the same place) when both are available.
//!
//! `M` is 1 — the documented bound — whenever the table entries `[c, s]` are at most 1 in
//! magnitude, i.e. for `mscale ≤ 1`. The bound is derived from
//! `3·2⁻²⁴·(|a·c| + |b·s|) + 3·2⁻¹⁵⁰` (the backends' module docs), which for
//! `mscale = m > 1` is only below `2⁻²²·(|a| + |b|)·m`: there `M = m` (for RoPE-Mixed tables,
//! whose angle sums multiply two entries, `m` plus a few ulps).
//!
//! Excluded, for the fused backends only: pairs whose finite inputs sum to more than
//! `2¹²⁷ / M` in magnitude (`|a| + |b|`, counting only the finite ones). Their exact
//! products `a·c`, `b·s` and sums can come within an ulp of `f32::MAX` (RoPE-Mixed angle
//! sums can exceed 1 by an ulp), where rounding once (fused) or twice (scalar) legitimately
//! decides between `f32::MAX` and `Inf` — the docs' "except for results within an ulp of
//! `f32` overflow" — and an `Inf` partner then turns that into `Inf` on one side and
//! `Inf − Inf = NaN` on the other. Below that nothing can overflow, so every other pair is
//! checked, pairs with NaN or infinite inputs included. `portable` is checked everywhere.
#![no_main]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use rope2d::half::{bf16, f16};
use rope2d::{
    AnglePrecision, Backend, Coords, Direct, Direction, Element, Error, FreqIndex, Freqs, Grid,
    InterleavedAxes, Layout, LearnedFreqs, PerPair, Piece, Plan, Rope, Run, Section, Sections,
    Shape, Source, Spec, Summed, Table,
};

type Outcome = core::result::Result<(), Error>;
/// The spec of the case being run, for the element checks' failure messages.
static CASE: std::sync::Mutex<String> = std::sync::Mutex::new(String::new());

fuzz_target!(|data: &[u8]| {
    // `Err` only means the input ran out of bytes.
    let _ = run(&mut Unstructured::new(data));
});

fn run(u: &mut Unstructured<'_>) -> Result<()> {
    let backends: Vec<Backend> = Backend::ALL
        .iter()
        .copied()
        .filter(|b| *b != Backend::Scalar && b.is_available())
        .collect();
    assert!(backends.iter().any(|b| b.name() == "portable"));
    let table = u.ratio(2, 3)?;
    match u.int_in_range(0..=7)? {
        0..=1 => sections::<1>(u, &backends, table),
        2..=3 => sections::<2>(u, &backends, table),
        4 => sections::<3>(u, &backends, table),
        5 => gathered::<2>(u, &backends, table),
        6 => gathered::<3>(u, &backends, table),
        _ => mixed(u, &backends, table),
    }
}

// ---------------------------------------------------------------------------------------
// Comparison.
// ---------------------------------------------------------------------------------------

const GUARD: f32 = -7.25;
const GUARDS: usize = 5;

/// The pairing of a rotation and the magnitude `M` its bound is scaled by.
#[derive(Clone, Copy, Debug)]
struct Pairing {
    layout: Layout,
    d: usize,
    pairs: usize,
    magnitude: f64,
}

impl Pairing {
    /// Index of the other element of `i`'s pair (itself past the rotary dimension).
    fn partner(self, i: usize) -> usize {
        let j = i % self.d;
        match self.layout {
            _ if j >= 2 * self.pairs => i,
            // Relative to the head: an odd head dimension starts heads at odd indices.
            Layout::Interleaved => i - j + (j ^ 1),
            Layout::Half if j < self.pairs => i + self.pairs,
            Layout::Half => i - self.pairs,
        }
    }

    /// Whether the finite inputs of a pair are large enough for a result within an ulp of
    /// `f32` overflow (see the module docs).
    fn near_overflow(self, a: f32, b: f32) -> bool {
        let finite: f64 = [a, b]
            .iter()
            .filter(|v| v.is_finite())
            .map(|v| f64::from(v.abs()))
            .sum();
        finite * self.magnitude > (1u128 << 127) as f64
    }
}

/// The rotated buffer: its pairing, and the float ranges of unrotated prefixes (q's and,
/// for `rotate_qk`, k's, which starts at `k`).
#[derive(Clone, Copy)]
struct Region {
    pairing: Pairing,
    prefix: usize,
    k: Option<usize>,
}

impl Region {
    fn new(pairing: Pairing, prefix: usize) -> Self {
        Self {
            pairing,
            prefix,
            k: None,
        }
    }

    /// The same for q and k side by side, k starting at float `k`.
    fn qk(self, k: usize) -> Self {
        Self { k: Some(k), ..self }
    }
}

/// Asserts `got` is within `backend`'s bound of `want`; `input` is what both rotated.
fn check(backend: Backend, region: Region, input: &[f32], want: &[f32], got: &[f32], what: &str) {
    let Region { pairing, prefix, k } = region;
    for start in [Some(0), k].into_iter().flatten() {
        let range = start..start + prefix;
        assert_eq!(
            bits(&got[range.clone()]),
            bits(&input[range]),
            "{} {what}: touched the prefix",
            backend.name()
        );
    }
    let bit_exact = backend.name() == "portable";
    for (i, (&w, &g)) in want.iter().zip(got).enumerate() {
        let partner = pairing.partner(i);
        let (a, b) = (input[i], input[partner]);
        let context = || {
            format!(
                "{} {what}: element {i} of {}, input pair ({a:e}, {b:e}): scalar {w:e} ({:#010x}), {} {g:e} ({:#010x})",
                backend.name(),
                want.len(),
                w.to_bits(),
                backend.name(),
                g.to_bits(),
            )
        };
        if partner == i {
            // Past the rotary dimension: untouched, by every backend.
            assert_eq!(
                a.to_bits(),
                g.to_bits(),
                "not left as it was: {}",
                context()
            );
            assert_eq!(
                a.to_bits(),
                w.to_bits(),
                "scalar: not left as it was: {}",
                context()
            );
        } else if w.to_bits() == g.to_bits() {
            continue;
        } else if w.is_nan() || g.is_nan() {
            // Near overflow, rounding once (fused) or twice may give `Inf` against
            // `Inf − Inf = NaN` (see the module docs); a NaN input is NaN everywhere.
            let nan_input = a.is_nan() || b.is_nan();
            if !bit_exact && !nan_input && pairing.near_overflow(a, b) {
                continue;
            }
            assert!(w.is_nan() && g.is_nan(), "NaN mismatch: {}", context());
        } else if bit_exact {
            assert_eq!(w.to_bits(), g.to_bits(), "{}", context());
        } else if pairing.near_overflow(a, b) {
            continue;
        } else if w.is_infinite() || g.is_infinite() {
            assert_eq!(w, g, "infinity mismatch: {}", context());
        } else {
            let bound =
                (f64::from(a.abs()) + f64::from(b.abs())) * 2f64.powi(-22) * pairing.magnitude
                    + 2f64.powi(-148);
            let diff = (f64::from(w) - f64::from(g)).abs();
            assert!(
                diff <= bound,
                "|diff| {diff:e} > bound {bound:e}: {}",
                context()
            );
        }
    }
}

/// Runs `op` on a copy of `input` with scalar, then with each backend on a sub-slice
/// `offset` floats into a guarded allocation, and checks results, guards and prefix; and
/// `avx512` against `avx2`, bit for bit.
fn compare(
    u: &mut Unstructured<'_>,
    backends: &[Backend],
    region: Region,
    input: &[f32],
    what: &str,
    op: impl Fn(Backend, &mut [f32]) -> Outcome,
) -> Result<()> {
    let mut want = input.to_vec();
    let expected = op(Backend::Scalar, &mut want);
    if expected.is_err() {
        assert_eq!(
            bits(&want),
            bits(input),
            "scalar {what}: wrote on {expected:?}"
        );
    }
    let mut results: Vec<(&str, Vec<f32>)> = Vec::new();
    for &backend in backends {
        let offset = u.int_in_range(0..=3)?;
        let mut buf = vec![GUARD; offset + input.len() + GUARDS];
        let data = &mut buf[offset..offset + input.len()];
        data.copy_from_slice(input);
        let result = op(backend, data);
        assert_eq!(
            result,
            expected,
            "{} {what}: result differs from scalar",
            backend.name()
        );
        if result.is_ok() {
            check(backend, region, input, &want, data, what);
        } else {
            assert_eq!(
                bits(data),
                bits(input),
                "{} {what}: wrote on {result:?}",
                backend.name()
            );
        }
        assert!(
            buf[..offset].iter().all(|&v| v == GUARD),
            "{} {what}: wrote before the slice",
            backend.name()
        );
        assert!(
            buf[offset + input.len()..].iter().all(|&v| v == GUARD),
            "{} {what}: wrote after the slice",
            backend.name()
        );
        results.push((backend.name(), buf[offset..offset + input.len()].to_vec()));
    }
    let by_name = |name: &str| results.iter().find(|(n, _)| *n == name).map(|(_, r)| r);
    if let (Some(avx2), Some(avx512)) = (by_name("avx2"), by_name("avx512")) {
        for (i, (w, g)) in avx2.iter().zip(avx512).enumerate() {
            assert!(
                w.to_bits() == g.to_bits() || (w.is_nan() && g.is_nan()),
                "{what}: element {i}: avx2 {w:e} ({:#010x}), avx512 {g:e} ({:#010x})",
                w.to_bits(),
                g.to_bits()
            );
        }
    }
    Ok(())
}

fn bits(x: &[f32]) -> Vec<u32> {
    x.iter().map(|v| v.to_bits()).collect()
}

// ---------------------------------------------------------------------------------------
// Data.
// ---------------------------------------------------------------------------------------

/// NaN (quiet, negative, with payloads), infinities, zeros, subnormals, the edges of the
/// normal range, huge values either side of the overflow exclusion, and a few ordinary ones.
const SPECIAL: [f32; 22] = [
    f32::NAN,
    f32::from_bits(0xffc0_0001),
    f32::from_bits(0x7fa0_0000), // signalling NaN
    f32::INFINITY,
    f32::NEG_INFINITY,
    0.0,
    -0.0,
    1e-45,
    -1e-40,
    -3e-39,
    f32::MIN_POSITIVE,
    -1.1754942e-38, // largest subnormal, negated
    f32::MAX,
    f32::MIN,
    8.507_059e37,                // 2^126: pairs of two of these are still checked...
    f32::from_bits(0xfe80_0001), // ...but not with this one, −(2^126 + 2^103)
    1.7e38,
    1e30,
    -2.5e36,
    1e-30,
    1.0,
    -0.5,
];

/// xorshift64*: a cheap stream so a short input can fill long buffers.
struct Stream(u64);

impl Stream {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// `len` values: a fuzzed mix of special values, values from a fuzzed palette, ordinary
/// values of a fuzzed magnitude spread, and a few raw bit patterns placed by the input.
fn values(u: &mut Unstructured<'_>, len: usize) -> Result<Vec<f32>> {
    let mut stream = Stream(u.arbitrary::<u64>()? | 1);
    let palette: Vec<f32> = (0..u.int_in_range(0..=4)?)
        .map(|_| Ok(f32::from_bits(u.arbitrary()?)))
        .collect::<Result<_>>()?;
    let special_per_256: u8 = u.arbitrary()?;
    let spread = u.int_in_range(0..=3)?;
    let mut out: Vec<f32> = (0..len)
        .map(|_| {
            let r = stream.next();
            if ((r >> 56) as u8) < special_per_256 {
                let pick = (r >> 8) as usize;
                if !palette.is_empty() && pick.is_multiple_of(3) {
                    palette[(pick / 3) % palette.len()]
                } else {
                    SPECIAL[pick % SPECIAL.len()]
                }
            } else {
                let sign = ((r >> 31) as u32 & 1) << 31;
                let mantissa = r as u32 & 0x007f_ffff;
                let exponent = (r >> 32) as u32;
                let exponent = match spread {
                    0 => 125 + exponent % 4,              // [2^-2, 4)
                    1 => 107 + exponent % 41,             // [2^-20, 2^21)
                    2 => exponent % 255,                  // subnormal to f32::MAX
                    _ => return f32::from_bits(r as u32), // anything, NaN and Inf included
                };
                f32::from_bits(sign | exponent << 23 | mantissa)
            }
        })
        .collect();
    if len > 0 {
        for _ in 0..u.int_in_range(0..=4)? {
            let i = u.int_in_range(0..=len - 1)?;
            out[i] = f32::from_bits(u.arbitrary()?);
        }
    }
    Ok(out)
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
    Ok(match u.int_in_range(0..=5)? {
        0..=2 => Coords::Index,
        3 => Coords::Centered,
        4 => Coords::Rescale {
            reference: u.int_in_range(1..=32)?,
        },
        _ => Coords::Linspace {
            start: *u.choose(&[0.0, -1.0, 2.5, -3e4])?,
            stop: *u.choose(&[1.0, 15.5, -7.25, 1e6])?,
        },
    })
}

/// Pairs of a section: mostly up to 12, sometimes up to 40 (past the kernels' chunks).
fn pair_count(u: &mut Unstructured<'_>) -> Result<usize> {
    let max = if u.ratio(1, 8)? { 40 } else { 12 };
    u.int_in_range(0..=max)
}

/// The frequencies: base (usually valid: the entry_points target checks the rest) or
/// explicit, one per pair.
fn freqs<'f>(
    u: &mut Unstructured<'_>,
    explicit: &'f mut Vec<f64>,
    pairs: usize,
) -> Result<Freqs<'f>> {
    Ok(if u.ratio(3, 4)? {
        Freqs::Base {
            base: float(u, &[10_000.0, 100.0, 2.0, 1.0001, 1e6, 500_000.0])?,
            freq_scale: float(u, &[1.0, core::f64::consts::TAU, 0.125, 1e-3, 1e6, 4e9])?,
        }
    } else {
        for _ in 0..pairs {
            explicit.push(float(
                u,
                &[0.5, 1.0, -0.25, 1e-3, 0.0, 3e9, 1e-300, 12345.678],
            )?);
        }
        Freqs::Explicit(explicit)
    })
}

/// A magnitude: mostly 1, sometimes below, sometimes above (YaRN: about 1.1–1.4), now and
/// then anything finite and positive.
fn mscale(u: &mut Unstructured<'_>) -> Result<f32> {
    Ok(match u.int_in_range(0..=15)? {
        0..=9 => 1.0,
        10 => 0.5,
        11 => 1e-3,
        12 => 1.25,
        13 => 1.4142135,
        14 => 3.0,
        _ => f32::from_bits(u.int_in_range(1..=0x7f7f_ffff)?),
    })
}

fn precision(u: &mut Unstructured<'_>) -> Result<AnglePrecision> {
    Ok(if u.ratio(3, 4)? {
        AnglePrecision::Exact
    } else {
        AnglePrecision::Float32
    })
}

/// A spec of `plan` rotating `pairs` pairs: head dim `2·pairs` plus 0 to 4 (partial rotary),
/// every other choice fuzzed; coordinates only `Index` for tableless rotation.
fn spec<'f, const A: usize, P: Plan<A>>(
    u: &mut Unstructured<'_>,
    plan: P,
    pairs: usize,
    freqs: Freqs<'f>,
    table: bool,
) -> Result<Spec<'f, A, P>> {
    let head_dim = 2 * pairs
        + if u.ratio(3, 4)? {
            0
        } else {
            u.int_in_range(1..=4)?
        };
    let mut c = [Coords::Index; A];
    if table {
        for c in &mut c {
            *c = coords(u)?;
        }
    }
    Ok(Spec::new(head_dim, layout(u)?, plan, freqs)
        .with_coords(c)
        .with_mscale(mscale(u)?)
        .with_precision(precision(u)?))
}

fn sections<const A: usize>(
    u: &mut Unstructured<'_>,
    backends: &[Backend],
    table: bool,
) -> Result<()> {
    let mut order: [usize; A] = core::array::from_fn(|a| a);
    for i in (1..A).rev() {
        order.swap(i, u.int_in_range(0..=i)?);
    }
    let mut sections = [Section::new(0, 0); A];
    for (section, &axis) in sections.iter_mut().zip(&order) {
        // One section per axis, or now and then two on one axis.
        let axis = if u.ratio(1, 8)? {
            u.int_in_range(0..=A - 1)?
        } else {
            axis
        };
        *section = Section::new(axis, pair_count(u)?);
    }
    let pairs: usize = sections.iter().map(|s| s.pairs).sum();
    let index = *u.choose(&[FreqIndex::PerSection, FreqIndex::Global, FreqIndex::Strided])?;
    let mut explicit = Vec::new();
    let freqs = freqs(u, &mut explicit, pairs)?;
    let spec = spec(u, Sections { sections, index }, pairs, freqs, table)?;
    rotations(u, backends, &spec, table)
}

fn gathered<const A: usize>(
    u: &mut Unstructured<'_>,
    backends: &[Backend],
    table: bool,
) -> Result<()> {
    let mut explicit = Vec::new();
    if u.arbitrary()? {
        let mut pairs = [0; A];
        for p in &mut pairs {
            *p = pair_count(u)?;
        }
        let total = pairs.iter().sum();
        let freqs = freqs(u, &mut explicit, total)?;
        let spec = spec(u, InterleavedAxes { pairs }, total, freqs, table)?;
        rotations(u, backends, &spec, table)
    } else {
        let axes: Vec<u8> = (0..pair_count(u)?)
            .map(|_| u.int_in_range(0..=A as u8 - 1))
            .collect::<Result<_>>()?;
        let freqs = freqs(u, &mut explicit, axes.len())?;
        let spec = spec::<A, _>(u, PerPair { axes: &axes }, axes.len(), freqs, table)?;
        rotations(u, backends, &spec, table)
    }
}

fn mixed(u: &mut Unstructured<'_>, backends: &[Backend], table: bool) -> Result<()> {
    let heads = u.int_in_range(1..=3)?;
    let pairs = pair_count(u)?;
    // Learned frequencies: ordinary, zero, negative, large (up to the 2^32 limit).
    let mut frequencies = || -> Result<Vec<f32>> {
        (0..heads * pairs)
            .map(|_| Ok(*u.choose(&[0.5f32, -1.25, 0.0, 3.0, 1e-3, 100.0, 4e9, -0.3, 1e-30])?))
            .collect()
    };
    let (x, y) = (frequencies()?, frequencies()?);
    let freqs = Freqs::Learned(LearnedFreqs { x: &x, y: &y });
    let spec = spec(u, Summed { heads, pairs }, pairs, freqs, table)?;
    rotations(u, backends, &spec, table)
}

// ---------------------------------------------------------------------------------------
// Rotations.
// ---------------------------------------------------------------------------------------

/// What calls need of a rotation.
struct Ctx<const A: usize> {
    pairing: Pairing,
    /// A table's extents (`None`: tableless, coordinates up to `u32::MAX`).
    extents: Option<[usize; A]>,
    /// RoPE-Mixed: the heads of a buffer.
    heads: Option<usize>,
}

type RotateCoords<'t, const A: usize> =
    &'t dyn Fn(Backend, &mut [f32], Shape, &[[f32; A]], Direction) -> Outcome;

/// Builds the table (or tableless rotation) of `spec` and runs a few calls on it; specs
/// the crate refuses are left to the entry_points target.
fn rotations<const A: usize, P: Plan<A>>(
    u: &mut Unstructured<'_>,
    backends: &[Backend],
    spec: &Spec<'_, A, P>,
    table: bool,
) -> Result<()> {
    if spec.check().is_err() {
        return Ok(());
    }
    *CASE.lock().unwrap() = format!("{spec:?} table {table}");
    let summed = matches!(spec.freqs, Freqs::Learned(_));
    let heads = if summed {
        Some(spec.pairs().max(1)).and(match spec.freqs {
            Freqs::Learned(l) => Some(l.x.len() / spec.pairs().max(1)),
            _ => None,
        })
    } else {
        None
    };
    let m = f64::from(spec.mscale).max(1.0);
    let mut pairing = Pairing {
        layout: spec.layout,
        d: spec.head_dim,
        pairs: spec.pairs(),
        magnitude: m,
    };
    if table {
        if summed {
            // Angle sums multiply an axis-0 entry of magnitude `mscale` by an axis-1 entry
            // of magnitude 1; the products' rounding can exceed that by an ulp or two.
            pairing.magnitude = m * (1.0 + 2f64.powi(-20));
        }
        let mut extents = [1; A];
        for n in &mut extents {
            *n = if A == 1 {
                u.int_in_range(1..=48)?
            } else {
                u.int_in_range(1..=5)?
            };
        }
        let mut storage = vec![[0f32; 2]; Table::storage_len(spec, extents).expect("valid")];
        let Ok(table) = Table::build(&mut storage, spec, extents) else {
            return Ok(());
        };
        let ctx = Ctx {
            pairing,
            extents: Some(extents),
            heads,
        };
        calls(u, backends, &ctx, &table, None)
    } else {
        let Ok(direct) = Direct::new(spec) else {
            return Ok(());
        };
        let ctx = Ctx {
            pairing,
            extents: None,
            heads,
        };
        let coords = |b: Backend, x: &mut [f32], s: Shape, c: &[[f32; A]], d: Direction| {
            direct
                .with_backend(b)
                .expect("available")
                .rotate_coords(x, s, c, d)
        };
        calls(u, backends, &ctx, &direct, Some(&coords))
    }
}

/// A tableless coordinate: small, near 2^24, 2^31 or `u32::MAX`, or any `u32`.
fn big_coordinate(u: &mut Unstructured<'_>) -> Result<u32> {
    Ok(match u.int_in_range(0..=4)? {
        0 => u.int_in_range(0..=100)?,
        1 => (1 << 24) + u.int_in_range(0..=8)?,
        2 => (1 << 31) - 4 + u.int_in_range(0..=8)?,
        3 => u32::MAX - u.int_in_range(0..=8)?,
        _ => u.arbitrary()?,
    })
}

/// A position inside the table (or any, tableless).
fn position<const A: usize>(u: &mut Unstructured<'_>, ctx: &Ctx<A>) -> Result<[u32; A]> {
    let mut p = [0; A];
    for (a, c) in p.iter_mut().enumerate() {
        *c = match ctx.extents {
            Some(e) => u.int_in_range(0..=e[a] as u32 - 1)?,
            None => big_coordinate(u)?,
        };
    }
    Ok(p)
}

/// A grid inside the table (often the whole table); tableless, a small grid anywhere that
/// mostly ends by `u32::MAX`.
fn grid<const A: usize>(u: &mut Unstructured<'_>, ctx: &Ctx<A>) -> Result<Grid<A>> {
    let mut grid = Grid::new([1; A]);
    match ctx.extents {
        Some(e) if u.arbitrary()? => grid.extents = e,
        Some(e) => {
            for a in 0..A {
                grid.extents[a] = u.int_in_range(1..=e[a])?;
                grid.origin[a] = u.int_in_range(0..=(e[a] - grid.extents[a]) as u32)?;
            }
        }
        None => {
            let past = u.ratio(1, 16)?;
            for a in 0..A {
                grid.extents[a] = u.int_in_range(1..=3)?;
                let origin = big_coordinate(u)?;
                grid.origin[a] = if past {
                    origin
                } else {
                    origin.min(u32::MAX - (grid.extents[a] as u32 - 1))
                };
            }
        }
    }
    Ok(grid)
}

/// `n` tokens of a run inside the table; tableless, anywhere, mostly ending by `u32::MAX`.
fn run_of<const A: usize>(u: &mut Unstructured<'_>, ctx: &Ctx<A>, n: usize) -> Result<Run<A>> {
    let mut run = Run::from([0; A]);
    let last = n.saturating_sub(1) as u64;
    let past = ctx.extents.is_none() && u.ratio(1, 16)?;
    for a in 0..A {
        let limit = ctx.extents.map_or(1u64 << 32, |e| e[a] as u64);
        let step: u32 = if u.ratio(7, 8)? {
            u.int_in_range(0..=2)?
        } else {
            u.arbitrary()?
        };
        // The step as large as fits `n` tokens.
        let step = u64::from(step).min((limit - 1) / last.max(1));
        let span = step * last;
        let start = u64::from(match ctx.extents {
            Some(_) => u.int_in_range(0..=(limit - 1 - span) as u32)?,
            None => big_coordinate(u)?,
        });
        run.start[a] = if past {
            start as u32
        } else {
            start.min(limit - 1 - span) as u32
        };
        run.step[a] = step as u32;
    }
    Ok(run)
}

/// Positions and the tokens they describe.
#[derive(Debug)]
enum Where<const A: usize> {
    Grid(Grid<A>),
    Run(Run<A>),
    List(Vec<[u32; A]>),
    Pieces(Vec<Piece<A>>),
}

fn where_<const A: usize>(u: &mut Unstructured<'_>, ctx: &Ctx<A>) -> Result<(Where<A>, usize)> {
    let tokens = |g: &Grid<A>| g.tokens().expect("small grid");
    Ok(match u.int_in_range(0..=3)? {
        0 => {
            let g = grid(u, ctx)?;
            (Where::Grid(g), tokens(&g))
        }
        1 => {
            let n = u.int_in_range(0..=8)?;
            (Where::Run(run_of(u, ctx, n)?), n)
        }
        2 => {
            let list: Vec<[u32; A]> = (0..u.int_in_range(0..=8)?)
                .map(|_| position(u, ctx))
                .collect::<Result<_>>()?;
            let n = list.len();
            (Where::List(list), n)
        }
        _ => {
            let mut n = 0;
            let mut pieces = Vec::new();
            for _ in 0..u.int_in_range(1..=3)? {
                let piece = match u.int_in_range(0..=2)? {
                    0 => {
                        let count = u.int_in_range(0..=4)?;
                        Piece::Run {
                            run: run_of(u, ctx, count)?,
                            count,
                        }
                    }
                    1 => Piece::Grid {
                        grid: grid(u, ctx)?,
                        repeat: u.int_in_range(0..=2)?,
                    },
                    _ => Piece::Windows {
                        grid: grid(u, ctx)?,
                        window: u.int_in_range(1..=3)?,
                        repeat: u.int_in_range(0..=2)?,
                    },
                };
                n += match piece {
                    Piece::Run { count, .. } => count,
                    Piece::Grid { grid, repeat } | Piece::Windows { grid, repeat, .. } => {
                        tokens(&grid) * repeat
                    }
                };
                pieces.push(piece);
            }
            (Where::Pieces(pieces), n)
        }
    })
}

fn rotate_where<E: Element, const A: usize, S: Source<A>>(
    rope: &Rope<A, S>,
    x: &mut [E],
    shape: Shape,
    w: &Where<A>,
    dir: Direction,
) -> Outcome {
    match w {
        Where::Grid(g) => rope.rotate(x, shape, *g, dir),
        Where::Run(r) => rope.rotate(x, shape, *r, dir),
        Where::List(list) => rope.rotate_at(x, shape, list, dir),
        Where::Pieces(pieces) => rope.rotate(x, shape, &pieces[..], dir),
    }
}

fn rotate_qk_where<const A: usize, S: Source<A>>(
    rope: &Rope<A, S>,
    q: &mut [f32],
    k: &mut [f32],
    shape: Shape,
    w: &Where<A>,
    dir: Direction,
) -> Outcome {
    match w {
        Where::Grid(g) => rope.rotate_qk(q, k, shape, *g, dir),
        Where::Run(r) => rope.rotate_qk(q, k, shape, *r, dir),
        Where::List(list) => rope.rotate_qk(q, k, shape, &list[..], dir),
        Where::Pieces(pieces) => rope.rotate_qk(q, k, shape, &pieces[..], dir),
    }
}

/// A real coordinate: ordinary, large (past 2^24, 2^40, up to `f32::MAX`), tiny, or any bit
/// pattern (non-finite ones must be refused by every backend alike).
fn real(u: &mut Unstructured<'_>) -> Result<f32> {
    const ORDINARY: [f32; 14] = [
        0.0,
        -0.0,
        3.5,
        0.25,
        -2.0,
        13.0,
        -1e6,
        16_777_217.0,
        1.0995116e12,
        -3e20,
        1e30,
        f32::MAX,
        f32::MIN,
        1e-45,
    ];
    Ok(if u.ratio(3, 4)? {
        *u.choose(&ORDINARY)?
    } else {
        f32::from_bits(u.arbitrary()?)
    })
}

/// A few calls on one rotation, each compared across backends.
fn calls<const A: usize, S: Source<A>>(
    u: &mut Unstructured<'_>,
    backends: &[Backend],
    ctx: &Ctx<A>,
    rope: &Rope<A, S>,
    coords: Option<RotateCoords<'_, A>>,
) -> Result<()> {
    let on = |b: Backend| rope.with_backend(b).expect("available");
    let d = ctx.pairing.d;
    for _ in 0..u.int_in_range(1..=4)? {
        let heads = match ctx.heads {
            Some(h) => h,
            None => u.int_in_range(1..=3)?,
        };
        let prefix = u.int_in_range(0..=2)?;
        let shape = Shape::heads(heads).with_prefix(prefix);
        let token = heads * d;
        let dir = direction(u)?;
        let region = Region::new(ctx.pairing, prefix * token);
        match u.int_in_range(0..=5)? {
            5 => {
                let (w, n) = where_(u, ctx)?;
                let x = values(u, (prefix + n) * token)?;
                let scales = *u.choose(&[(1.0, 1.0), (0.05, 0.04), (0.3, 0.1)])?;
                let what = format!("rotate {shape:?} {dir:?} {w:?}");
                let args = (rope, backends, shape, &w, dir, &x[..], scales, &what[..]);
                match u.int_in_range(0..=3)? {
                    0 => elements::<f16, A, S>(args),
                    1 => elements::<bf16, A, S>(args),
                    2 => elements::<i16, A, S>(args),
                    _ => elements::<i8, A, S>(args),
                }
            }
            0 => {
                let (w, n) = where_(u, ctx)?;
                let x = values(u, (prefix + n) * token)?;
                let what = format!("rotate {shape:?} {dir:?} {w:?}");
                compare(u, backends, region, &x, &what, |b, buf| {
                    rotate_where(&on(b), buf, shape, &w, dir)
                })?;
            }
            1 => {
                let (w, n) = where_(u, ctx)?;
                let half = (prefix + n) * token;
                let x = values(u, 2 * half)?;
                let what = format!("rotate_qk {shape:?} {dir:?} {w:?}");
                compare(u, backends, region.qk(half), &x, &what, |b, buf| {
                    let (q, k) = buf.split_at_mut(half);
                    rotate_qk_where(&on(b), q, k, shape, &w, dir)
                })?;
            }
            2 => {
                let at = position(u, ctx)?;
                let x = values(u, d)?;
                let what = format!("rotate_head {dir:?} at {at:?}");
                compare(
                    u,
                    backends,
                    Region::new(ctx.pairing, 0),
                    &x,
                    &what,
                    |b, buf| on(b).rotate_head(buf, at, dir),
                )?;
            }
            _ => match coords {
                Some(rotate_coords) => {
                    let coords: Vec<[f32; A]> = (0..u.int_in_range(0..=6)?)
                        .map(|_| {
                            let mut c = [0.0; A];
                            for v in &mut c {
                                *v = real(u)?;
                            }
                            Ok(c)
                        })
                        .collect::<Result<_>>()?;
                    let x = values(u, (prefix + coords.len()) * token)?;
                    let what = format!("rotate_coords {shape:?} {dir:?} at {coords:?}");
                    compare(u, backends, region, &x, &what, |b, buf| {
                        rotate_coords(b, buf, shape, &coords, dir)
                    })?;
                }
                None => {
                    let (w, n) = where_(u, ctx)?;
                    let x = values(u, (prefix + n) * token)?;
                    let what = format!("rotate {shape:?} {dir:?} {w:?}");
                    compare(u, backends, region, &x, &what, |b, buf| {
                        rotate_where(&on(b), buf, shape, &w, dir)
                    })?;
                }
            },
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Element types: on every backend, a buffer of `E` gives bit for bit the `f32` rotation of
// its values (times the scale ratio for integers; the prefix requantised), rounded to `E`
// (nearest-even; integers saturated, NaN to 0); the same `Ok` or `Err`, and nothing written
// on `Err`.
// ---------------------------------------------------------------------------------------

/// The element types checked, with conversions written independently of the crate's.
trait Elem: Element + Copy + PartialEq + core::fmt::Debug {
    const INT: bool;
    fn from_value(v: f32) -> Self;
    fn value(self) -> f32;
    fn round(v: f32) -> Self;
}

macro_rules! float_elem {
    ($t:ty) => {
        impl Elem for $t {
            const INT: bool = false;
            fn from_value(v: f32) -> Self {
                <$t>::from_f32(v)
            }
            fn value(self) -> f32 {
                self.to_f32()
            }
            fn round(v: f32) -> Self {
                <$t>::from_f32(v)
            }
        }
    };
}
float_elem!(f16);
float_elem!(bf16);

macro_rules! int_elem {
    ($t:ty) => {
        impl Elem for $t {
            const INT: bool = true;
            fn from_value(v: f32) -> Self {
                Self::round(v * 64.0)
            }
            fn value(self) -> f32 {
                self as f32
            }
            fn round(v: f32) -> Self {
                if v.is_nan() {
                    return 0;
                }
                v.round_ties_even()
                    .clamp(<$t>::MIN as f32, <$t>::MAX as f32) as $t
            }
        }
    };
}
int_elem!(i16);
int_elem!(i8);

type ElementArgs<'a, const A: usize, S> = (
    &'a Rope<A, S>,
    &'a [Backend],
    Shape,
    &'a Where<A>,
    Direction,
    &'a [f32],
    (f32, f32),
    &'a str,
);

fn elements<E: Elem, const A: usize, S: Source<A>>(args: ElementArgs<'_, A, S>) {
    let (rope, backends, shape, w, dir, x, scales, what) = args;
    let scales = if E::INT { scales } else { (1.0, 1.0) };
    let ratio = scales.0 / scales.1;
    let shape_e = if scales == (1.0, 1.0) {
        shape
    } else {
        shape.with_scales(scales.0, scales.1)
    };
    let input: Vec<E> = x.iter().map(|&v| E::from_value(v)).collect();
    let same = |a: E, b: E| a == b || a.value().is_nan() && b.value().is_nan();
    for &b in core::iter::once(&Backend::Scalar).chain(backends) {
        let r = rope.with_backend(b).expect("available");
        let mut got = input.clone();
        let outcome = rotate_where(&r, &mut got, shape_e, w, dir);
        let mut want: Vec<f32> = input
            .iter()
            .map(|v| if E::INT { v.value() * ratio } else { v.value() })
            .collect();
        let want_outcome = rotate_where(&r, &mut want, shape, w, dir);
        assert_eq!(
            outcome,
            want_outcome,
            "{b:?} {what}: {} {scales:?}",
            core::any::type_name::<E>()
        );
        if outcome.is_err() {
            assert!(
                got.iter().zip(&input).all(|(&g, &i)| same(g, i)),
                "{b:?} {what}: written on Err"
            );
            continue;
        }
        for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
            assert!(
                same(g, E::round(w)),
                "{b:?} {what} {r:?}: {} {scales:?} value {i} is {g:?}, round({w}) is {:?}; inputs {:?} {:?} {}",
                core::any::type_name::<E>(),
                E::round(w),
                input[i],
                input[i ^ 1],
                CASE.lock().unwrap()
            );
        }
    }
}
