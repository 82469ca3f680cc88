//! Applies rope2d to files in the golden format (`../shared/golden/README.md`) and checks the
//! tolerances that format defines.
//!
//! ```text
//! cargo run --release --example golden -- FILE...
//! ```
//!
//! One line per file, then `N passed, M failed`; exit status 1 when any file fails or cannot
//! be read. Every file is rotated from its own description (`explicit`: the legacy kinds'
//! fields, or a `pairs` file's per-pair axes, frequencies and magnitude) and, when its
//! `spec.preset.family` names a preset of the crate, from that preset built with the file's
//! parameters and the preset's own token order (`preset <family>`); both must pass:
//!
//! - accuracy: |ours − expected_f64| ≤ 4e-6 for every value;
//! - compatibility: |ours − expected_ref| ≤ 1e-5 + 2.5e-7 · c · a per token, with c the
//!   token's largest |coordinate| and a = max(1, its largest |input|); shown as the largest
//!   ratio of the error to that bound (≤ 1 passes).
//!
//! 1-D `rope1d` files also run [`AnglePrecision::Float32`], which rounds angles as the float32
//! reference code does, against `expected_ref` at every position (≤ 1e-5).
//!
//! `tests/suite/golden.rs` runs the same code over the repository's copies in `tests/golden/`,
//! which hold a subset of each file's tokens (`token_index` lists their indices in the full
//! sequence).

use std::fmt;

use rope2d::{
    AnglePrecision, Coords, Direct, Direction, Error, Freqs, Grid, Layout, LearnedFreqs, PerPair,
    Piece, Plan, Shape, Spec, Table,
    preset::{self, AxisOrder, HfRope, HfScaling},
};
use serde_json::Value;

/// |ours − expected_f64| allowed everywhere.
pub const F64_TOLERANCE: f64 = 4e-6;
/// The compatibility bound: `REF_BASE + REF_SLOPE · c · a`.
pub const REF_BASE: f64 = 1e-5;
/// See [`REF_BASE`].
pub const REF_SLOPE: f64 = 2.5e-7;
/// Tables larger than this many entries are not built: such cases run tableless.
const MAX_TABLE_ENTRIES: usize = 1 << 22;

/// One golden file, parsed.
pub struct Case {
    pub name: String,
    pub root: Value,
    pub head_dim: usize,
    pub heads: usize,
    /// One coordinate list per token (file order).
    pub positions: Vec<Vec<f64>>,
    /// Indices of the file's tokens in the full sequence (subset copies), if any.
    pub token_index: Option<Vec<usize>>,
    pub input: Vec<f32>,
    pub expected_ref: Vec<f64>,
    pub expected_f64: Vec<f64>,
}

/// How well one rotation did.
#[derive(Clone, Debug)]
pub struct Score {
    pub label: String,
    /// Max |ours − expected_f64|.
    pub f64_error: f64,
    /// Max over tokens of |ours − expected_ref| / (1e-5 + 2.5e-7·c·a).
    pub ref_ratio: f64,
}

impl Score {
    pub fn passed(&self) -> bool {
        self.f64_error <= F64_TOLERANCE && self.ref_ratio <= 1.0
    }
}

/// The larger error, NaN the largest (`f64::max` drops a NaN: a NaN output would pass).
fn worst(a: f64, b: f64) -> f64 {
    if b.is_nan() || b > a { b } else { a }
}

impl fmt::Display for Score {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}: max|ours-f64| = {:.2e}, max|ours-ref|/bound = {:.3}",
            self.label,
            if self.passed() { "PASS" } else { "FAIL" },
            self.f64_error,
            self.ref_ratio
        )
    }
}

/// The result of one file: the explicit rotation, the preset's if any, and the float32-angle
/// mode's max |ours − expected_ref| for 1-D kinds.
pub struct Report {
    pub name: String,
    pub tokens: usize,
    pub scores: Vec<Score>,
    pub float32_ref_error: Option<f64>,
}

