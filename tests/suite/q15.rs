//! Q15 tables (`Q15Table`): entries within 1 LSB of the exact `cos`/`sin`, rotations of `i16`
//! and `i8` buffers within the stated bound of the exact rotation for every plan, layout,
//! direction and prefix, the golden vectors in Q15, and every error.

use rope2d::{
    Backend, Direction, Error, Grid, Layout, LearnedFreqs, Q15FixedTable, Q15Table, Run, Scales,
    Shape, Spec, Table, half::f16, preset,
};

use crate::Rng;

const DIRS: [Direction; 2] = [Direction::Forward, Direction::Inverse];

/// Every entry of a Q15 table against the `f32` table of the same spec (itself within 1.2e-7
/// of `f64`): within 1 LSB, and 0.68 where the value does not round past 32 767.
fn entries_match<const A: usize, P: rope2d::Plan<A>>(spec: &Spec<'_, A, P>, extents: [usize; A]) {
    let n = Table::storage_len(spec, extents).unwrap();
    let mut f = vec![[0f32; 2]; n];
    let mut q = vec![[0i16; 2]; n];
    let ft = Table::build(&mut f, spec, extents).unwrap();
    let qt = Q15Table::build(&mut q, spec, extents).unwrap();
    assert_eq!(qt.extents(), extents);
    for (axis, &extent) in extents.iter().enumerate() {
        for index in 0..extent {
            let (fe, qe) = (
                ft.entries(axis, index).unwrap(),
                qt.entries(axis, index).unwrap(),
            );
            assert_eq!(fe.len(), qe.len());
            for (f, q) in fe.iter().zip(qe) {
                for (f, q) in f.iter().zip(q) {
                    let exact = f64::from(*f) * 32_768.0;
                    let error = (f64::from(*q) - exact).abs();
                    let bound = if exact.abs() <= 32_767.5 {
                        0.685
                    } else {
                        1.005
                    };
                    assert!(error <= bound, "axis {axis} index {index}: {q} vs {exact}");
                }
            }
        }
    }
}

#[test]
fn entries_are_within_one_lsb() {
    entries_match(&preset::rope_vit(64), [14, 14]);
    entries_match(&preset::dinov3(64), [16, 16]);
    entries_match(&preset::wan(128, 10_000.0), [5, 8, 8]);
    entries_match(&preset::llama(128), [if cfg!(miri) { 300 } else { 70_000 }]);
    entries_match(&preset::qwen3_vl_mrope(64, 1e6, [12, 10, 10]), [20, 20, 20]);
}

/// `x` (Q15 values of `V`) rotated by the `f32` table in `f64`: the exact rotation, to
/// 2⁻²⁰ of a value.
fn reference<const A: usize, S: rope2d::Source<A>>(
    rope: &rope2d::Rope<A, S>,
    x: &[i32],
    rotate: impl Fn(&rope2d::Rope<A, S>, &mut [f32]),
) -> Vec<f64> {
    let mut f: Vec<f32> = x.iter().map(|&v| v as f32).collect();
    rotate(rope, &mut f);
    f.into_iter().map(f64::from).collect()
}

/// Checks a Q15 rotation `got` of `input` against the exact rotation `exact`: each output
/// within `0.5 + ε·(|a| + |b|) / 2¹⁵ + 0.02` of the exact value saturated to `[lo, hi]`,
/// with `(a, b)` its pair's inputs (found by `layout` and `pairs`); the prefix unchanged.
#[allow(clippy::too_many_arguments)]
fn within_bound(
    input: &[i32],
    got: &[i32],
    exact: &[f64],
    (head_dim, pairs, layout): (usize, usize, Layout),
    prefix_values: usize,
    epsilon: f64,
    (lo, hi): (f64, f64),
    what: &str,
) -> f64 {
    assert_eq!(
        &got[..prefix_values],
        &input[..prefix_values],
        "{what}: prefix"
    );
    let mut worst = 0f64;
    for (h, (x, (y, e))) in input[prefix_values..]
        .chunks(head_dim)
        .zip(
            got[prefix_values..]
                .chunks(head_dim)
                .zip(exact[prefix_values..].chunks(head_dim)),
        )
        .enumerate()
    {
        for k in 0..pairs {
            let (i, j) = match layout {
                Layout::Interleaved => (2 * k, 2 * k + 1),
                Layout::Half => (k, k + pairs),
            };
            let size = f64::from(x[i].abs() + x[j].abs());
            let bound = 0.5 + epsilon * size / 32_768.0 + 0.02;
            for idx in [i, j] {
                let error = (f64::from(y[idx]) - e[idx].clamp(lo, hi)).abs();
                worst = worst.max(error);
                assert!(
                    error <= bound,
                    "{what}: head {h} pair {k}: {} vs {}",
                    y[idx],
                    e[idx]
                );
            }
        }
        for idx in 2 * pairs..head_dim {
            assert_eq!(y[idx], x[idx], "{what}: unrotated value");
        }
    }
    worst
}

