//! Buffers of `f16`, `bf16`, `i16` and `i8` through every entry point.
//!
//! - **The staging is exact**: on every backend, a buffer of `E` gives bit for bit
//!   `round_E(the f32 rotation of its values)` (integers: of its values times the scale
//!   ratio), for every plan kind (sections, gathered, RoPE-Mixed, tableless, real
//!   coordinates), both layouts and directions, a prefix, q and k, one head, buffers larger
//!   than the staging buffer (tokens split between heads) and more tokens than one stage.
//! - **Accuracy against f64**, over every value of small grids (rope-vit 2-D, LLaMA and NeoX
//!   1-D): floats within `½ ulp_E(out) + 2.5e-7·(|a| + |b|)` of the exact rotation of the
//!   stored inputs — within 1 ulp of the type unless the rotation cancels below
//!   `2⁻¹²·(|a| + |b|)` (f16) — and integers within 1 LSB of `round(exact · ratio)`,
//!   saturated.
//! - **Per-head scales** (`rotate_with_head_scales`): each head (prefix included) bit for bit
//!   what a per-tensor call at that head's scales gives it, on every backend.
//! - **Large magnitudes**: integer buffers at `mscale` up to `f32::MAX` (in place up to 2¹⁴,
//!   staged above), bit for bit the rounded, saturated `f32` rotation on every backend.
//! - Errors: invalid scales, scales on floats, a RoPE-Mixed token larger than the stage
//!   (requantised, or at an `mscale` above 2¹⁴); nothing written on error.

use crate::Rng;
use rope2d::half::{bf16, f16};
use rope2d::{
    Backend, Direct, Direction, Element, Error, Grid, Layout, LearnedFreqs, Run, Scales, Shape,
    Spec, Table, preset,
};

/// Every backend available here. Under Miri, which is there to check `unsafe` code, the arch
/// backends alone where there are any: `scalar` and `portable` have none (the crate forbids
/// it outside the arch files) and run in every native test; a run on them under Miri checked
/// nothing more and took two thirds of these tests' Miri time.
fn backends() -> Vec<Backend> {
    let mut list: Vec<Backend> = Backend::ALL
        .iter()
        .copied()
        .filter(|b| b.is_available())
        .collect();
    let plain = |b: &Backend| matches!(b.name(), "scalar" | "portable");
    if cfg!(miri) && list.iter().any(|b| !plain(b)) {
        list.retain(|b| !plain(b));
    }
    list
}

impl Rng {
    /// Uniform in [−4, 4), as `f64` (24 random bits, as [`Rng::value`]).
    fn value_f64(&mut self) -> f64 {
        ((self.next() >> 40) as f64 / (1u64 << 24) as f64) * 8.0 - 4.0
    }
}

/// What the tests need of an element type: conversions written independently of the crate's.
trait Ty: Element + Copy + PartialEq + std::fmt::Debug {
    const NAME: &'static str;
    const QUANTISED: bool;
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
    /// Round to nearest-even (integers: saturating).
    fn round(v: f32) -> Self;
    /// The spacing of the type's values at `v` (integers: 1).
    fn ulp(v: f64) -> f64;
    fn same(a: Self, b: Self) -> bool {
        a == b || a.to_f64().is_nan() && b.to_f64().is_nan()
    }
}

impl Ty for f16 {
    const NAME: &'static str = "f16";
    const QUANTISED: bool = false;
    fn from_f64(v: f64) -> Self {
        f16::from_f64(v)
    }
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
    fn round(v: f32) -> Self {
        f16::from_f32(v)
    }
    fn ulp(v: f64) -> f64 {
        let e = v.abs().log2().floor().max(-14.0);
        2f64.powf(e - 10.0)
    }
}

impl Ty for bf16 {
    const NAME: &'static str = "bf16";
    const QUANTISED: bool = false;
    fn from_f64(v: f64) -> Self {
        bf16::from_f64(v)
    }
    fn to_f64(self) -> f64 {
        bf16::to_f64(self)
    }
    fn round(v: f32) -> Self {
        bf16::from_f32(v)
    }
    fn ulp(v: f64) -> f64 {
        let e = v.abs().log2().floor().max(-126.0);
        2f64.powf(e - 7.0)
    }
}

