//! Rotary position embeddings (RoPE) applied in place to transformer queries and keys:
//! 2-D patch grids of vision transformers first, 1-D sequences too.
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
//! use rope2d::{AxialTable, Axial2d, Direction, Shape};
//!
//! // 3 584 bytes; on the stack here, or in a `static`.
//! let table = AxialTable::<64, 14, 14>::new(&Axial2d::ROPE_VIT)?;
//!
//! let shape = Shape::heads(6).with_prefix(1); // the CLS token stays unrotated
//! let mut q = vec![0.25f32; (1 + 14 * 14) * 6 * 64];
//! let mut k = q.clone();
//! table.rotate_qk(&mut q, &mut k, shape, Direction::Forward)?;
//!
//! // The inverse undoes it (up to rounding).
//! table.rotate(&mut q, shape, Direction::Inverse)?;
//! assert!(q.iter().all(|v| (v - 0.25).abs() < 1e-6));
//! # Ok::<(), rope2d::Error>(())
//! ```
//!
//! # Conventions, as types
//!
//! | choice | type | values |
//! | --- | --- | --- |
//! | which elements pair up | [`Layout`] | `Interleaved` `(v[2k], v[2k+1])`, `Half` `(v[k], v[k+d/2])` |
//! | which axis rotates pairs `0 .. d/4` | [`AxisOrder`] | `ColFirst` (rope-vit), `RowFirst` (EVA-02, DINOv3) |
//! | grid index → coordinate | [`Coords`] | `Index`, `Rescale` to a reference grid, `Centered` in (−1, 1) |
//! | frequencies | `base`, `freq_scale` | `f_j = freq_scale · base^(−4j/d)` (2-D), `base^(−2k/d)` (1-D) |
//! | kind | [`Axial2d`], [`Rope1d`], [`Mixed2d`] | presets such as [`Axial2d::ROPE_VIT`], [`Axial2d::EVA02`], [`Axial2d::DINOV3`], [`Rope1d::LLAMA`], [`Rope1d::NEOX`] |
//!
//! # Tables
//!
//! Every kind is separable, so tables hold one row per grid row and per grid column
//! (`(rows + cols) · d/4` `[cos, sin]` entries for axial 2-D, not `rows · cols · d/2`):
//!
//! - fixed shapes: [`AxialTable<D, ROWS, COLS>`](AxialTable), [`Rope1dTable<D, LEN>`](Rope1dTable),
//!   [`MixedTable<D, HEADS, ROWS, COLS>`](MixedTable) — sizes are associated constants, invalid
//!   shapes do not compile;
//! - runtime shapes in caller storage: [`AxialTableRef`], [`Rope1dTableRef`], [`MixedTableRef`];
//! - no table at all: [`AxialDirect`] (real-valued coordinates), [`Rope1dDirect`] (any `u32`
//!   position).
//!
//! Each rotates one head vector (`rotate_head`), a whole `[tokens][heads][d]` buffer in
//! row-major grid order (`rotate`), queries and keys together (`rotate_qk`), tokens at
//! explicit positions (`rotate_at`, e.g. after patch dropping), with an unrotated prefix
//! ([`Shape::prefix`]) and in either [`Direction`].
//!
//! # Accuracy
//!
//! Tables are built without any `f64` arithmetic: frequencies are formed in 64-bit fixed
//! point (`log2`/`exp2` by integer squaring), the phase of an integer or `f32` coordinate is
//! reduced *exactly* by a wrapping integer multiply, and only `sin`/`cos` of an angle in
//! [0, π/4] is computed in `f32`. Consequences, all asserted by the tests:
//!
//! - every table entry is within 1.2e-7 of the `f64` `cos`/`sin` of the exact angle, at any
//!   position (65 535, 2²⁴, 2³⁰ alike) — float32 reference code is 1e-3 off at 65 535;
//! - rotated outputs are within 4e-6 of a float64 evaluation on every golden file, and
//!   within 1e-5 of the reference implementations' float32 outputs where those are
//!   themselves accurate (2-D, and 1-D below position 512).
//!
//! # Numerical behaviour
//!
//! - **NaN and infinities in the data** stay in their pair: both outputs of a pair depend on
//!   both of its inputs, so a NaN or ±Inf input makes that pair non-finite (an Inf may become
//!   NaN, as `Inf · 0 = NaN`) and leaves every other pair of the vector untouched.
//! - **Non-finite configuration or coordinates** are rejected with an [`Error`], never
//!   turned into silent NaN angles: `base`, `freq_scale`, learned RoPE-Mixed frequencies and
//!   [`Coord`]s must be finite.
//! - **Integer positions** (`u32` for 1-D, [`GridPos`] for 2-D) are reduced exactly at any
//!   value: the phase error is at most `position · 2⁻⁶⁴` turns plus the 2⁻⁶⁰-relative error
//!   of the fixed-point frequency, far below `f32` resolution even at `u32::MAX`.
//!   Positions beyond 2²⁴ — where an `f32` position can no longer count — are as accurate
//!   as small ones (asserted at 2²⁴ + 1, 2³¹ and `u32::MAX`).
//!   [`AnglePrecision::Float32`] deliberately rounds like float32 reference code instead.
//! - **Non-integer coordinates**: the grid modes [`Coords::Rescale`] and [`Coords::Centered`]
//!   are evaluated as exact rationals `(a·i + b) / n` in fixed point (reference code rounds
//!   them to `f32` first, a difference of up to ~4e-7 rad for DINOv3). An `f32` [`Coord`] is
//!   a dyadic rational and is reduced exactly as given; only beyond |x| ≈ 2⁴⁰ does the
//!   2⁻⁶⁴ rounding of the frequency show.
//! - **Table entries** are within 1.2e-7 (absolute) of the exact `cos`/`sin`; the scalar
//!   backend then rounds `a·c − b·s` and `a·s + b·c` in `f32`, so each output is within
//!   about `(|a| + |b|) · 2.5e-7` of the exact rotation.
//!
//! # Backends
//!
//! A [`Backend`] runs every rotation: `Scalar` (the reference: no fused multiply-add, the same
//! bits on every target; on Arm M-profile FPUs a hand-scheduled `vmla` loop with exactly that
//! arithmetic), `Portable` (`wide` SIMD chosen at compile time, hosted targets only,
//! bit-identical to scalar), `Avx2` (x86_64 AVX2 + FMA, feature `avx2`), `Avx512` (x86_64
//! AVX-512F + AVX2 + FMA, feature `avx512`) and `Neon` (aarch64, feature `neon`); the arch
//! features are on by default. [`Backend::auto`] picks AVX-512, then AVX2, when the CPU has
//! it (detected once and cached with `std`, else from the build's target features), then
//! NEON on aarch64, else scalar; `with_backend` forces any available one. AVX2, AVX-512 and
//! NEON produce identical bits and fuse one product per output, so each output is
//! within `2⁻²²·(|a|+|b|) + 2⁻¹⁴⁸` of scalar, with NaN and infinities in the same places
//! (except for results within an ulp of `f32` overflow).
//!
//! # Features
//!
//! - `std`: `std::error::Error` for [`Error`], and runtime CPU detection for SIMD backends.
//! - `defmt`: `defmt::Format` for the configuration and error types.
#![no_std]
#![deny(missing_docs)]
#![deny(unsafe_code, clippy::undocumented_unsafe_blocks)]

#[cfg(feature = "std")]
extern crate std;

mod apply;
mod axial;
mod backend;
mod config;
mod dims;
mod direct;
mod error;
mod freq;
mod math;
mod mixed;
mod rope1d;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

pub use axial::{AxialTable, AxialTableRef, Grid};
pub use backend::Backend;
pub use config::{
    AnglePrecision, Axial2d, AxisOrder, Coord, Coords, Direction, GridPos, Layout, Mixed2d, Rope1d,
    Shape,
};
pub use dims::{Dim, HeadDim};
pub use direct::{AxialDirect, Rope1dDirect};
pub use error::Error;
pub use mixed::{LearnedFreqs, MixedTable, MixedTableRef};
pub use rope1d::{Rope1dTable, Rope1dTableRef};
