//! Criterion benchmarks: f32, in place, single thread.
//!
//! One group per shape, each with
//! - `stream`: in-place `x = -x` over the same buffer, the floor for an in-place kernel. On
//!   x86_64 with AVX2 it is compiled with `#[target_feature(enable = "avx2,fma")]`, the
//!   features of the `avx2` backend (LLVM vectorises it to 256-bit loads, `vxorps`, stores);
//! - `stream_avx512` (CPUs with AVX-512F only, every group): the same loop with 512-bit
//!   vectors, the floor for the `avx512` backend — and so for `auto` on such CPUs, which picks
//!   `avx512` — and the one comparable to glibc's memcpy, which uses AVX-512 where it exists;
//! - `memcpy`: `copy_from_slice` between two 64-byte-aligned buffers of the same size whose
//!   distance is ≡ 2048 (mod 4096) bytes (glibc's memcpy is far slower at ≡ 16);
//! - `scalar`, `portable`, `avx2`, `avx512` / `neon` (when the CPU has it): the backend
//!   chosen with `with_backend`; `auto`: what a table uses by default.
//!
//! Every data buffer starts on a 64-byte boundary. The groups:
//!
//! - `rope2d/{tiny, vit_s, medium, large}`: 2-D axial, interleaved, rope-vit (8×8 × 2 heads ×
//!   d 32; 14×14 × 6 × 64; 32×32 × 12 × 64; 64×64 × 16 × 128), with `memcpy`;
//! - `rope2d/vit_s_half` (DINOv3's layout), `rope2d/vit_s_mixed` (RoPE-Mixed);
//! - `rope2d/rope1d_4096`: 1-D, 4096 positions × 16 heads × d 128, half layout;
//! - `rope2d/prefill_1d`, `rope2d/prefill_1d_half`: 1024 tokens at positions 0..1023, 32 heads,
//!   d 128, base 500 000 (llama.cpp's prefill shape), interleaved and half;
//! - `rope2d/decode_1d`: one token at position 100 000, 32 heads, d 128, Llama 3 scaling
//!   (a table over positions 0 ..= 100 000);
//! - `rope2d/video_wan`: Wan 2.1, 4 frames × 16 × 24, 12 heads, d 128;
//! - `rope2d/qwen2vl_vision`: a 32×32 grid in Qwen2-VL's 2×2 merge-window order, 16 heads,
//!   d 80;
//! - `rope2d/qwen2vl_vision_small`: the same for a 14×14 grid (a 196×196-pixel image: 1 MB,
//!   within L2), whose d = 80 half-layout heads only 256-bit vectors hold in registers;
//! - `rope2d/mrope_text`: Qwen2-VL M-RoPE over 200 text tokens, a 48×48 image merged to
//!   24×24 and 248 text tokens (1 024 tokens), 8 heads, d 128;
//! - `rope2d/mrope_short`: the same over 40 text tokens, a 16×16 image merged to 8×8 and 40
//!   text tokens (144 tokens, 576 KB, within L2), whose 16/24/24-pair sections fall on whole
//!   256-bit vectors, not on whole 512-bit ones;
//! - `rope2d/build`: building the 14×14, d = 64 table;
//! - `rope2d/{vit_s_f16, vit_s_bf16, vit_s_i8, large_bf16}`: the `vit_s` and `large` shapes
//!   with buffers of `f16`, `bf16` and `i8` (Q7); their `stream` is the same in-place
//!   negation over a buffer of that type (the same bytes), compiled like `stream`;
//! - `rope2d/vit_s_q15`: the `vit_s` shape in `i16` rotated by a Q15 table (integer
//!   arithmetic only), with the same `stream` over `i16`.
//!
//! Each group takes 20 samples after 0.3 s of warm-up, over 0.8 s (1.5 s beyond 8 MiB):
//! `configure` sets them, and criterion's `--warm-up-time` and `--measurement-time` flags do
//! not override a group's own settings.
//!
//! `cargo bench -p rope2d-bench` (about 5 minutes); `-- rope2d/tiny` for one group.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkGroup, Criterion, SamplingMode, Throughput, measurement::WallTime};
use rope2d::half::{bf16, f16};
use rope2d::{
    Backend, Direction, Grid, Layout, LearnedFreqs, Plan, Positions, Q15Table, Rope, Run, Shape,
    Source, Spec, Table,
    preset::{self, AxisOrder, HfRope, HfScaling},
};