macro_rules! int_ty {
    ($t:ty) => {
        impl Ty for $t {
            const NAME: &'static str = stringify!($t);
            const QUANTISED: bool = true;
            fn from_f64(v: f64) -> Self {
                (v * <$t>::MAX as f64 / 4.0).round() as $t
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn round(v: f32) -> Self {
                let r = v.round_ties_even();
                r.clamp(<$t>::MIN as f32, <$t>::MAX as f32) as $t
            }
            fn ulp(_: f64) -> f64 {
                1.0
            }
        }
    };
}
int_ty!(i16);
int_ty!(i8);

/// Random values of `E` (integers over their whole range, saturation included).
fn values<E: Ty>(rng: &mut Rng, len: usize) -> Vec<E> {
    (0..len).map(|_| E::from_f64(rng.value_f64())).collect()
}

/// On every backend: `op_e` on `input` (type `E`) against `op_f` on its `f32` values (times
/// `ratio`), rounded to `E`: bit for bit.
fn staged_is_exact<E: Ty>(
    input: &[E],
    ratio: f32,
    what: &str,
    op_e: impl Fn(Backend, &mut [E]),
    op_f: impl Fn(Backend, &mut [f32]),
) {
    for backend in backends() {
        let mut got = input.to_vec();
        op_e(backend, &mut got);
        let mut want: Vec<f32> = input
            .iter()
            .map(|v| {
                if E::QUANTISED {
                    v.to_f64() as f32 * ratio
                } else {
                    v.to_f64() as f32
                }
            })
            .collect();
        op_f(backend, &mut want);
        for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
            assert!(
                E::same(g, E::round(w)),
                "{} {what} on {backend:?}: value {i} is {g:?}, round(f32 result {w}) is {:?}",
                E::NAME,
                E::round(w)
            );
        }
    }
}

/// `op` twice: once over `E`, once over `f32`, each on a backend.
macro_rules! both {
    (|$b:ident, $x:ident| $body:expr) => {
        (
            |$b: Backend, $x: &mut [E]| $body,
            |$b: Backend, $x: &mut [f32]| $body,
        )
    };
}