/// The element types a Q15 table rotates, for the generic checks.
trait Fixed: Copy + Default + PartialEq + std::fmt::Debug + rope2d::Element {
    const RANGE: (f64, f64);
    fn from_i32(v: i32) -> Self;
    fn to_i32(self) -> i32;
}

impl Fixed for i16 {
    const RANGE: (f64, f64) = (-32_768.0, 32_767.0);
    fn from_i32(v: i32) -> Self {
        v as i16
    }
    fn to_i32(self) -> i32 {
        self.into()
    }
}

impl Fixed for i8 {
    const RANGE: (f64, f64) = (-128.0, 127.0);
    fn from_i32(v: i32) -> Self {
        v as i8
    }
    fn to_i32(self) -> i32 {
        self.into()
    }
}

fn random<V: Fixed>(rng: &mut Rng, len: usize) -> Vec<V> {
    let (lo, hi) = V::RANGE;
    let span = (hi - lo) as u64 + 1;
    (0..len)
        .map(|_| V::from_i32((rng.next() % span) as i32 + lo as i32))
        .collect()
}

/// One rotation of `V` values by the Q15 table and of the same values by the `f32` table,
/// compared; `rotate` is the call, on either table.
macro_rules! compare {
    ($v:ty, $rng:expr, $len:expr, $shape:expr, $prefix:expr, $eps:expr, $what:expr,
     ($qt:expr, $ft:expr), |$t:ident, $x:ident| $call:expr) => {{
        let input: Vec<$v> = random(&mut $rng, $len);
        let mut got = input.clone();
        {
            let $t = &$qt;
            let $x = &mut got[..];
            $call.unwrap();
        }
        let wide: Vec<i32> = input.iter().map(|v| v.to_i32()).collect();
        let exact = reference(&$ft, &wide, |$t, $x| {
            $call.unwrap();
        });
        let got: Vec<i32> = got.iter().map(|v| v.to_i32()).collect();
        let (d, pairs, layout) = ($qt.head_dim(), $qt.pairs(), $qt.layout());
        within_bound(
            &wide,
            &got,
            &exact,
            (d, pairs, layout),
            $prefix * $shape.heads_count() * d,
            $eps,
            <$v as Fixed>::RANGE,
            $what,
        )
    }};
}

trait HeadsCount {
    fn heads_count(&self) -> usize;
}

impl HeadsCount for Shape {
    fn heads_count(&self) -> usize {
        self.heads
    }
}

