//! The Q15 kernel of ARMv7E-M (Cortex-M4/M7), on its DSP extension: a pair `(a, b)` and an
//! entry `(c, s)` are each one word of two halfwords, so `smlsd` forms `a·c − b·s` and
//! `smladx` `a·s + b·c` in one instruction each, the accumulator adding the rounding's 2¹⁴;
//! `ssat` shifts by 15 and saturates, `pkhbt` packs the pair back. Four pairs per loop step
//! (one `ldm` of the values, one of the entries, one `stm`): 25 instructions for 4 pairs;
//! heads are looped inside (6 instructions per head). Exactly the arithmetic of the scalar `Q15`
//! number format — `(a·c − b·s + 2¹⁴) >> 15`, saturated — checked bit for bit against it by
//! `examples/cortex_m4.rs` on the device. Word loads need 4-byte alignment: other buffers,
//! sections that are not a multiple of 4 pairs, and the half layout take the plain-Rust
//! loop.

use core::arch::asm;

use super::{Pairing, WordSections};
use crate::config::Direction;

/// One pair: value word `$x` and entry word `$e` into `$x = (a', b')`, through r11; r12
/// holds 2¹⁴. Forward: `a' = smlsd`, `b' = smladx`; inverse: `a' = smlad` (`a·c + b·s`),
/// `b' = smlsdx` with the operands swapped (`c·b − s·a`).
macro_rules! pair {
    (Forward, $x:literal, $e:literal) => {
        concat!(
            "smlsd r11, ", $x, ", ", $e, ", r12\n",
            "smladx ", $e, ", ", $x, ", ", $e, ", r12\n",
            pair!(@pack $x, $e)
        )
    };
    (Inverse, $x:literal, $e:literal) => {
        concat!(
            "smlad r11, ", $x, ", ", $e, ", r12\n",
            "smlsdx ", $e, ", ", $e, ", ", $x, ", r12\n",
            pair!(@pack $x, $e)
        )
    };
    (@pack $x:literal, $e:literal) => {
        concat!(
            "ssat r11, #16, r11, asr #15\n",
            "ssat ", $e, ", #16, ", $e, ", asr #15\n",
            "pkhbt ", $x, ", r11, ", $e, ", lsl #16\n"
        )
    };
}

/// Every head's section: `$dir` is `Forward` or `Inverse`. lr points at the frame: the first
/// entry, the step from a section's end to the next one's start, the last section's start,
/// the section's bytes (a multiple of 16: four pairs per step).
macro_rules! heads {
    ($dir:ident, $x:expr, $frame:expr) => {
        // SAFETY: the contract of `heads`: the frame describes the sections, one per whole
        // head, each rotated by as many entries as it has pairs; every access is an aligned
        // word inside them. r4–r11 are saved and restored here (r6 and r7 cannot be
        // operands); the flags and the DSP Q flag are clobbered, the stack is balanced.
        unsafe {
            asm!(
                ".arch armv7e-m",
                "push {{r4-r11}}",
                "mov r12, #0x4000",
                // r2 = the entries' end (every head's section ends there).
                "ldr r1, [lr, #0]",
                "ldr r2, [lr, #12]",
                "add r2, r1",
                "2:",
                "ldr r1, [lr, #0]",
                "1:",
                "ldm r0, {{r3, r4, r5, r6}}",
                "ldm r1!, {{r7, r8, r9, r10}}",
                pair!($dir, "r3", "r7"),
                pair!($dir, "r4", "r8"),
                pair!($dir, "r5", "r9"),
                pair!($dir, "r6", "r10"),
                "stm r0!, {{r3, r4, r5, r6}}",
                "cmp r1, r2",
                "bne 1b",
                // The next head's section.
                "ldr r3, [lr, #4]",
                "add r0, r3",
                "ldr r3, [lr, #8]",
                "cmp r0, r3",
                "bls 2b",
                "pop {{r4-r11}}",
                inout("r0") $x => _,
                out("r1") _,
                out("r2") _,
                out("r3") _,
                out("r12") _,
                inout("lr") $frame => _,
            );
        }
    };
}

/// Rotates the sections `first, first + 2·head_dim, …` up to `last` (`n` pairs each, `n` a
/// multiple of 4) by the `n` entries at `entries`.
///
/// # Safety
///
/// `first` and `last` point into one buffer, `last − first` a multiple of `2 · head_dim`
/// values, each section's `2n` values inside it and word-aligned; `entries` points at `n`
/// word-aligned entries; `n ≥ 4`.
#[inline(always)]
unsafe fn heads(
    first: *mut i16,
    last: *mut i16,
    entries: *const [i16; 2],
    n: usize,
    head_dim: usize,
    dir: Direction,
) {
    let frame: [u32; 4] = [
        entries as u32,
        (2 * head_dim - 4 * n) as u32,
        last as u32,
        (4 * n) as u32,
    ];
    let frame = frame.as_ptr();
    match dir {
        Direction::Forward => heads!(Forward, first, frame),
        Direction::Inverse => heads!(Inverse, first, frame),
    }
}

/// Pairs per loop step: sections must be a multiple.
const STEP: usize = 4;

/// Rotates pairs `first_pair .. first_pair + angles.len()` of every head of `x` by the Q15
/// `angles` when [`WordSections`] allows (a multiple of 4 pairs (four per step)); `false`, touching nothing,
/// otherwise.
#[inline(always)]
pub(super) fn rotate_pairs(
    x: &mut [i16],
    head_dim: usize,
    pairing: Pairing,
    first_pair: usize,
    angles: &[[i16; 2]],
    dir: Direction,
) -> bool {
    match WordSections::of(x, head_dim, pairing, first_pair, angles, STEP) {
        WordSections::Unsupported => false,
        WordSections::Empty => true,
        WordSections::Words { first, last, n } => {
            // SAFETY: `WordSections` checked the layout, the alignment of `x`, `angles` and
            // `head_dim`, and that each whole head's section of `n ≤ angles.len()` pairs lies
            // inside it, from `first` to `last`; `n` is a nonzero multiple of `STEP`.
            unsafe { heads(first, last, angles.as_ptr(), n, head_dim, dir) };
            true
        }
    }
}

/// [`Kernel::rotate_line_pairs`](super::Kernel::rotate_line_pairs): each token of `line`
/// rotated as [`rotate_pairs`] rotates a token, its entries `width` apart in `table`; `false`,
/// touching nothing, when [`WordSections::line`] declines.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn rotate_line(
    line: &mut [i16],
    token_len: usize,
    head_dim: usize,
    pairing: Pairing,
    section: (usize, usize),
    table: &[[i16; 2]],
    width: usize,
    dir: Direction,
) -> bool {
    let sections = WordSections::line(
        line, token_len, head_dim, pairing, section, table, width, STEP,
    );
    let Some(tokens) = sections else {
        return false;
    };
    let n = tokens.n;
    for (first, last, entries) in tokens {
        // SAFETY: `WordSections::line` checked, for every token, what `rotate_pairs`'
        // `WordSections::of` checks (the same shape; word-aligned tokens and entry rows) and
        // that its `n` entries are in the table; `last` is its last head's section.
        unsafe { heads(first, last, entries, n, head_dim, dir) };
    }
    true
}