/// Forward then inverse on alternate calls, so that repeated rotations keep the values
/// bounded.
fn alternate(forward: &mut bool) -> Direction {
    let dir = if *forward {
        Direction::Forward
    } else {
        Direction::Inverse
    };
    *forward = !*forward;
    dir
}

/// A `len`-float buffer starting on a 64-byte boundary, inside an owned allocation.
struct Aligned {
    storage: Vec<f32>,
    start: usize,
    len: usize,
}

impl Aligned {
    fn new(len: usize, extra: usize) -> Self {
        let storage = vec![0f32; len + extra + 16];
        let start = storage.as_ptr().align_offset(64);
        assert!(start < 16);
        Self {
            storage,
            start,
            len,
        }
    }

    fn filled(len: usize) -> Self {
        let mut buf = Self::new(len, 0);
        for (i, v) in buf.get().iter_mut().enumerate() {
            // Deterministic values in [−1, 1).
            *v = ((i as u32).wrapping_mul(2_654_435_761) >> 8) as f32 / (1u32 << 23) as f32 - 1.0;
        }
        buf
    }

    fn get(&mut self) -> &mut [f32] {
        &mut self.storage[self.start..self.start + self.len]
    }
}

/// `x = -x`, compiled for the CPU's best vector width (see the module docs).
fn stream(x: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        #[target_feature(enable = "avx2,fma")]
        fn negate_avx2(x: &mut [f32]) {
            for v in x {
                *v = -*v;
            }
        }
        // SAFETY: the CPU has AVX2 and FMA (checked just above).
        unsafe { negate_avx2(x) };
        return;
    }
    for v in x {
        *v = -*v;
    }
}

/// `x = -x` with AVX-512 (`stream_avx512`, only on CPUs that have it): the in-place floor
/// for the `avx512` backend (and `auto` where it picks it), and the one comparable to glibc's
/// memcpy, which uses AVX-512 too.
#[cfg(target_arch = "x86_64")]
fn stream_avx512(x: &mut [f32]) {
    #[target_feature(enable = "avx512f")]
    fn negate_avx512(x: &mut [f32]) {
        for v in x {
            *v = -*v;
        }
    }
    if std::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F (checked just above).
        unsafe { negate_avx512(x) };
    }
}

/// Two `len`-float buffers 64-byte aligned, `dst − src ≡ 2048 (mod 4096)` bytes.
struct CopyPair {
    storage: Aligned,
    dst: usize,
}

impl CopyPair {
    fn new(len: usize) -> Self {
        // Floats: `len` rounded up to 1024 (4 KiB), plus 512 (2 KiB).
        let dst = len.div_ceil(1024) * 1024 + 512;
        Self {
            storage: Aligned::new(dst + len, 0),
            dst,
        }
    }

    fn copy(&mut self) {
        let len = self.storage.len - self.dst;
        let all = self.storage.get();
        let (src, dst) = all.split_at_mut(self.dst);
        dst.copy_from_slice(&src[..len]);
    }
}

/// The explicitly chosen backends benchmarked: every one this CPU can run.
fn backends() -> impl Iterator<Item = Backend> {
    Backend::ALL.iter().copied().filter(|b| b.is_available())
}

fn configure(group: &mut BenchmarkGroup<'_, WallTime>, bytes: usize) {
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(20);
    group.warm_up_time(Duration::from_millis(300));
    let ms = if bytes > 8 << 20 { 1500 } else { 800 };
    group.measurement_time(Duration::from_millis(ms));
}

