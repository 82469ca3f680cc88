//! Every SIMD backend against the scalar reference, through the public API, on arbitrary
//! data: each backend in `Backend::ALL` other than `Scalar` that `is_available()` on this CPU
//! (`portable` everywhere; `avx2` on x86_64 with AVX2 + FMA; `avx512` on x86_64 with
//! AVX-512F + AVX2 + FMA; `neon` on aarch64).
//!
//! Per input: one table (`AxialTableRef`, `Rope1dTableRef`, `MixedTableRef`) or table-free
//! rotor (`AxialDirect`, `Rope1dDirect`) with a fuzzed configuration (layout, axis order,
//! coordinate mode, base, frequency scale, precision, learned frequencies), built once, then
//! a few calls (`rotate` with an unrotated prefix, `rotate_qk`, `rotate_at`, `rotate_head`,
//! either direction), each run with `Scalar` and with every other backend (via
//! `with_backend`) on sub-slices starting 0–3 floats into an allocation framed by guards.
//! Data mixes ordinary values with NaN (several payloads), ±Inf, ±0, subnormals, huge
//! values up to `f32::MAX`, values of any exponent and raw bit patterns; positions go up to
//! `u32::MAX` (1-D direct: `rotate` near the end of the range, `rotate_at`/`rotate_head` at
//! any `u32`), coordinates of `AxialDirect` are any `f32` (huge, subnormal, and non-finite,
//! which must be refused alike).
//!
//! Asserted, per call: every backend returns what scalar returns (`Ok`, or the same `Err`
//! with the buffer untouched), writes nothing outside its slice and nothing in the prefix,
//! and per output `w` (scalar) / `g` (backend), `(a, b)` the input pair of that output —
//! the bounds stated in each backend's module docs (as in tests/backends.rs):
//! - `portable`: `g` has exactly the bits of `w` (NaN: NaN at the same place, any payload);
//! - `avx2`, `avx512`, `neon`: NaN exactly where scalar has NaN, the same infinity where scalar has an
//!   infinity, else `|g − w| ≤ 2⁻²²·(|a| + |b|) + 2⁻¹⁴⁸`.
//!
//! Excluded, for the fused backends (`avx2`, `avx512`, `neon`) only: pairs whose finite inputs sum to
//! more than 2¹²⁷ in magnitude (`|a| + |b|`, counting only the finite ones). Their exact
//! products `a·c`, `b·s` and sums can come within an ulp of `f32::MAX` (RoPE-Mixed angle
//! sums can exceed 1 by an ulp), where rounding once (fused) or twice (scalar) legitimately
//! decides between `f32::MAX` and `Inf` — the module docs' "unless a result lies within an
//! ulp of overflow" — and an `Inf` partner then turns that into `Inf` on one side and
//! `Inf − Inf = NaN` on the other. Up to 2¹²⁷ nothing can overflow
//! (`|a·c| + |b·s| ≤ 2¹²⁷·(1 + 2⁻²²) < f32::MAX`), so every other pair is checked, pairs
//! with NaN or infinite inputs included. `portable` is checked everywhere.
#![no_main]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use rope2d::{
    AnglePrecision, Axial2d, AxialDirect, AxialTableRef, AxisOrder, Backend, Coord, Coords,
    Direction, Error, Grid, GridPos, Layout, LearnedFreqs, Mixed2d, MixedTableRef, Rope1d,
    Rope1dDirect, Rope1dTableRef, Shape,
};

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
    match u.int_in_range(0..=4)? {
        0 => axial(u, &backends),
        1 => rope1d(u, &backends),
        2 => mixed(u, &backends),
        3 => direct_axial(u, &backends),
        _ => direct_1d(u, &backends),
    }
}

// ---------------------------------------------------------------------------------------
// Comparison.
// ---------------------------------------------------------------------------------------

const GUARD: f32 = -7.25;
const GUARDS: usize = 5;

