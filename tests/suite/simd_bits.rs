//! The SIMD backends give the same bits on every instruction set, as the README's backends
//! table says (`Avx512` and `Neon`: "as `Avx2`, bit for bit"): digests of `avx2`'s outputs
//! committed here, checked for `avx2` and `avx512` on x86_64 and for `neon` on aarch64
//! (natively, or under qemu-aarch64 in CI). It lives in this binary, whose other tests
//! instantiate every element type's loops already; in `tests/backends.rs` they tripled that
//! file's build (16 → 68 s, dev profile).

use crate::common::{Rng, special_values};
use rope2d::half::{bf16, f16};
use rope2d::{
    Backend, Direction, Grid, Layout, LearnedFreqs, Piece, Run, Shape, Spec, Table,
    preset::{self, AxisOrder},
};

const LAYOUTS: [Layout; 2] = [Layout::Interleaved, Layout::Half];

const DIRS: [Direction; 2] = [Direction::Forward, Direction::Inverse];

/// The backend named `name`, when this build has it and this CPU runs it.
fn available(name: &str) -> Option<Backend> {
    Backend::ALL
        .iter()
        .copied()
        .find(|b| b.name() == name && b.is_available())
}

fn storage<const A: usize, P: rope2d::Plan<A>>(
    spec: &Spec<'_, A, P>,
    extents: [usize; A],
) -> Vec<[f32; 2]> {
    vec![[0f32; 2]; Table::storage_len(spec, extents).unwrap()]
}

/// A 64-bit FNV-1a digest of output bits, NaNs folded to one pattern (their payloads are not
/// part of the contract).
struct Digest(u64);