fn every_plan<V: Fixed>() -> f64 {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut worst = 0f64;
    for layout in [Layout::Interleaved, Layout::Half] {
        for dir in DIRS {
            // 2-D sections over a whole grid, 3 heads, a prefix of 2 tokens; q and k.
            let spec = preset::axial(32, layout, preset::AxisOrder::RowFirst, 100.0);
            let n = Table::storage_len(&spec, [5, 7]).unwrap();
            let (mut fs, mut qs) = (vec![[0f32; 2]; n], vec![[0i16; 2]; n]);
            let ft = Table::build(&mut fs, &spec, [5, 7]).unwrap();
            let qt = Q15Table::build(&mut qs, &spec, [5, 7]).unwrap();
            let shape = Shape::heads(3).with_prefix(2);
            worst = worst.max(compare!(
                V,
                rng,
                37 * 3 * 32,
                shape,
                2,
                1.0,
                "2-D grid",
                (qt, ft),
                |t, x| t.rotate(x, shape, Grid::new([5, 7]), dir)
            ));
            let shape = Shape::heads(1);
            worst = worst.max(compare!(
                V,
                rng,
                2 * 35 * 32,
                shape,
                0,
                1.0,
                "2-D q and k",
                (qt, ft),
                |t, x| {
                    let (q, k) = x.split_at_mut(35 * 32);
                    t.rotate_qk(q, k, shape, Grid::new([5, 7]), dir)
                }
            ));
            worst = worst.max(compare!(
                V,
                rng,
                32,
                shape,
                0,
                1.0,
                "2-D one head",
                (qt, ft),
                |t, x| t.rotate_head(x, [4, 6], dir)
            ));
            worst = worst.max(compare!(
                V,
                rng,
                3 * 32,
                shape,
                0,
                1.0,
                "2-D explicit positions",
                (qt, ft),
                |t, x| t.rotate_at(x, shape, &[[4, 6], [0, 0], [2, 3]], dir)
            ));

            // 1-D partial rotary (GPT-NeoX, a quarter of the head): a run from 60 000.
            let spec = preset::gpt_neox(64, 0.25, 10_000.0);
            let n = Table::storage_len(&spec, [65_536]).unwrap();
            let (mut fs, mut qs) = (vec![[0f32; 2]; n], vec![[0i16; 2]; n]);
            let ft = Table::build(&mut fs, &spec, [65_536]).unwrap();
            let qt = Q15Table::build(&mut qs, &spec, [65_536]).unwrap();
            let shape = Shape::heads(2);
            worst = worst.max(compare!(
                V,
                rng,
                9 * 2 * 64,
                shape,
                0,
                1.0,
                "1-D partial run",
                (qt, ft),
                |t, x| t.rotate(x, shape, Run::from([60_000]), dir)
            ));

            // 3-D (Wan 2.1) grid from an origin, and M-RoPE pieces (a gathered plan).
            let spec = preset::wan(48, 10_000.0);
            let n = Table::storage_len(&spec, [4, 6, 8]).unwrap();
            let (mut fs, mut qs) = (vec![[0f32; 2]; n], vec![[0i16; 2]; n]);
            let ft = Table::build(&mut fs, &spec, [4, 6, 8]).unwrap();
            let qt = Q15Table::build(&mut qs, &spec, [4, 6, 8]).unwrap();
            let grid = Grid::new([2, 3, 5]).at([1, 2, 3]);
            worst = worst.max(compare!(
                V,
                rng,
                30 * 2 * 48,
                shape,
                0,
                1.0,
                "3-D grid",
                (qt, ft),
                |t, x| t.rotate(x, shape, grid, dir)
            ));
            let spec = preset::qwen3_vl_mrope(64, 1e6, [12, 10, 10]);
            let n = Table::storage_len(&spec, [20, 20, 20]).unwrap();
            let (mut fs, mut qs) = (vec![[0f32; 2]; n], vec![[0i16; 2]; n]);
            let ft = Table::build(&mut fs, &spec, [20, 20, 20]).unwrap();
            let qt = Q15Table::build(&mut qs, &spec, [20, 20, 20]).unwrap();
            let pieces = preset::mrope_positions(2, [1, 4, 6], 2, 3);
            worst = worst.max(compare!(
                V,
                rng,
                11 * 2 * 64,
                shape,
                0,
                1.0,
                "M-RoPE pieces",
                (qt, ft),
                |t, x| t.rotate(x, shape, &pieces[..], dir)
            ));
        }
    }
    // RoPE-Mixed: the two entries' product is rounded once more (ε ≤ 2.5).
    let (heads, d) = (3, 16);
    let fx: Vec<f32> = (0..heads * d / 2).map(|i| 0.1 * i as f32).collect();
    let fy: Vec<f32> = (0..heads * d / 2).map(|i| 0.05 * i as f32 - 1.0).collect();
    let spec = preset::rope_mixed(d, heads, LearnedFreqs { x: &fx, y: &fy });
    let n = Table::storage_len(&spec, [4, 4]).unwrap();
    let (mut fs, mut qs) = (vec![[0f32; 2]; n], vec![[0i16; 2]; n]);
    let ft = Table::build(&mut fs, &spec, [4, 4]).unwrap();
    let qt = Q15Table::build(&mut qs, &spec, [4, 4]).unwrap();
    let shape = Shape::heads(heads);
    for dir in DIRS {
        worst = worst.max(compare!(
            V,
            rng,
            16 * heads * d,
            shape,
            0,
            2.5,
            "RoPE-Mixed",
            (qt, ft),
            |t, x| t.rotate(x, shape, Grid::new([4, 4]), dir)
        ));
    }
    worst
}

