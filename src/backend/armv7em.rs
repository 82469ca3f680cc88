//! The Q15 kernel of ARMv7E-M (Cortex-M4/M7), on its DSP extension: a pair `(a, b)` and an
//! entry `(c, s)` are each one word of two halfwords, so `smlsd` forms `a·c − b·s` and
//! `smladx` `a·s + b·c` in one instruction each, the accumulator adding the rounding's 2¹⁴;
//! `ssat` shifts by 15 and saturates, `pkhbt` packs the pair back. Four pairs per loop step
//! (one `ldm` of the values, one of the entries, one `stm`): 25 instructions for 4 pairs;
//! heads are looped inside (8 instructions per head). Exactly the arithmetic of the scalar `Q15`
//! number format — `(a·c − b·s + 2¹⁴) >> 15`, saturated — checked bit for bit against it by
//! `examples/cortex_m4.rs` on the device. Word loads need 4-byte alignment: other buffers,
//! sections that are not a multiple of 4 pairs, and the half layout take the plain-Rust
//! loop.

use core::arch::asm;

use super::Pairing;
use crate::config::{Direction, Layout};

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
        // SAFETY: see `rotate_pairs`: the frame describes sections of `x`, one per whole
        // head, each rotated by as many entries as it has pairs; every access is an aligned
        // word inside them. r4–r11 are saved and restored here (r6 and r7 cannot be
        // operands); the flags and the DSP Q flag are clobbered, the stack is balanced.
        unsafe {
            asm!(
                ".arch armv7e-m",
                "push {{r4-r11}}",
                "mov r12, #0x4000",
                "2:",
                "ldr r1, [lr, #0]",
                "ldr r2, [lr, #12]",
                "add r2, r1",
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
                "ldr r2, [lr, #4]",
                "add r0, r2",
                "ldr r2, [lr, #8]",
                "cmp r0, r2",
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

/// Rotates pairs `first_pair .. first_pair + angles.len()` of every head of `x` by the Q15
/// `angles` when the layout is interleaved, the section a multiple of 4 pairs, and `x` and
/// `angles` 4-byte aligned (and `head_dim` even, so that every head is); `false`, touching
/// nothing, otherwise.
#[inline(always)]
pub(super) fn rotate_pairs(
    x: &mut [i16],
    head_dim: usize,
    pairing: Pairing,
    first_pair: usize,
    angles: &[[i16; 2]],
    dir: Direction,
) -> bool {
    let rotary = pairing.pairs.min(head_dim / 2);
    let n = angles.len().min(rotary.saturating_sub(first_pair));
    let aligned = (x.as_ptr() as usize | angles.as_ptr() as usize) & 3 == 0 && head_dim & 1 == 0;
    if pairing.layout != Layout::Interleaved || !aligned || n & 3 != 0 {
        return false;
    }
    if n == 0 || x.len() < head_dim {
        return true;
    }
    // Whole heads only (the callers pass whole heads; a partial one at the end is left):
    // sections start `2 · head_dim` bytes apart, up to the one of the last whole head. The
    // section lies inside its head: 2 · (first_pair + n) ≤ 2 · rotary ≤ head_dim.
    let section = x.as_mut_ptr().wrapping_add(2 * first_pair);
    let last = x
        .as_mut_ptr()
        .wrapping_add(x.len() - head_dim + 2 * first_pair);
    let frame: [u32; 4] = [
        angles.as_ptr() as u32,
        (2 * head_dim - 4 * n) as u32,
        last as u32,
        (4 * n) as u32,
    ];
    let frame = frame.as_ptr();
    match dir {
        Direction::Forward => heads!(Forward, section, frame),
        Direction::Inverse => heads!(Inverse, section, frame),
    }
    true
}
