//! Property tests of the claims in the seed documents and of the crate's accuracy statements,
//! in N-D, over seeded random cases (no timing, no external generator), against an f64 model
//! of every preset written here from the families' own formulas.

use crate::Rng;
use rope2d::{
    AnglePrecision, Backend, Coords, Direct, Direction, Freqs, Grid, Layout, PerPair, Plan, Shape,
    Spec, Table,
    preset::{self, AxisOrder, HfRope, HfScaling},
};
use std::f64::consts::TAU;

impl Rng {
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn vector(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.unit() * 2.0).collect()
    }
}

fn dot(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum()
}

/// A family in f64, from its own formulas: per pair the axis and the frequency (rad/unit).
struct Model {
    name: &'static str,
    head_dim: usize,
    layout: Layout,
    axes: Vec<usize>,
    freqs: Vec<f64>,
    mscale: f64,
}

impl Model {
    /// Element indices of pair `k`.
    fn pair(&self, k: usize) -> (usize, usize) {
        match self.layout {
            Layout::Interleaved => (2 * k, 2 * k + 1),
            Layout::Half => (k, k + self.freqs.len()),
        }
    }

    /// One head rotated at real coordinates, in f64.
    fn rotate(&self, v: &[f32], coords: &[f64]) -> Vec<f64> {
        let mut out: Vec<f64> = v.iter().map(|&x| f64::from(x)).collect();
        for (k, (&axis, &f)) in self.axes.iter().zip(&self.freqs).enumerate() {
            let (i, j) = self.pair(k);
            let phi = coords[axis] * f;
            let (a, b) = (f64::from(v[i]), f64::from(v[j]));
            let (c, s) = (self.mscale * phi.cos(), self.mscale * phi.sin());
            out[i] = a * c - b * s;
            out[j] = a * s + b * c;
        }
        out
    }
}

/// `theta^(−e/n)`.
fn pow(theta: f64, e: usize, n: usize) -> f64 {
    theta.powf(-(e as f64) / n as f64)
}

/// Sections of `pairs[i]` pairs on axes `order[i]`, frequency index reset per section.
fn sections(order: &[usize], pairs: &[usize], theta: f64) -> (Vec<usize>, Vec<f64>) {
    let mut axes = Vec::new();
    let mut freqs = Vec::new();
    for (&axis, &n) in order.iter().zip(pairs) {
        for j in 0..n {
            axes.push(axis);
            freqs.push(pow(theta, j, n));
        }
    }
    (axes, freqs)
}