#[test]
fn i16_rotations_are_within_the_bound_for_every_plan() {
    let worst = every_plan::<i16>();
    println!("i16, full-scale random values: worst error {worst:.3} LSB");
}

#[test]
fn i8_rotations_are_within_the_bound_for_every_plan() {
    let worst = every_plan::<i8>();
    // At 8 bits the entries' error is far below an LSB: rounding alone.
    assert!(worst <= 0.52, "i8 worst {worst}");
}

#[test]
fn full_scale_values_saturate() {
    // (-32 768, -32 768) rotated by 45°: the exact a' = 0, b' = −46 341 → −32 768.
    let spec = preset::rope_1d(2, Layout::Interleaved, 10_000.0);
    let mut qs = vec![[0i16; 2]; 8];
    let table = Q15Table::build(&mut qs, &spec, [8]).unwrap();
    // Pair 0's frequency is 1 rad per position: position 0 is the identity (entry 32 767).
    let mut x = [i16::MIN, i16::MAX];
    table.rotate_head(&mut x, [0], Direction::Forward).unwrap();
    assert_eq!(x, [-32_767, 32_766]);
    let mut x = [i16::MIN, i16::MIN];
    table.rotate_head(&mut x, [1], Direction::Forward).unwrap();
    // cos 1 ≈ 0.5403, sin 1 ≈ 0.8415: a' = −32 768·(0.5403 − 0.8415) = 9 870,
    // b' = −32 768·(0.8415 + 0.5403) → saturated.
    assert!((i32::from(x[0]) - 9_870).abs() <= 2, "{x:?}");
    assert_eq!(x[1], i16::MIN);
}