/// `stream`, `stream_avx512` (CPUs with AVX-512F) and (for the main shapes) `memcpy`, over a
/// buffer of `len` floats.
fn baselines(group: &mut BenchmarkGroup<'_, WallTime>, len: usize, memcpy: bool) {
    let mut buf = Aligned::filled(len);
    group.bench_function("stream", |b| b.iter(|| stream(black_box(buf.get()))));
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx512f") {
        group.bench_function("stream_avx512", |b| {
            b.iter(|| stream_avx512(black_box(buf.get())))
        });
    }
    if memcpy {
        let mut pair = CopyPair::new(len);
        group.bench_function("memcpy", |b| {
            b.iter(|| {
                pair.copy();
                black_box(&mut pair);
            })
        });
    }
}

/// One group: the baselines, every backend and `auto`, rotating `tokens` tokens of `heads`
/// heads at `positions` with the tables of `spec` over `extents`.
#[allow(clippy::too_many_arguments)]
fn group<const A: usize, P: Plan<A>, Po: Positions<A> + Copy>(
    c: &mut Criterion,
    name: &str,
    spec: &Spec<'_, A, P>,
    extents: [usize; A],
    positions: Po,
    tokens: usize,
    heads: usize,
    memcpy: bool,
) {
    let len = tokens * heads * spec.head_dim;
    let mut storage = vec![[0f32; 2]; Table::storage_len(spec, extents).unwrap()];
    let table = Table::build(&mut storage, spec, extents).unwrap();
    let mut group = c.benchmark_group(format!("rope2d/{name}"));
    configure(&mut group, len * 4);
    group.throughput(Throughput::Elements((len / 2) as u64)); // pairs
    baselines(&mut group, len, memcpy);
    let mut buf = Aligned::filled(len);
    let mut run = |group: &mut BenchmarkGroup<'_, WallTime>, id: &str, backend: Backend| {
        let table = table.with_backend(backend).unwrap();
        let mut forward = true;
        group.bench_function(id, |b| {
            b.iter(|| {
                let dir = alternate(&mut forward);
                table
                    .rotate(black_box(buf.get()), Shape::heads(heads), positions, dir)
                    .unwrap()
            })
        });
    };
    for backend in backends() {
        run(&mut group, backend.name(), backend);
    }
    run(&mut group, "auto", Backend::auto());
    group.finish();
}

struct ShapeSpec {
    name: &'static str,
    rows: usize,
    cols: usize,
    heads: usize,
    d: usize,
}

const SHAPES: [ShapeSpec; 4] = [
    ShapeSpec {
        name: "tiny",
        rows: 8,
        cols: 8,
        heads: 2,
        d: 32,
    },
    ShapeSpec {
        name: "vit_s",
        rows: 14,
        cols: 14,
        heads: 6,
        d: 64,
    },
    ShapeSpec {
        name: "medium",
        rows: 32,
        cols: 32,
        heads: 12,
        d: 64,
    },
    ShapeSpec {
        name: "large",
        rows: 64,
        cols: 64,
        heads: 16,
        d: 128,
    },
];

fn axial(c: &mut Criterion) {
    for shape in &SHAPES {
        let extents = [shape.rows, shape.cols];
        let spec = preset::rope_vit(shape.d);
        group(
            c,
            shape.name,
            &spec,
            extents,
            Grid::new(extents),
            shape.rows * shape.cols,
            shape.heads,
            true,
        );
    }
    let spec = preset::axial(64, Layout::Half, AxisOrder::RowFirst, 100.0);
    group(
        c,
        "vit_s_half",
        &spec,
        [14, 14],
        Grid::new([14, 14]),
        196,
        6,
        false,
    );
    let (heads, d) = (6, 64);
    let f: Vec<f32> = (0..heads * d / 2)
        .map(|i| 0.1 + (i % 7) as f32 * 0.05)
        .collect();
    let spec = preset::rope_mixed(d, heads, LearnedFreqs { x: &f, y: &f });
    group(
        c,
        "vit_s_mixed",
        &spec,
        [14, 14],
        Grid::new([14, 14]),
        196,
        heads,
        false,
    );
}