fn models() -> Vec<Model> {
    let mut out = Vec::new();
    let mut push = |name, head_dim, layout, (axes, freqs): (Vec<usize>, Vec<f64>), mscale| {
        out.push(Model {
            name,
            head_dim,
            layout,
            axes,
            freqs,
            mscale,
        })
    };
    push(
        "rope_vit",
        64,
        Layout::Interleaved,
        sections(&[1, 0], &[16, 16], 100.0),
        1.0,
    );
    push(
        "eva02",
        64,
        Layout::Interleaved,
        sections(&[0, 1], &[16, 16], 10_000.0),
        1.0,
    );
    push(
        "sam2",
        32,
        Layout::Interleaved,
        sections(&[1, 0], &[8, 8], 10_000.0),
        1.0,
    );
    push(
        "qwen2_vl_vision",
        80,
        Layout::Half,
        sections(&[0, 1], &[20, 20], 10_000.0),
        1.0,
    );
    let pixtral = (
        (0..32).map(|k| usize::from(k >= 16)).collect(),
        (0..32)
            .map(|k| pow(10_000.0, if k < 16 { 2 * k } else { 2 * (k - 16) + 1 }, 32))
            .collect(),
    );
    push("pixtral", 64, Layout::Half, pixtral, 1.0);
    push(
        "llama",
        64,
        Layout::Interleaved,
        sections(&[0], &[32], 10_000.0),
        1.0,
    );
    push(
        "neox",
        64,
        Layout::Half,
        sections(&[0], &[32], 10_000.0),
        1.0,
    );
    push(
        "gpt_neox",
        64,
        Layout::Half,
        sections(&[0], &[8], 10_000.0),
        1.0,
    );
    push(
        "glm",
        128,
        Layout::Interleaved,
        sections(&[0], &[32], 10_000.0),
        1.0,
    );
    push(
        "flux",
        128,
        Layout::Interleaved,
        sections(&[0, 1, 2], &[8, 28, 28], 10_000.0),
        1.0,
    );
    push(
        "wan",
        128,
        Layout::Interleaved,
        sections(&[0, 1, 2], &[22, 21, 21], 10_000.0),
        1.0,
    );
    push(
        "hunyuan_video",
        128,
        Layout::Interleaved,
        sections(&[0, 1, 2], &[8, 28, 28], 256.0),
        1.0,
    );
    let mrope = (
        (0..64)
            .map(|k| {
                if k < 16 {
                    0
                } else if k < 40 {
                    1
                } else {
                    2
                }
            })
            .collect(),
        (0..64).map(|k| pow(1e6, k, 64)).collect(),
    );
    push("qwen2_vl_mrope", 128, Layout::Half, mrope, 1.0);
    let imrope = (
        (0..64)
            .map(|k| match k % 3 {
                1 if k < 60 => 1,
                2 if k < 60 => 2,
                _ => 0,
            })
            .collect(),
        (0..64).map(|k| pow(5e6, k, 64)).collect(),
    );
    push("qwen3_vl_mrope", 128, Layout::Half, imrope, 1.0);
    // An unbalanced interleaved plan, [2, 20, 10] of 32 pairs, read as the reference's
    // clamped slices `freqs[..., a : 3·pairs[a] : 3]`: axis 1 gets 11 pairs, axis 2 gets 10.
    let unbalanced = (
        (0..32)
            .map(|k| match k % 3 {
                1 if k < 60 => 1,
                2 if k < 30 => 2,
                _ => 0,
            })
            .collect(),
        (0..32).map(|k| pow(5e6, k, 32)).collect(),
    );
    push("qwen3_vl_unbalanced", 64, Layout::Half, unbalanced, 1.0);
    // YaRN (factor 4, original 4096, beta 32/1), as transformers' `_compute_yarn_parameters`.
    let dim = 64.0;
    let correction = |rot: f64| dim * (4096.0 / (rot * TAU)).ln() / (2.0 * 10_000f64.ln());
    let (low, high) = (
        correction(32.0).floor().max(0.0),
        correction(1.0).ceil().min(dim - 1.0),
    );
    let yarn = (0..32)
        .map(|k| {
            let f = pow(10_000.0, 2 * k, 64);
            let extrapolation = 1.0 - ((k as f64 - low) / (high - low)).clamp(0.0, 1.0);
            f / 4.0 * (1.0 - extrapolation) + f * extrapolation
        })
        .collect();
    push(
        "hf_yarn",
        64,
        Layout::Half,
        (vec![0; 32], yarn),
        0.1 * 4f64.ln() + 1.0,
    );
    // `linear` (factor 4): every frequency divided by the factor.
    let linear = (0..32).map(|k| pow(10_000.0, 2 * k, 64) / 4.0).collect();
    push("hf_linear", 64, Layout::Half, (vec![0; 32], linear), 1.0);
    // `dynamic` (factor 2, 4 096 positions, a 65 536-token sequence): the base raised by
    // `(factor · seq / max − (factor − 1))^(dim / (dim − 2))`.
    let ntk_base = 10_000.0 * (2.0f64 * 65_536.0 / 4096.0 - 1.0).powf(64.0 / 62.0);
    let dynamic = (0..32).map(|k| pow(ntk_base, 2 * k, 64)).collect();
    push("hf_dynamic", 64, Layout::Half, (vec![0; 32], dynamic), 1.0);
    // `llama3` (Llama 3.1: theta 500 000, factor 8, low 1, high 4, original 8 192), as
    // transformers' `_compute_llama3_parameters`.
    let llama3 = (0..64)
        .map(|k| {
            let f = pow(500_000.0, 2 * k, 128);
            let wavelen = TAU / f;
            if wavelen < 8192.0 / 4.0 {
                f
            } else if wavelen > 8192.0 / 1.0 {
                f / 8.0
            } else {
                let smooth = (8192.0 / wavelen - 1.0) / (4.0 - 1.0);
                (1.0 - smooth) * f / 8.0 + smooth * f
            }
        })
        .collect();
    push("hf_llama3", 128, Layout::Half, (vec![0; 64], llama3), 1.0);
    // `longrope` (factor 16, original 4 096, a 65 536-token sequence: the long factors), as
    // `_compute_longrope_parameters`: attention factor `sqrt(1 + ln(factor) / ln(original))`.
    let longrope = (0..32)
        .map(|k| pow(10_000.0, 2 * k, 64) / LONG_FACTORS[k])
        .collect();
    push(
        "hf_longrope",
        64,
        Layout::Half,
        (vec![0; 32], longrope),
        (1.0 + 16f64.ln() / 4096f64.ln()).sqrt(),
    );
    out
}

