//! Rotary position embeddings (RoPE) applied in place to transformer queries and keys: 2-D
//! patch grids of vision transformers first, and every RoPE real models use — 1-D text with
//! its long-context scalings, 3-D video, M-RoPE.
//!
//! `#![no_std]`, no allocation, no panics on caller input: every fallible call checks its
//! whole input first and returns an [`Error`] without touching the buffers.
//!
//! # Example
//!
//! A ViT-S attention input: 14×14 patches plus a CLS token, 6 heads, head dim 64, the
//! convention of the seed documents and rope-vit.
//!
//! ```
//! use rope2d::{Direction, Grid, Shape, Table, preset};
//!
//! let spec = preset::rope_vit(64);
//! let mut storage = [[0.0f32; 2]; 448]; // (14 + 14) · 64/4 entries: 3 584 bytes
//! let table = Table::build(&mut storage, &spec, [14, 14])?;
//!
//! let shape = Shape::heads(6).with_prefix(1); // the CLS token stays unrotated
//! let mut q = vec![0.25f32; (1 + 14 * 14) * 6 * 64];
//! let mut k = q.clone();
//! table.rotate_qk(&mut q, &mut k, shape, Grid::new([14, 14]), Direction::Forward)?;
//!
//! // The inverse undoes it (up to rounding).
//! table.rotate(&mut q, shape, Grid::new([14, 14]), Direction::Inverse)?;
//! assert!(q.iter().all(|v| (v - 0.25).abs() < 1e-6));
//! # Ok::<(), rope2d::Error>(())
//! ```
//!
//! Video (Wan 2.1: `[frame, row, col]` positions, 3 sections) and M-RoPE work the same way:
//!
//! ```
//! use rope2d::{Direction, Shape, Table, preset};
//!
//! // Qwen2-VL's text model: 5 text tokens, a 12 × 16 image merged 2 × 2, 6 text tokens.
//! let spec = preset::qwen2_vl_mrope(128, 1e6, [16, 24, 24]);
//! let positions = preset::mrope_positions(5, [1, 12, 16], 2, 6);
//! let extents = [20, 20, 20]; // every coordinate below 20
//! let mut storage = vec![[0.0f32; 2]; Table::storage_len(&spec, extents)?];
//! let table = Table::build(&mut storage, &spec, extents)?;
//! let mut q = vec![0.5f32; (5 + 6 * 8 + 6) * 2 * 128];
//! table.rotate(&mut q, Shape::heads(2), &positions[..], Direction::Forward)?;
//! # Ok::<(), rope2d::Error>(())
//! ```
//!
//! # The general model
//!
//! Every convention is a [`Spec`]: pair `k` of a head rotates by `coord[a(k)] · f_k` with its
//! cos and sin times a magnitude `m`:
//!
//! | choice | type | values |
//! | --- | --- | --- |
//! | which elements pair up | [`Layout`] | `Interleaved` `(v[2k], v[2k+1])`, `Half` `(v[k], v[k+r/2])`, inside a rotary dimension `r ≤ d` |
//! | which axis rotates each pair | [`Plan`] | [`Sections`] (in any axis order), [`InterleavedAxes`] (Qwen3-VL), [`PerPair`], [`Summed`] (RoPE-Mixed) |
//! | frequencies | [`Freqs`] | `base^(−e/n)` with the index rule [`FreqIndex`], explicit arrays, learned |
//! | index → coordinate | [`Coords`] | `Index`, `Rescale`, `Centered`, `Linspace` (per axis) |
//! | magnitude, precision | `mscale`, [`AnglePrecision`] | YaRN / LongRoPE attention factor; exact or float32 angles |
//!
//! [`preset`] names the model families: rope-vit, EVA-02, DINOv3, RoPE-Mixed, SAM 2,
//! Pixtral, Qwen2-VL vision, LLaMA, NeoX, GPT-NeoX and GLM partial rotary, FLUX, Wan 2.1,
//! HunyuanVideo, CogVideoX, Qwen2-VL M-RoPE, Qwen3-VL interleaved M-RoPE and the Hugging Face
//! `rope_type` scalings (`linear`, `dynamic`, `yarn`, `llama3`, `longrope`), and the token
//! orders they use ([`Positions`]: grids, runs, merge windows, M-RoPE text + image + text).
//!
//! # Tables
//!
//! Tables are separable: axis `a` has one row of `[cos, sin]` entries per coordinate value,
//! covering only the pairs it rotates — `Σ_a extents[a] · pairs_a` entries in all (axial 2-D:
//! `(rows + cols) · d/4`, not `rows · cols · d/2`):
//!
//! - [`Table`]: in caller storage, any shape checked at run time;
//! - [`FixedTable<N, A>`](FixedTable): owning `N` entries, to keep in a `static`;
//! - [`Q15Table`]: Q15 `[i16; 2]` entries in caller storage, built and applied with integer
//!   arithmetic only (`i16`/`i8` buffers; for cores without an FPU);
//! - [`Q15FixedTable<N, A>`](Q15FixedTable): the same, owning its `N` entries (`4·N` bytes);
//! - [`Direct`]: no table, for integer positions of any size and real-valued coordinates.
//!
//! All of them rotate through [`Rope`]'s one API: [`rotate`](Rope::rotate) (tokens at
//! [`Positions`]), [`rotate_at`](Rope::rotate_at) (explicit positions),
//! [`rotate_qk`](Rope::rotate_qk), [`rotate_head`](Rope::rotate_head), with an unrotated
//! prefix ([`Shape::prefix`]) and in either [`Direction`].
//!
//! # Element types
//!
//! Every call takes a buffer of any [`Element`]: `f32`, [`half::f16`], [`half::bf16`] (each
//! output the correctly rounded value of the `f32` rotation), `i16` or `i8` (symmetric
//! quantisation with [`Scales`] from [`Shape::with_scales`]; outputs rounded to nearest-even
//! and saturated, within 1 LSB of the exact requantised rotation):
//!
//! ```
//! use rope2d::half::f16;
//! use rope2d::{Direct, Direction, Run, Shape, preset};
//!
//! let rope = Direct::new(&preset::llama(128))?;
//! let mut k = vec![f16::from_f32(0.25); 4 * 32 * 128]; // 4 tokens, 32 heads
//! rope.rotate(&mut k, Shape::heads(32), Run::from([100_000]), Direction::Forward)?;
//! # Ok::<(), rope2d::Error>(())
//! ```
//!
//! # Accuracy
//!
//! Tables are built without any `f64` arithmetic: frequencies are formed in 64-bit fixed
//! point (`log2`/`exp2` by integer squaring), the phase of an integer or `f32` coordinate is
//! reduced *exactly* by a wrapping integer multiply, and only `sin`/`cos` of an angle in
//! [0, π/4] is computed in `f32`. Consequences, all asserted by the tests:
//!
//! - every table entry is within 1.2e-7 of the `f64` `cos`/`sin` of the exact angle (times
//!   `mscale`), at every `u32` position for sections of up to 256 pairs (every model's; 2²⁴
//!   for 4 096 pairs, 2²⁰ for 65 535: see *Integer positions* below) — float32 reference
//!   code is 1e-3 off at 65 535 and 9e-3 at 131 071 (rescaled and centred coordinates divide in
//!   fixed point: their angles are within `|angle| · 2⁻⁴⁷ + |coordinate| · 2⁻⁴⁵` radians, so
//!   the bound holds for angles up to 10⁶ radians and coordinates up to 10⁵, beyond every
//!   model's);
//! - rotated outputs are within 4e-6 of a float64 evaluation on every golden file, and within
//!   the golden format's compatibility bound of the reference implementations' float32 outputs.
//!
//! # Numerical behaviour
//!
//! - **NaN and infinities in the data** stay in their pair: both outputs of a pair depend on
//!   both of its inputs, so a NaN or ±Inf input makes that pair non-finite (an Inf may become
//!   NaN, as `Inf · 0 = NaN`) and leaves every other pair of the vector untouched.
//! - **Non-finite configuration or coordinates** are rejected with an [`Error`], never
//!   turned into silent NaN angles.
//! - **Integer positions** are reduced exactly at any value: the phase error is at most
//!   `position · 2⁻⁶⁴` turns plus `position` times the fixed-point frequency's own error,
//!   which for pair `k` of a section (`f_k = base^(−k/n)` times the frequency scale) is at
//!   most `(k + 1) · (2⁻⁵⁸ · f_k + 2⁻⁶⁴ turns)`: a rounded fixed-point `exp2` gives the
//!   ratio between pairs, and each pair's frequency is the previous one times it. That bound
//!   and the entries' 1.2e-7 in the ranges above are asserted against a 128-bit reference
//!   (`freq.rs`'s unit test: bases 100 to 10⁶, frequency scale 1, sections of 8 to 65 535
//!   pairs).
//!   [`AnglePrecision::Float32`] deliberately rounds like float32 reference code instead.
//! - **Non-integer coordinates**: [`Coords::Rescale`] and [`Coords::Centered`] are evaluated
//!   as exact rationals `(a·i + b) / n` in fixed point; an `f32` coordinate (linspace grids,
//!   [`Direct::rotate_coords`]) is a dyadic rational and is reduced exactly as given.
//! - **Rounding**: the scalar backend rounds `a·c − b·s` and `a·s + b·c` in `f32`, so each
//!   output is within about `(|a| + |b|) · 2.5e-7 · max(1, m)` of the exact rotation.
//!
//! # Backends
//!
//! A [`Backend`] runs every rotation: `Scalar` (the reference: no fused multiply-add, the same
//! bits on every target; on Arm M-profile FPUs a hand-scheduled `vmla` loop with exactly that
//! arithmetic), `Portable` (`wide` SIMD chosen at compile time, hosted targets only,
//! bit-identical to scalar), `Avx2` (x86_64 AVX2 + FMA, feature `avx2`), `Avx512` (x86_64
//! AVX-512F + AVX2 + FMA, feature `avx512`) and `Neon` (aarch64, feature `neon`); the arch
//! features are on by default. [`Backend::auto`] picks AVX-512, then AVX2, when the CPU has
//! it (detected at run time once and cached, with or without `std`: CPUID and XGETBV), then
//! NEON on aarch64, else scalar; `with_backend` forces any available one. AVX2, AVX-512 and
//! NEON produce identical bits and fuse one product per output, so each output is
//! within `2⁻²²·(|a|+|b|) + 2⁻¹⁴⁸` of scalar, with NaN and infinities in the same places
//! (except for results within an ulp of `f32` overflow).
//!
//! # Features
//!
//! - `std`: no effect, kept so that builds that name it keep working. [`Error`] implements
//!   `core::error::Error` (= `std::error::Error`), x86 CPU detection needs no `std`, and the
//!   `Neon` backend is built where NEON is a baseline target feature (every aarch64 target
//!   but bare-metal ones without it); so default features are as fast as `std` everywhere.
//! - `defmt`: `defmt::Format` for the configuration and error types.
#![no_std]
#![deny(missing_docs)]
#![deny(unsafe_code, clippy::undocumented_unsafe_blocks)]

mod apply;
mod backend;
mod config;
mod element;
mod error;
mod freq;
mod math;
mod positions;
pub mod preset;
mod rope;
mod spec;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

pub use backend::{Backend, Description};
pub use config::{AnglePrecision, Coords, Direction, Layout, Shape};
pub use element::{Element, Scales};
pub use error::Error;
pub use freq::TableEntry;
/// The `half` crate, whose `f16` and `bf16` are element types: name them through this
/// re-export to match rope2d's version.
pub use half;
pub use positions::{Grid, Piece, Positions, Run};
pub use rope::{
    Direct, DirectAngles, FixedTable, Q15FixedTable, Q15Table, Rope, Source, Table, TableAngles,
};
pub use spec::{
    FreqIndex, Freqs, InterleavedAxes, LearnedFreqs, PerPair, Plan, Section, Sections, Spec, Summed,
};