fn every_plan<E: Ty>(scales: (f32, f32)) {
    let ratio = if scales == (1.0, 1.0) {
        1.0
    } else {
        scales.0 / scales.1
    };
    // The f32 side of `both!` takes no scales (its inputs are already scaled).
    fn scaled<T: 'static>(_: &[T], heads: usize, scales: (f32, f32)) -> Shape {
        if std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>() {
            Shape::heads(heads)
        } else {
            Shape::heads(heads).with_scales(scales.0, scales.1)
        }
    }
    let mut rng = Rng(0x1234_5678 ^ E::NAME.len() as u64);
    let dirs: &[Direction] = if cfg!(miri) {
        &[Direction::Inverse]
    } else {
        &[Direction::Forward, Direction::Inverse]
    };
    for layout in [Layout::Interleaved, Layout::Half] {
        for &dir in dirs {
            // 2-D sections over a grid, with a prefix (d = 128 too: AVX2 keeps a grid line's
            // half of such heads in memory, the token's in registers, either half first); q
            // and k; one head.
            let grids: &[_] = if cfg!(miri) {
                &[(32, preset::AxisOrder::RowFirst)]
            } else {
                &[
                    (128, preset::AxisOrder::RowFirst),
                    (128, preset::AxisOrder::ColFirst),
                    (32, preset::AxisOrder::RowFirst),
                ]
            };
            for &(d, order) in grids {
                let spec = preset::axial(d, layout, order, 100.0);
                let mut storage = vec![[0.0f32; 2]; Table::storage_len(&spec, [5, 7]).unwrap()];
                let table = Table::build(&mut storage, &spec, [5, 7]).unwrap();
                let input = values::<E>(&mut rng, (2 + 35) * 3 * d);
                let (op_e, op_f) = both!(|b, x| table
                    .with_backend(b)
                    .unwrap()
                    .rotate(
                        x,
                        scaled(x, 3, scales).with_prefix(2),
                        Grid::new([5, 7]),
                        dir
                    )
                    .unwrap());
                staged_is_exact(&input, ratio, "2-D grid", op_e, op_f);
            }
            let d = 32;
            let spec = preset::axial(d, layout, preset::AxisOrder::RowFirst, 100.0);
            let mut storage = vec![[0.0f32; 2]; Table::storage_len(&spec, [5, 7]).unwrap()];
            let table = Table::build(&mut storage, &spec, [5, 7]).unwrap();
            let grid = Grid::new([5, 7]);
            let input = values::<E>(&mut rng, (2 + 35) * 3 * d);
            let with = |b| table.with_backend(b).unwrap();
            let (op_e, op_f) = both!(|b, x| {
                let shape = scaled(x, 1, scales);
                let (q, k) = x.split_at_mut(35 * d);
                with(b).rotate_qk(q, k, shape, grid, dir).unwrap()
            });
            staged_is_exact(&input[..2 * 35 * d], ratio, "2-D q and k", op_e, op_f);
            let (op_e, op_f) = both!(|b, x| with(b).rotate_head(&mut x[..d], [4, 6], dir).unwrap());
            staged_is_exact(&input[..d], 1.0, "2-D one head", op_e, op_f);

            // 1-D: more tokens than one stage, a run from 1000, tableless and explicit.
            let spec = preset::rope_1d(64, layout, 10_000.0);
            let direct = Direct::new(&spec).unwrap();
            // More tokens than one stage holds (64).
            let input = values::<E>(&mut rng, if cfg!(miri) { 66 } else { 150 } * 2 * 64);
            let (op_e, op_f) = both!(|b, x| direct
                .with_backend(b)
                .unwrap()
                .rotate(x, scaled(x, 2, scales), Run::from([1000]), dir)
                .unwrap());
            staged_is_exact(&input, ratio, "1-D run, over 64 tokens", op_e, op_f);

            // Heads ending in a partial vector on every backend (d 20; a rotary dimension of
            // 12 of 36 with the half layout's halves at odd offsets), from an odd offset in
            // the buffer: the kernels' partial loads and stores of each type. (At the same
            // scales only: value 0 stays as stored, which a requantised comparison would not
            // expect; staged calls copy into an aligned buffer anyway.)
            let tails = if ratio == 1.0 {
                vec![
                    preset::rope_1d(20, layout, 10_000.0),
                    preset::gpt_neox(36, 0.34, 10_000.0),
                ]
            } else {
                vec![]
            };
            for spec in tails {
                let direct = Direct::new(&spec).unwrap();
                let d = spec.head_dim;
                let input = values::<E>(&mut rng, 1 + 5 * 3 * d);
                let (op_e, op_f) = both!(|b, x| direct
                    .with_backend(b)
                    .unwrap()
                    .rotate(&mut x[1..], Shape::heads(3), Run::from([9]), dir)
                    .unwrap());
                staged_is_exact(&input, ratio, "1-D tails, unaligned", op_e, op_f);
            }

            // Past an interleaved row's 512 pairs: heads of d = 1 040 (two tokens) and 2-D
            // lines of 40 tokens × 16 pairs (640). Interleaved `bf16` pairs are rotated split,
            // in half-layout rows, which could hold 1 024 pairs; they take the paths of their
            // `f32` values, which the interleaved rows cannot hold, or the bits would differ.
            if !cfg!(miri) {
                let spec = preset::rope_1d(1040, layout, 10_000.0);
                let direct = Direct::new(&spec).unwrap();
                let input = values::<E>(&mut rng, 2 * 1040);
                let (op_e, op_f) = both!(|b, x| direct
                    .with_backend(b)
                    .unwrap()
                    .rotate(x, scaled(x, 1, scales), Run::from([5]), dir)
                    .unwrap());
                staged_is_exact(&input, ratio, "1-D, d = 1 040", op_e, op_f);
                let spec = preset::axial(64, layout, preset::AxisOrder::RowFirst, 100.0);
                let mut storage = vec![[0.0f32; 2]; Table::storage_len(&spec, [2, 40]).unwrap()];
                let table = Table::build(&mut storage, &spec, [2, 40]).unwrap();
                let input = values::<E>(&mut rng, 80 * 2 * 64);
                let (op_e, op_f) = both!(|b, x| table
                    .with_backend(b)
                    .unwrap()
                    .rotate(x, scaled(x, 2, scales), Grid::new([2, 40]), dir)
                    .unwrap());
                staged_is_exact(&input, ratio, "2-D, 40-token lines", op_e, op_f);
            }

            // Tokens larger than the staging buffer: 40 heads of 128 (split between heads).
            let spec = preset::rope_1d(128, layout, 10_000.0);
            let direct = Direct::new(&spec).unwrap();
            let positions: &[[u32; 1]] = if cfg!(miri) {
                &[[70_000]]
            } else {
                &[[7], [70_000], [3]]
            };
            let input = values::<E>(&mut rng, positions.len() * 40 * 128);
            let (op_e, op_f) = both!(|b, x| direct
                .with_backend(b)
                .unwrap()
                .rotate_at(x, scaled(x, 40, scales), positions, dir)
                .unwrap());
            staged_is_exact(&input, ratio, "1-D, 40 heads of 128", op_e, op_f);

            // Grids cut into chunks: whole lines across planes (3-D), and lines longer than
            // a chunk (then positions are listed).
            let spec = preset::wan(48, 10_000.0);
            let direct = Direct::new(&spec).unwrap();
            for (grid, heads) in [([3, 5, 40], 1), ([2, 3, 200], 2)] {
                let input = values::<E>(&mut rng, grid.iter().product::<usize>() * heads * 48);
                let grid = Grid::new(grid).at([1, 2, 3]);
                let (op_e, op_f) = both!(|b, x| direct
                    .with_backend(b)
                    .unwrap()
                    .rotate(x, scaled(x, heads, scales), grid, dir)
                    .unwrap());
                staged_is_exact(&input, ratio, "3-D grid in chunks", op_e, op_f);
            }

            // Qwen2-VL's vision tower: two sections sharing a vector (20/20 pairs at d = 80),
            // merge windows over a table (interleaved bf16 takes the per-coordinate tables in
            // half-layout rows, its f32 values the staged path).
            let spec = rope2d::Spec {
                layout,
                ..preset::qwen2_vl_vision(80, 10_000.0)
            };
            let mut storage = vec![[0.0f32; 2]; Table::storage_len(&spec, [6, 6]).unwrap()];
            let table = Table::build(&mut storage, &spec, [6, 6]).unwrap();
            let windows = preset::qwen2_vl_vision_positions([1, 6, 6], 2);
            let input = values::<E>(&mut rng, 36 * 2 * 80);
            let (op_e, op_f) = both!(|b, x| table
                .with_backend(b)
                .unwrap()
                .rotate(x, scaled(x, 2, scales), &windows[..], dir)
                .unwrap());
            staged_is_exact(&input, ratio, "Qwen2-VL merge windows", op_e, op_f);

            // Gathered plan (Qwen3-VL interleaved M-RoPE) and real coordinates (Wan).
            let spec = preset::qwen3_vl_mrope(64, 1e6, [12, 10, 10]);
            let direct = Direct::new(&spec).unwrap();
            let pieces = preset::mrope_positions(2, [1, 4, 6], 2, 3);
            let input = values::<E>(&mut rng, (2 + 6 + 3) * 2 * 64);
            let (op_e, op_f) = both!(|b, x| direct
                .with_backend(b)
                .unwrap()
                .rotate(x, scaled(x, 2, scales), &pieces[..], dir)
                .unwrap());
            staged_is_exact(&input, ratio, "M-RoPE pieces", op_e, op_f);
            let spec = preset::wan(48, 10_000.0);
            let direct = Direct::new(&spec).unwrap();
            let coords = [[0.5f32, 1.25, 7.0], [2.0, 0.0, 3.5]];
            let input = values::<E>(&mut rng, 2 * 48);
            let (op_e, op_f) = both!(|b, x| direct
                .with_backend(b)
                .unwrap()
                .rotate_coords(x, scaled(x, 1, scales), &coords, dir)
                .unwrap());
            staged_is_exact(&input, ratio, "real coordinates", op_e, op_f);
        }
    }
    // RoPE-Mixed (summed, per-head frequencies): both layouts, both directions, heads of
    // whole vectors (8 pairs) and not (10 pairs: a partial vector on every backend).
    let heads = 3;
    for (d, layout, dir) in [
        (16, Layout::Interleaved, Direction::Forward),
        (16, Layout::Half, Direction::Inverse),
        (20, Layout::Interleaved, Direction::Inverse),
        (20, Layout::Half, Direction::Forward),
    ] {
        let fx: Vec<f32> = (0..heads * d / 2).map(|i| 0.1 * i as f32).collect();
        let fy: Vec<f32> = (0..heads * d / 2).map(|i| 0.05 * i as f32 - 1.0).collect();
        let spec = Spec {
            layout,
            ..preset::rope_mixed(d, heads, LearnedFreqs { x: &fx, y: &fy })
        };
        let mut storage = vec![[0.0f32; 2]; Table::storage_len(&spec, [4, 4]).unwrap()];
        let table = Table::build(&mut storage, &spec, [4, 4]).unwrap();
        let input = values::<E>(&mut rng, 16 * heads * d);
        let (op_e, op_f) = both!(|b, x| table
            .with_backend(b)
            .unwrap()
            .rotate(x, scaled(x, heads, scales), Grid::new([4, 4]), dir)
            .unwrap());
        let what = format!("RoPE-Mixed d = {d} {layout:?} {dir:?}");
        staged_is_exact(&input, ratio, &what, op_e, op_f);
    }
}