/// LongRoPE's factors for the `hf_longrope` model: the long list rises from 1 to 8.75, the
/// short one (never selected at 65 536 tokens) stays near 1.
const LONG_FACTORS: [f64; 32] = {
    let mut f = [0.0; 32];
    let mut k = 0;
    while k < 32 {
        f[k] = 1.0 + 0.25 * k as f64;
        k += 1;
    }
    f
};
const SHORT_FACTORS: [f64; 32] = [1.05; 32];

/// A Hugging Face config's spec, 1-D, `head_dim` `d`, for a 65 536-token sequence.
fn hf_spec<'f>(
    d: usize,
    rope_theta: f64,
    max_position_embeddings: usize,
    scaling: HfScaling<'_>,
    freqs: &'f mut [f64],
) -> SpecAny<'f> {
    let hf = HfRope {
        rope_theta,
        head_dim: d,
        partial_rotary_factor: 1.0,
        max_position_embeddings,
        layout: Layout::Half,
        scaling,
    };
    SpecAny::OneExplicit(hf.spec(65_536, freqs).unwrap())
}

/// The crate's spec for a model, by name.
fn spec_of<'f>(model: &Model, freqs: &'f mut [f64]) -> SpecAny<'f> {
    let d = model.head_dim;
    match model.name {
        "rope_vit" => SpecAny::Two(preset::rope_vit(d)),
        "eva02" => SpecAny::Two(preset::eva02(d)),
        "sam2" => SpecAny::Two(preset::sam2(d, 10_000.0)),
        "qwen2_vl_vision" => SpecAny::Two(preset::qwen2_vl_vision(d, 10_000.0)),
        "pixtral" => SpecAny::Two(preset::pixtral(d, 10_000.0)),
        "llama" => SpecAny::One(preset::llama(d)),
        "neox" => SpecAny::One(preset::neox(d)),
        "gpt_neox" => SpecAny::One(preset::gpt_neox(d, 0.25, 10_000.0)),
        "glm" => SpecAny::One(preset::glm(d, 0.5, 10_000.0)),
        "flux" => SpecAny::Three(preset::flux([16, 56, 56], 10_000.0)),
        "wan" => SpecAny::Three(preset::wan(d, 10_000.0)),
        "hunyuan_video" => SpecAny::Three(preset::hunyuan_video([16, 56, 56], 256.0)),
        "qwen2_vl_mrope" => SpecAny::Three(preset::qwen2_vl_mrope(d, 1e6, [16, 24, 24])),
        "qwen3_vl_mrope" => SpecAny::Interleaved(preset::qwen3_vl_mrope(d, 5e6, [24, 20, 20])),
        "qwen3_vl_unbalanced" => SpecAny::Interleaved(preset::qwen3_vl_mrope(d, 5e6, [2, 20, 10])),
        "hf_yarn" => {
            let scaling = HfScaling::Yarn {
                factor: 4.0,
                original_max_position_embeddings: Some(4096),
                beta_fast: 32.0,
                beta_slow: 1.0,
                attention_factor: None,
                mscale: None,
                mscale_all_dim: None,
                truncate: true,
            };
            hf_spec(d, 10_000.0, 16_384, scaling, freqs)
        }
        "hf_linear" => hf_spec(
            d,
            10_000.0,
            16_384,
            HfScaling::Linear { factor: 4.0 },
            freqs,
        ),
        "hf_dynamic" => hf_spec(d, 10_000.0, 4096, HfScaling::Dynamic { factor: 2.0 }, freqs),
        "hf_llama3" => {
            let scaling = HfScaling::Llama3 {
                factor: 8.0,
                low_freq_factor: 1.0,
                high_freq_factor: 4.0,
                original_max_position_embeddings: 8192,
            };
            hf_spec(d, 500_000.0, 131_072, scaling, freqs)
        }
        "hf_longrope" => {
            let scaling = HfScaling::LongRope {
                short_factor: &SHORT_FACTORS,
                long_factor: &LONG_FACTORS,
                factor: Some(16.0),
                original_max_position_embeddings: Some(4096),
                attention_factor: None,
            };
            hf_spec(d, 10_000.0, 65_536, scaling, freqs)
        }
        other => panic!("no spec for {other}"),
    }
}

