//! Draws the README's two plots as SVG files in `docs/`:
//!
//! - `accuracy.svg`, computed here: the largest error against `f64` of a 1-D RoPE table entry
//!   (LLaMA, d 128, base 10 000) over every position 1 … 2²⁰, for rope2d's exact angles and
//!   for the float32 angle formation the reference implementations use
//!   ([`AnglePrecision::Float32`], which reproduces them);
//! - `speed.svg`, from criterion runs (`cargo bench -p rope2d-bench`, read from
//!   `target/criterion` or from the run directories given): time per call of each backend and
//!   `auto` divided by the in-place `x = -x` stream of the same bytes, on every benchmark
//!   shape. Given several runs (copies of `target/criterion`), each bar is the median of the
//!   runs' ratios: on a shared machine the neighbours' load changes between runs, and the
//!   ids of one run, measured seconds apart, mostly share its phase.
//!
//! It also prints how far a bf16 rotation lands from `f64` two ways: rounding after every
//! operation as PyTorch does in bf16 (`q·cos + rotate_half(q)·sin` with `cos`, `sin` cast to
//! bf16), and rope2d's bf16 path (exact load, `f32` rotation, one rounding).
//!
//! ```text
//! cargo run --release --example plots [-- [--out OUT_DIR] CRITERION_DIR...]
//! ```
//!
//! (`OUT_DIR` defaults to `docs`, the criterion directories to `target/criterion`.)

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use rope2d::half::bf16;
use rope2d::{AnglePrecision, Direct, Direction, Layout, Run, Shape, preset};

const HEAD_DIM: usize = 128;
const LOG2_LAST: u32 = 20;
/// Bins per octave of position.
const BINS_PER_OCTAVE: usize = 4;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = root.join("docs");
    let mut runs = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--out" => out = args.next().ok_or("--out needs a directory")?.into(),
            _ if arg.starts_with('-') => return Err(format!("unknown option {arg}").into()),
            _ => runs.push(PathBuf::from(arg)),
        }
    }
    if runs.is_empty() {
        runs.push(root.join("target/criterion"));
    }
    std::fs::create_dir_all(&out)?;

    // The two curves on two threads: each is 2^20 positions of f64 references (most of the
    // example's time in the unoptimised build CI runs).
    let (exact, float32) = std::thread::scope(|s| {
        let float32 = s.spawn(|| max_errors(AnglePrecision::Float32));
        (max_errors(AnglePrecision::Exact), float32.join())
    });
    let exact = exact?;
    let float32 = float32.map_err(|_| "the float32 curve's thread panicked")??;
    let worst = |e: &[f64]| e.iter().copied().fold(0.0, f64::max);
    println!(
        "accuracy: exact {:.2e}, float32 angles {:.2e} (max over positions 1 .. 2^{LOG2_LAST})",
        worst(&exact),
        worst(&float32)
    );
    std::fs::write(out.join("accuracy.svg"), accuracy_svg(&exact, &float32))?;
    bf16_comparison()?;

    match speed_svg(&runs) {
        Some(svg) => std::fs::write(out.join("speed.svg"), svg)?,
        None => println!(
            "speed: no criterion results in {} (run `cargo bench -p rope2d-bench` first); speed.svg not written",
            runs[0].display()
        ),
    }
    println!("wrote {}", out.display());
    Ok(())
}