/// Index of the other element of `i`'s pair (`d` = head dim).
fn partner(i: usize, d: usize, layout: Layout) -> usize {
    let j = i % d;
    match layout {
        Layout::Interleaved => i ^ 1,
        Layout::Half if j < d / 2 => i + d / 2,
        Layout::Half => i - d / 2,
    }
}

/// Above this (`|a| + |b|` of a pair's finite inputs), products and sums may round to
/// `f32::MAX` on one side and `Inf` on the other (see the module docs).
const NEAR_OVERFLOW: f64 = (1u128 << 127) as f64;

fn near_overflow(a: f32, b: f32) -> bool {
    let finite: f64 = [a, b]
        .iter()
        .filter(|v| v.is_finite())
        .map(|v| f64::from(v.abs()))
        .sum();
    finite > NEAR_OVERFLOW
}

/// The rotated buffer: head dim, layout, and the float ranges of unrotated prefixes (q's and,
/// for `rotate_qk`, k's, which starts at `k`).
#[derive(Clone, Copy)]
struct Region {
    d: usize,
    layout: Layout,
    prefix: usize,
    k: Option<usize>,
}

impl Region {
    fn new(d: usize, layout: Layout, prefix: usize) -> Self {
        Self {
            d,
            layout,
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
    let Region {
        d,
        layout,
        prefix,
        k,
    } = region;
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
        let (a, b) = (input[i], input[partner(i, d, layout)]);
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
        if w.to_bits() == g.to_bits() {
            // Also every unrotated element, whatever its partner (NaN: `bound` would be NaN).
            continue;
        } else if w.is_nan() || g.is_nan() {
            assert!(w.is_nan() && g.is_nan(), "NaN mismatch: {}", context());
        } else if bit_exact {
            assert_eq!(w.to_bits(), g.to_bits(), "{}", context());
        } else if near_overflow(a, b) {
            continue;
        } else if w.is_infinite() || g.is_infinite() {
            assert_eq!(w, g, "infinity mismatch: {}", context());
        } else {
            let bound =
                (f64::from(a.abs()) + f64::from(b.abs())) * 2f64.powi(-22) + 2f64.powi(-148);
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
/// `offset` floats into a guarded allocation, and checks results, guards and prefix.
fn compare(
    u: &mut Unstructured<'_>,
    backends: &[Backend],
    region: Region,
    input: &[f32],
    what: &str,
    op: impl Fn(Backend, &mut [f32]) -> core::result::Result<(), Error>,
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
    }
    Ok(())
}

fn bits(x: &[f32]) -> Vec<u32> {
    x.iter().map(|v| v.to_bits()).collect()
}

// ---------------------------------------------------------------------------------------
// Inputs.
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
    Ok(match u.int_in_range(0..=2)? {
        0 => Coords::Index,
        1 => Coords::Centered,
        _ => Coords::Rescale {
            ref_rows: u.int_in_range(1..=32)?,
            ref_cols: u.int_in_range(1..=32)?,
        },
    })
}

/// A head dim that is a positive multiple of `step`: mostly up to 64, sometimes up to 160
/// (past the 64-pair chunks of the direct paths).
fn head_dim(u: &mut Unstructured<'_>, step: usize) -> Result<usize> {
    let max = if u.ratio(1, 8)? { 160 } else { 64 };
    Ok(step * u.int_in_range(1..=max / step)?)
}

/// Heads and prefix of a call.
fn shape(u: &mut Unstructured<'_>) -> Result<(usize, usize)> {
    Ok((u.int_in_range(1..=3)?, u.int_in_range(0..=2)?))
}

fn grid(u: &mut Unstructured<'_>) -> Result<Grid> {
    Ok(Grid::new(u.int_in_range(1..=4)?, u.int_in_range(1..=6)?))
}

fn grid_pos(u: &mut Unstructured<'_>, grid: Grid) -> Result<GridPos> {
    Ok(GridPos::new(
        u.int_in_range(0..=grid.rows as u32 - 1)?,
        u.int_in_range(0..=grid.cols as u32 - 1)?,
    ))
}

/// Calls per table.
fn calls(u: &mut Unstructured<'_>) -> Result<usize> {
    u.int_in_range(1..=4)
}

// ---------------------------------------------------------------------------------------
// Entry points.
// ---------------------------------------------------------------------------------------

fn axial(u: &mut Unstructured<'_>, backends: &[Backend]) -> Result<()> {
    let d = head_dim(u, 4)?;
    let grid = grid(u)?;
    let order = if u.arbitrary()? {
        AxisOrder::ColFirst
    } else {
        AxisOrder::RowFirst
    };
    let layout = layout(u)?;
    let config = Axial2d::new(layout, order, float(u, &[100.0, 10_000.0, 2.0, 1.0001])?)
        .with_coords(coords(u)?)
        .with_freq_scale(float(u, &[1.0, core::f64::consts::TAU, 0.125, 4e9])?);
    let mut storage = vec![[0f32; 2]; AxialTableRef::storage_len(d, grid).unwrap()];
    let Ok(table) = AxialTableRef::build(&mut storage, &config, d, grid) else {
        return Ok(()); // invalid base or scale: the entry_points target checks those
    };
    let on = |b: Backend| table.with_backend(b).unwrap();
    for _ in 0..calls(u)? {
        let (heads, prefix) = shape(u)?;
        let token = heads * d;
        let shape = Shape::heads(heads).with_prefix(prefix);
        let dir = direction(u)?;
        let tokens = grid.rows * grid.cols;
        match u.int_in_range(0..=3)? {
            0 => {
                let x = values(u, (prefix + tokens) * token)?;
                let region = Region::new(d, layout, prefix * token);
                compare(
                    u,
                    backends,
                    region,
                    &x,
                    &format!("axial rotate d={d} {dir:?}"),
                    |b, buf| on(b).rotate(buf, shape, dir),
                )?;
            }
            1 => {
                let n = (prefix + tokens) * token;
                let x = values(u, 2 * n)?;
                let region = Region::new(d, layout, prefix * token);
                compare(
                    u,
                    backends,
                    region.qk(n),
                    &x,
                    &format!("axial qk d={d} {dir:?}"),
                    |b, buf| {
                        let (q, k) = buf.split_at_mut(n);
                        on(b).rotate_qk(q, k, shape, dir)
                    },
                )?;
            }
            2 => {
                let positions: Vec<GridPos> = (0..u.int_in_range(0..=8)?)
                    .map(|_| grid_pos(u, grid))
                    .collect::<Result<_>>()?;
                let x = values(u, (prefix + positions.len()) * token)?;
                let region = Region::new(d, layout, prefix * token);
                compare(
                    u,
                    backends,
                    region,
                    &x,
                    &format!("axial rotate_at d={d} {dir:?}"),
                    |b, buf| on(b).rotate_at(buf, shape, &positions, dir),
                )?;
            }
            _ => {
                let pos = grid_pos(u, grid)?;
                let x = values(u, d)?;
                let region = Region::new(d, layout, 0);
                compare(
                    u,
                    backends,
                    region,
                    &x,
                    &format!("axial head d={d} {dir:?}"),
                    |b, buf| on(b).rotate_head(buf, pos, dir),
                )?;
            }
        }
    }
    Ok(())
}

fn rope1d(u: &mut Unstructured<'_>, backends: &[Backend]) -> Result<()> {
    let d = head_dim(u, 2)?;
    let len = u.int_in_range(1..=48)?;
    let layout = layout(u)?;
    let precision = if u.arbitrary()? {
        AnglePrecision::Exact
    } else {
        AnglePrecision::Float32
    };
    let config = Rope1d::new(layout, float(u, &[10_000.0, 500_000.0, 2.0])?)
        .with_freq_scale(float(u, &[1.0, 0.25, 1e6])?)
        .with_precision(precision);
    let mut storage = vec![[0f32; 2]; Rope1dTableRef::storage_len(d, len).unwrap()];
    let Ok(table) = Rope1dTableRef::build(&mut storage, &config, d, len) else {
        return Ok(());
    };
    let on = |b: Backend| table.with_backend(b).unwrap();
    for _ in 0..calls(u)? {
        let (heads, prefix) = shape(u)?;
        let token = heads * d;
        let shape = Shape::heads(heads).with_prefix(prefix);
        let dir = direction(u)?;
        let region = Region::new(d, layout, prefix * token);
        match u.int_in_range(0..=3)? {
            0 => {
                let n = u.int_in_range(0..=len.min(8))?;
                let start = u.int_in_range(0..=(len - n) as u32)?;
                let x = values(u, (prefix + n) * token)?;
                compare(
                    u,
                    backends,
                    region,
                    &x,
                    &format!("1-D rotate d={d} start={start} {dir:?}"),
                    |b, buf| on(b).rotate(buf, shape, start, dir),
                )?;
            }
            1 => {
                let n = u.int_in_range(0..=len.min(8))?;
                let start = u.int_in_range(0..=(len - n) as u32)?;
                let half = (prefix + n) * token;
                let x = values(u, 2 * half)?;
                compare(
                    u,
                    backends,
                    region.qk(half),
                    &x,
                    &format!("1-D qk d={d} start={start} {dir:?}"),
                    |b, buf| {
                        let (q, k) = buf.split_at_mut(half);
                        on(b).rotate_qk(q, k, shape, start, dir)
                    },
                )?;
            }
            2 => {
                let positions: Vec<u32> = (0..u.int_in_range(0..=8)?)
                    .map(|_| u.int_in_range(0..=len as u32 - 1))
                    .collect::<Result<_>>()?;
                let x = values(u, (prefix + positions.len()) * token)?;
                compare(
                    u,
                    backends,
                    region,
                    &x,
                    &format!("1-D rotate_at d={d} {dir:?}"),
                    |b, buf| on(b).rotate_at(buf, shape, &positions, dir),
                )?;
            }
            _ => {
                let position = u.int_in_range(0..=len as u32 - 1)?;
                let x = values(u, d)?;
                let region = Region::new(d, layout, 0);
                compare(
                    u,
                    backends,
                    region,
                    &x,
                    &format!("1-D head d={d} at {position} {dir:?}"),
                    |b, buf| on(b).rotate_head(buf, position, dir),
                )?;
            }
        }
    }
    Ok(())
}

fn mixed(u: &mut Unstructured<'_>, backends: &[Backend]) -> Result<()> {
    let d = head_dim(u, 2)?;
    let heads = u.int_in_range(1..=3)?;
    let grid = grid(u)?;
    let layout = layout(u)?;
    let config = Mixed2d {
        layout,
        coords: coords(u)?,
    };
    let width = heads * (d / 2);
    // Learned frequencies: ordinary, zero, negative, large (up to the 2^32 limit) or any bits.
    let mut frequencies = || -> Result<Vec<f32>> {
        (0..width)
            .map(|_| Ok(float(u, &[0.5, -1.25, 0.0, 3.0, 1e-3, 100.0, 4e9])? as f32))
            .collect()
    };
    let (fx, fy) = (frequencies()?, frequencies()?);
    let mut storage = vec![[0f32; 2]; MixedTableRef::storage_len(d, heads, grid).unwrap()];
    let freqs = LearnedFreqs {
        heads,
        x: &fx,
        y: &fy,
    };
    let Ok(table) = MixedTableRef::build(&mut storage, &config, d, grid, freqs) else {
        return Ok(()); // a non-finite or too large frequency
    };
    let on = |b: Backend| table.with_backend(b).unwrap();
    let tokens = grid.rows * grid.cols;
    for _ in 0..calls(u)? {
        let prefix = u.int_in_range(0..=2)?;
        let token = heads * d;
        let shape = Shape::heads(heads).with_prefix(prefix);
        let dir = direction(u)?;
        let region = Region::new(d, layout, prefix * token);
        match u.int_in_range(0..=3)? {
            0 => {
                let x = values(u, (prefix + tokens) * token)?;
                compare(
                    u,
                    backends,
                    region,
                    &x,
                    &format!("mixed rotate d={d} {dir:?}"),
                    |b, buf| on(b).rotate(buf, shape, dir),
                )?;
            }
            1 => {
                let n = (prefix + tokens) * token;
                let x = values(u, 2 * n)?;
                compare(
                    u,
                    backends,
                    region.qk(n),
                    &x,
                    &format!("mixed qk d={d} {dir:?}"),
                    |b, buf| {
                        let (q, k) = buf.split_at_mut(n);
                        on(b).rotate_qk(q, k, shape, dir)
                    },
                )?;
            }
            2 => {
                let positions: Vec<GridPos> = (0..u.int_in_range(0..=8)?)
                    .map(|_| grid_pos(u, grid))
                    .collect::<Result<_>>()?;
                let x = values(u, (prefix + positions.len()) * token)?;
                compare(
                    u,
                    backends,
                    region,
                    &x,
                    &format!("mixed rotate_at d={d} {dir:?}"),
                    |b, buf| on(b).rotate_at(buf, shape, &positions, dir),
                )?;
            }
            _ => {
                let head = u.int_in_range(0..=heads - 1)?;
                let pos = grid_pos(u, grid)?;
                let x = values(u, d)?;
                let region = Region::new(d, layout, 0);
                compare(
                    u,
                    backends,
                    region,
                    &x,
                    &format!("mixed head {head} d={d} {dir:?}"),
                    |b, buf| on(b).rotate_head(buf, head, pos, dir),
                )?;
            }
        }
    }
    Ok(())
}

/// A coordinate component: ordinary, large (past 2^24, 2^40, up to `f32::MAX`), tiny, or
/// any bit pattern (non-finite ones must be refused by every backend alike).
fn coordinate(u: &mut Unstructured<'_>) -> Result<f32> {
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

fn direct_axial(u: &mut Unstructured<'_>, backends: &[Backend]) -> Result<()> {
    let d = head_dim(u, 4)?;
    let order = if u.arbitrary()? {
        AxisOrder::ColFirst
    } else {
        AxisOrder::RowFirst
    };
    let layout = layout(u)?;
    let config = Axial2d::new(layout, order, float(u, &[100.0, 10_000.0, 2.0])?)
        .with_freq_scale(float(u, &[1.0, core::f64::consts::TAU, 1e-3])?);
    let Ok(rotor) = AxialDirect::new(&config, d) else {
        return Ok(());
    };
    let on = |b: Backend| rotor.with_backend(b).unwrap();
    for _ in 0..calls(u)? {
        let (heads, prefix) = shape(u)?;
        let token = heads * d;
        let shape = Shape::heads(heads).with_prefix(prefix);
        let dir = direction(u)?;
        let region = Region::new(d, layout, prefix * token);
        let coords: Vec<Coord> = (0..u.int_in_range(0..=6)?)
            .map(|_| {
                Ok(Coord {
                    row: coordinate(u)?,
                    col: coordinate(u)?,
                })
            })
            .collect::<Result<_>>()?;
        match u.int_in_range(0..=2)? {
            0 => {
                let x = values(u, (prefix + coords.len()) * token)?;
                compare(
                    u,
                    backends,
                    region,
                    &x,
                    &format!("direct axial d={d} {dir:?} at {coords:?}"),
                    |b, buf| on(b).rotate(buf, shape, &coords, dir),
                )?;
            }
            1 => {
                let n = (prefix + coords.len()) * token;
                let x = values(u, 2 * n)?;
                compare(
                    u,
                    backends,
                    region.qk(n),
                    &x,
                    &format!("direct axial qk d={d} {dir:?} at {coords:?}"),
                    |b, buf| {
                        let (q, k) = buf.split_at_mut(n);
                        on(b).rotate_qk(q, k, shape, &coords, dir)
                    },
                )?;
            }
            _ => {
                let coord = Coord {
                    row: coordinate(u)?,
                    col: coordinate(u)?,
                };
                let x = values(u, d)?;
                let region = Region::new(d, layout, 0);
                compare(
                    u,
                    backends,
                    region,
                    &x,
                    &format!("direct axial head d={d} {dir:?} at {coord:?}"),
                    |b, buf| on(b).rotate_head(buf, coord, dir),
                )?;
            }
        }
    }
    Ok(())
}

/// A 1-D position: small, near 2^24, 2^31 or `u32::MAX`, or any `u32`.
fn position(u: &mut Unstructured<'_>) -> Result<u32> {
    Ok(match u.int_in_range(0..=4)? {
        0 => u.int_in_range(0..=100)?,
        1 => (1 << 24) + u.int_in_range(0..=8)?,
        2 => (1 << 31) - 4 + u.int_in_range(0..=8)?,
        3 => u32::MAX - u.int_in_range(0..=8)?,
        _ => u.arbitrary()?,
    })
}

fn direct_1d(u: &mut Unstructured<'_>, backends: &[Backend]) -> Result<()> {
    let d = head_dim(u, 2)?;
    let layout = layout(u)?;
    let precision = if u.arbitrary()? {
        AnglePrecision::Exact
    } else {
        AnglePrecision::Float32
    };
    let config = Rope1d::new(layout, float(u, &[10_000.0, 500_000.0, 2.0])?)
        .with_freq_scale(float(u, &[1.0, 0.25, 1e6])?)
        .with_precision(precision);
    let Ok(rotor) = Rope1dDirect::new(&config, d) else {
        return Ok(());
    };
    let on = |b: Backend| rotor.with_backend(b).unwrap();
    for _ in 0..calls(u)? {
        let (heads, prefix) = shape(u)?;
        let token = heads * d;
        let shape = Shape::heads(heads).with_prefix(prefix);
        let dir = direction(u)?;
        let region = Region::new(d, layout, prefix * token);
        match u.int_in_range(0..=3)? {
            0 | 1 => {
                let n = u.int_in_range(0..=6)?;
                // Any start, the run kept within u32 (so it ends at u32::MAX at the latest);
                // sometimes one past, which every backend must refuse alike.
                let start = position(u)?;
                let start = if u.ratio(1, 8)? {
                    start
                } else {
                    start.min(u32::MAX - n.max(1) as u32 + 1)
                };
                let qk = u.arbitrary::<bool>()?;
                let half = (prefix + n) * token;
                let x = values(u, if qk { 2 * half } else { half })?;
                let what = format!(
                    "direct 1-D {} d={d} start={start} n={n} {dir:?}",
                    if qk { "qk" } else { "rotate" }
                );
                compare(
                    u,
                    backends,
                    if qk { region.qk(half) } else { region },
                    &x,
                    &what,
                    |b, buf| {
                        if qk {
                            let (q, k) = buf.split_at_mut(half);
                            on(b).rotate_qk(q, k, shape, start, dir)
                        } else {
                            on(b).rotate(buf, shape, start, dir)
                        }
                    },
                )?;
            }
            2 => {
                let positions: Vec<u32> = (0..u.int_in_range(0..=6)?)
                    .map(|_| position(u))
                    .collect::<Result<_>>()?;
                let x = values(u, (prefix + positions.len()) * token)?;
                compare(
                    u,
                    backends,
                    region,
                    &x,
                    &format!("direct 1-D rotate_at d={d} {dir:?} at {positions:?}"),
                    |b, buf| on(b).rotate_at(buf, shape, &positions, dir),
                )?;
            }
            _ => {
                let p = position(u)?;
                let x = values(u, d)?;
                let region = Region::new(d, layout, 0);
                compare(
                    u,
                    backends,
                    region,
                    &x,
                    &format!("direct 1-D head d={d} at {p} {dir:?}"),
                    |b, buf| on(b).rotate_head(buf, p, dir),
                )?;
            }
        }
    }
    Ok(())
}