impl Report {
    pub fn passed(&self) -> bool {
        self.scores.iter().all(Score::passed)
            && self.float32_ref_error.is_none_or(|e| e <= REF_BASE)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} ({} tokens):",
            if self.passed() { "PASS" } else { "FAIL" },
            self.name,
            self.tokens
        )?;
        for (i, score) in self.scores.iter().enumerate() {
            write!(f, "{} {score}", if i == 0 { "" } else { " |" })?;
        }
        if let Some(e) = self.float32_ref_error {
            write!(f, " | float32 angles: max|ours-ref| = {e:.2e} (<= 1e-5)")?;
        }
        Ok(())
    }
}

fn field<'v>(value: &'v Value, key: &str) -> Result<&'v Value, String> {
    value.get(key).ok_or_else(|| format!("missing key `{key}`"))
}

fn text<'v>(value: &'v Value, key: &str) -> Result<&'v str, String> {
    field(value, key)?
        .as_str()
        .ok_or_else(|| format!("`{key}` is not a string"))
}

fn number(value: &Value, key: &str) -> Result<f64, String> {
    field(value, key)?
        .as_f64()
        .ok_or_else(|| format!("`{key}` is not a number"))
}

fn count(value: &Value, key: &str) -> Result<usize, String> {
    let n = field(value, key)?
        .as_u64()
        .ok_or_else(|| format!("`{key}` is not a count"))?;
    usize::try_from(n).map_err(|_| format!("`{key}` too large"))
}

fn counts<const N: usize>(value: &Value, key: &str) -> Result<[usize; N], String> {
    let list = field(value, key)?
        .as_array()
        .filter(|l| l.len() == N)
        .ok_or_else(|| format!("`{key}` must list {N} counts"))?;
    let mut out = [0; N];
    for (o, v) in out.iter_mut().zip(list) {
        *o = v
            .as_u64()
            .ok_or_else(|| format!("`{key}` must hold counts"))? as usize;
    }
    Ok(out)
}

/// All numbers of a nested array, depth first.
fn flatten(value: &Value, out: &mut Vec<f64>) -> Result<(), String> {
    match value {
        Value::Array(items) => items.iter().try_for_each(|item| flatten(item, out)),
        Value::Number(n) => n
            .as_f64()
            .map(|x| out.push(x))
            .ok_or_else(|| "bad number".to_string()),
        _ => Err("expected a number array".to_string()),
    }
}

fn numbers(value: &Value, key: &str, len: Option<usize>) -> Result<Vec<f64>, String> {
    let mut out = Vec::new();
    flatten(field(value, key)?, &mut out)?;
    if let Some(len) = len
        && out.len() != len
    {
        return Err(format!(
            "`{key}` holds {} numbers, expected {len}",
            out.len()
        ));
    }
    Ok(out)
}

fn layout(spec: &Value) -> Result<Layout, String> {
    match text(spec, "layout")? {
        "interleaved" => Ok(Layout::Interleaved),
        "half" => Ok(Layout::Half),
        other => Err(format!("unknown layout `{other}`")),
    }
}

/// A legacy kind's `coords` for its two axes `[row, col]`.
fn coords_2d(spec: &Value) -> Result<[Coords; 2], String> {
    let Some(coords) = spec.get("coords") else {
        return Ok([Coords::Index; 2]);
    };
    match text(coords, "mode")? {
        "index" => Ok([Coords::Index; 2]),
        "centered" => Ok([Coords::Centered; 2]),
        "rescale" => {
            let [rows, cols] = counts::<2>(coords, "ref_grid")?;
            let reference = |n: usize| Coords::Rescale {
                reference: n as u32,
            };
            Ok([reference(rows), reference(cols)])
        }
        other => Err(format!("unknown coords mode `{other}`")),
    }
}

