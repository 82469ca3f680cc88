//! The scalar reference backend: the definition every other backend is checked against, in
//! each number format ([`Number`]) — `f32` arithmetic on any element type ([`Float`]), and
//! Q15 fixed point for [`Q15Table`]s.
//!
//! `f32`: each output is `a·c − b·s` / `a·s + b·c` with two roundings per product and one per
//! sum (no fused multiply-add), so results are the same on every target; a buffer of another
//! element type is converted pair by pair on load (exactly) and rounded on store.
//!
//! [`Q15Table`]: crate::Q15Table

#![forbid(unsafe_code)]

use core::marker::PhantomData;

use super::{AngleSource, Job, Kernel, NoRow, Pairing, Tokens, drive};
use crate::config::{Direction, Layout};
use crate::element::Element;

pub(crate) fn is_available() -> bool {
    true
}

/// The loop, for [`Backend::describe`](super::Backend::describe).
pub(crate) const FORM: &str = if cfg!(rope2d_mprofile_fpu) {
    "a hand-scheduled vmul/vmla loop (Arm M-profile FPU), no fused multiply-add"
} else {
    "plain Rust, two roundings per product, no fused multiply-add"
};

/// How element types are converted.
pub(crate) fn conversions() -> &'static str {
    "element types converted pair by pair in scalar code"
}

/// Whether [`run`] takes buffers of `E` at this scale ratio: every type at ratio 1 (a load
/// is exact and needs no scaling; other ratios are staged).
// `E`: the registry asks every backend the same question.
#[allow(clippy::extra_unused_type_parameters)]
#[inline(always)]
pub(crate) fn fuses<E: Element>(ratio: f32) -> bool {
    ratio == 1.0
}

/// Element conversions: the reference ones.
pub(crate) use crate::element::{load, store};

pub(crate) fn run<E: Element, A: AngleSource>(job: Job<'_, A, E>) {
    drive(Scalar(Float::new()), job);
}

/// A Q15 table's job on `i16` or `i8` values: integer arithmetic only (the reference the
/// arch files' integer loops match bit for bit).
pub(crate) fn run_q15<V: Fixed, A: AngleSource<[i16; 2]>>(job: Job<'_, A, V>) {
    drive(Scalar(Q15::new()), job);
}

/// The scalar kernel in number format `N`: a value of the format, which for a format whose
/// pair loop needs an instruction set (`simd::Q15Vectors`) is the proof that it is available.
#[derive(Clone, Copy)]
pub(crate) struct Scalar<N>(pub(crate) N);

/// A number format: the stored values, the table entries, and the rotation of one pair.
pub(crate) trait Number: Copy {
    type Value: Copy;
    type Entry: Copy;
    /// [`Kernel::INLINE`].
    const INLINE: bool = false;

    /// Rotates `(a, b)` by `[c, s]` (`s` negated for the inverse).
    fn rotate(a: &mut Self::Value, b: &mut Self::Value, cs: Self::Entry, dir: Direction);

    /// The entry of the sum of two angles (RoPE-Mixed).
    fn sum(a: Self::Entry, b: Self::Entry) -> Self::Entry;

    /// [`Kernel::rotate_line_pairs`]: a hand-written loop for this core, if any.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn rotate_line_pairs(
        self,
        _line: &mut [Self::Value],
        _token_len: usize,
        _head_dim: usize,
        _pairing: Pairing,
        _section: (usize, usize),
        _table: &[Self::Entry],
        _width: usize,
        _dir: Direction,
    ) -> bool {
        false
    }

    /// [`Kernel::rotate_pairs`]: the plain-Rust loop, unless the format has a hand-written one
    /// for this core.
    #[inline(always)]
    fn rotate_pairs(
        self,
        x: &mut [Self::Value],
        head_dim: usize,
        pairing: Pairing,
        first_pair: usize,
        angles: &[Self::Entry],
        dir: Direction,
    ) {
        rotate_pairs_rust::<Self>(x, head_dim, pairing, first_pair, angles, dir);
    }
}