#[test]
fn staging_is_exact_for_every_type_and_plan() {
    every_plan::<f16>((1.0, 1.0));
    every_plan::<bf16>((1.0, 1.0));
    every_plan::<i16>((1.0, 1.0));
    every_plan::<i16>((0.05, 0.04));
    every_plan::<i8>((1.0, 1.0));
    every_plan::<i8>((0.1, 0.25));
}

/// Rotates `x` (pairs per `layout`) in f64 by the angle of each pair.
fn rotate_f64(x: &mut [f64], d: usize, layout: Layout, angle: impl Fn(usize) -> f64) {
    for k in 0..d / 2 {
        let (i, j) = match layout {
            Layout::Interleaved => (2 * k, 2 * k + 1),
            Layout::Half => (k, k + d / 2),
        };
        let (s, c) = angle(k).sin_cos();
        let (a, b) = (x[i], x[j]);
        x[i] = a * c - b * s;
        x[j] = a * s + b * c;
    }
}

/// Every output of a rotation of `E` against the f64 rotation of the stored inputs.
fn accuracy<E: Ty>(d: usize, layout: Layout, ratio: f64, got: &[E], input: &[E], exact: &[f64]) {
    let mut within_one_ulp = 0;
    for (i, (&g, &want)) in got.iter().zip(exact).enumerate() {
        let want = want * ratio;
        let token = i / d * d;
        let k = match layout {
            Layout::Interleaved => i % d / 2,
            Layout::Half => i % d % (d / 2),
        };
        let (pi, pj) = match layout {
            Layout::Interleaved => (2 * k, 2 * k + 1),
            Layout::Half => (k, k + d / 2),
        };
        let ab = (input[token + pi].to_f64().abs() + input[token + pj].to_f64().abs()) * ratio;
        let g = g.to_f64();
        if E::QUANTISED {
            let max = if E::NAME == "i16" { 32767.0 } else { 127.0 };
            let target = want.round().clamp(-max - 1.0, max);
            assert!(
                (g - target).abs() <= 1.0,
                "{} value {i}: {g} vs {want}",
                E::NAME
            );
        } else {
            let bound = E::ulp(g) / 2.0 + 2.5e-7 * ab;
            assert!(
                (g - want).abs() <= bound,
                "{} value {i}: {g} vs {want} (bound {bound})",
                E::NAME
            );
            within_one_ulp += usize::from((g - want).abs() <= E::ulp(g));
        }
    }
    if !E::QUANTISED {
        // Cancellation is rare in random data: nearly every output is within 1 ulp.
        assert!(
            within_one_ulp * 1000 >= got.len() * 995,
            "{}: {within_one_ulp} of {}",
            E::NAME,
            got.len()
        );
    }
}