/// The golden files in Q15: the input scaled by 2¹² (|x| < 4, so that a rotated pair stays in
/// range), rotated by the Q15 table, within the bound of `expected_f64` scaled alike.
#[test]
fn golden_files_in_q15() {
    for (name, side, d) in [
        ("seed_axial_d32_8x8_b100", 8, 32),
        ("seed_axial_d64_14x14_b100", 14, 64),
    ] {
        let text = std::fs::read_to_string(format!("tests/golden/{name}.json")).unwrap();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        let flat = |key: &str| -> Vec<f64> {
            fn walk(v: &serde_json::Value, out: &mut Vec<f64>) {
                match v {
                    serde_json::Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
                    v => out.push(v.as_f64().unwrap()),
                }
            }
            let mut out = Vec::new();
            walk(&json[key], &mut out);
            out
        };
        let heads = json["heads"].as_u64().unwrap() as usize;
        let positions: Vec<[u32; 2]> = flat("positions")
            .chunks(2)
            .map(|p| [p[0] as u32, p[1] as u32])
            .collect();
        let scale = 4_096.0;
        let input: Vec<i16> = flat("input")
            .iter()
            .map(|v| (v * scale).round() as i16)
            .collect();
        let expected: Vec<f64> = flat("expected_f64").iter().map(|v| v * scale).collect();
        let spec = preset::axial(d, Layout::Interleaved, preset::AxisOrder::ColFirst, 100.0);
        let mut qs = vec![[0i16; 2]; Table::storage_len(&spec, [side, side]).unwrap()];
        let table = Q15Table::build(&mut qs, &spec, [side, side]).unwrap();
        let mut x = input.clone();
        table
            .rotate_at(&mut x, Shape::heads(heads), &positions, Direction::Forward)
            .unwrap();
        // Against the golden output: the rotated quantisation error of the input (at most
        // 0.5·√2 per value) comes on top of the bound. Against the exact rotation of the
        // quantised input — each pair's angle recovered from the golden input and output:
        // cos θ = (a·a' + b·b') / (a² + b²), sin θ = (a·b' − b·a') / (a² + b²) — the bound.
        let wide: Vec<i32> = input.iter().map(|&v| v.into()).collect();
        let got: Vec<i32> = x.iter().map(|&v| v.into()).collect();
        let (mut worst, mut worst_quantised) = (0f64, 0f64);
        let chunks = wide.chunks(d).zip(got.chunks(d));
        for (((i, g), e), x) in chunks.zip(expected.chunks(d)).zip(flat("input").chunks(d)) {
            for k in 0..d / 2 {
                let (a, b) = (x[2 * k] * scale, x[2 * k + 1] * scale);
                let (a2, b2) = (e[2 * k], e[2 * k + 1]);
                let norm = a * a + b * b;
                let (c, s) = ((a * a2 + b * b2) / norm, (a * b2 - b * a2) / norm);
                let (qa, qb) = (f64::from(i[2 * k]), f64::from(i[2 * k + 1]));
                let exact = [qa * c - qb * s, qa * s + qb * c];
                let size = qa.abs() + qb.abs();
                let bound = 0.5 + size / 32_768.0 + 0.01;
                for (idx, exact) in [2 * k, 2 * k + 1].into_iter().zip(exact) {
                    let error = (f64::from(g[idx]) - exact).abs();
                    worst_quantised = worst_quantised.max(error);
                    assert!(error <= bound, "{name}: {} vs {exact}", g[idx]);
                    let error = (f64::from(g[idx]) - e[idx]).abs();
                    worst = worst.max(error);
                    assert!(error <= bound + 0.5 * 2f64.sqrt(), "{name}: {}", g[idx]);
                }
            }
        }
        println!(
            "{name}: worst {worst_quantised:.3} LSB from the exact rotation of the quantised \
             input, {worst:.3} from expected_f64 · 2^12"
        );
    }
}

