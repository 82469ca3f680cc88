//! Criterion benchmarks: f32, in place, single thread.
//!
//! `rope2d/<shape>` (2-D axial, interleaved, rope-vit convention) for four shapes, each with
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
//! Every data buffer starts on a 64-byte boundary. Also: building the 14×14, d = 64 table,
//! the half layout and RoPE-Mixed at ViT-S, and 1-D at 4096 positions × 16 heads × d = 128.
//!
//! `cargo bench --bench rope` (a few minutes); `-- rope2d/tiny` for one group.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkGroup, Criterion, SamplingMode, Throughput, measurement::WallTime};
use rope2d::{
    Axial2d, AxialTable, AxialTableRef, AxisOrder, Backend, Direction, Grid, Layout, LearnedFreqs,
    Mixed2d, MixedTableRef, Rope1d, Rope1dTableRef, Shape,
};

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

fn axial(c: &mut Criterion) {
    for shape in &SHAPES {
        let grid = Grid::new(shape.rows, shape.cols);
        let len = shape.rows * shape.cols * shape.heads * shape.d;
        let mut storage = vec![[0f32; 2]; AxialTableRef::storage_len(shape.d, grid).unwrap()];
        let table = AxialTableRef::build(&mut storage, &Axial2d::ROPE_VIT, shape.d, grid).unwrap();
        let heads = Shape::heads(shape.heads);
        let mut group = c.benchmark_group(format!("rope2d/{}", shape.name));
        configure(&mut group, len * 4);
        group.throughput(Throughput::Elements((len / 2) as u64)); // rotated pairs
        baselines(&mut group, len, true);
        let mut buf = Aligned::filled(len);
        for backend in backends() {
            let table = table.with_backend(backend).unwrap();
            group.bench_function(backend.name(), |b| {
                b.iter(|| table.rotate(black_box(buf.get()), heads, Direction::Forward))
            });
        }
        group.bench_function("auto", |b| {
            b.iter(|| table.rotate(black_box(buf.get()), heads, Direction::Forward))
        });
        group.finish();
    }
}

fn table_build(c: &mut Criterion) {
    let mut group = c.benchmark_group("rope2d/build");
    configure(&mut group, 0);
    group.bench_function("axial_14x14_d64", |b| {
        b.iter(|| AxialTable::<64, 14, 14>::new(black_box(&Axial2d::ROPE_VIT)))
    });
    group.finish();
}

fn vit_s_half(c: &mut Criterion) {
    let (grid, heads, d) = (Grid::new(14, 14), 6, 64);
    let len = 14 * 14 * heads * d;
    let config = Axial2d::new(Layout::Half, AxisOrder::RowFirst, 100.0);
    let mut storage = vec![[0f32; 2]; AxialTableRef::storage_len(d, grid).unwrap()];
    let table = AxialTableRef::build(&mut storage, &config, d, grid).unwrap();
    let mut group = c.benchmark_group("rope2d/vit_s_half");
    configure(&mut group, len * 4);
    group.throughput(Throughput::Elements((len / 2) as u64));
    baselines(&mut group, len, false);
    let mut buf = Aligned::filled(len);
    for backend in backends() {
        let table = table.with_backend(backend).unwrap();
        group.bench_function(backend.name(), |b| {
            b.iter(|| {
                table.rotate(
                    black_box(buf.get()),
                    Shape::heads(heads),
                    Direction::Forward,
                )
            })
        });
    }
    group.bench_function("auto", |b| {
        b.iter(|| {
            table.rotate(
                black_box(buf.get()),
                Shape::heads(heads),
                Direction::Forward,
            )
        })
    });
    group.finish();
}

fn vit_s_mixed(c: &mut Criterion) {
    let (grid, heads, d) = (Grid::new(14, 14), 6, 64);
    let len = 14 * 14 * heads * d;
    let fx: Vec<f32> = (0..heads * d / 2).map(|i| 0.5 / (1 + i) as f32).collect();
    let fy: Vec<f32> = (0..heads * d / 2).map(|i| 0.25 / (1 + i) as f32).collect();
    let freqs = LearnedFreqs {
        heads,
        x: &fx,
        y: &fy,
    };
    let mut storage = vec![[0f32; 2]; MixedTableRef::storage_len(d, heads, grid).unwrap()];
    let table = MixedTableRef::build(&mut storage, &Mixed2d::ROPE_VIT, d, grid, freqs).unwrap();
    let mut group = c.benchmark_group("rope2d/vit_s_mixed");
    configure(&mut group, len * 4);
    group.throughput(Throughput::Elements((len / 2) as u64));
    baselines(&mut group, len, false);
    let mut buf = Aligned::filled(len);
    for backend in backends() {
        let table = table.with_backend(backend).unwrap();
        group.bench_function(backend.name(), |b| {
            b.iter(|| {
                table.rotate(
                    black_box(buf.get()),
                    Shape::heads(heads),
                    Direction::Forward,
                )
            })
        });
    }
    group.bench_function("auto", |b| {
        b.iter(|| {
            table.rotate(
                black_box(buf.get()),
                Shape::heads(heads),
                Direction::Forward,
            )
        })
    });
    group.finish();
}

fn rope1d(c: &mut Criterion) {
    let (positions, heads, d) = (4096, 16, 128);
    let len = positions * heads * d;
    let mut storage = vec![[0f32; 2]; Rope1dTableRef::storage_len(d, positions).unwrap()];
    let table = Rope1dTableRef::build(&mut storage, &Rope1d::LLAMA, d, positions).unwrap();
    let mut group = c.benchmark_group("rope2d/rope1d_4096");
    configure(&mut group, len * 4);
    group.throughput(Throughput::Elements((len / 2) as u64));
    baselines(&mut group, len, false);
    let mut buf = Aligned::filled(len);
    for backend in backends() {
        let table = table.with_backend(backend).unwrap();
        group.bench_function(backend.name(), |b| {
            b.iter(|| {
                table.rotate(
                    black_box(buf.get()),
                    Shape::heads(heads),
                    0,
                    Direction::Forward,
                )
            })
        });
    }
    group.bench_function("auto", |b| {
        b.iter(|| {
            table.rotate(
                black_box(buf.get()),
                Shape::heads(heads),
                0,
                Direction::Forward,
            )
        })
    });
    group.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    axial(&mut c);
    table_build(&mut c);
    vit_s_half(&mut c);
    vit_s_mixed(&mut c);
    rope1d(&mut c);
    c.final_summary();
}