/// `f32` arithmetic and entries on values of element type `E`, loaded exactly (`E` is a
/// float type, or an integer at ratio 1: see [`fuses`]) and rounded back on store (`f32`:
/// no conversion at all).
#[derive(Clone, Copy)]
pub(crate) struct Float<E>(PhantomData<E>);

impl<E> Float<E> {
    pub(crate) const fn new() -> Self {
        Self(PhantomData)
    }
}

impl<E: Element> Number for Float<E> {
    type Value = E;
    type Entry = [f32; 2];

    #[inline(always)]
    fn rotate(a: &mut E, b: &mut E, [c, s]: [f32; 2], dir: Direction) {
        let s = match dir {
            Direction::Forward => s,
            Direction::Inverse => -s,
        };
        let (x, y) = (a.to_f32(), b.to_f32());
        *a = E::from_f32(x * c - y * s);
        *b = E::from_f32(x * s + y * c);
    }

    #[inline(always)]
    fn sum([ca, sa]: [f32; 2], [cb, sb]: [f32; 2]) -> [f32; 2] {
        [ca * cb - sa * sb, sa * cb + ca * sb]
    }

    /// On M-profile FPUs, `cortex_m.rs` runs the same arithmetic as a hand-scheduled loop.
    #[cfg(rope2d_mprofile_fpu)]
    #[inline(always)]
    fn rotate_pairs(
        self,
        x: &mut [E],
        head_dim: usize,
        pairing: Pairing,
        first_pair: usize,
        angles: &[[f32; 2]],
        dir: Direction,
    ) {
        match E::as_f32(x) {
            Some(x) => super::cortex_m::rotate_pairs(x, head_dim, pairing, first_pair, angles, dir),
            None => rotate_pairs_rust::<Self>(x, head_dim, pairing, first_pair, angles, dir),
        }
    }
}

/// The integer types a Q15 table rotates.
pub(crate) trait Fixed: Copy {
    /// The value, widened.
    fn widen(self) -> i32;
    /// `v` saturated to the type's range.
    fn saturate(v: i32) -> Self;
    /// [`Kernel::rotate_line_pairs`] by a hand-written loop for this core, when it has one
    /// for this case; `false`, touching nothing, when not.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn rotate_line_native(
        _line: &mut [Self],
        _token_len: usize,
        _head_dim: usize,
        _pairing: Pairing,
        _section: (usize, usize),
        _table: &[[i16; 2]],
        _width: usize,
        _dir: Direction,
    ) -> bool {
        false
    }

    /// [`Kernel::rotate_pairs`] by a hand-written loop for this core, when it has one for
    /// this case; `false`, touching nothing, when not.
    #[inline(always)]
    fn rotate_pairs_native(
        _x: &mut [Self],
        _head_dim: usize,
        _pairing: Pairing,
        _first_pair: usize,
        _angles: &[[i16; 2]],
        _dir: Direction,
    ) -> bool {
        false
    }
}

#[cfg(any(rope2d_armv6m, rope2d_arm_dsp))]
use super::WordLoop;
#[cfg(rope2d_arm_dsp)]
use super::armv7em::Armv7emQ15 as Q15Loop;
/// The hand-written Q15 loop of this core: `cortex_m0.rs` on ARMv6-M, `armv7em.rs` (the DSP
/// extension) on ARMv7E-M.
#[cfg(rope2d_armv6m)]
use super::cortex_m0::Armv6mQ15 as Q15Loop;

impl Fixed for i16 {
    #[cfg(any(rope2d_armv6m, rope2d_arm_dsp))]
    #[inline(always)]
    fn rotate_line_native(
        line: &mut [i16],
        token_len: usize,
        head_dim: usize,
        pairing: Pairing,
        section: (usize, usize),
        table: &[[i16; 2]],
        width: usize,
        dir: Direction,
    ) -> bool {
        Q15Loop::rotate_line(
            line, token_len, head_dim, pairing, section, table, width, dir,
        )
    }