/// Every backend against `Scalar`, bit for bit: both layouts and directions; sections of
/// pair counts that are and are not whole vector blocks, starting anywhere in the head
/// (d = 44: 11 pairs per axis); full-scale values (saturation); an unaligned buffer with a
/// prefix; 1-D (one 64-pair section, a partial rotary of 8 pairs) and 3-D grids; q and k.
fn backends_match_scalar<V: Fixed>() {
    let mut rng = Rng(7);
    let backends: Vec<Backend> = Backend::ALL
        .iter()
        .copied()
        .filter(|b| b.is_available())
        .collect();
    // Runs `call` on a copy of `len` random values at offset 1 (unaligned) with every
    // backend and compares each with `Scalar`'s.
    let mut check = |len: usize, what: &str, call: &dyn Fn(Backend, &mut [V])| {
        let input: Vec<V> = random(&mut rng, len + 1);
        let mut expected = input.clone();
        call(Backend::Scalar, &mut expected[1..]);
        assert_ne!(expected, input, "{what}: nothing rotated");
        for &backend in &backends {
            let mut got = input.clone();
            call(backend, &mut got[1..]);
            assert!(got == expected, "{backend:?}, {what}: not the scalar bits");
        }
    };
    for layout in [Layout::Interleaved, Layout::Half] {
        for dir in DIRS {
            for d in [16, 44, 64, 96, 128] {
                let spec = preset::axial(d, layout, preset::AxisOrder::RowFirst, 100.0);
                let mut qs = vec![[0i16; 2]; Table::storage_len(&spec, [5, 7]).unwrap()];
                let table = Q15Table::build(&mut qs, &spec, [5, 7]).unwrap();
                let shape = Shape::heads(3).with_prefix(1);
                let what = format!("2-D {layout:?} d {d} {dir:?}");
                check(36 * 3 * d, &what, &|backend, x| {
                    let t = table.with_backend(backend).unwrap();
                    t.rotate(x, shape, Grid::new([5, 7]), dir).unwrap();
                });
                let what = format!("2-D q and k {layout:?} d {d} {dir:?}");
                check(2 * 35 * 2 * d, &what, &|backend, x| {
                    let t = table.with_backend(backend).unwrap();
                    let (q, k) = x.split_at_mut(35 * 2 * d);
                    t.rotate_qk(q, k, Shape::heads(2), Grid::new([5, 7]), dir)
                        .unwrap();
                });
            }
            let spec = preset::rope_1d(128, layout, 500_000.0);
            let mut qs = vec![[0i16; 2]; Table::storage_len(&spec, [4_096]).unwrap()];
            let table = Q15Table::build(&mut qs, &spec, [4_096]).unwrap();
            check(
                9 * 4 * 128,
                &format!("1-D {layout:?} {dir:?}"),
                &|backend, x| {
                    let t = table.with_backend(backend).unwrap();
                    t.rotate(x, Shape::heads(4), Run::from([4_000]), dir)
                        .unwrap();
                },
            );
        }
        // A partial rotary of 8 pairs (interleaved) and a 3-D grid (interleaved sections).
        let spec = preset::gpt_neox(64, 0.25, 10_000.0);
        let mut qs = vec![[0i16; 2]; Table::storage_len(&spec, [64]).unwrap()];
        let table = Q15Table::build(&mut qs, &spec, [64]).unwrap();
        check(64 * 2 * 64, "1-D partial rotary", &|backend, x| {
            let t = table.with_backend(backend).unwrap();
            t.rotate(x, Shape::heads(2), Run::from([0]), Direction::Forward)
                .unwrap();
        });
    }
    let spec = preset::wan(128, 10_000.0);
    let mut qs = vec![[0i16; 2]; Table::storage_len(&spec, [2, 3, 5]).unwrap()];
    let table = Q15Table::build(&mut qs, &spec, [2, 3, 5]).unwrap();
    check(30 * 2 * 128, "3-D grid", &|backend, x| {
        let t = table.with_backend(backend).unwrap();
        t.rotate(x, Shape::heads(2), Grid::new([2, 3, 5]), Direction::Inverse)
            .unwrap();
    });
}

/// The integer vector loops on a size Miri can run (`.ci/hardening.sh` runs this test under
/// Miri with AVX2 and with AVX-512): interleaved d = 44 (an 8-pair block and a tail per
/// axis) and d = 64 (a 16-pair block: one 512-bit block, two 256-bit ones), half d = 64 (a
/// 16-pair block per axis) and d = 128 (a 32-pair block), `i16` and `i8`, both directions,
/// every backend against `Scalar` bit for bit.
#[test]
fn small_rotations_match_scalar_on_every_backend() {
    fn check<V: Fixed>() {
        let mut rng = Rng(11);
        // d = 64 and 128 interleaved: `i8`'s double blocks of 16 (`avx2`) and 32 (`avx512`)
        // pairs, whose widening and narrowing stay within 128-bit lanes.
        let shapes = [
            (Layout::Interleaved, 44),
            (Layout::Interleaved, 64),
            (Layout::Interleaved, 128),
            (Layout::Half, 64),
            (Layout::Half, 128),
        ];
        for (layout, d) in shapes {
            let spec = preset::axial(d, layout, preset::AxisOrder::RowFirst, 100.0);
            let mut qs = vec![[0i16; 2]; Table::storage_len(&spec, [2, 2]).unwrap()];
            let table = Q15Table::build(&mut qs, &spec, [2, 2]).unwrap();
            for dir in DIRS {
                let input: Vec<V> = random(&mut rng, 4 * d + 1);
                let mut expected = input.clone();
                let scalar = table.with_backend(Backend::Scalar).unwrap();
                scalar
                    .rotate(&mut expected[1..], Shape::heads(1), Grid::new([2, 2]), dir)
                    .unwrap();
                for &backend in Backend::ALL.iter().filter(|b| b.is_available()) {
                    let mut got = input.clone();
                    let t = table.with_backend(backend).unwrap();
                    t.rotate(&mut got[1..], Shape::heads(1), Grid::new([2, 2]), dir)
                        .unwrap();
                    assert!(got == expected, "{backend:?} {layout:?} d {d} {dir:?}");
                }
            }
        }
    }
    check::<i16>();
    check::<i8>();
}