fn accuracy_small_grids<E: Ty>(scales: (f32, f32)) {
    let ratio = f64::from(scales.0) / f64::from(scales.1);
    let mut rng = Rng(99);
    for layout in [Layout::Interleaved, Layout::Half] {
        for backend in backends() {
            // rope-vit 2-D, 6 × 6, d 16, 2 heads.
            let d = 16;
            let spec = preset::axial(d, layout, preset::AxisOrder::ColFirst, 100.0);
            let mut storage = vec![[0.0f32; 2]; Table::storage_len(&spec, [6, 6]).unwrap()];
            let table = Table::build(&mut storage, &spec, [6, 6])
                .unwrap()
                .with_backend(backend)
                .unwrap();
            let input = values::<E>(&mut rng, 36 * 2 * d);
            let mut got = input.clone();
            let shape = Shape::heads(2).with_scales(scales.0, scales.1);
            table
                .rotate(&mut got, shape, Grid::new([6, 6]), Direction::Forward)
                .unwrap();
            let mut exact: Vec<f64> = input.iter().map(|v| v.to_f64()).collect();
            for (t, token) in exact.chunks_mut(2 * d).enumerate() {
                let (row, col) = ((t / 6) as f64, (t % 6) as f64);
                for head in token.chunks_mut(d) {
                    rotate_f64(head, d, layout, |k| {
                        let (c, j) = if k < d / 4 {
                            (col, k)
                        } else {
                            (row, k - d / 4)
                        };
                        c * 100f64.powf(-4.0 * j as f64 / d as f64)
                    });
                }
            }
            accuracy(d, layout, ratio, &got, &input, &exact);

            // 1-D, positions 0 … 4 095 (LLaMA / NeoX), d 8, 1 head: every position.
            let d = 8;
            let direct = Direct::new(&preset::rope_1d(d, layout, 10_000.0))
                .unwrap()
                .with_backend(backend)
                .unwrap();
            let positions = if cfg!(miri) { 64 } else { 4096 };
            let input = values::<E>(&mut rng, positions * d);
            let mut got = input.clone();
            let shape = Shape::heads(1).with_scales(scales.0, scales.1);
            direct
                .rotate(&mut got, shape, Run::from([0]), Direction::Forward)
                .unwrap();
            let mut exact: Vec<f64> = input.iter().map(|v| v.to_f64()).collect();
            for (p, head) in exact.chunks_mut(d).enumerate() {
                rotate_f64(head, d, layout, |k| {
                    p as f64 * 10_000f64.powf(-2.0 * k as f64 / d as f64)
                });
            }
            accuracy(d, layout, ratio, &got, &input, &exact);
        }
    }
}

#[test]
fn accuracy_against_f64() {
    accuracy_small_grids::<f16>((1.0, 1.0));
    accuracy_small_grids::<bf16>((1.0, 1.0));
    accuracy_small_grids::<i16>((1.0, 1.0));
    accuracy_small_grids::<i16>((0.05, 0.04));
    accuracy_small_grids::<i8>((1.0, 1.0));
    accuracy_small_grids::<i8>((0.3, 0.1));
}

/// Integer buffers at magnitudes (`mscale`) that take every rotated value near or past the
/// 32-bit range: in place up to 2¹⁴, where the vector backends store with a bare conversion
/// and a saturating narrow, and staged above it. On every backend, bit for bit the rounded,
/// saturated `f32` rotation (at 2¹⁷ an in-place store would wrap past 2³¹ to the minimum).
#[test]
fn integer_buffers_at_large_magnitudes() {
    fn each<E: Ty>() {
        let mut rng = Rng(41);
        let next_up = f32::from_bits(16_384f32.to_bits() + 1);
        for mscale in [1.0, 16_384.0, next_up, 131_072.0, 1e30, f32::MAX] {
            for layout in [Layout::Interleaved, Layout::Half] {
                let spec = preset::axial(32, layout, preset::AxisOrder::RowFirst, 100.0)
                    .with_mscale(mscale);
                let mut storage = vec![[0.0f32; 2]; Table::storage_len(&spec, [3, 5]).unwrap()];
                let table = Table::build(&mut storage, &spec, [3, 5]).unwrap();
                let input = values::<E>(&mut rng, (1 + 15) * 2 * 32);
                for dir in [Direction::Forward, Direction::Inverse] {
                    let (op_e, op_f) = both!(|b, x| table
                        .with_backend(b)
                        .unwrap()
                        .rotate(x, Shape::heads(2).with_prefix(1), Grid::new([3, 5]), dir)
                        .unwrap());
                    let what = format!("2-D grid, {layout:?}, mscale {mscale}");
                    staged_is_exact(&input, 1.0, &what, op_e, op_f);
                }
                let spec = preset::rope_1d(64, layout, 10_000.0).with_mscale(mscale);
                let direct = Direct::new(&spec).unwrap();
                let input = values::<E>(&mut rng, 3 * 4 * 64);
                let (op_e, op_f) = both!(|b, x| direct
                    .with_backend(b)
                    .unwrap()
                    .rotate(x, Shape::heads(4), Run::from([70_000]), Direction::Forward)
                    .unwrap());
                let what = format!("1-D run, {layout:?}, mscale {mscale}");
                staged_is_exact(&input, 1.0, &what, op_e, op_f);
            }
        }
    }
    each::<i16>();
    each::<i8>();
}

