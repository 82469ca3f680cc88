//! The Q15 kernel of ARMv7E-M (Cortex-M4/M7), on its DSP extension — also built for Armv8-M
//! Mainline cores that have the extension (Cortex-M33/M35P/M55, feature `dsp`; the same
//! Thumb-2 encodings, assembled under `.arch armv7e-m`): a pair `(a, b)` and an
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

use super::{WordLoop, Words};
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
/// the section's bytes (a multiple of 16: four pairs per step). The first three are copied to
/// the stack, which frees lr for the entries (r9, RWPI code's static base, stays untouched).
macro_rules! heads {
    ($dir:ident, $x:expr, $frame:expr) => {
        // SAFETY: the invariant of `Words` (checked where it is made): the frame describes
        // the sections, one per whole head, each a nonzero multiple of four pairs and rotated
        // by as many entries as it has pairs; every access is an aligned word inside them or
        // the three words pushed here. r4–r8, r10 and r11 are saved and restored here (r6 and
        // r7 cannot be operands); r9, the static base of RWPI code that an interrupt handler
        // may use, is never written. The flags and the DSP Q flag are clobbered, the stack is
        // balanced.
        unsafe {
            asm!(
                ".arch armv7e-m",
                "push {{r4-r8, r10, r11}}",
                // [sp] = the first entry, [sp, #4] = the step, [sp, #8] = the last start;
                // r2 = the entries' end (every head's section ends there).
                "ldm lr, {{r1, r2, r3, r4}}",
                "push {{r1, r2, r3}}",
                "add r2, r1, r4",
                "mov r12, #0x4000",
                "2:",
                "ldr r1, [sp, #0]",
                "1:",
                "ldm r0, {{r3, r4, r5, r6}}",
                "ldm r1!, {{r7, r8, r10, lr}}",
                pair!($dir, "r3", "r7"),
                pair!($dir, "r4", "r8"),
                pair!($dir, "r5", "r10"),
                pair!($dir, "r6", "lr"),
                "stm r0!, {{r3, r4, r5, r6}}",
                "cmp r1, r2",
                "bne 1b",
                // The next head's section.
                "ldr r3, [sp, #4]",
                "add r0, r3",
                "ldr r3, [sp, #8]",
                "cmp r0, r3",
                "bls 2b",
                "add sp, #12",
                "pop {{r4-r8, r10, r11}}",
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

/// The loop of ARMv7E-M's DSP extension: four pairs a step.
pub(super) struct Armv7emQ15;

impl WordLoop for Armv7emQ15 {
    const STEP: usize = 4;

    /// Rotates the sections `first, first + head_dim, …` (in values) up to `last` (`n` pairs
    /// each, `n` a multiple of 4) by the `n` entries at `entries`.
    #[inline(always)]
    fn rotate(words: Words<'_, Self>, dir: Direction) {
        let frame: [u32; 4] = [
            words.entries() as u32,
            (2 * words.head_dim() - 4 * words.n()) as u32,
            words.last() as u32,
            (4 * words.n()) as u32,
        ];
        let (first, frame) = (words.first(), frame.as_ptr());
        match dir {
            Direction::Forward => heads!(Forward, first, frame),
            Direction::Inverse => heads!(Inverse, first, frame),
        }
    }
}
