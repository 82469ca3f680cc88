//! The portable SIMD backend: [`wide`]'s `f32x8`, whose instructions are chosen at compile
//! time (SSE2/AVX on x86, NEON on aarch64, `simd128` on wasm32; plain arrays elsewhere, e.g.
//! 32-bit ARM). Safe code only.
//!
//! Interleaved pairs: 4 pairs per `f32x8` step; the swap within pairs is written as an array
//! permutation, which LLVM lowers to one shuffle. Half layout: 8 pairs per step with the
//! table de-interleaved per step.
//!
//! # Difference from [`Backend::Scalar`](super::Backend::Scalar)
//!
//! None: every output is `rnd(rnd(a·c) ∓ rnd(b·s))` with the same operands as scalar and no
//! fused multiply-add (the sign of `s` is applied by an exact multiplication by ±1), so the
//! results are bit-for-bit those of scalar, on every target, NaN and infinities included
//! (up to the payload of a NaN).

#![forbid(unsafe_code)]

use wide::f32x8;

use super::{AngleSource, Job, Kernel, NoRow, Pairing, drive};
use crate::config::{Direction, Layout};
use crate::element::{Element, sealed::Format};

/// The kernel: plain Rust over fixed-width arrays, no instruction set to check.
#[derive(Clone, Copy)]
pub(crate) struct Portable;

pub(crate) fn is_available() -> bool {
    true
}

/// The loop, for [`Backend::describe`](super::Backend::describe).
pub(crate) const FORM: &str = "wide f32x8, instructions chosen at compile time, no fused multiply-add, pair by pair from the tables";

/// How element types are converted.
pub(crate) fn conversions() -> &'static str {
    "element types by the scalar kernel (the same bits), converted pair by pair"
}

/// Element conversions: the reference ones (LLVM vectorises them).
pub(crate) use crate::element::{load, store};

/// Q15 tables: the scalar integer kernel.
pub(crate) use super::scalar::run_q15;

/// Whether [`run`] takes buffers of `E` at this scale ratio: ratio 1, as the scalar backend.
#[inline(always)]
pub(crate) fn fuses<E: Element>(ratio: f32) -> bool {
    super::scalar::fuses::<E>(ratio)
}

/// An `f32` buffer with `wide`; any other element type with the scalar kernel, whose
/// results are this backend's bit for bit.
pub(crate) fn run<E: Element, A: AngleSource>(job: Job<'_, A, E>) {
    // A constant condition, so that an angle source no `f32` buffer takes never
    // instantiates the `f32` loop (the branch not taken is not compiled).
    if const { matches!(E::FORMAT, Format::F32) } {
        match job.retype(E::as_f32) {
            Ok(job) => drive(Portable, job),
            // Unreachable: `E` is `f32`.
            Err(job) => super::scalar::run(job),
        }
    } else {
        super::scalar::run(job)
    }
}

/// `[−1, 1, −1, 1, …]` for the forward direction, its negation for the inverse.
#[inline(always)]
fn signs(dir: Direction) -> f32x8 {
    match dir {
        Direction::Forward => f32x8::new([-1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0]),
        Direction::Inverse => f32x8::new([1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0]),
    }
}

/// The scalar rotation, for tails.
#[inline(always)]
fn rotate1(a: &mut f32, b: &mut f32, [c, s]: [f32; 2], dir: Direction) {
    let s = match dir {
        Direction::Forward => s,
        Direction::Inverse => -s,
    };
    let (x, y) = (*a, *b);
    *a = x * c - y * s;
    *b = x * s + y * c;
}

/// RoPE-Mixed angle sums are staged in chunks of this many pairs.
const SUM_CHUNK: usize = 64;

/// The scalar angle sum, for RoPE-Mixed.
#[inline(always)]
fn sum1([ca, sa]: [f32; 2], [cb, sb]: [f32; 2]) -> [f32; 2] {
    [ca * cb - sa * sb, sa * cb + ca * sb]
}

/// Interleaved: rotates the 4 pairs in `v` by the 4 entries in `t`.
#[inline(always)]
fn il4(v: &mut [f32; 8], t: &[[f32; 2]; 4], sign: f32x8) {
    let x = f32x8::new(*v);
    let [[c0, s0], [c1, s1], [c2, s2], [c3, s3]] = *t;
    let cc = f32x8::new([c0, c0, c1, c1, c2, c2, c3, c3]);
    let ss = f32x8::new([s0, s0, s1, s1, s2, s2, s3, s3]) * sign;
    let swapped = f32x8::new([v[1], v[0], v[3], v[2], v[5], v[4], v[7], v[6]]);
    // Even lanes: a·c + b·(∓s); odd lanes: b·c + a·(±s) — scalar's operands and roundings.
    *v = (x * cc + swapped * ss).to_array();
}