/// Parses a golden file's text.
pub fn parse(name: &str, json: &str) -> Result<Case, String> {
    let root: Value = serde_json::from_str(json).map_err(|e| format!("not JSON: {e}"))?;
    let head_dim = count(&root, "head_dim")?;
    let heads = count(&root, "heads")?;
    let positions: Vec<Vec<f64>> = field(&root, "positions")?
        .as_array()
        .ok_or("`positions` is not an array")?
        .iter()
        .map(|p| {
            p.as_array()
                .and_then(|p| p.iter().map(Value::as_f64).collect::<Option<Vec<_>>>())
                .ok_or_else(|| "a position is not an array of numbers".to_string())
        })
        .collect::<Result<_, _>>()?;
    let token_index = match root.get("token_index") {
        Some(list) => Some(
            list.as_array()
                .and_then(|l| l.iter().map(|v| v.as_u64().map(|n| n as usize)).collect())
                .ok_or("`token_index` must list token indices")?,
        ),
        None => None,
    };
    let values = positions.len() * heads * head_dim;
    Ok(Case {
        name: name.to_string(),
        head_dim,
        heads,
        positions,
        token_index,
        input: numbers(&root, "input", Some(values))?
            .into_iter()
            .map(|x| x as f32)
            .collect(),
        expected_ref: numbers(&root, "expected_ref", Some(values))?,
        expected_f64: numbers(&root, "expected_f64", Some(values))?,
        root,
    })
}

impl Case {
    fn spec(&self) -> Result<&Value, String> {
        field(&self.root, "spec")
    }

    fn score(&self, label: String, out: &[f32]) -> Score {
        let token_len = self.heads * self.head_dim;
        let mut score = Score {
            label,
            f64_error: 0.0,
            ref_ratio: 0.0,
        };
        for (t, position) in self.positions.iter().enumerate() {
            let range = t * token_len..(t + 1) * token_len;
            let c = position.iter().fold(0f64, |m, x| m.max(x.abs()));
            let a = self.input[range.clone()]
                .iter()
                .fold(1f64, |m, &x| m.max(f64::from(x).abs()));
            let bound = REF_BASE + REF_SLOPE * c * a;
            for i in range {
                let ours = f64::from(out[i]);
                score.f64_error = worst(score.f64_error, (ours - self.expected_f64[i]).abs());
                score.ref_ratio =
                    worst(score.ref_ratio, (ours - self.expected_ref[i]).abs() / bound);
            }
        }
        score
    }

    /// Integer positions, if every coordinate is a non-negative integer below 2³².
    fn integer_positions<const A: usize>(&self) -> Option<Vec<[u32; A]>> {
        self.positions
            .iter()
            .map(|p| {
                let mut out = [0u32; A];
                if p.len() != A {
                    return None;
                }
                for (o, &x) in out.iter_mut().zip(p) {
                    if x < 0.0 || x.fract() != 0.0 || x >= 4_294_967_296.0 {
                        return None;
                    }
                    *o = x as u32;
                }
                Some(out)
            })
            .collect()
    }
}

fn err(e: Error) -> String {
    e.to_string()
}

/// Rotates the file's tokens, at the file's positions, by `spec`: with a table over the
/// smallest extents holding them (integer positions, table small enough), else tableless.
fn rotate_listed<const A: usize, P: Plan<A>>(
    case: &Case,
    spec: &Spec<'_, A, P>,
) -> Result<Vec<f32>, String> {
    let mut out = case.input.clone();
    let shape = Shape::heads(case.heads);
    let table_coords = spec.coords.iter().any(|c| *c != Coords::Index);
    match case.integer_positions::<A>() {
        Some(positions) => {
            let mut extents = [1usize; A];
            for p in &positions {
                for (e, &x) in extents.iter_mut().zip(p) {
                    *e = (*e).max(x as usize + 1);
                }
            }
            let len = Table::storage_len(spec, extents).map_err(err)?;
            if len <= MAX_TABLE_ENTRIES || table_coords {
                let mut storage = vec![[0f32; 2]; len];
                Table::build(&mut storage, spec, extents)
                    .map_err(err)?
                    .rotate_at(&mut out, shape, &positions, Direction::Forward)
                    .map_err(err)?;
            } else {
                Direct::new(spec)
                    .map_err(err)?
                    .rotate_at(&mut out, shape, &positions, Direction::Forward)
                    .map_err(err)?;
            }
        }
        None => {
            let coords: Vec<[f32; A]> = case
                .positions
                .iter()
                .map(|p| {
                    let mut out = [0f32; A];
                    for (o, &x) in out.iter_mut().zip(p) {
                        *o = x as f32;
                    }
                    out
                })
                .collect();
            Direct::new(spec)
                .map_err(err)?
                .rotate_coords(&mut out, shape, &coords, Direction::Forward)
                .map_err(err)?;
        }
    }
    Ok(out)
}