#[test]
fn every_backend_gives_the_scalar_bits_in_i16() {
    backends_match_scalar::<i16>();
}

#[test]
fn every_backend_gives_the_scalar_bits_in_i8() {
    backends_match_scalar::<i8>();
}

#[test]
fn q15_errors_write_nothing() {
    let spec = preset::rope_vit(16);
    let n = Table::storage_len(&spec, [4, 4]).unwrap();
    // An mscale Q15 cannot hold; the storage stays as it was.
    let mut qs = vec![[7i16; 2]; n];
    let scaled = spec.with_mscale(1.5);
    assert_eq!(
        Q15Table::build(&mut qs, &scaled, [4, 4]).err(),
        Some(Error::FixedPoint)
    );
    assert!(qs.iter().all(|e| *e == [7, 7]));
    let mut short = vec![[7i16; 2]; n - 1];
    assert_eq!(
        Q15Table::build(&mut short, &spec, [4, 4]).err(),
        Some(Error::StorageLength {
            expected: n,
            actual: n - 1
        })
    );
    assert!(
        short.iter().all(|e| *e == [7, 7]),
        "storage written on error"
    );
    let table = Q15Table::build(&mut qs, &spec, [4, 4]).unwrap();
    let grid = Grid::new([4, 4]);
    // Float buffers, and integer buffers with scales, are refused.
    let mut f = vec![0.5f32; 16 * 16];
    assert_eq!(
        table.rotate(&mut f, Shape::heads(1), grid, Direction::Forward),
        Err(Error::FixedPoint)
    );
    assert!(f.iter().all(|&v| v == 0.5));
    let mut h = vec![f16::ONE; 16 * 16];
    assert_eq!(
        table.rotate(&mut h, Shape::heads(1), grid, Direction::Forward),
        Err(Error::FixedPoint)
    );
    assert!(h.iter().all(|&v| v == f16::ONE));
    let mut x = vec![100i16; 16 * 16];
    let shape = Shape::heads(1).with_scales(0.5, 0.25);
    assert_eq!(
        table.rotate(&mut x, shape, grid, Direction::Forward),
        Err(Error::FixedPoint)
    );
    // One scale in and out must be finite and positive.
    let tiny = f32::from_bits(1);
    for (input, output) in [
        (0.0, 0.0),
        (-0.5, -0.5),
        (f32::INFINITY, f32::INFINITY),
        (f32::NAN, f32::NAN),
        (tiny, 2.0 * tiny),
    ] {
        let shape = Shape::heads(1).with_scales(input, output);
        assert_eq!(
            table.rotate(&mut x, shape, grid, Direction::Forward),
            Err(Error::FixedPoint),
            "{input} {output}"
        );
    }
    assert!(x.iter().all(|&v| v == 100));
    // Equal scales are a ratio of 1: `Scales::SAME`'s result, bit for bit.
    let mut expected = x.clone();
    table
        .rotate(&mut expected, Shape::heads(1), grid, Direction::Forward)
        .unwrap();
    assert_ne!(expected, x);
    for scale in [1.0 / 32_768.0, 3.0, f32::MAX, tiny] {
        let mut y = x.clone();
        let shape = Shape::heads(1).with_scales(scale, scale);
        table
            .rotate(&mut y, shape, grid, Direction::Forward)
            .unwrap();
        assert_eq!(y, expected, "{scale}");
    }
    // The checks every table makes: length, positions.
    assert!(matches!(
        table.rotate(&mut x[1..], Shape::heads(1), grid, Direction::Forward),
        Err(Error::BufferLength { .. })
    ));
    assert!(matches!(
        table.rotate_at(&mut x[..16], Shape::heads(1), &[[4, 0]], Direction::Forward),
        Err(Error::PositionOutOfRange { .. })
    ));
    let mut k = vec![100i16; 16 * 15];
    assert!(matches!(
        table.rotate_qk(&mut x, &mut k, Shape::heads(1), grid, Direction::Forward),
        Err(Error::TokenCount { .. })
    ));
    assert!(x.iter().chain(&k).all(|&v| v == 100));
}