    #[cfg(any(rope2d_armv6m, rope2d_arm_dsp))]
    #[inline(always)]
    fn rotate_pairs_native(
        x: &mut [i16],
        head_dim: usize,
        pairing: Pairing,
        first_pair: usize,
        angles: &[[i16; 2]],
        dir: Direction,
    ) -> bool {
        Q15Loop::rotate_pairs(x, head_dim, pairing, first_pair, angles, dir)
    }

    #[inline(always)]
    fn widen(self) -> i32 {
        i32::from(self)
    }
    #[inline(always)]
    fn saturate(v: i32) -> Self {
        // In range (the common case): one sign extension and one comparison, no constants
        // to load (a clamp costs two literal loads and two branches on Thumb-1).
        let t = v as i16;
        if i32::from(t) == v {
            t
        } else {
            ((v >> 31) ^ 0x7FFF) as i16
        }
    }
}

impl Fixed for i8 {
    #[inline(always)]
    fn widen(self) -> i32 {
        i32::from(self)
    }
    #[inline(always)]
    fn saturate(v: i32) -> Self {
        let t = v as i8;
        if i32::from(t) == v {
            t
        } else {
            ((v >> 31) ^ 0x7F) as i8
        }
    }
}

/// `v / 2^15` rounded to nearest (ties up), as the DSP idiom does it: add half, shift.
#[inline(always)]
fn round_q15(v: i32) -> i32 {
    (v + (1 << 14)) >> 15
}

/// Integer values `V` (`i16`, `i8`) with Q15 `[cos, sin]` entries: each output is
/// `round((a·c − b·s) / 2^15)`, ties up, saturated to `V`. The products and their sum fit an
/// `i32` (entries are at most 32 767 in magnitude: `2 · 2^15 · 32 767 + 2^14 < 2^31`).
#[derive(Clone, Copy)]
pub(crate) struct Q15<V>(PhantomData<V>);

impl<V> Q15<V> {
    pub(crate) const fn new() -> Self {
        Self(PhantomData)
    }
}

impl<V: Fixed> Number for Q15<V> {
    type Value = V;
    type Entry = [i16; 2];
    /// The Cortex-M0 and M4/M7 loops: their call is a large part of a section's cost.
    const INLINE: bool = cfg!(any(rope2d_armv6m, rope2d_arm_dsp));

    #[inline(always)]
    fn rotate(a: &mut V, b: &mut V, [c, s]: [i16; 2], dir: Direction) {
        let (c, s) = (i32::from(c), i32::from(s));
        let s = match dir {
            Direction::Forward => s,
            Direction::Inverse => -s,
        };
        let (x, y) = (a.widen(), b.widen());
        *a = V::saturate(round_q15(x * c - y * s));
        *b = V::saturate(round_q15(x * s + y * c));
    }

    #[inline(always)]
    fn rotate_pairs(
        self,
        x: &mut [V],
        head_dim: usize,
        pairing: Pairing,
        first_pair: usize,
        angles: &[[i16; 2]],
        dir: Direction,
    ) {
        if V::rotate_pairs_native(x, head_dim, pairing, first_pair, angles, dir) {
            return;
        }
        if Self::INLINE {
            // The hand-written loops are inlined into every call site; what they do not take
            // (a buffer that is not word-aligned, the pairs after the last whole step) is one
            // out-of-line copy, not one per site (3.3 KiB of the Cortex-M0 example's flash).
            q15_pairs_out_of_line::<V>(x, head_dim, pairing, first_pair, angles, dir);
        } else {
            rotate_pairs_rust::<Self>(x, head_dim, pairing, first_pair, angles, dir);
        }
    }

    #[inline(always)]
    fn rotate_line_pairs(
        self,
        line: &mut [V],
        token_len: usize,
        head_dim: usize,
        pairing: Pairing,
        section: (usize, usize),
        table: &[[i16; 2]],
        width: usize,
        dir: Direction,
    ) -> bool {
        V::rotate_line_native(
            line, token_len, head_dim, pairing, section, table, width, dir,
        )
    }