/// Half layout: rotates the 8 pairs `(a[i], b[i])` by the 8 entries in `t`.
#[inline(always)]
fn half8(a: &mut [f32; 8], b: &mut [f32; 8], t: &[[f32; 2]; 8], dir: Direction) {
    let c = f32x8::new(t.map(|e| e[0]));
    let s = f32x8::new(t.map(|e| e[1]));
    let s = match dir {
        Direction::Forward => s,
        Direction::Inverse => -s,
    };
    let x = f32x8::new(*a);
    let y = f32x8::new(*b);
    *a = (x * c - y * s).to_array();
    *b = (x * s + y * c).to_array();
}

pub(crate) fn rotate_section(
    x: &mut [f32],
    head_dim: usize,
    pairing: Pairing,
    first_pair: usize,
    angles: &[[f32; 2]],
    dir: Direction,
) {
    // Pairs `0 .. half` rotate; the half layout pairs `k` with `k + half`.
    let half = pairing.pairs.min(head_dim / 2);
    let room = half.saturating_sub(first_pair);
    let angles = &angles[..angles.len().min(room)];
    let n = angles.len();
    if n == 0 {
        return;
    }
    let sign = signs(dir);
    let (blocks, tail) = angles.as_chunks::<4>();
    let (blocks8, tail8) = angles.as_chunks::<8>();
    for head in x.chunks_exact_mut(head_dim) {
        match pairing.layout {
            Layout::Interleaved => {
                let Some(section) = head.get_mut(2 * first_pair..2 * (first_pair + n)) else {
                    continue;
                };
                let (vs, rest) = section.as_chunks_mut::<8>();
                for (v, t) in vs.iter_mut().zip(blocks) {
                    il4(v, t, sign);
                }
                for ([a, b], &cs) in rest.as_chunks_mut::<2>().0.iter_mut().zip(tail) {
                    rotate1(a, b, cs, dir);
                }
            }
            Layout::Half => {
                let (lo, hi) = head.split_at_mut(half);
                let (Some(lo), Some(hi)) = (
                    lo.get_mut(first_pair..first_pair + n),
                    hi.get_mut(first_pair..first_pair + n),
                ) else {
                    continue;
                };
                let (lo8, lo_rest) = lo.as_chunks_mut::<8>();
                let (hi8, hi_rest) = hi.as_chunks_mut::<8>();
                for ((a, b), t) in lo8.iter_mut().zip(hi8.iter_mut()).zip(blocks8) {
                    half8(a, b, t, dir);
                }
                for ((a, b), &cs) in lo_rest.iter_mut().zip(hi_rest.iter_mut()).zip(tail8) {
                    rotate1(a, b, cs, dir);
                }
            }
        }
    }
}

impl Kernel for Portable {
    type Value = f32;
    type Entry = [f32; 2];
    type Row = NoRow;

    #[inline(always)]
    fn rotate_pairs(
        self,
        x: &mut [f32],
        head_dim: usize,
        pairing: Pairing,
        first_pair: usize,
        angles: &[[f32; 2]],
        dir: Direction,
    ) {
        rotate_section(x, head_dim, pairing, first_pair, angles, dir);
    }

    #[inline(always)]
    fn rotate_pairs_summed(
        self,
        x: &mut [f32],
        head_dim: usize,
        pairing: Pairing,
        a: &[[f32; 2]],
        b: &[[f32; 2]],
        dir: Direction,
    ) {
        let half = pairing.pairs.min(head_dim / 2);
        if half == 0 {
            return;
        }
        let angles = a.chunks_exact(half).zip(b.chunks_exact(half));
        for (head, (a, b)) in x.chunks_exact_mut(head_dim).zip(angles) {
            // Sum the angles (scalar's formula and roundings) a chunk at a time on the stack
            // (512 B: a whole head up to d = 128, so one rotation call per head), then rotate.
            let mut start = 0;
            for (a_chunk, b_chunk) in a.chunks(SUM_CHUNK).zip(b.chunks(SUM_CHUNK)) {
                let mut sums = [[0f32; 2]; SUM_CHUNK];
                for ((s, &ea), &eb) in sums.iter_mut().zip(a_chunk).zip(b_chunk) {
                    *s = sum1(ea, eb);
                }
                let count = a_chunk.len();
                rotate_section(head, head_dim, pairing, start, &sums[..count], dir);
                start += count;
            }
        }
    }
}