/// An owning Q15 table (`Q15FixedTable`) holds the entries `Q15Table::build` writes and
/// rotates to the same bits, on every backend; its errors are the builder's.
#[test]
fn fixed_q15_tables_match_runtime_tables() {
    const SPEC: Spec<'static, 2> = preset::rope_vit(32);
    const N: usize = SPEC.plan.table_len([5, 7]);
    let mut storage = vec![[0i16; 2]; N];
    let runtime = Q15Table::build(&mut storage, &SPEC, [5, 7]).unwrap();
    let fixed = Q15FixedTable::<N, 2>::new(&SPEC, [5, 7]).unwrap();
    assert_eq!(Q15FixedTable::<N, 2>::BYTES, 4 * N);
    let view = fixed.view();
    assert_eq!(view.extents(), [5, 7]);
    for (axis, extent) in [5, 7].into_iter().enumerate() {
        for index in 0..extent {
            assert_eq!(view.entries(axis, index), runtime.entries(axis, index));
        }
    }
    let mut rng = Rng(0x51_7e);
    let x: Vec<i16> = (0..5 * 7 * 3 * 32)
        .map(|_| (rng.next() >> 48) as i16)
        .collect();
    let shape = Shape::heads(3);
    let mut expected = x.clone();
    runtime
        .rotate(&mut expected, shape, Grid::new([5, 7]), Direction::Forward)
        .unwrap();
    for backend in Backend::ALL.iter().copied().filter(|b| b.is_available()) {
        let fixed = fixed.clone().with_backend(backend).unwrap();
        let mut y = x.clone();
        fixed
            .view()
            .rotate(&mut y, shape, Grid::new([5, 7]), Direction::Forward)
            .unwrap();
        assert_eq!(y, expected, "{}", backend.name());
    }
    assert_eq!(
        Q15FixedTable::<N, 2>::new(&SPEC.with_mscale(0.5), [5, 7]).err(),
        Some(Error::FixedPoint)
    );
    assert_eq!(
        Q15FixedTable::<N, 2>::new(&SPEC, [5, 8]).err(),
        Some(Error::StorageLength {
            expected: SPEC.plan.table_len([5, 8]),
            actual: N
        })
    );
}

/// `rotate_with_head_scales` on a Q15 table: every head at `Scales::SAME` (or at one scale in
/// and out) is `rotate`, bit for bit; any other entry is `Error::FixedPoint`, and nothing is
/// written.
#[test]
fn q15_tables_take_head_scales_of_one() {
    let spec = preset::rope_vit(16);
    let mut storage = vec![[0i16; 2]; Table::storage_len(&spec, [3, 4]).unwrap()];
    let table = Q15Table::build(&mut storage, &spec, [3, 4]).unwrap();
    let (grid, shape) = (Grid::new([3, 4]), Shape::heads(2).with_prefix(1));
    let mut rng = Rng(0xfeed);
    let x: Vec<i16> = (0..13 * 2 * 16)
        .map(|_| (rng.next() >> 48) as i16)
        .collect();
    let mut expected = x.clone();
    table
        .rotate(&mut expected, shape, grid, Direction::Inverse)
        .unwrap();
    let q15 = Scales {
        input: 1.0 / 32_768.0,
        output: 1.0 / 32_768.0,
    };
    for same in [[Scales::SAME; 2], [q15, Scales::SAME]] {
        let mut y = x.clone();
        table
            .rotate_with_head_scales(&mut y, shape, grid, &same, Direction::Inverse)
            .unwrap();
        assert_eq!(y, expected);
    }
    let same = [Scales::SAME; 2];
    let mut y = x.clone();
    let scaled = [
        Scales::SAME,
        Scales {
            input: 0.5,
            output: 0.25,
        },
    ];
    assert_eq!(
        table.rotate_with_head_scales(&mut y, shape, grid, &scaled, Direction::Forward),
        Err(Error::FixedPoint)
    );
    assert_eq!(
        table.rotate_with_head_scales(&mut y, shape, grid, &same[..1], Direction::Forward),
        Err(Error::InvalidScales)
    );
    assert_eq!(y, x);
}