    #[inline(always)]
    fn sum([ca, sa]: [i16; 2], [cb, sb]: [i16; 2]) -> [i16; 2] {
        let (ca, sa, cb, sb): (i32, i32, i32, i32) = (ca.into(), sa.into(), cb.into(), sb.into());
        let q15 = |v: i32| round_q15(v).clamp(-32_767, 32_767) as i16;
        [q15(ca * cb - sa * sb), q15(sa * cb + ca * sb)]
    }
}

/// [`rotate_pairs_rust`] for Q15, out of line (see [`Q15::rotate_pairs`]).
#[inline(never)]
fn q15_pairs_out_of_line<V: Fixed>(
    x: &mut [V],
    head_dim: usize,
    pairing: Pairing,
    first_pair: usize,
    angles: &[[i16; 2]],
    dir: Direction,
) {
    rotate_pairs_rust::<Q15<V>>(x, head_dim, pairing, first_pair, angles, dir);
}

/// The reference loop in plain Rust.
#[inline(always)]
pub(super) fn rotate_pairs_rust<N: Number>(
    x: &mut [N::Value],
    head_dim: usize,
    pairing: Pairing,
    first_pair: usize,
    angles: &[N::Entry],
    dir: Direction,
) {
    let rotary = pairing.pairs.min(head_dim / 2);
    // `Tokens`, not `chunks_exact_mut`: no division (a library call on cores without one).
    for head in Tokens::new(x, head_dim) {
        match pairing.layout {
            Layout::Interleaved => {
                let rotary = head.get_mut(..2 * rotary).unwrap_or(&mut []);
                let pairs = rotary.as_chunks_mut::<2>().0.iter_mut().skip(first_pair);
                for ([a, b], &cs) in pairs.zip(angles) {
                    N::rotate(a, b, cs, dir);
                }
            }
            Layout::Half => {
                let rotary = head.get_mut(..2 * rotary).unwrap_or(&mut []);
                let (lo, hi) = rotary.split_at_mut(rotary.len() / 2);
                let pairs = lo.iter_mut().zip(hi.iter_mut()).skip(first_pair);
                for ((a, b), &cs) in pairs.zip(angles) {
                    N::rotate(a, b, cs, dir);
                }
            }
        }
    }
}

impl<N: Number> Kernel for Scalar<N> {
    type Value = N::Value;
    type Entry = N::Entry;
    type Row = NoRow;
    const INLINE: bool = N::INLINE;
    const CONSTANT_DIRECTION: bool = true;

    #[inline(always)]
    fn rotate_pairs(
        self,
        x: &mut [N::Value],
        head_dim: usize,
        pairing: Pairing,
        first_pair: usize,
        angles: &[N::Entry],
        dir: Direction,
    ) {
        self.0
            .rotate_pairs(x, head_dim, pairing, first_pair, angles, dir);
    }

    #[inline(always)]
    fn rotate_line_pairs(
        self,
        line: &mut [N::Value],
        token_len: usize,
        head_dim: usize,
        pairing: Pairing,
        section: (usize, usize),
        table: &[N::Entry],
        width: usize,
        dir: Direction,
    ) -> bool {
        self.0.rotate_line_pairs(
            line, token_len, head_dim, pairing, section, table, width, dir,
        )
    }

    #[inline(always)]
    fn rotate_pairs_summed(
        self,
        x: &mut [N::Value],
        head_dim: usize,
        pairing: Pairing,
        a: &[N::Entry],
        b: &[N::Entry],
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
                        N::rotate(x, y, N::sum(ca, cb), dir);
                    }
                }
                Layout::Half => {
                    let (lo, hi) = head.split_at_mut(half);
                    for (((x, y), &ca), &cb) in lo.iter_mut().zip(hi.iter_mut()).zip(a).zip(b) {
                        N::rotate(x, y, N::sum(ca, cb), dir);
                    }
                }
            }
        }
    }
}