/// Heads that are staged — requantised, or integer at an `mscale` above 2¹⁴ — fit the
/// staging buffer up to 4 096 values (512 on bare metal): at 4 096 they rotate as the `f32`
/// buffer does, rounded, bit for bit; at 4 098 they are `Error::ShapeOverflow`, untouched.
#[test]
fn staged_heads_up_to_the_staging_buffer() {
    let position: &[[u32; 1]] = &[[70_000]];
    let forward = Direction::Forward;
    for (d, fits) in [(4096, true), (4098, false)] {
        let quiet = preset::llama(d);
        let loud = preset::llama(d).with_mscale(2e4);
        let (quiet, loud) = (Direct::new(&quiet).unwrap(), Direct::new(&loud).unwrap());
        // (the rotation, its shape, the ratio of input to output scale)
        let cases = [
            (quiet, Shape::heads(1).with_scales(0.5, 0.25), 2.0),
            (loud, Shape::heads(1), 1.0),
        ];
        let input: Vec<i8> = values(&mut Rng(41), d);
        for (direct, shape, ratio) in cases {
            if fits {
                staged_is_exact(
                    &input,
                    ratio,
                    "a staged head of 4 096 values",
                    |b, x| {
                        let direct = direct.with_backend(b).unwrap();
                        direct.rotate_at(x, shape, position, forward).unwrap()
                    },
                    |b, x| {
                        let direct = direct.with_backend(b).unwrap();
                        let float = Shape::heads(1);
                        direct.rotate_at(x, float, position, forward).unwrap()
                    },
                );
                continue;
            }
            for backend in backends() {
                let mut x = input.clone();
                let direct = direct.with_backend(backend).unwrap();
                let err = direct.rotate_at(&mut x, shape, position, forward);
                assert_eq!(err, Err(Error::ShapeOverflow), "{backend:?}, ratio {ratio}");
                assert_eq!(x, input, "{backend:?}: written on error");
            }
        }
    }
}

#[test]
fn element_errors_write_nothing() {
    let spec = preset::rope_vit(16);
    let mut storage = vec![[0.0f32; 2]; 16];
    let table = Table::build(&mut storage, &spec, [2, 2]).unwrap();
    let grid = Grid::new([2, 2]);
    let mut x = vec![f16::ONE; 4 * 16];
    let scaled = Shape::heads(1).with_scales(0.5, 0.25);
    let err = table.rotate(&mut x, scaled, grid, Direction::Forward);
    assert_eq!(err, Err(Error::InvalidScales), "scales on a float buffer");
    assert!(x.iter().all(|&v| v == f16::ONE));
    let mut q = vec![7i8; 4 * 16];
    for (input, output) in [(0.0, 1.0), (1.0, -1.0), (f32::NAN, 1.0), (f32::MAX, 1e-30)] {
        let shape = Shape::heads(1).with_scales(input, output);
        assert_eq!(
            table.rotate(&mut q, shape, grid, Direction::Forward),
            Err(Error::InvalidScales)
        );
    }
    let mut k = vec![7i8; 4 * 16 + 1];
    let err = table.rotate_qk(&mut q, &mut k, Shape::heads(1), grid, Direction::Forward);
    assert!(matches!(err, Err(Error::BufferLength { .. })));
    assert!(q.iter().all(|&v| v == 7));

    // RoPE-Mixed tokens are not split between heads: a requantised buffer (staged) beyond
    // the staging buffer is an error; at the same scales every type converts in place.
    let (heads, d) = (40, 128);
    let f = vec![0.5f32; heads * d / 2];
    let spec = preset::rope_mixed(d, heads, LearnedFreqs { x: &f, y: &f });
    let direct = Direct::new(&spec).unwrap();
    let requantised = Shape::heads(heads).with_scales(0.5, 0.25);
    for backend in backends() {
        let direct = direct.with_backend(backend).unwrap();
        let mut q = vec![7i8; heads * d];
        let err = direct.rotate_at(&mut q, requantised, &[[1, 1]], Direction::Forward);
        assert_eq!(err, Err(Error::ShapeOverflow), "{backend:?}");
        assert!(q.iter().all(|&v| v == 7));
        // So is an integer buffer at the same scales whose `mscale` is above 2¹⁴ (staged).
        let loud = preset::rope_mixed(d, heads, LearnedFreqs { x: &f, y: &f }).with_mscale(2e4);
        let loud = Direct::new(&loud).unwrap().with_backend(backend).unwrap();
        let same = Shape::heads(heads);
        let err = loud.rotate_at(&mut q, same, &[[1, 1]], Direction::Forward);
        assert_eq!(err, Err(Error::ShapeOverflow), "{backend:?}, mscale 2e4");
        assert!(q.iter().all(|&v| v == 7));
        // And per-head scales that requantise one head: the whole token is staged.
        let mut scales = vec![Scales::SAME; heads];
        scales[3] = Scales {
            input: 0.5,
            output: 0.25,
        };
        let positions: &[[u32; 2]] = &[[1, 1]];
        let err =
            direct.rotate_with_head_scales(&mut q, same, positions, &scales, Direction::Forward);
        assert_eq!(err, Err(Error::ShapeOverflow), "{backend:?}, head scales");
        assert!(q.iter().all(|&v| v == 7));
        // Under Miri the rotations in place run only on the backends with `unsafe` code:
        // each backend's three take about 20 s there (7 680 tableless RoPE-Mixed angles).
        if cfg!(miri) && matches!(backend, Backend::Scalar | Backend::Portable) {
            continue;
        }
        let err = direct.rotate_at(&mut q, same, &[[1, 1]], Direction::Forward);
        assert_eq!(
            err,
            Ok(()),
            "{backend:?}: i8 at mscale 1 is converted in place"
        );
        let mut x = vec![bf16::ONE; heads * d];
        let rotated = direct.rotate_at(&mut x, Shape::heads(heads), &[[1, 1]], Direction::Forward);
        assert_eq!(
            rotated,
            Ok(()),
            "{backend:?}: bf16 is converted in place, not staged"
        );
        assert!(x.iter().any(|&v| v != bf16::ONE));
        let mut x = vec![1.0f32; heads * d];
        assert!(
            direct
                .rotate_at(&mut x, Shape::heads(heads), &[[1, 1]], Direction::Forward)
                .is_ok(),
            "f32 is not staged"
        );
    }
}

