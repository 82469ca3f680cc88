//! The scalar reference backend: the definition every other backend is checked against.
//!
//! Each output is `a·c − b·s` / `a·s + b·c` with two roundings per product and one per sum
//! (no fused multiply-add), so results are the same on every target.

#![forbid(unsafe_code)]

use super::{AngleSource, Job, Kernel, NoRow, Pairing, drive};
use crate::config::{Direction, Layout};

pub(crate) struct Scalar;

pub(crate) fn is_available() -> bool {
    true
}

/// The loop, for [`Backend::describe`](super::Backend::describe).
pub(crate) const FORM: &str = if cfg!(all(
    target_arch = "arm",
    target_abi = "eabihf",
    not(target_has_atomic = "64")
)) {
    "a hand-scheduled vmul/vmla loop (Arm M-profile FPU), no fused multiply-add"
} else {
    "plain Rust, two roundings per product, no fused multiply-add"
};

/// How element types are converted.
pub(crate) fn conversions() -> &'static str {
    "element types converted in scalar code"
}

/// Element conversions: the reference ones.
pub(crate) use crate::element::{load, store};

pub(crate) fn run<A: AngleSource>(job: Job<'_, A>) {
    drive::<Scalar, A>(job);
}

#[inline(always)]
fn rotate(a: &mut f32, b: &mut f32, [c, s]: [f32; 2], dir: Direction) {
    let s = match dir {
        Direction::Forward => s,
        Direction::Inverse => -s,
    };
    let (x, y) = (*a, *b);
    *a = x * c - y * s;
    *b = x * s + y * c;
}

#[inline(always)]
fn sum([ca, sa]: [f32; 2], [cb, sb]: [f32; 2]) -> [f32; 2] {
    [ca * cb - sa * sb, sa * cb + ca * sb]
}

/// The reference loop in plain Rust (on M-profile FPUs, `cortex_m.rs` runs the same
/// arithmetic as a hand-scheduled loop).
#[cfg_attr(
    all(
        target_arch = "arm",
        target_abi = "eabihf",
        not(target_has_atomic = "64")
    ),
    allow(dead_code)
)]
#[inline(always)]
fn rotate_pairs_rust(
    x: &mut [f32],
    head_dim: usize,
    pairing: Pairing,
    first_pair: usize,
    angles: &[[f32; 2]],
    dir: Direction,
) {
    let rotary = pairing.pairs.min(head_dim / 2);
    for head in x.chunks_exact_mut(head_dim) {
        match pairing.layout {
            Layout::Interleaved => {
                let rotary = head.get_mut(..2 * rotary).unwrap_or(&mut []);
                let pairs = rotary.as_chunks_mut::<2>().0.iter_mut().skip(first_pair);
                for ([a, b], &cs) in pairs.zip(angles) {
                    rotate(a, b, cs, dir);
                }
            }
            Layout::Half => {
                let rotary = head.get_mut(..2 * rotary).unwrap_or(&mut []);
                let (lo, hi) = rotary.split_at_mut(rotary.len() / 2);
                let pairs = lo.iter_mut().zip(hi.iter_mut()).skip(first_pair);
                for ((a, b), &cs) in pairs.zip(angles) {
                    rotate(a, b, cs, dir);
                }
            }
        }
    }
}

impl Kernel for Scalar {
    type Row = NoRow;

    #[inline(always)]
    fn rotate_pairs(
        x: &mut [f32],
        head_dim: usize,
        pairing: Pairing,
        first_pair: usize,
        angles: &[[f32; 2]],
        dir: Direction,
    ) {
        #[cfg(all(
            target_arch = "arm",
            target_abi = "eabihf",
            not(target_has_atomic = "64")
        ))]
        super::cortex_m::rotate_pairs(x, head_dim, pairing, first_pair, angles, dir);
        #[cfg(not(all(
            target_arch = "arm",
            target_abi = "eabihf",
            not(target_has_atomic = "64")
        )))]
        rotate_pairs_rust(x, head_dim, pairing, first_pair, angles, dir);
    }

    #[inline(always)]
    fn rotate_pairs_summed(
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
            let head = head.get_mut(..2 * half).unwrap_or(&mut []);
            match pairing.layout {
                Layout::Interleaved => {
                    let pairs = head.as_chunks_mut::<2>().0.iter_mut();
                    for (([x, y], &ca), &cb) in pairs.zip(a).zip(b) {
                        rotate(x, y, sum(ca, cb), dir);
                    }
                }
                Layout::Half => {
                    let (lo, hi) = head.split_at_mut(half);
                    for (((x, y), &ca), &cb) in lo.iter_mut().zip(hi.iter_mut()).zip(a).zip(b) {
                        rotate(x, y, sum(ca, cb), dir);
                    }
                }
            }
        }
    }
}