impl Digest {
    fn add(&mut self, bits: u64, bytes: usize) {
        for byte in bits.to_le_bytes().iter().take(bytes) {
            self.0 = (self.0 ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// An element type of the bit-for-bit check: from the test's `f32` inputs, and its bits.
trait Bits: rope2d::Element {
    fn from_input(v: f32) -> Self;
    fn bits(self) -> (u64, usize);
}

impl Bits for f32 {
    fn from_input(v: f32) -> Self {
        v
    }
    fn bits(self) -> (u64, usize) {
        let v = if self.is_nan() { f32::NAN } else { self };
        (u64::from(v.to_bits()), 4)
    }
}

impl Bits for f16 {
    fn from_input(v: f32) -> Self {
        f16::from_f32(v)
    }
    fn bits(self) -> (u64, usize) {
        let v = if self.is_nan() { f16::NAN } else { self };
        (u64::from(v.to_bits()), 2)
    }
}

impl Bits for bf16 {
    fn from_input(v: f32) -> Self {
        bf16::from_f32(v)
    }
    fn bits(self) -> (u64, usize) {
        let v = if self.is_nan() { bf16::NAN } else { self };
        (u64::from(v.to_bits()), 2)
    }
}

impl Bits for i16 {
    fn from_input(v: f32) -> Self {
        (v * 8000.0) as i16
    }
    fn bits(self) -> (u64, usize) {
        (u64::from(self as u16), 2)
    }
}

impl Bits for i8 {
    fn from_input(v: f32) -> Self {
        (v * 30.0) as i8
    }
    fn bits(self) -> (u64, usize) {
        (u64::from(self as u8), 1)
    }
}

/// Digests of `backend`'s outputs, one per element type: `f32` (NaN, infinities and subnormals
/// among the inputs) through 2-D axial grids, 1-D runs, RoPE-Mixed and Qwen3-VL's interleaved
/// M-RoPE; `f16`, `bf16`, `i16` at its own scale, `i8` requantised by another, and `i16` and
/// `i8` through a Q15 table, through 2-D axial grids (their loads and stores are the same on
/// every plan). Both layouts and directions, head dims on both sides of every vector width (4,
/// 8 and 16 lanes), one to three heads.
fn simd_digests(backend: Backend) -> [(&'static str, u64); 7] {
    const GRID: [usize; 2] = [3, 5];
    /// Inputs of `count` values: `special_values` converted to `E`.
    fn inputs<E: Bits>(rng: &mut Rng, count: usize) -> Vec<E> {
        special_values(rng, count)
            .into_iter()
            .map(E::from_input)
            .collect()
    }
    fn add<E: Bits>(digest: &mut Digest, out: &[E]) {
        for v in out {
            let (bits, bytes) = v.bits();
            digest.add(bits, bytes);
        }
    }
    fn grids<E: Bits>(backend: Backend, seed: u64, digest: &mut Digest, scales: (f32, f32)) {
        let mut rng = Rng(seed);
        for layout in LAYOUTS {
            for d in [
                4, 8, 12, 16, 20, 24, 28, 32, 40, 48, 64, 80, 96, 128, 160, 256,
            ] {
                let heads = 1 + d % 3;
                let shape = Shape::heads(heads).with_scales(scales.0, scales.1);
                let spec = preset::axial(d, layout, AxisOrder::ColFirst, 100.0);
                let mut store = storage(&spec, GRID);
                let table = Table::build(&mut store, &spec, GRID).unwrap();
                let table = table.with_backend(backend).unwrap();
                for dir in DIRS {
                    let mut x: Vec<E> = inputs(&mut rng, 15 * heads * d);
                    table.rotate(&mut x, shape, Grid::new(GRID), dir).unwrap();
                    add(digest, &x);
                }
            }
        }
    }
    /// `f32` through the other plans: 1-D (odd pair counts too), RoPE-Mixed, Qwen3-VL.
    fn plans(backend: Backend, seed: u64, digest: &mut Digest) {
        let mut rng = Rng(seed);
        let dims = [
            4, 6, 8, 10, 12, 14, 16, 18, 20, 24, 28, 30, 32, 34, 40, 48, 62, 64, 66, 80, 96, 126,
            128, 130, 160, 256,
        ];
        for layout in LAYOUTS {
            for d in dims {
                let heads = 1 + d % 3;
                let shape = Shape::heads(heads);
                for dir in DIRS {
                    let spec = preset::rope_1d(d, layout, 10_000.0);
                    let mut store = storage(&spec, [15]);
                    let table = Table::build(&mut store, &spec, [15]).unwrap();
                    let mut x: Vec<f32> = inputs(&mut rng, 15 * heads * d);
                    let table = table.with_backend(backend).unwrap();
                    table.rotate(&mut x, shape, Run::from([0]), dir).unwrap();
                    add(digest, &x);
                    let fx: Vec<f32> = (0..heads * d / 2).map(|_| rng.value()).collect();
                    let fy: Vec<f32> = (0..heads * d / 2).map(|_| rng.value()).collect();
                    let spec = Spec {
                        layout,
                        ..preset::rope_mixed(d, heads, LearnedFreqs { x: &fx, y: &fy })
                    };
                    let mut store = storage(&spec, GRID);
                    let table = Table::build(&mut store, &spec, GRID).unwrap();
                    let mut x: Vec<f32> = inputs(&mut rng, 15 * heads * d);
                    let table = table.with_backend(backend).unwrap();
                    table.rotate(&mut x, shape, Grid::new(GRID), dir).unwrap();
                    add(digest, &x);
                    let video = [1, GRID[0], GRID[1]];
                    let pieces = [Piece::Grid {
                        grid: Grid::new(video),
                        repeat: 1,
                    }];
                    let spec = Spec {
                        layout,
                        ..preset::qwen3_vl_mrope(d, 1e6, [d / 2 - 2 * (d / 6), d / 6, d / 6])
                    };
                    let mut store = storage(&spec, video);
                    let table = Table::build(&mut store, &spec, video).unwrap();
                    let mut x: Vec<f32> = inputs(&mut rng, 15 * heads * d);
                    let table = table.with_backend(backend).unwrap();
                    table.rotate(&mut x, shape, &pieces[..], dir).unwrap();
                    add(digest, &x);
                }
            }
        }
    }
    /// Integers through a Q15 table (integer vector loops).
    fn q15<E: Bits>(backend: Backend, seed: u64, digest: &mut Digest) {
        let mut rng = Rng(seed);
        for layout in LAYOUTS {
            for d in [4, 8, 12, 16, 20, 24, 32, 40, 48, 64, 80, 96, 128, 160, 256] {
                let heads = 1 + d % 3;
                let spec = preset::axial(d, layout, AxisOrder::ColFirst, 100.0);
                let mut store = vec![[0i16; 2]; Table::storage_len(&spec, GRID).unwrap()];
                let table = rope2d::Q15Table::build(&mut store, &spec, GRID).unwrap();
                let table = table.with_backend(backend).unwrap();
                for dir in DIRS {
                    let mut x: Vec<E> = (0..15 * heads * d)
                        .map(|_| E::from_input(rng.value()))
                        .collect();
                    table
                        .rotate(&mut x, Shape::heads(heads), Grid::new(GRID), dir)
                        .unwrap();
                    add(digest, &x);
                }
            }
        }
    }
    let digest = |f: &dyn Fn(&mut Digest)| {
        let mut d = Digest(0xcbf2_9ce4_8422_2325);
        f(&mut d);
        d.0
    };
    let same = (1.0, 1.0);
    [
        (
            "f32",
            digest(&|d| {
                grids::<f32>(backend, 21, d, same);
                plans(backend, 28, d);
            }),
        ),
        ("f16", digest(&|d| grids::<f16>(backend, 22, d, same))),
        ("bf16", digest(&|d| grids::<bf16>(backend, 23, d, same))),
        ("i16", digest(&|d| grids::<i16>(backend, 24, d, same))),
        (
            "i8 requantised",
            digest(&|d| grids::<i8>(backend, 25, d, (0.03, 0.05))),
        ),
        ("q15 i16", digest(&|d| q15::<i16>(backend, 26, d))),
        ("q15 i8", digest(&|d| q15::<i8>(backend, 27, d))),
    ]
}

/// The SIMD backends give the same bits on every instruction set, as the backends table
/// says (`Avx512` and `Neon`: "as `Avx2`, bit for bit"): digests of `avx2`'s outputs over
/// many shapes, element types and plans (`simd_digests`), committed here, against those of
/// `avx2` and `avx512` on x86_64 and of `neon` on aarch64 (natively, and under qemu in CI).
/// `ROPE2D_PRINT_DIGESTS=1` prints them instead, to commit after a deliberate change of the
/// arithmetic. Not under Miri (tens of thousands of calls).
#[test]
#[cfg_attr(miri, ignore)]
fn simd_backends_give_the_committed_avx2_bits() {
    const AVX2: [(&str, u64); 7] = [
        ("f32", 0x75ff_a516_ad6c_4511),
        ("f16", 0x5a92_343b_d329_e2e7),
        ("bf16", 0xaf0e_aa3b_9556_ae7e),
        ("i16", 0x3b79_3c34_4d29_bab4),
        ("i8 requantised", 0x1d10_dd77_7fee_9838),
        ("q15 i16", 0xcb2a_5c9e_7be4_eb1f),
        ("q15 i8", 0xfda1_4e0e_2845_00ff),
    ];
    let simd: Vec<Backend> = ["avx2", "avx512", "neon"]
        .into_iter()
        .filter_map(available)
        .collect();
    if simd.is_empty() {
        eprintln!("no SIMD backend here: skipped");
        return;
    }
    // The digest sees a last-bit difference: scalar's products, rounded apart, are not the
    // fused ones.
    let scalar = simd_digests(Backend::Scalar);
    assert_ne!(scalar[0], AVX2[0], "scalar's f32 bits are avx2's");
    for backend in simd {
        let got = simd_digests(backend);
        if std::env::var_os("ROPE2D_PRINT_DIGESTS").is_some() {
            eprintln!("{}: {got:#x?}", backend.name());
            continue;
        }
        for ((what, want), (_, got)) in AVX2.iter().zip(got) {
            assert_eq!(
                got,
                *want,
                "{}: {what}: {got:#x}, avx2's committed {want:#x}",
                backend.name()
            );
        }
    }
}