/// Per position bin (`BINS_PER_OCTAVE` per octave of 1 … 2²⁰), the largest |entry − f64| of
/// any cos or sin of the LLaMA table at those positions.
fn max_errors(precision: AnglePrecision) -> Result<Vec<f64>, rope2d::Error> {
    const CHUNK: usize = 4096;
    let rope = Direct::new(&preset::llama(HEAD_DIM).with_precision(precision))?;
    let freqs: Vec<f64> = (0..HEAD_DIM / 2)
        .map(|k| 10_000f64.powf(-2.0 * k as f64 / HEAD_DIM as f64))
        .collect();
    let mut bins = vec![0.0f64; LOG2_LAST as usize * BINS_PER_OCTAVE + 1];
    let mut x = vec![0.0f32; CHUNK * HEAD_DIM];
    let mut positions = vec![[0u32; 1]; CHUNK];
    let last = 1u32 << LOG2_LAST;
    let mut start = 1u32;
    while start <= last {
        let n = CHUNK.min((last - start + 1) as usize);
        for (i, p) in positions[..n].iter_mut().enumerate() {
            *p = [start + i as u32];
        }
        // Each pair (1, 0) rotates to (cos, sin): the table entry itself.
        let x = &mut x[..n * HEAD_DIM];
        for pair in x.chunks_exact_mut(2) {
            pair.copy_from_slice(&[1.0, 0.0]);
        }
        rope.rotate_at(x, Shape::heads(1), &positions[..n], Direction::Forward)?;
        for (token, &[p]) in x.chunks_exact(HEAD_DIM).zip(&positions[..n]) {
            let mut err = 0.0f64;
            for (pair, &f) in token.chunks_exact(2).zip(&freqs) {
                let (s, c) = (f64::from(p) * f).sin_cos();
                err = err
                    .max((f64::from(pair[0]) - c).abs())
                    .max((f64::from(pair[1]) - s).abs());
            }
            let bin = ((f64::from(p).log2() * BINS_PER_OCTAVE as f64).floor() as usize)
                .min(bins.len() - 1);
            bins[bin] = bins[bin].max(err);
        }
        start += n as u32;
    }
    Ok(bins)
}

/// bf16, NeoX layout (`rotate_half`), d 128, positions 0 … 4 095, inputs uniform in
/// [−4, 4): the largest and mean |error| against the f64 rotation of the same bf16 inputs,
/// and the share of outputs more than 1 ulp (the bf16 spacing at the exact result) off, for
/// PyTorch's bf16 arithmetic and for rope2d.
fn bf16_comparison() -> Result<(), rope2d::Error> {
    const D: usize = 128;
    const TOKENS: usize = 4096;
    let round = |v: f32| bf16::from_f32(v).to_f32();
    let ulp = |v: f64| 2f64.powf(v.abs().log2().floor().max(-126.0) - 7.0);
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let input: Vec<bf16> = (0..TOKENS * D)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            bf16::from_f32((seed >> 40) as f32 / (1u64 << 24) as f32 * 8.0 - 4.0)
        })
        .collect();
    let mut ours = input.clone();
    let direct = Direct::new(&preset::rope_1d(D, Layout::Half, 10_000.0))?;
    direct.rotate(
        &mut ours,
        Shape::heads(1),
        Run::from([0]),
        Direction::Forward,
    )?;
    // [max |err|, Σ |err|, outputs > 1 ulp off] for PyTorch-style and for rope2d.
    let mut stats = [[0f64; 3]; 2];
    for p in 0..TOKENS {
        let x = &input[p * D..][..D];
        for k in 0..D / 2 {
            // inv_freq and the angle in f32, cos/sin cast to bf16, as the reference does.
            let inv = 1.0 / 10_000f32.powf((2 * k) as f32 / D as f32);
            let angle = p as f32 * inv;
            let (c, s) = (round(angle.cos()), round(angle.sin()));
            let exact_angle = p as f64 * 10_000f64.powf(-2.0 * k as f64 / D as f64);
            let (es, ec) = exact_angle.sin_cos();
            let (a, b) = (x[k].to_f32(), x[k + D / 2].to_f32());
            let torch = [
                round(round(a * c) + round(-b * s)),
                round(round(b * c) + round(a * s)),
            ];
            let exact = [
                f64::from(a) * ec - f64::from(b) * es,
                f64::from(b) * ec + f64::from(a) * es,
            ];
            let got = [ours[p * D + k].to_f32(), ours[p * D + k + D / 2].to_f32()];
            for i in 0..2 {
                for (stat, value) in stats.iter_mut().zip([torch[i], got[i]]) {
                    let err = (f64::from(value) - exact[i]).abs();
                    stat[0] = stat[0].max(err);
                    stat[1] += err;
                    stat[2] += f64::from(u8::from(err > ulp(exact[i])));
                }
            }
        }
    }
    let n = (TOKENS * D) as f64;
    for (name, [max, sum, off]) in [
        ("PyTorch-style bf16 (rounded after every op)", stats[0]),
        ("rope2d bf16", stats[1]),
    ] {
        println!(
            "{name}, d {D}, positions 0..{TOKENS}, inputs in [-4, 4): max |err| {max:.2e}, mean {:.2e}, {off} of {n} outputs ({:.2}%) more than 1 ulp off",
            sum / n,
            100.0 * off / n
        );
    }
    Ok(())
}

