//! The Q15 kernel of ARMv6-M (Cortex-M0/M0+: Thumb-1, no DSP instructions, no FPU):
//! interleaved `i16` pairs rotated by Q15 entries in 27 instructions per pair, exactly the
//! arithmetic of the scalar `Q15` number format — `round((a·c − b·s) / 2¹⁵)` ties up,
//! saturated — checked bit for bit against it by `examples/cortex_m0.rs` on the device.
//!
//! Per pair: one word load of `(a, b)` and one of `(c, s)` (`ldm` with writeback), four
//! `muls`, the rounding as an arithmetic shift whose carry (bit 14) is added back with
//! `adcs`, saturation by sign-extend-and-compare (the rare out-of-range fix behind a taken
//! branch), two halfword stores; two pairs per loop step, heads looped inside, a grid line's
//! tokens one call each ([`WordLoop::rotate_line`]). Word loads need 4-byte alignment
//! (Cortex-M0 faults on unaligned ones): other buffers, odd sections and the half layout take
//! the plain-Rust loop.

use core::arch::asm;

use super::{WordLoop, Words};
use crate::config::Direction;

/// One pair's loads and products: `r4 = a·c`, `r7 = b·s`, `r5 = a·s`, `r3 = b·c`.
macro_rules! q15_pair {
    () => {
        "ldr r3, [r0]
        ldm r1!, {{r5}}
        sxth r4, r3
        asrs r3, r3, #16
        sxth r6, r5
        asrs r5, r5, #16
        mov r7, r3
        muls r7, r5, r7
        muls r5, r4, r5
        muls r4, r6, r4
        muls r3, r6, r3
        "
    };
}

/// One pair's rounding (the carry of the shift, bit 14, added with `r2 = 0`), saturation
/// (sign-extend and compare; `(v >> 31) ^ 0x7FFF` on the rare overflow) and stores.
macro_rules! q15_round_store {
    () => {
        "asrs r4, r4, #15
        adcs r4, r2
        asrs r5, r5, #15
        adcs r5, r2
        sxth r6, r4
        cmp r6, r4
        beq 4f
        asrs r4, r4, #31
        movs r6, #0x80
        lsls r6, r6, #8
        subs r6, #1
        eors r4, r6
        4:
        sxth r7, r5
        cmp r7, r5
        beq 6f
        asrs r5, r5, #31
        movs r7, #0x80
        lsls r7, r7, #8
        subs r7, #1
        eors r5, r7
        6:
        strh r4, [r0, #0]
        strh r5, [r0, #2]
        adds r0, #4
        "
    };
}

/// The inner loop over a head's section, forward or inverse (the two combinations of the
/// products), then the step to the next head; `$a` and `$b` combine `r4 = a·c`, `r7 = b·s`,
/// `r5 = a·s`, `r3 = b·c` into `r4 = a'` and `r5 = b'`.
macro_rules! q15_heads {
    ($x:expr, $entries:expr, $bytes:expr, $frame:expr, $a:literal, $b:literal) => {
        // SAFETY: the invariant of `Words` (checked where it is made): the sections from
        // `first` to the last one, `bytes` bytes each (a nonzero multiple of 8: two pairs a
        // step), `head_dim` values (`2 · head_dim` bytes) apart, each rotated by the
        // `bytes / 4` entries at `entries`; every access is an aligned word or halfword inside
        // them. r4–r8, r10 and r11 are saved and restored here (r6 and r7 cannot be
        // operands); r9, the static base of RWPI code that an interrupt handler may use, is
        // never written. The flags are clobbered, the stack is balanced.
        unsafe {
            asm!(
                "push {{r4, r5, r6, r7}}",
                "mov r4, r8",
                "mov r5, r11",
                "mov r6, r10",
                "push {{r4, r5, r6}}",
                // r8 = the entries' end (every head's section ends there), r11 = from a
                // section's end to the next one's start (stride − bytes), r10 = the last
                // section's start, r12 = the first entry, r2 = 0 (the rounding's carry is
                // added with it).
                "ldr r4, [r3, #0]",
                "subs r4, r4, r2",
                "mov r11, r4",
                "ldr r4, [r3, #4]",
                "mov r10, r4",
                "adds r4, r1, r2",
                "mov r8, r4",
                "mov r12, r1",
                "movs r2, #0",
                "2:",
                "mov r1, r12",
                "1:",
                concat!(q15_pair!(), $a, "\n", $b, "\n", q15_round_store!()),
                concat!(q15_pair!(), $a, "\n", $b, "\n", q15_round_store!()),
                "cmp r1, r8",
                "bne 1b",
                // The next head's section.
                "add r0, r11",
                "cmp r0, r10",
                "bls 2b",
                "pop {{r4, r5, r6}}",
                "mov r8, r4",
                "mov r11, r5",
                "mov r10, r6",
                "pop {{r4, r5, r6, r7}}",
                inout("r0") $x => _,
                inout("r1") $entries => _,
                inout("r2") $bytes => _,
                inout("r3") $frame => _,
                out("r12") _,
            );
        }
    };
}

/// The loop of ARMv6-M: two pairs a step.
pub(super) struct Armv6mQ15;

impl WordLoop for Armv6mQ15 {
    const STEP: usize = 2;

    /// Rotates the sections `first, first + head_dim, …` (in values) up to `last` (`n` pairs
    /// each, `n` even) by the `n` entries at `entries`.
    #[inline(always)]
    fn rotate(words: Words<'_, Self>, dir: Direction) {
        let frame: [u32; 2] = [(2 * words.head_dim()) as u32, words.last() as u32];
        let (bytes, frame) = ((4 * words.n()) as u32, frame.as_ptr());
        let (first, entries) = (words.first(), words.entries());
        match dir {
            Direction::Forward => q15_heads!(
                first,
                entries,
                bytes,
                frame,
                "subs r4, r4, r7",
                "adds r5, r5, r3"
            ),
            Direction::Inverse => q15_heads!(
                first,
                entries,
                bytes,
                frame,
                "adds r4, r4, r7",
                "subs r5, r3, r5"
            ),
        }
    }
}