/// Rotates the file's tokens by `spec` with tables over `extents`, the tokens in the order
/// `order` generates (checked against the file's positions): the file's tokens are scattered
/// into a buffer of the whole sequence, rotated in one call, and read back.
fn rotate_generated<const A: usize, P: Plan<A>>(
    case: &Case,
    spec: &Spec<'_, A, P>,
    extents: [usize; A],
    order: &[Piece<A>],
    coordinates: Option<&dyn Fn(usize, u32) -> f64>,
) -> Result<Vec<f32>, String> {
    let generated = generate(order);
    let index: Vec<usize> = match &case.token_index {
        Some(index) => index.clone(),
        None => (0..case.positions.len()).collect(),
    };
    // A subset (`tests/golden/`) keeps the sequence's last token, so its index gives the
    // length too: an order with tokens missing or added at the end fails either way.
    let expected = index.last().map_or(0, |&last| last + 1);
    if generated.len() != expected {
        return Err(format!(
            "the preset's order has {} tokens, the file {}",
            generated.len(),
            expected
        ));
    }
    for (t, &i) in index.iter().enumerate() {
        let ours = generated
            .get(i)
            .ok_or_else(|| format!("token {i} past the preset's order"))?;
        let theirs = &case.positions[t];
        let same = ours.iter().enumerate().all(|(a, &x)| {
            let value = coordinates.map_or(f64::from(x), |map| map(a, x));
            theirs.get(a) == Some(&value)
        });
        if !same {
            return Err(format!(
                "token {i}: the preset's position {ours:?} is not the file's {theirs:?}"
            ));
        }
    }
    let token_len = case.heads * case.head_dim;
    let mut buffer = vec![0f32; generated.len() * token_len];
    for (t, &i) in index.iter().enumerate() {
        buffer[i * token_len..(i + 1) * token_len]
            .copy_from_slice(&case.input[t * token_len..(t + 1) * token_len]);
    }
    let mut storage = vec![[0f32; 2]; Table::storage_len(spec, extents).map_err(err)?];
    Table::build(&mut storage, spec, extents)
        .map_err(err)?
        .rotate(
            &mut buffer,
            Shape::heads(case.heads),
            order,
            Direction::Forward,
        )
        .map_err(err)?;
    let mut out = vec![0f32; case.input.len()];
    for (t, &i) in index.iter().enumerate() {
        out[t * token_len..(t + 1) * token_len]
            .copy_from_slice(&buffer[i * token_len..(i + 1) * token_len]);
    }
    Ok(out)
}