/// A log–log line chart of both error curves.
fn accuracy_svg(exact: &[f64], float32: &[f64]) -> String {
    let (w, h, left, right, top, bottom) = (760.0, 420.0, 80.0, 20.0, 50.0, 60.0);
    let (x0, x1, y0, y1) = (0.0, f64::from(LOG2_LAST), -9.0, -1.0);
    let px = |log2p: f64| left + (log2p - x0) / (x1 - x0) * (w - left - right);
    let py = |err: f64| {
        let l = err.max(1e-9).log10().clamp(y0, y1);
        top + (y1 - l) / (y1 - y0) * (h - top - bottom)
    };
    let mut svg = header(
        w,
        h,
        "Largest table-entry error against f64, 1-D RoPE (d 128, base 10 000)",
    );
    for e in (y0 as i32)..=(y1 as i32) {
        let y = py(10f64.powi(e));
        grid_line(&mut svg, left, y, w - right, y);
        label(&mut svg, left - 8.0, y + 4.0, "end", &format!("1e{e}"));
    }
    for p in (0..=LOG2_LAST).step_by(2) {
        let x = px(f64::from(p));
        grid_line(&mut svg, x, top, x, h - bottom);
        label(&mut svg, x, h - bottom + 18.0, "middle", &format!("2^{p}"));
    }
    label(
        &mut svg,
        (left + w - right) / 2.0,
        h - 15.0,
        "middle",
        "position",
    );
    let y = py(1.2e-7);
    let _ = write!(
        svg,
        r##"<line x1="{left}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#2a7" stroke-dasharray="6 4"/>"##,
        w - right
    );
    label(
        &mut svg,
        w - right - 4.0,
        y - 6.0,
        "end",
        "rope2d's stated bound, 1.2e-7",
    );
    for (errors, colour, name, dy) in [
        (
            float32,
            "#d33",
            "float32 angles (the reference code's)",
            0.0,
        ),
        (exact, "#25b", "rope2d, exact phase reduction", 18.0),
    ] {
        let points: Vec<String> = errors
            .iter()
            .enumerate()
            .map(|(b, &e)| format!("{:.1},{:.1}", px(b as f64 / BINS_PER_OCTAVE as f64), py(e)))
            .collect();
        let _ = write!(
            svg,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"/>"#,
            points.join(" ")
        );
        let _ = write!(
            svg,
            r#"<rect x="{}" y="{}" width="14" height="4" fill="{colour}"/>"#,
            left + 12.0,
            top + 8.0 + dy
        );
        label(&mut svg, left + 32.0, top + 14.0 + dy, "start", name);
    }
    svg.push_str("</svg>\n");
    svg
}

