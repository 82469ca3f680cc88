//! The scalar reference backend: the definition every other backend is checked against.
//!
//! Each output is `a·c − b·s` / `a·s + b·c` with two roundings per product and one per sum
//! (no fused multiply-add), so results are the same on every target.

use super::{Job, Kernel, drive};
use crate::config::{Direction, Layout};

pub(crate) struct Scalar;

pub(crate) fn is_available() -> bool {
    true
}

pub(crate) fn run(job: Job<'_, '_>) {
    drive::<Scalar>(job);
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

impl Kernel for Scalar {
    #[inline(always)]
    fn rotate_pairs(
        x: &mut [f32],
        head_dim: usize,
        layout: Layout,
        first_pair: usize,
        angles: &[[f32; 2]],
        dir: Direction,
    ) {
        for head in x.chunks_exact_mut(head_dim) {
            match layout {
                Layout::Interleaved => {
                    let pairs = head.as_chunks_mut::<2>().0.iter_mut().skip(first_pair);
                    for ([a, b], &cs) in pairs.zip(angles) {
                        rotate(a, b, cs, dir);
                    }
                }
                Layout::Half => {
                    let (lo, hi) = head.split_at_mut(head_dim / 2);
                    let pairs = lo.iter_mut().zip(hi.iter_mut()).skip(first_pair);
                    for ((a, b), &cs) in pairs.zip(angles) {
                        rotate(a, b, cs, dir);
                    }
                }
            }
        }
    }

    #[inline(always)]
    fn rotate_pairs_summed(
        x: &mut [f32],
        head_dim: usize,
        layout: Layout,
        a: &[[f32; 2]],
        b: &[[f32; 2]],
        dir: Direction,
    ) {
        let half = head_dim / 2;
        let angles = a.chunks_exact(half).zip(b.chunks_exact(half));
        for (head, (a, b)) in x.chunks_exact_mut(head_dim).zip(angles) {
            match layout {
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