fn one_d(c: &mut Criterion) {
    let spec = preset::rope_1d(128, Layout::Half, 10_000.0);
    group(
        c,
        "rope1d_4096",
        &spec,
        [4096],
        Run::from([0]),
        4096,
        16,
        false,
    );
    for (name, layout) in [
        ("prefill_1d", Layout::Interleaved),
        ("prefill_1d_half", Layout::Half),
    ] {
        let spec = preset::rope_1d(128, layout, 500_000.0);
        group(c, name, &spec, [1024], Run::from([0]), 1024, 32, false);
    }
    // Llama 3.1's scaling, one decode step at position 100 000.
    let hf = HfRope {
        rope_theta: 500_000.0,
        head_dim: 128,
        partial_rotary_factor: 1.0,
        max_position_embeddings: 131_072,
        layout: Layout::Half,
        scaling: HfScaling::Llama3 {
            factor: 8.0,
            low_freq_factor: 1.0,
            high_freq_factor: 4.0,
            original_max_position_embeddings: 8192,
        },
    };
    let mut freqs = [0f64; 64];
    let spec = hf.spec(131_072, &mut freqs).unwrap();
    group(
        c,
        "decode_1d",
        &spec,
        [100_001],
        Run::from([100_000]),
        1,
        32,
        false,
    );
}

fn models(c: &mut Criterion) {
    let extents = [4, 16, 24];
    group(
        c,
        "video_wan",
        &preset::wan(128, 10_000.0),
        extents,
        Grid::new(extents),
        4 * 16 * 24,
        12,
        false,
    );
    let order = preset::qwen2_vl_vision_positions([1, 32, 32], 2);
    group(
        c,
        "qwen2vl_vision",
        &preset::qwen2_vl_vision(80, 10_000.0),
        [32, 32],
        &order[..],
        1024,
        16,
        false,
    );
    let order = preset::qwen2_vl_vision_positions([1, 14, 14], 2);
    group(
        c,
        "qwen2vl_vision_small",
        &preset::qwen2_vl_vision(80, 10_000.0),
        [14, 14],
        &order[..],
        196,
        16,
        false,
    );
    let order = preset::mrope_positions(200, [1, 48, 48], 2, 248);
    let spec = preset::qwen2_vl_mrope(128, 1e6, [16, 24, 24]);
    group(
        c,
        "mrope_text",
        &spec,
        [472, 472, 472],
        &order[..],
        1024,
        8,
        false,
    );
    // A short prompt within L2 (576 KB): sections of 16/24/24 pairs fall on whole 256-bit
    // vectors, not on whole 512-bit ones.
    let order = preset::mrope_positions(40, [1, 16, 16], 2, 40);
    group(
        c,
        "mrope_short",
        &spec,
        [128, 128, 128],
        &order[..],
        144,
        8,
        false,
    );
}

fn table_build(c: &mut Criterion) {
    let mut group = c.benchmark_group("rope2d/build");
    configure(&mut group, 0);
    let spec = preset::rope_vit(64);
    let mut storage = vec![[0f32; 2]; Table::storage_len(&spec, [14, 14]).unwrap()];
    group.bench_function("axial_14x14_d64", |b| {
        b.iter(|| {
            Table::build(black_box(&mut storage), &spec, [14, 14]).unwrap();
        })
    });
    group.finish();
}

/// An element type of the `*_f16`, `*_bf16`, `*_i8` groups.
trait BenchElement: rope2d::Element + Copy {
    fn from_unit(v: f32) -> Self;
    fn negate(self) -> Self;
}

impl BenchElement for f16 {
    fn from_unit(v: f32) -> Self {
        f16::from_f32(v)
    }
    fn negate(self) -> Self {
        f16::from_bits(self.to_bits() ^ 0x8000)
    }
}

impl BenchElement for bf16 {
    fn from_unit(v: f32) -> Self {
        bf16::from_f32(v)
    }
    fn negate(self) -> Self {
        bf16::from_bits(self.to_bits() ^ 0x8000)
    }
}