/// The positions a sequence of pieces describes, generated here from the pieces' documented
/// rules (and, for windows, the reference code's reshape), independently of the crate.
fn generate<const A: usize>(pieces: &[Piece<A>]) -> Vec<[u32; A]> {
    let mut out = Vec::new();
    for piece in pieces {
        match *piece {
            Piece::Run { run, count } => {
                for t in 0..count as u32 {
                    out.push(std::array::from_fn(|a| run.start[a] + t * run.step[a]));
                }
            }
            Piece::Grid { grid, repeat } => {
                for _ in 0..repeat {
                    out.extend(grid_cells(grid));
                }
            }
            Piece::Windows {
                grid,
                window,
                repeat,
            } => {
                // Qwen2-VL: hpos.reshape(h/m, m, w/m, m).permute(0, 2, 1, 3).flatten().
                let [rows, cols] = [grid.extents[A - 2], grid.extents[A - 1]];
                let outer: Vec<[u32; A]> = grid_cells(Grid {
                    origin: grid.origin,
                    extents: std::array::from_fn(|a| if a >= A - 2 { 1 } else { grid.extents[a] }),
                });
                for _ in 0..repeat {
                    for base in &outer {
                        for br in (0..rows).step_by(window) {
                            for bc in (0..cols).step_by(window) {
                                for r in br..(br + window).min(rows) {
                                    for c in bc..(bc + window).min(cols) {
                                        let mut p = *base;
                                        p[A - 2] += r as u32;
                                        p[A - 1] += c as u32;
                                        out.push(p);
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

fn grid_cells<const A: usize>(grid: Grid<A>) -> Vec<[u32; A]> {
    let n: usize = grid.extents.iter().product();
    (0..n)
        .map(|mut i| {
            let mut p = grid.origin;
            for a in (0..A).rev() {
                p[a] += (i % grid.extents[a]) as u32;
                i /= grid.extents[a];
            }
            p
        })
        .collect()
}

/// A legacy kind (`rope1d`, `axial2d`, `mixed2d`), from its fields.
fn legacy(case: &Case, spec: &Value, kind: &str) -> Result<Report, String> {
    let freq_scale = spec
        .get("freq_scale")
        .and_then(Value::as_f64)
        .unwrap_or(1.0);
    let base = || -> Result<Freqs<'static>, String> {
        Ok(Freqs::Base {
            base: number(spec, "base")?,
            freq_scale,
        })
    };
    let d = case.head_dim;
    let mut float32_ref_error = None;
    let out = match kind {
        "rope1d" => {
            let mut rope = preset::rope_1d(d, layout(spec)?, 2.0);
            rope.freqs = base()?;
            let float32 = rotate_listed(case, &rope.with_precision(AnglePrecision::Float32))?;
            float32_ref_error = Some(
                float32
                    .iter()
                    .zip(&case.expected_ref)
                    .map(|(&o, &r)| (f64::from(o) - r).abs())
                    .fold(0.0, worst),
            );
            rotate_listed(case, &rope)?
        }
        "axial2d" => {
            let order = match text(spec, "first_axis")? {
                "col" => AxisOrder::ColFirst,
                "row" => AxisOrder::RowFirst,
                other => return Err(format!("unknown first_axis `{other}`")),
            };
            let mut rope =
                preset::axial(d, layout(spec)?, order, 2.0).with_coords(coords_2d(spec)?);
            rope.freqs = base()?;
            rotate_listed(case, &rope)?
        }
        "mixed2d" => {
            let freqs = field(&case.root, "freqs")?;
            let n = case.heads * d / 2;
            let to_f32 = |v: Vec<f64>| v.into_iter().map(|x| x as f32).collect::<Vec<f32>>();
            let (x, y) = (
                to_f32(numbers(freqs, "x", Some(n))?),
                to_f32(numbers(freqs, "y", Some(n))?),
            );
            let mut rope = preset::rope_mixed(d, case.heads, LearnedFreqs { x: &x, y: &y });
            rope.layout = layout(spec)?;
            rope = rope.with_coords(coords_2d(spec)?);
            rotate_listed(case, &rope)?
        }
        other => return Err(format!("unknown kind `{other}`")),
    };
    let mut scores = vec![case.score("explicit".into(), &out)];
    if let Some((family, out)) = legacy_preset(case, spec, kind)? {
        scores.push(case.score(format!("preset {family}"), &out));
    }
    Ok(Report {
        name: case.name.clone(),
        tokens: case.positions.len(),
        scores,
        float32_ref_error,
    })
}

/// An older-format file through the crate's named preset for the reference code its `source`
/// names, when the file was run with that preset's parameters (`None` otherwise: rope-vit at
/// base 10 000, and RoPE-Mixed, whose learned frequencies come from the file itself).
fn legacy_preset(
    case: &Case,
    spec: &Value,
    kind: &str,
) -> Result<Option<(&'static str, Vec<f32>)>, String> {
    let source = text(&case.root, "source")?;
    let base = number(spec, "base")?;
    let d = case.head_dim;
    let from = |what: &str| source.contains(what);
    let two_d = match (kind, base) {
        ("axial2d", 100.0) if from("compute_axial_cis") || from("rope_2d.py") => {
            Some(("rope_vit", preset::rope_vit(d)))
        }
        ("axial2d", 10_000.0) if from("RotaryEmbeddingCat") => Some(("eva02", preset::eva02(d))),
        ("axial2d", 100.0) if from("RotaryEmbeddingDinoV3") => Some(("dinov3", preset::dinov3(d))),
        _ => None,
    };
    if let Some((family, rope)) = two_d {
        return Ok(Some((family, rotate_listed(case, &rope)?)));
    }
    let one_d = match (kind, base) {
        ("rope1d", 10_000.0) if from("precompute_freqs_cis") => Some(("llama", preset::llama(d))),
        ("rope1d", 10_000.0) if from("LlamaRotaryEmbedding") => Some(("neox", preset::neox(d))),
        _ => None,
    };
    match one_d {
        Some((family, rope)) => Ok(Some((family, rotate_listed(case, &rope)?))),
        None => Ok(None),
    }
}

/// A `pairs` file from its per-pair description.
fn explicit_pairs<const A: usize>(case: &Case, spec: &Value) -> Result<Vec<f32>, String> {
    let pairs = field(spec, "pair_axis")?
        .as_array()
        .ok_or("`pair_axis` is not an array")?
        .len();
    let axes: Vec<u8> = field(spec, "pair_axis")?
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            v.as_u64()
                .map(|a| a as u8)
                .ok_or("`pair_axis` must hold axes")
        })
        .collect::<Result<_, _>>()?;
    let freqs = numbers(spec, "pair_freq", Some(pairs))?;
    let elems = numbers(spec, "pair_elems", Some(2 * pairs))?;
    let interleaved = (0..pairs)
        .all(|k| elems[2 * k] == (2 * k) as f64 && elems[2 * k + 1] == (2 * k + 1) as f64);
    let half =
        (0..pairs).all(|k| elems[2 * k] == k as f64 && elems[2 * k + 1] == (k + pairs) as f64);
    let layout = match (interleaved, half) {
        (true, _) => Layout::Interleaved,
        (_, true) => Layout::Half,
        _ => return Err("`pair_elems` is neither interleaved nor half pairing".into()),
    };
    let spec_ = Spec::<A, _>::new(
        case.head_dim,
        layout,
        PerPair { axes: &axes },
        Freqs::Explicit(&freqs),
    )
    .with_mscale(number(spec, "mscale")? as f32);
    rotate_listed(case, &spec_)
}

fn axes_count(spec: &Value) -> Result<usize, String> {
    Ok(field(spec, "axes")?
        .as_array()
        .ok_or("`axes` is not an array")?
        .len())
}

/// Extents covering every integer position of the case (at least 1 per axis).
fn covering<const A: usize>(case: &Case) -> [usize; A] {
    let mut extents = [1usize; A];
    for p in &case.positions {
        for (e, &x) in extents.iter_mut().zip(p) {
            *e = (*e).max(x.max(0.0) as usize + 1);
        }
    }
    extents
}

/// The family's preset, if the crate has it: the label and the output.
fn preset_pairs(case: &Case, spec: &Value) -> Result<Option<(String, Vec<f32>)>, String> {
    let Some(preset) = spec.get("preset") else {
        return Ok(None);
    };
    let family = text(preset, "family")?;
    let d = case.head_dim;
    let theta = || number(preset, "theta").or_else(|_| number(preset, "rope_theta"));
    let out = match family {
        "flux" => {
            let spec = preset::flux(counts(preset, "axes_dim")?, theta()?);
            let sequence = field(preset, "sequence")?;
            let image = counts::<2>(sequence, "image")?;
            let reference = counts::<2>(sequence, "reference_image").unwrap_or([0, 0]);
            let order = preset::flux_positions(count(sequence, "text")?, image, reference);
            let extents = [2, image[0].max(reference[0]), image[1].max(reference[1])];
            rotate_generated(case, &spec, extents, &order, None)?
        }
        "wan" | "hunyuan_video" => {
            let spec = if family == "wan" {
                preset::wan(d, theta()?)
            } else {
                preset::hunyuan_video(counts(preset, "rope_dim")?, theta()?)
            };
            let grid = counts::<3>(&case.root, "grid")?;
            let order = [Piece::Grid {
                grid: Grid::new(grid),
                repeat: 1,
            }];
            rotate_generated(case, &spec, grid, &order, None)?
        }
        "cogvideox" => {
            let grid = counts::<3>(preset, "grid")?;
            let base_grid = counts::<2>(preset, "base_grid")?;
            let crops = preset::cogvideox_crops([grid[1], grid[2]], base_grid);
            let stored = numbers(preset, "crops_coords", Some(4))?;
            if stored != [crops[0][0], crops[0][1], crops[1][0], crops[1][1]] {
                return Err(format!(
                    "cogvideox_crops gives {crops:?}, the file {stored:?}"
                ));
            }
            let spec = preset::cogvideox(d, theta()?, grid, crops);
            let order = [Piece::Grid {
                grid: Grid::new(grid),
                repeat: 1,
            }];
            // The table's coordinates are these linspace values, which the file stores.
            let linspace = |axis: usize, i: u32| -> f64 {
                match spec.coords[axis] {
                    Coords::Linspace { start, stop } => {
                        let n = grid[axis];
                        let step = (stop - start) / (n.saturating_sub(1).max(1)) as f32;
                        let i = i as usize;
                        f64::from(if i < n / 2 {
                            start + i as f32 * step
                        } else {
                            stop - (n - 1 - i) as f32 * step
                        })
                    }
                    _ => f64::from(i),
                }
            };
            rotate_generated(case, &spec, grid, &order, Some(&linspace))?
        }
        "qwen2_vl_vision" => {
            let spec = preset::qwen2_vl_vision(d, theta()?);
            let thw = counts::<3>(preset, "grid_thw")?;
            let order =
                preset::qwen2_vl_vision_positions(thw, count(preset, "spatial_merge_size")?);
            rotate_generated(case, &spec, [thw[1], thw[2]], &order, None)?
        }
        "qwen2_vl_mrope" | "qwen3_vl_mrope_interleaved" => {
            let sequence = field(preset, "sequence")?;
            let order = preset::mrope_positions(
                count(sequence, "text_before")?,
                counts(sequence, "image_grid_thw")?,
                count(sequence, "spatial_merge_size")?,
                count(sequence, "text_after")?,
            );
            let extents = covering::<3>(case);
            let section = counts(preset, "mrope_section")?;
            if family == "qwen2_vl_mrope" {
                rotate_generated(
                    case,
                    &preset::qwen2_vl_mrope(d, theta()?, section),
                    extents,
                    &order,
                    None,
                )?
            } else {
                rotate_generated(
                    case,
                    &preset::qwen3_vl_mrope(d, theta()?, section),
                    extents,
                    &order,
                    None,
                )?
            }
        }
        "pixtral" => {
            let spec = preset::pixtral(d, theta()?);
            let grid = counts::<2>(&case.root, "grid")?;
            let order = [Piece::Grid {
                grid: Grid::new(grid),
                repeat: 1,
            }];
            rotate_generated(case, &spec, grid, &order, None)?
        }
        "sam2" => {
            let spec = preset::sam2(d, theta()?);
            let [x, y] = counts::<2>(preset, "feat_sizes")?;
            let frame = [y, x];
            let order = match text(preset, "side")? {
                "key" => preset::sam2_key_positions(
                    frame,
                    count(preset, "memory_frames")?,
                    count(preset, "num_k_exclude_rope")?,
                )
                .to_vec(),
                _ => vec![Piece::Grid {
                    grid: Grid::new(frame),
                    repeat: 1,
                }],
            };
            rotate_generated(case, &spec, frame, &order, None)?
        }
        "gpt_neox" | "glm" => {
            let factor = number(preset, "partial_rotary_factor")?;
            let spec = if family == "gpt_neox" {
                preset::gpt_neox(d, factor, theta()?)
            } else {
                preset::glm(d, factor, theta()?)
            };
            rotate_listed(case, &spec)?
        }
        hf if hf.starts_with("hf_rope_") => {
            let factor = || number(preset, "factor");
            let original = || count(preset, "original_max_position_embeddings");
            let scaling = match text(preset, "rope_type")? {
                "linear" => HfScaling::Linear { factor: factor()? },
                "dynamic" => HfScaling::Dynamic { factor: factor()? },
                "yarn" => HfScaling::Yarn {
                    factor: factor()?,
                    original_max_position_embeddings: original().ok(),
                    beta_fast: number(preset, "beta_fast").unwrap_or(32.0),
                    beta_slow: number(preset, "beta_slow").unwrap_or(1.0),
                    attention_factor: number(preset, "attention_factor").ok(),
                    mscale: number(preset, "mscale").ok(),
                    mscale_all_dim: number(preset, "mscale_all_dim").ok(),
                    truncate: preset
                        .get("truncate")
                        .and_then(Value::as_bool)
                        .unwrap_or(true),
                },
                "llama3" => HfScaling::Llama3 {
                    factor: factor()?,
                    low_freq_factor: number(preset, "low_freq_factor")?,
                    high_freq_factor: number(preset, "high_freq_factor")?,
                    original_max_position_embeddings: original()?,
                },
                "longrope" => {
                    let short = numbers(preset, "short_factor", None)?;
                    let long = numbers(preset, "long_factor", None)?;
                    let hf = HfRope {
                        rope_theta: theta()?,
                        head_dim: d,
                        partial_rotary_factor: number(preset, "partial_rotary_factor")
                            .unwrap_or(1.0),
                        max_position_embeddings: count(preset, "max_position_embeddings")?,
                        layout: Layout::Half,
                        scaling: HfScaling::LongRope {
                            short_factor: &short,
                            long_factor: &long,
                            factor: number(preset, "factor").ok(),
                            original_max_position_embeddings: original().ok(),
                            attention_factor: number(preset, "attention_factor").ok(),
                        },
                    };
                    let mut freqs = vec![0f64; hf.pairs()];
                    let spec = hf
                        .spec(count(preset, "seq_len")?, &mut freqs)
                        .map_err(err)?;
                    let out = rotate_listed(case, &spec)?;
                    return Ok(Some((format!("preset {family}"), out)));
                }
                "default" => HfScaling::Default,
                other => return Err(format!("unknown rope_type `{other}`")),
            };
            let hf = HfRope {
                rope_theta: theta()?,
                head_dim: d,
                partial_rotary_factor: number(preset, "partial_rotary_factor").unwrap_or(1.0),
                max_position_embeddings: count(preset, "max_position_embeddings")?,
                layout: Layout::Half,
                scaling,
            };
            let mut freqs = vec![0f64; hf.pairs()];
            let spec = hf
                .spec(count(preset, "seq_len")?, &mut freqs)
                .map_err(err)?;
            rotate_listed(case, &spec)?
        }
        _ => return Ok(None),
    };
    Ok(Some((format!("preset {family}"), out)))
}

/// A `pairs` file: explicit, then the preset.
fn pairs(case: &Case, spec: &Value) -> Result<Report, String> {
    let out = match axes_count(spec)? {
        1 => explicit_pairs::<1>(case, spec)?,
        2 => explicit_pairs::<2>(case, spec)?,
        3 => explicit_pairs::<3>(case, spec)?,
        4 => explicit_pairs::<4>(case, spec)?,
        n => return Err(format!("{n} axes: the runner handles 1 to 4")),
    };
    let mut scores = vec![case.score("explicit".into(), &out)];
    if let Some((label, out)) = preset_pairs(case, spec)? {
        scores.push(case.score(label, &out));
    }
    Ok(Report {
        name: case.name.clone(),
        tokens: case.positions.len(),
        scores,
        float32_ref_error: None,
    })
}

/// Judges one parsed case.
pub fn run_case(case: &Case) -> Result<Report, String> {
    let spec = case.spec()?;
    match text(spec, "kind")? {
        "pairs" => pairs(case, spec),
        kind => legacy(case, spec, kind),
    }
}

/// Reads, rotates and judges one file.
pub fn run_file(path: &std::path::Path) -> Result<Report, String> {
    let json = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("?");
    run_case(&parse(name, &json)?)
}

#[allow(dead_code)]
fn main() -> std::process::ExitCode {
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        eprintln!("usage: golden FILE...");
        return std::process::ExitCode::from(2);
    }
    let (mut passed, mut failed) = (0, 0);
    for file in &files {
        match run_file(std::path::Path::new(file)) {
            Ok(report) => {
                println!("{report}");
                if report.passed() {
                    passed += 1
                } else {
                    failed += 1
                }
            }
            Err(e) => {
                println!("FAIL {file}: {e}");
                failed += 1;
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed == 0 {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    }
}