/// Every bit pattern of the 16-bit types (NaN, infinities, subnormals, the extremes), rotated
/// by a range of angles (overflow to infinity, subnormal results): the staged result is still
/// the rounded f32 result on every backend.
#[test]
fn every_bit_pattern() {
    fn all<E: Ty>(from_bits: impl Fn(u16) -> E) {
        // Under Miri, which looks for undefined behaviour (the same memory accesses for
        // every value), every 241st pattern and the specials of f16 and bf16 (infinities,
        // signalling and quiet NaNs, the largest finite values, the smallest subnormals).
        let bits: Vec<u16> = if cfg!(miri) {
            let specials = [
                0x7C00, 0xFC00, 0x7C01, 0xFE00, 0x7BFF, 0x0001, 0x7F80, 0xFF80, 0x7F81, 0xFFC0,
                0x7F7F, 0x8001,
            ];
            (0..=u16::MAX).step_by(241).chain(specials).collect()
        } else {
            (0..=u16::MAX).collect()
        };
        let input: Vec<E> = bits.into_iter().map(from_bits).collect();
        // d = 8: less than a vector's pairs in the half layout (partial stores); d = 32:
        // whole vectors, stored in pairs (every NaN and infinity through the rotation
        // loops' rounding).
        for d in [8, 32] {
            let input = &input[..input.len() / d * d];
            for layout in [Layout::Interleaved, Layout::Half] {
                let direct = Direct::new(&preset::rope_1d(d, layout, 10_000.0)).unwrap();
                let (op_e, op_f) = both!(|b, x| direct
                    .with_backend(b)
                    .unwrap()
                    .rotate(x, Shape::heads(1), Run::from([3]), Direction::Forward)
                    .unwrap());
                staged_is_exact(input, 1.0, "every bit pattern", op_e, op_f);
            }
        }
    }
    all(f16::from_bits);
    all(bf16::from_bits);
    all(|b| b as i16);
    all(|b| (b & 0xFF) as u8 as i8);
}

/// Buffers of just over 1 MiB, which `avx512` rotates with its 256-bit form (compiled with
/// AVX-512VL where the CPU has it): still the rounded f32 result on every backend, both
/// layouts, heads whose angles take 16 registers (d = 128, half layout) or 5 (d = 80). x86_64
/// only (the threshold is avx512's; megabytes of data take minutes under Miri and qemu).
#[test]
#[cfg_attr(any(miri, not(target_arch = "x86_64")), ignore)]
fn buffers_beyond_l2() {
    fn each<E: Ty>() {
        let mut rng = Rng(29);
        let heads = 2;
        for layout in [Layout::Interleaved, Layout::Half] {
            for d in [128, 80] {
                let tokens = (1 << 20) / (heads * d * size_of::<E>()) + 1;
                let spec = preset::rope_1d(d, layout, 500_000.0);
                let mut storage = vec![[0.0f32; 2]; Table::storage_len(&spec, [tokens]).unwrap()];
                let table = Table::build(&mut storage, &spec, [tokens]).unwrap();
                let input = values::<E>(&mut rng, tokens * heads * d);
                let (op_e, op_f) = both!(|b, x| table
                    .with_backend(b)
                    .unwrap()
                    .rotate(x, Shape::heads(heads), Run::from([0]), Direction::Forward)
                    .unwrap());
                let what = format!("beyond L2, d {d} {layout:?}");
                staged_is_exact(&input, 1.0, &what, op_e, op_f);
            }
        }
    }
    each::<f16>();
    each::<bf16>();
    each::<i16>();
    each::<i8>();
}