impl BenchElement for i16 {
    fn from_unit(v: f32) -> Self {
        (v * 16_000.0) as i16
    }
    fn negate(self) -> Self {
        self.wrapping_neg()
    }
}

impl BenchElement for i8 {
    fn from_unit(v: f32) -> Self {
        (v * 100.0) as i8
    }
    fn negate(self) -> Self {
        self.wrapping_neg()
    }
}

/// `x = -x` over a buffer of `E`, compiled like [`stream`].
fn stream_elements<E: BenchElement>(x: &mut [E]) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        #[target_feature(enable = "avx2,fma")]
        fn negate_avx2<E: BenchElement>(x: &mut [E]) {
            for v in x {
                *v = v.negate();
            }
        }
        // SAFETY: the CPU has AVX2 and FMA (checked just above).
        unsafe { negate_avx2(x) };
        return;
    }
    for v in x {
        *v = v.negate();
    }
}

/// A group over a buffer of `E` (64-byte aligned) rotated by `table` (the `rope_vit` table
/// of `shape`'s grid): `stream` of `E`, every backend, `auto`.
fn element_group<E: BenchElement, S: Source<2>>(
    c: &mut Criterion,
    name: &str,
    shape: &ShapeSpec,
    table: &Rope<2, S>,
) {
    let extents = [shape.rows, shape.cols];
    let len = shape.rows * shape.cols * shape.heads * shape.d;
    let mut owned: Vec<E> = (0..len + 64)
        .map(|i| {
            E::from_unit(
                ((i as u32).wrapping_mul(2_654_435_761) >> 8) as f32 / (1u32 << 23) as f32 - 1.0,
            )
        })
        .collect();
    let start = owned.as_ptr().align_offset(64);
    let buf = &mut owned[start..start + len];
    let mut group = c.benchmark_group(format!("rope2d/{name}"));
    configure(&mut group, len * size_of::<E>());
    group.throughput(Throughput::Elements((len / 2) as u64));
    group.bench_function("stream", |b| {
        b.iter(|| stream_elements(black_box(&mut *buf)))
    });
    let mut run = |group: &mut BenchmarkGroup<'_, WallTime>, id: &str, backend: Backend| {
        let table = table.with_backend(backend).unwrap();
        let mut forward = true;
        group.bench_function(id, |b| {
            b.iter(|| {
                let dir = alternate(&mut forward);
                let grid = Grid::new(extents);
                table
                    .rotate(black_box(&mut *buf), Shape::heads(shape.heads), grid, dir)
                    .unwrap()
            })
        });
    };
    for backend in backends() {
        run(&mut group, backend.name(), backend);
    }
    run(&mut group, "auto", Backend::auto());
    group.finish();
}

fn elements(c: &mut Criterion) {
    let (vit_s, large) = (&SHAPES[1], &SHAPES[3]);
    let spec = preset::rope_vit(vit_s.d);
    let extents = [vit_s.rows, vit_s.cols];
    let n = Table::storage_len(&spec, extents).unwrap();
    let mut storage = vec![[0f32; 2]; n];
    let table = Table::build(&mut storage, &spec, extents).unwrap();
    element_group::<f16, _>(c, "vit_s_f16", vit_s, &table);
    element_group::<bf16, _>(c, "vit_s_bf16", vit_s, &table);
    element_group::<i8, _>(c, "vit_s_i8", vit_s, &table);
    let mut q15_storage = vec![[0i16; 2]; n];
    let q15 = Q15Table::build(&mut q15_storage, &spec, extents).unwrap();
    element_group::<i16, _>(c, "vit_s_q15", vit_s, &q15);
    let spec = preset::rope_vit(large.d);
    let extents = [large.rows, large.cols];
    let mut storage = vec![[0f32; 2]; Table::storage_len(&spec, extents).unwrap()];
    let table = Table::build(&mut storage, &spec, extents).unwrap();
    element_group::<bf16, _>(c, "large_bf16", large, &table);
}

criterion::criterion_group!(benches, axial, one_d, models, table_build, elements);
criterion::criterion_main!(benches);