/// Grouped bars: each backend's median ÷ the faster stream, per benchmark group (log scale).
/// Over several runs, the median of the runs' ratios (the groups of the first run).
fn speed_svg(runs: &[PathBuf]) -> Option<String> {
    const IDS: [(&str, &str); 5] = [
        ("scalar", "#999"),
        ("portable", "#c9a"),
        ("avx2", "#5a5"),
        ("avx512", "#25b"),
        ("auto", "#d33"),
    ];
    let mut groups: Vec<(String, Vec<Option<f64>>)> = Vec::new();
    let mut names: Vec<PathBuf> = std::fs::read_dir(runs.first()?)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("rope2d_"))
        })
        .collect();
    names.sort();
    for dir in names {
        let group = dir.file_name()?;
        // An id's criterion median in one run.
        let median = |run: &PathBuf, id: &str| -> Option<f64> {
            let path = run.join(group).join(id).join("new/estimates.json");
            let v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
            v["median"]["point_estimate"].as_f64()
        };
        // Per run, the id ÷ the faster stream of that run (ids measured seconds apart mostly
        // share a phase of the machine's load); over the runs, the median (an id missing
        // from any run is left out).
        let ratio = |id: &str| -> Option<f64> {
            let mut ratios = runs
                .iter()
                .map(|run| {
                    let stream = [median(run, "stream"), median(run, "stream_avx512")]
                        .into_iter()
                        .flatten()
                        .reduce(f64::min)?;
                    Some(median(run, id)? / stream)
                })
                .collect::<Option<Vec<f64>>>()?;
            ratios.sort_by(f64::total_cmp);
            let mid = ratios.len() / 2;
            Some(if ratios.len() % 2 == 1 {
                ratios[mid]
            } else {
                (ratios[mid - 1] + ratios[mid]) / 2.0
            })
        };
        let ratios: Vec<Option<f64>> = IDS.iter().map(|(id, _)| ratio(id)).collect();
        if ratios.iter().all(Option::is_none) {
            continue;
        }
        let name = group.to_string_lossy()["rope2d_".len()..].to_string();
        groups.push((name, ratios));
    }
    if groups.is_empty() {
        return None;
    }
    let (w, h, left, right, top, bottom) = (960.0, 440.0, 70.0, 20.0, 60.0, 90.0);
    let (y0, y1) = (-0.5f64, 2.3f64); // log10 of the ratio: 0.32× … 200×
    let py = |r: f64| top + (y1 - r.log10().clamp(y0, y1)) / (y1 - y0) * (h - top - bottom);
    let slot = (w - left - right) / groups.len() as f64;
    let bar = slot * 0.8 / IDS.len() as f64;
    let mut svg = header(
        w,
        h,
        &format!(
            "Time per call ÷ in-place stream of the same bytes ({}, {})",
            cpu_name(),
            match runs.len() {
                1 => "one run".to_string(),
                n => format!("medians of {n} runs"),
            }
        ),
    );
    for r in [0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0] {
        let y = py(r);
        grid_line(&mut svg, left, y, w - right, y);
        label(&mut svg, left - 8.0, y + 4.0, "end", &format!("{r}×"));
    }
    let base = py(1.0);
    for (g, (name, ratios)) in groups.iter().enumerate() {
        let x = left + g as f64 * slot + slot * 0.1;
        for (i, (r, (_, colour))) in ratios.iter().zip(IDS).enumerate() {
            let Some(r) = r else { continue };
            let y = py(*r);
            let _ = write!(
                svg,
                r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{colour}"><title>{name} {}: {r:.2}×</title></rect>"#,
                x + i as f64 * bar,
                y.min(base),
                bar * 0.9,
                (y - base).abs().max(1.0),
                IDS[i].0
            );
        }
        let (lx, ly) = (x + slot * 0.4, h - bottom + 12.0);
        let _ = write!(
            svg,
            r#"<text x="{lx:.1}" y="{ly:.1}" font-size="12" text-anchor="end" transform="rotate(-35 {lx:.1} {ly:.1})">{name}</text>"#
        );
    }
    for (i, (id, colour)) in IDS.iter().enumerate() {
        let x = left + 10.0 + i as f64 * 100.0;
        let _ = write!(
            svg,
            r#"<rect x="{x}" y="{}" width="14" height="10" fill="{colour}"/>"#,
            top - 24.0
        );
        label(&mut svg, x + 18.0, top - 15.0, "start", id);
    }
    svg.push_str("</svg>\n");
    Some(svg)
}

/// The CPU's name, with its family and model on x86 (a virtual CPU's name is often only
/// "Intel(R) Xeon(R) Processor", which says nothing about the core).
fn cpu_name() -> String {
    let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") else {
        return std::env::consts::ARCH.to_string();
    };
    let field = |name: &str| {
        info.lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(key, _)| key.trim() == name)
            .map(|(_, value)| value.trim())
    };
    let name = field("model name").unwrap_or(std::env::consts::ARCH);
    match (field("cpu family"), field("model")) {
        (Some(family), Some(model)) => format!("{name}, family {family}, model {model}"),
        _ => name.to_string(),
    }
}

fn header(w: f64, h: f64, title: &str) -> String {
    format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif"><rect width="{w}" height="{h}" fill="#fff"/><text x="{}" y="24" font-size="15" text-anchor="middle">{title}</text>"##,
        w / 2.0
    )
}

fn grid_line(svg: &mut String, x1: f64, y1: f64, x2: f64, y2: f64) {
    let _ = write!(
        svg,
        r##"<line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" stroke="#ddd"/>"##
    );
}

fn label(svg: &mut String, x: f64, y: f64, anchor: &str, text: &str) {
    let _ = write!(
        svg,
        r#"<text x="{x:.1}" y="{y:.1}" font-size="12" text-anchor="{anchor}">{text}</text>"#
    );
}