/// Per-head scales: head `h` of every token (the prefix too) is exactly what `rotate` with
/// `scales[h]` for the whole buffer gives it; every error leaves the buffer as it was.
#[test]
fn per_head_scales() {
    fn check<E: Ty>() {
        let (heads, d, prefix) = (3, 16, 1);
        let spec = preset::rope_vit(d);
        let mut storage = vec![[0.0f32; 2]; Table::storage_len(&spec, [3, 4]).unwrap()];
        let table = Table::build(&mut storage, &spec, [3, 4]).unwrap();
        let grid = Grid::new([3, 4]);
        let mut rng = Rng(7);
        // Integers over half their range (head 0's doubling saturates only some of them);
        // floats up to ±120.
        let spread = if E::QUANTISED { 0.5 } else { 30.0 };
        let input: Vec<E> = (0..(prefix + 12) * heads * d)
            .map(|_| E::from_f64(rng.value_f64() * spread))
            .collect();
        let scales = [
            Scales {
                input: 0.02,
                output: 0.01,
            }, // doubled: saturates
            Scales::SAME,
            Scales {
                input: 0.3,
                output: 0.7,
            },
        ];
        let shape = Shape::heads(heads).with_prefix(prefix);
        for backend in backends() {
            let table = table.with_backend(backend).unwrap();
            for dir in [Direction::Forward, Direction::Inverse] {
                let mut got = input.clone();
                table
                    .rotate_with_head_scales(&mut got, shape, grid, &scales, dir)
                    .unwrap();
                for (h, s) in scales.iter().enumerate() {
                    let mut want = input.clone();
                    let one = shape.with_scales(s.input, s.output);
                    table.rotate(&mut want, one, grid, dir).unwrap();
                    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                        if i / d % heads == h {
                            assert!(
                                E::same(*g, *w),
                                "{} {backend:?} head {h} value {i}",
                                E::NAME
                            );
                        }
                    }
                }
                // Every head at ratio 1: exactly `rotate`.
                let mut got = input.clone();
                let same = [Scales::SAME; 3];
                table
                    .rotate_with_head_scales(&mut got, shape, grid, &same, dir)
                    .unwrap();
                let mut want = input.clone();
                table.rotate(&mut want, shape, grid, dir).unwrap();
                assert!(got.iter().zip(&want).all(|(g, w)| E::same(*g, *w)));
            }
            // Errors: nothing written.
            let bad: [&[Scales]; 3] = [
                &scales[..2],
                &[
                    scales[0],
                    scales[1],
                    Scales {
                        input: -1.0,
                        output: 1.0,
                    },
                ],
                &[
                    scales[0],
                    scales[1],
                    Scales {
                        input: 1.0,
                        output: f32::NAN,
                    },
                ],
            ];
            for bad in bad {
                let mut x = input.clone();
                let err =
                    table.rotate_with_head_scales(&mut x, shape, grid, bad, Direction::Forward);
                assert_eq!(err, Err(Error::InvalidScales));
                assert!(x.iter().zip(&input).all(|(a, b)| E::same(*a, *b)));
            }
            let mut x = input.clone();
            let scaled = shape.with_scales(0.5, 0.25);
            let err =
                table.rotate_with_head_scales(&mut x, scaled, grid, &scales, Direction::Forward);
            assert_eq!(err, Err(Error::InvalidScales), "scales twice");
            let mut x = input[1..].to_vec();
            let err =
                table.rotate_with_head_scales(&mut x, shape, grid, &scales, Direction::Forward);
            assert!(matches!(err, Err(Error::BufferLength { .. })));
        }
    }
    check::<i8>();
    check::<i16>();
    // Floats take only `Scales::SAME`.
    let spec = preset::rope_vit(16);
    let mut storage = vec![[0.0f32; 2]; 16];
    let table = Table::build(&mut storage, &spec, [2, 2]).unwrap();
    let mut x = vec![bf16::ONE; 4 * 2 * 16];
    let same = [Scales::SAME; 2];
    let grid = Grid::new([2, 2]);
    assert_eq!(
        table.rotate_with_head_scales(&mut x, Shape::heads(2), grid, &same, Direction::Forward),
        Ok(())
    );
    let halved = [
        Scales::SAME,
        Scales {
            input: 0.5,
            output: 1.0,
        },
    ];
    let before = x.clone();
    assert_eq!(
        table.rotate_with_head_scales(&mut x, Shape::heads(2), grid, &halved, Direction::Forward),
        Err(Error::InvalidScales)
    );
    assert_eq!(x, before);
}