#[derive(Clone, Copy)]
enum SpecAny<'f> {
    One(Spec<'static, 1>),
    OneExplicit(Spec<'f, 1>),
    Two(Spec<'static, 2>),
    Three(Spec<'static, 3>),
    Interleaved(Spec<'static, 3, rope2d::InterleavedAxes<3>>),
}

/// Rotates one head at integer `position` (as many axes as the spec has) without a table.
fn rotate_head_direct<const A: usize, P: Plan<A>>(
    spec: &Spec<'_, A, P>,
    v: &mut [f32],
    position: &[u32],
) {
    let position: [u32; A] = std::array::from_fn(|a| position[a]);
    Direct::new(spec)
        .unwrap()
        .rotate_head(v, position, Direction::Forward)
        .unwrap();
}

fn rotate_any(spec: &SpecAny<'_>, v: &mut [f32], position: &[u32]) {
    match spec {
        SpecAny::One(s) => rotate_head_direct(s, v, position),
        SpecAny::OneExplicit(s) => rotate_head_direct(s, v, position),
        SpecAny::Two(s) => rotate_head_direct(s, v, position),
        SpecAny::Three(s) => rotate_head_direct(s, v, position),
        SpecAny::Interleaved(s) => rotate_head_direct(s, v, position),
    }
}

/// Every preset against its f64 model, at positions up to 131 071 on every axis: each entry
/// (a unit vector rotated, read back as `(m·cos, m·sin)`) within 1.2e-7·m of the exact value,
/// and random heads within `(|a| + |b|) · 2.5e-7 · max(1, m)` of the exact rotation.
#[test]
fn presets_match_their_f64_models_at_every_position() {
    let mut rng = Rng(1);
    for model in models() {
        let mut freqs = vec![0f64; model.freqs.len()];
        let spec = spec_of(&model, &mut freqs);
        let axes = 1 + model.axes.iter().max().unwrap();
        let samples = if cfg!(miri) { 2 } else { 60 };
        for s in 0..samples {
            let position: Vec<u32> = (0..axes)
                .map(|_| match s {
                    0 => 131_071,
                    1 => 65_535,
                    _ => rng.below(131_072) as u32,
                })
                .collect();
            let coords: Vec<f64> = position.iter().map(|&p| f64::from(p)).collect();
            // Entries: a head of (1, 0) pairs rotates to (m·cos, m·sin).
            let mut unit = vec![0f32; model.head_dim];
            for k in 0..model.freqs.len() {
                unit[model.pair(k).0] = 1.0;
            }
            let want = model.rotate(&unit, &coords);
            let mut ours = unit.clone();
            rotate_any(&spec, &mut ours, &position);
            for (i, (o, w)) in ours.iter().zip(&want).enumerate() {
                let error = (f64::from(*o) - w).abs();
                assert!(
                    error <= 1.2e-7 * model.mscale,
                    "{} entry {i} at {position:?}: {error:e}",
                    model.name
                );
            }
            let v = rng.vector(model.head_dim);
            let want = model.rotate(&v, &coords);
            let mut ours = v.clone();
            rotate_any(&spec, &mut ours, &position);
            for k in 0..model.freqs.len() {
                let (i, j) = model.pair(k);
                let bound = (f64::from(v[i].abs()) + f64::from(v[j].abs()))
                    * 2.5e-7
                    * model.mscale.max(1.0);
                for e in [i, j] {
                    let error = (f64::from(ours[e]) - want[e]).abs();
                    assert!(
                        error <= bound,
                        "{} pair {k} at {position:?}: {error:e} > {bound:e}",
                        model.name
                    );
                }
            }
            // The partial-rotary tail passes bit for bit.
            for e in 2 * model.freqs.len()..model.head_dim {
                assert_eq!(
                    ours[e].to_bits(),
                    v[e].to_bits(),
                    "{} tail element {e}",
                    model.name
                );
            }
        }
    }
}

/// A preset equals its explicit form (its pairs' axes and f64 frequencies as a `pairs` file
/// lists them): within the rounding of the frequencies.
#[test]
fn presets_equal_their_explicit_forms() {
    let mut rng = Rng(2);
    for model in models() {
        let mut freqs = vec![0f64; model.freqs.len()];
        let spec = spec_of(&model, &mut freqs);
        let axes: Vec<u8> = model.axes.iter().map(|&a| a as u8).collect();
        for _ in 0..if cfg!(miri) { 1 } else { 40 } {
            let position: Vec<u32> = (0..3).map(|_| rng.below(4096) as u32).collect();
            let v = rng.vector(model.head_dim);
            let mut ours = v.clone();
            rotate_any(&spec, &mut ours, &position);
            let explicit = Spec::<3, _>::new(
                model.head_dim,
                model.layout,
                PerPair { axes: &axes },
                Freqs::Explicit(&model.freqs),
            )
            .with_mscale(model.mscale as f32);
            let mut theirs = v.clone();
            rotate_head_direct(&explicit, &mut theirs, &position);
            for (o, t) in ours.iter().zip(&theirs) {
                assert!(
                    (o - t).abs() <= 2e-6 * (1.0 + t.abs()),
                    "{}: {o} vs {t}",
                    model.name
                );
            }
        }
    }
}

/// `<R(p)q, R(p')k> = m² <q, R(p' − p)k>`: attention sees only the offset, per axis and
/// jointly, in 1, 2 and 3 dimensions.
#[test]
fn relativity_per_axis_and_jointly() {
    let mut rng = Rng(3);
    for model in models() {
        let mut freqs = vec![0f64; model.freqs.len()];
        let spec = spec_of(&model, &mut freqs);
        let d = model.head_dim;
        for case in 0..if cfg!(miri) { 2 } else { 30 } {
            let q = rng.vector(d);
            let k = rng.vector(d);
            let p: Vec<u32> = (0..3).map(|_| rng.below(1000) as u32).collect();
            // Move one of the model's axes only (the first `axes` cases), or all of them: by
            // at least 1, so that no case is the identity.
            let axes = model.axes.iter().max().map_or(1, |&a| a + 1);
            let p2: Vec<u32> = (0..3)
                .map(|a| {
                    if case < axes && a != case {
                        p[a]
                    } else {
                        p[a] + 1 + rng.below(500) as u32
                    }
                })
                .collect();
            let offset: Vec<u32> = p2.iter().zip(&p).map(|(b, a)| b - a).collect();
            let (mut rq, mut rk, mut rel) = (q.clone(), k.clone(), k.clone());
            rotate_any(&spec, &mut rq, &p);
            rotate_any(&spec, &mut rk, &p2);
            rotate_any(&spec, &mut rel, &offset);
            let m = model.mscale;
            let (lhs, rhs) = (dot(&rq, &rk), m * dot(&q, &rel));
            assert!(
                (lhs - rhs).abs() <= 2e-5 * d as f64 * m * m,
                "{}: {lhs} vs {rhs}",
                model.name
            );
        }
    }
}

/// Rotation scales every pair's norm by the magnitude `m` (norm preserved when m = 1), and
/// forward then inverse (the transpose) gives `m²·x`: the identity for every convention
/// without an attention factor.
#[test]
fn norm_and_inverse() {
    let mut rng = Rng(4);
    for model in models() {
        let mut freqs = vec![0f64; model.freqs.len()];
        let spec = spec_of(&model, &mut freqs);
        let d = model.head_dim;
        let m = model.mscale;
        for _ in 0..if cfg!(miri) { 1 } else { 20 } {
            let v = rng.vector(d);
            let p: Vec<u32> = (0..3).map(|_| rng.below(100_000) as u32).collect();
            let mut y = v.clone();
            rotate_any(&spec, &mut y, &p);
            for k in 0..model.freqs.len() {
                let (i, j) = model.pair(k);
                let before = (f64::from(v[i]).powi(2) + f64::from(v[j]).powi(2)).sqrt();
                let after = (f64::from(y[i]).powi(2) + f64::from(y[j]).powi(2)).sqrt();
                assert!(
                    (after - m * before).abs() <= 1e-6 * (1.0 + before),
                    "{} norm",
                    model.name
                );
            }
            let inverse = |v: &mut [f32]| match &spec {
                SpecAny::One(s) => inverse_direct(s, v, &p),
                SpecAny::OneExplicit(s) => inverse_direct(s, v, &p),
                SpecAny::Two(s) => inverse_direct(s, v, &p),
                SpecAny::Three(s) => inverse_direct(s, v, &p),
                SpecAny::Interleaved(s) => inverse_direct(s, v, &p),
            };
            inverse(&mut y);
            for (a, b) in v.iter().zip(&y) {
                let want = m * m * f64::from(*a);
                assert!(
                    (f64::from(*b) - want).abs() <= 2e-6 * (1.0 + want.abs()),
                    "{} inverse",
                    model.name
                );
            }
        }
    }
}

fn inverse_direct<const A: usize, P: Plan<A>>(
    spec: &Spec<'_, A, P>,
    v: &mut [f32],
    position: &[u32],
) {
    let position: [u32; A] = std::array::from_fn(|a| position[a]);
    Direct::new(spec)
        .unwrap()
        .rotate_head(v, position, Direction::Inverse)
        .unwrap();
}

/// 2-D RoPE is not 1-D RoPE over the flattened index: (r, c+1) and (r+1, c) are equally
/// close, where flattening would put them 1 and `cols` apart.
#[test]
fn two_d_differs_from_flattened_one_d() {
    let spec = preset::rope_vit(32);
    let mut storage = vec![[0f32; 2]; Table::storage_len(&spec, [8, 8]).unwrap()];
    let table = Table::build(&mut storage, &spec, [8, 8]).unwrap();
    let mut rng = Rng(5);
    let q = rng.vector(32);
    let at = |p: [u32; 2]| {
        let mut v = q.clone();
        table.rotate_head(&mut v, p, Direction::Forward).unwrap();
        v
    };
    let base = at([3, 3]);
    let right = dot(&base, &at([3, 4]));
    let down = dot(&base, &at([4, 3]));
    let mut flat = [0f32; 32].to_vec();
    let llama = Direct::new(&preset::llama(32)).unwrap();
    let flatten = |p: u32| {
        let mut v = q.clone();
        llama.rotate_head(&mut v, [p], Direction::Forward).unwrap();
        v
    };
    flat.copy_from_slice(&flatten(27));
    let (flat_right, flat_down) = (dot(&flat, &flatten(28)), dot(&flat, &flatten(35)));
    // Equal offsets in 2-D (the same pairs, other axis) give dot products of the same
    // magnitude; flattened, the row step is 8 positions and decorrelates much more.
    assert!(
        (right - down).abs() < (flat_right - flat_down).abs(),
        "{right} {down} {flat_right} {flat_down}"
    );
}

/// The coordinate maps against their f64 formulas: rescaled, centred and linspace tables.
#[test]
fn coordinate_modes_match_f64_model() {
    let mut rng = Rng(6);
    /// Coordinate of index `i` on an axis of `n`.
    type Map = fn(usize, usize) -> f64;
    let cases: [(Coords, Map); 3] = [
        (Coords::Rescale { reference: 16 }, |i, n| {
            i as f64 * 16.0 / n as f64
        }),
        (Coords::Centered, |i, n| {
            2.0 * (i as f64 + 0.5) / n as f64 - 1.0
        }),
        (
            Coords::Linspace {
                start: 3.0,
                stop: 37.333332,
            },
            |i, n| {
                let (start, stop) = (3.0f32, 37.333332f32);
                let step = (stop - start) / (n - 1) as f32;
                // torch.linspace of one value is `start`.
                f64::from(if n == 1 {
                    start
                } else if i < n / 2 {
                    start + i as f32 * step
                } else {
                    stop - (n - 1 - i) as f32 * step
                })
            },
        ),
    ];
    // Axes of one and two cells too (CogVideoX's grid of one row).
    for ((coords, coordinate), n) in cases
        .into_iter()
        .flat_map(|case| [(case, [7usize, 9]), (case, [1, 2])])
    {
        for layout in [Layout::Interleaved, Layout::Half] {
            let spec =
                preset::axial(32, layout, AxisOrder::RowFirst, 100.0).with_coords([coords; 2]);
            let mut storage = vec![[0f32; 2]; Table::storage_len(&spec, n).unwrap()];
            let table = Table::build(&mut storage, &spec, n)
                .unwrap()
                .with_backend(Backend::Scalar)
                .unwrap();
            let model = Model {
                name: "axial",
                head_dim: 32,
                layout,
                axes: sections(&[0, 1], &[8, 8], 100.0).0,
                freqs: sections(&[0, 1], &[8, 8], 100.0).1,
                mscale: 1.0,
            };
            for r in 0..n[0] {
                for c in 0..n[1] {
                    let v = rng.vector(32);
                    let mut ours = v.clone();
                    table
                        .rotate_head(&mut ours, [r as u32, c as u32], Direction::Forward)
                        .unwrap();
                    let want = model.rotate(&v, &[coordinate(r, n[0]), coordinate(c, n[1])]);
                    for (o, w) in ours.iter().zip(&want) {
                        assert!(
                            (f64::from(*o) - w).abs() <= 4e-6,
                            "{coords:?} ({r}, {c}): {o} vs {w}"
                        );
                    }
                }
            }
        }
    }
}

/// Accuracy is position independent: at 2^24 + 1, 2^31 and u32::MAX the rotation is as close
/// to an exact evaluation as at position 1.
#[test]
fn large_positions_stay_accurate() {
    let mut rng = Rng(7);
    // base 4 and head dim 4: frequencies 1 and 1/2 rad per position, exactly representable,
    // so the f64 angle `pos · f` is exact and f64 `sin`/`cos` reduce it correctly.
    let rotor = Direct::new(&preset::rope_1d(4, Layout::Interleaved, 4.0)).unwrap();
    for pos in [1u32, 65_535, 131_071, (1 << 24) + 1, 1 << 31, u32::MAX] {
        let v = rng.vector(4);
        let mut ours = v.clone();
        rotor
            .rotate_head(&mut ours, [pos], Direction::Forward)
            .unwrap();
        for k in 0..2 {
            let angle = f64::from(pos) * [1.0, 0.5][k];
            let (a, b) = (f64::from(v[2 * k]), f64::from(v[2 * k + 1]));
            let want = [
                a * angle.cos() - b * angle.sin(),
                a * angle.sin() + b * angle.cos(),
            ];
            for (o, w) in ours[2 * k..2 * k + 2].iter().zip(want) {
                assert!((f64::from(*o) - w).abs() <= 1e-6, "pos {pos}: {o} vs {w}");
            }
        }
    }
    // A table's rows past 65 535 (one phase step a row from row 0) are as close: every
    // entry within 1.2e-7 of the exact cos and sin.
    if cfg!(miri) {
        return;
    }
    let spec = preset::rope_1d(4, Layout::Interleaved, 4.0);
    let rows = 131_072;
    let mut storage = vec![[0f32; 2]; Table::storage_len(&spec, [rows]).unwrap()];
    let table = Table::build(&mut storage, &spec, [rows]).unwrap();
    for pos in [65_535, 65_536, 100_001, 131_071] {
        let entries = table.entries(0, pos).unwrap();
        for (k, &[c, s]) in entries.iter().enumerate() {
            let angle = pos as f64 * [1.0, 0.5][k];
            let (dc, ds) = (f64::from(c) - angle.cos(), f64::from(s) - angle.sin());
            assert!(
                dc.abs().max(ds.abs()) <= 1.2e-7,
                "row {pos}, pair {k}: {c} {s}"
            );
        }
    }
}

/// Non-integer real coordinates reduce exactly too, in 3-D.
#[test]
fn real_coordinates_match_f64_model() {
    let mut rng = Rng(8);
    let model = models().into_iter().find(|m| m.name == "wan").unwrap();
    let rotor = Direct::new(&preset::wan(128, 10_000.0)).unwrap();
    for _ in 0..if cfg!(miri) { 2 } else { 200 } {
        let coord = [rng.unit() * 300.0, rng.unit() * 0.01, rng.unit() * 4e4];
        let v = rng.vector(128);
        let mut ours = v.clone();
        rotor
            .rotate_coords(&mut ours, Shape::heads(1), &[coord], Direction::Forward)
            .unwrap();
        let want = model.rotate(&v, &coord.map(f64::from));
        for (o, w) in ours.iter().zip(&want) {
            assert!((f64::from(*o) - w).abs() <= 4e-6, "{coord:?}: {o} vs {w}");
        }
    }
}

/// The float32-angle mode reproduces float32 reference arithmetic: angles `fl(pos · inv_freq)`
/// with `inv_freq = fl(1 / fl(base^(2k/d)))`, computed here in f32 from the same formula.
#[test]
fn float32_angles_follow_float32_arithmetic() {
    let spec = preset::neox(64).with_precision(AnglePrecision::Float32);
    let rotor = Direct::new(&spec).unwrap();
    for pos in [1u32, 100, 511, 65_535] {
        let mut unit = vec![0f32; 64];
        unit[..32].fill(1.0);
        rotor
            .rotate_head(&mut unit, [pos], Direction::Forward)
            .unwrap();
        for k in 0..32 {
            let inv_freq = 1.0f32 / 10_000f32.powf(2.0 * k as f32 / 64.0);
            let angle = f64::from(pos as f32 * inv_freq);
            assert!(
                (f64::from(unit[k]) - angle.cos()).abs() <= 2e-7,
                "pos {pos} k {k}"
            );
            assert!(
                (f64::from(unit[k + 32]) - angle.sin()).abs() <= 2e-7,
                "pos {pos} k {k}"
            );
        }
    }
}

/// NaN and infinities in the data propagate to their own pair only.
#[test]
fn non_finite_data_stays_in_its_pair() {
    let spec = preset::rope_vit(8);
    let mut storage = vec![[0f32; 2]; Table::storage_len(&spec, [2, 2]).unwrap()];
    let table = Table::build(&mut storage, &spec, [2, 2]).unwrap();
    let mut x = vec![1.0f32; 4 * 8];
    x[8 + 2] = f32::NAN;
    x[16 + 5] = f32::INFINITY;
    table
        .rotate(
            &mut x,
            Shape::heads(1),
            Grid::new([2, 2]),
            Direction::Forward,
        )
        .unwrap();
    for (i, v) in x.iter().enumerate() {
        let poisoned = i == 10 || i == 11 || i == 20 || i == 21;
        assert_eq!(!v.is_finite(), poisoned, "index {i}: {v}");
    }
}

/// `HfRope::spec`'s frequencies against transformers' formulas in f64, with a partial rotary
/// dimension (`dim` is the rotary dimension, not `head_dim`), and LongRoPE's two factor lists
/// chosen by the sequence length (`seq_len > original`: the long ones).
#[test]
fn hf_frequencies_follow_the_rotary_dimension_and_the_sequence_length() {
    let (theta, head_dim, max_pos) = (10_000.0f64, 64usize, 4096usize);
    // partial_rotary_factor 0.5: a rotary dimension of 32, 16 pairs.
    let (dim, pairs) = (32.0f64, 16usize);
    let inv_freq = |k: usize, base: f64| base.powf(-((2 * k) as f64) / dim);
    let hf = |scaling| HfRope {
        rope_theta: theta,
        head_dim,
        partial_rotary_factor: 0.5,
        max_position_embeddings: max_pos,
        layout: Layout::Half,
        scaling,
    };
    let check = |rope: HfRope<'_>, seq_len: usize, want: &dyn Fn(usize) -> f64, what: &str| {
        assert_eq!(rope.pairs(), pairs, "{what}");
        let mut freqs = vec![0f64; pairs];
        let spec = rope.spec(seq_len, &mut freqs).unwrap();
        assert_eq!((spec.head_dim, spec.pairs()), (head_dim, pairs), "{what}");
        for (k, &f) in freqs.iter().enumerate() {
            let w = want(k);
            assert!((f - w).abs() <= 1e-12 * w, "{what} pair {k}: {f} vs {w}");
        }
    };
    check(
        hf(HfScaling::Linear { factor: 4.0 }),
        10,
        &|k| inv_freq(k, theta) / 4.0,
        "linear",
    );
    // Dynamic NTK: base · (factor · seq / max − (factor − 1))^(dim / (dim − 2)).
    let seq = 3 * max_pos;
    let base = theta * (2.0 * seq as f64 / max_pos as f64 - 1.0).powf(dim / (dim - 2.0));
    check(
        hf(HfScaling::Dynamic { factor: 2.0 }),
        seq,
        &|k| inv_freq(k, base),
        "dynamic",
    );
    let short: Vec<f64> = (0..pairs).map(|k| 1.0 + 0.25 * k as f64).collect();
    let long: Vec<f64> = (0..pairs).map(|k| 2.0 + 0.5 * k as f64).collect();
    let longrope = hf(HfScaling::LongRope {
        short_factor: &short,
        long_factor: &long,
        factor: None,
        original_max_position_embeddings: Some(1024),
        attention_factor: None,
    });
    for (seq_len, factors, what) in [
        (1024, &short, "longrope at the original length: short"),
        (1025, &long, "longrope past it: long"),
    ] {
        check(
            longrope,
            seq_len,
            &|k| inv_freq(k, theta) / factors[k],
            what,
        );
    }
}
