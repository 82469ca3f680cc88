//! The scalar kernel on Arm M-profile cores with a single-precision FPU: FPv4-SP (Cortex-M4F)
//! and FPv5 (M7, M33, M35P, M55, M85) — every M-profile hard-float target
//! (`thumbv7em-none-eabihf`, `thumbv8m.main-none-eabihf`, …).
//!
//! Four pairs per loop step: one `vldmia` of the values, one of the `[cos, sin]` entries,
//! eight `vmul` + eight `vmla`/`vmls`, one `vstmia`: 19 instructions for 4 pairs plus 2 of
//! loop control. Heads are looped inside the assembly, so one call covers every head of a
//! token. LLVM's code for the plain Rust loop takes about 13 instructions per pair here.
//!
//! # Accuracy
//!
//! None lost: `vmla`/`vmls` are the *chained* (not fused) multiply-accumulate of these FPUs,
//! which round the product before the sum. Each output is `fl(fl(a·c) − fl(b·s))` /
//! `fl(fl(b·c) + fl(a·s))`, exactly [`Backend::Scalar`](super::Backend::Scalar)'s arithmetic,
//! so the results are bit for bit those of the plain Rust reference (checked on the device
//! by `examples/cortex_m4.rs`).

use super::Pairing;
use crate::config::{Direction, Layout};
use core::arch::asm;

/// An `llvm-mca` region marker for `.ci/mca.sh` (with `--cfg rope2d_mca`), else nothing.
#[cfg(not(rope2d_mca))]
macro_rules! mca_mark {
    ($what:literal, $name:literal) => {
        ""
    };
}
#[cfg(rope2d_mca)]
macro_rules! mca_mark {
    ($what:literal, $name:literal) => {
        concat!("@ LLVM-MCA-", $what, " ", $name, "\n")
    };
}

/// The loop shared by every variant: `heads` times, `pairs / 4` steps of `$block` then
/// `pairs % 4` steps of `$single`, then `{skip}` bytes to the next head. `$block` and
/// `$single` advance `{x}` (and `{hi}`) and `{tc}` themselves.
macro_rules! head_loop {
    ($block:expr, $single:expr) => {
        concat!(
            "2:\n",
            "mov {tc}, {t}\n",
            "lsrs {n}, {pairs}, #2\n",
            "beq 4f\n",
            "3:\n",
            mca_mark!("BEGIN", "interleaved_4p"),
            $block,
            "subs {n}, {n}, #1\n",
            "bne 3b\n",
            mca_mark!("END", "interleaved_4p"),
            "4:\n",
            "ands {n}, {pairs}, #3\n",
            "beq 6f\n",
            "5:\n",
            $single,
            "subs {n}, {n}, #1\n",
            "bne 5b\n",
            "6:\n",
            "add {x}, {x}, {skip}\n",
            "subs {heads}, {heads}, #1\n",
            "bne 2b\n",
        )
    };
}

/// Interleaved pairs `(x[2k], x[2k+1])`. `$plus`/`$minus` are `vmla`/`vmls` (forward:
/// `a' = a·c − b·s`, `b' = b·c + a·s`) or swapped (inverse).
macro_rules! interleaved {
    ($minus:literal, $plus:literal) => {
        head_loop!(
            concat!(
                "vldmia {x}, {{s0-s7}}\n",
                "vldmia {tc}!, {{s8-s15}}\n",
                "vmul.f32 s16, s0, s8\n",
                "vmul.f32 s17, s1, s8\n",
                "vmul.f32 s18, s2, s10\n",
                "vmul.f32 s19, s3, s10\n",
                "vmul.f32 s20, s4, s12\n",
                "vmul.f32 s21, s5, s12\n",
                "vmul.f32 s22, s6, s14\n",
                "vmul.f32 s23, s7, s14\n",
                $minus,
                ".f32 s16, s1, s9\n",
                $plus,
                ".f32 s17, s0, s9\n",
                $minus,
                ".f32 s18, s3, s11\n",
                $plus,
                ".f32 s19, s2, s11\n",
                $minus,
                ".f32 s20, s5, s13\n",
                $plus,
                ".f32 s21, s4, s13\n",
                $minus,
                ".f32 s22, s7, s15\n",
                $plus,
                ".f32 s23, s6, s15\n",
                "vstmia {x}!, {{s16-s23}}\n",
            ),
            concat!(
                "vldmia {x}, {{s0-s1}}\n",
                "vldmia {tc}!, {{s8-s9}}\n",
                "vmul.f32 s16, s0, s8\n",
                "vmul.f32 s17, s1, s8\n",
                $minus,
                ".f32 s16, s1, s9\n",
                $plus,
                ".f32 s17, s0, s9\n",
                "vstmia {x}!, {{s16-s17}}\n",
            )
        )
    };
}

/// The half-layout loop: like [`head_loop!`] with a second pointer `{hi}`.
macro_rules! half_loop {
    ($minus:literal, $plus:literal) => {
        concat!(
            "2:\n",
            "mov {tc}, {t}\n",
            "lsrs {n}, {pairs}, #2\n",
            "beq 4f\n",
            "3:\n",
            mca_mark!("BEGIN", "half_4p"),
            "vldmia {x}, {{s0-s3}}\n",
            "vldmia {hi}, {{s4-s7}}\n",
            "vldmia {tc}!, {{s8-s15}}\n",
            "vmul.f32 s16, s0, s8\n",
            "vmul.f32 s20, s4, s8\n",
            "vmul.f32 s17, s1, s10\n",
            "vmul.f32 s21, s5, s10\n",
            "vmul.f32 s18, s2, s12\n",
            "vmul.f32 s22, s6, s12\n",
            "vmul.f32 s19, s3, s14\n",
            "vmul.f32 s23, s7, s14\n",
            $minus,
            ".f32 s16, s4, s9\n",
            $plus,
            ".f32 s20, s0, s9\n",
            $minus,
            ".f32 s17, s5, s11\n",
            $plus,
            ".f32 s21, s1, s11\n",
            $minus,
            ".f32 s18, s6, s13\n",
            $plus,
            ".f32 s22, s2, s13\n",
            $minus,
            ".f32 s19, s7, s15\n",
            $plus,
            ".f32 s23, s3, s15\n",
            "vstmia {x}!, {{s16-s19}}\n",
            "vstmia {hi}!, {{s20-s23}}\n",
            "subs {n}, {n}, #1\n",
            "bne 3b\n",
            mca_mark!("END", "half_4p"),
            "4:\n",
            "ands {n}, {pairs}, #3\n",
            "beq 6f\n",
            "5:\n",
            "vldmia {x}, {{s0}}\n",
            "vldmia {hi}, {{s4}}\n",
            "vldmia {tc}!, {{s8-s9}}\n",
            "vmul.f32 s16, s0, s8\n",
            "vmul.f32 s20, s4, s8\n",
            $minus,
            ".f32 s16, s4, s9\n",
            $plus,
            ".f32 s20, s0, s9\n",
            "vstmia {x}!, {{s16}}\n",
            "vstmia {hi}!, {{s20}}\n",
            "subs {n}, {n}, #1\n",
            "bne 5b\n",
            "6:\n",
            "add {x}, {x}, {skip}\n",
            "add {hi}, {hi}, {skip}\n",
            "subs {heads}, {heads}, #1\n",
            "bne 2b\n",
        )
    };
}

/// `asm!` with `$operands`, s0–s23 clobbered (every loop above uses them) and no stack use.
macro_rules! asm_s0_s23 {
    ($template:expr, $($operands:tt)*) => {
        asm!(
            $template,
            $($operands)*
            out("s0") _, out("s1") _, out("s2") _, out("s3") _,
            out("s4") _, out("s5") _, out("s6") _, out("s7") _,
            out("s8") _, out("s9") _, out("s10") _, out("s11") _,
            out("s12") _, out("s13") _, out("s14") _, out("s15") _,
            out("s16") _, out("s17") _, out("s18") _, out("s19") _,
            out("s20") _, out("s21") _, out("s22") _, out("s23") _,
            options(nostack),
        )
    };
}

/// Rotates pairs `0 .. pairs` of `heads` interleaved heads starting at `x`, head stride
/// `head_bytes`, by the entries at `table`.
///
/// # Safety
///
/// For every `h < heads`, the `2 · pairs` floats at `x + h · head_bytes` are valid for reads
/// and writes and not aliased, `table` is valid for `pairs` reads, `pairs ≥ 1`, `heads ≥ 1`,
/// `head_bytes ≥ 8 · pairs`.
#[inline(always)]
unsafe fn interleaved(
    x: *mut f32,
    table: *const [f32; 2],
    pairs: usize,
    heads: usize,
    head_bytes: usize,
    dir: Direction,
) {
    let skip = head_bytes - 8 * pairs;
    match dir {
        // SAFETY: the loop touches exactly the memory the caller guarantees (see the
        // function's contract); s0–s23 and the scratch registers are declared clobbered.
        Direction::Forward => unsafe {
            asm_s0_s23!(
                interleaved!("vmls", "vmla"),
                x = inout(reg) x => _,
                t = in(reg) table,
                pairs = in(reg) pairs,
                skip = in(reg) skip,
                heads = inout(reg) heads => _,
                tc = out(reg) _,
                n = out(reg) _,
            )
        },
        // SAFETY: as above.
        Direction::Inverse => unsafe {
            asm_s0_s23!(
                interleaved!("vmla", "vmls"),
                x = inout(reg) x => _,
                t = in(reg) table,
                pairs = in(reg) pairs,
                skip = in(reg) skip,
                heads = inout(reg) heads => _,
                tc = out(reg) _,
                n = out(reg) _,
            )
        },
    }
}

/// Rotates pairs `(lo[k], hi[k])`, `k < pairs`, of `heads` heads, head stride `head_bytes`,
/// forward (`lo' = lo·c − hi·s`, `hi' = hi·c + lo·s`). The inverse is this loop with `lo`
/// and `hi` exchanged: `R(−φ)(a, b)` is `R(φ)(b, a)` with its outputs exchanged, the same
/// two products and the same sum and difference, so the same bits; one loop instead of two
/// keeps flash small.
///
/// # Safety
///
/// For every `h < heads`, the `pairs` floats at `lo + h · head_bytes` and at
/// `hi + h · head_bytes` are valid for reads and writes, not aliased and disjoint; `table`
/// is valid for `pairs` reads, `pairs ≥ 1`, `heads ≥ 1`, `head_bytes ≥ 4 · pairs`.
#[inline(always)]
unsafe fn half(
    lo: *mut f32,
    hi: *mut f32,
    table: *const [f32; 2],
    pairs: usize,
    heads: usize,
    head_bytes: usize,
) {
    let skip = head_bytes - 4 * pairs;
    // SAFETY: the loop touches exactly the memory the caller guarantees (see the function's
    // contract); s0–s23 and the scratch registers are declared clobbered.
    unsafe {
        asm_s0_s23!(
            half_loop!("vmls", "vmla"),
            x = inout(reg) lo => _,
            hi = inout(reg) hi => _,
            t = in(reg) table,
            pairs = in(reg) pairs,
            skip = in(reg) skip,
            heads = inout(reg) heads => _,
            tc = out(reg) _,
            n = out(reg) _,
        )
    }
}

/// The 4-pair loops between `llvm-mca` markers, for `.ci/mca.sh` (only with
/// `--cfg rope2d_mca`): one head of `pairs` interleaved pairs, one of the half layout.
///
/// # Safety
///
/// As for [`interleaved`] and [`half`] with one head of `head_bytes = 8 · pairs`.
#[cfg(rope2d_mca)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_mca_cortex_m(x: *mut f32, table: *const [f32; 2], pairs: usize) {
    // SAFETY: as the caller guarantees.
    unsafe {
        interleaved(x, table, pairs, 1, 8 * pairs, Direction::Forward);
        half(x, x.add(pairs), table, pairs, 1, 8 * pairs);
    }
}

/// Rotates pairs `first_pair .. first_pair + angles.len()` of every head in `x`: the
/// [`Kernel::rotate_pairs`](super::Kernel::rotate_pairs) of the scalar backend on this core.
#[inline(always)]
pub(super) fn rotate_pairs(
    x: &mut [f32],
    head_dim: usize,
    pairing: Pairing,
    first_pair: usize,
    angles: &[[f32; 2]],
    dir: Direction,
) {
    // Pairs `0 .. half_dim` rotate; the half layout pairs `k` with `k + half_dim`.
    let half_dim = pairing.pairs.min(head_dim / 2);
    let pairs = half_dim.saturating_sub(first_pair).min(angles.len());
    let heads = x.len().checked_div(head_dim).unwrap_or(0);
    if pairs == 0 || heads == 0 {
        return;
    }
    let head_bytes = head_dim * 4;
    let table = angles.as_ptr();
    match pairing.layout {
        Layout::Interleaved => {
            // In bounds: 2 · first_pair < head_dim ≤ x.len().
            let start = x.as_mut_ptr().wrapping_add(2 * first_pair);
            // SAFETY: head h's pairs first_pair .. first_pair + pairs are the floats
            // h·d + 2·first_pair .. h·d + 2·(first_pair + pairs) ≤ h·d + 2·half_dim ≤ (h+1)·d
            // ≤ x.len() (heads = x.len() / d), all inside `x`, which we borrow mutably;
            // `pairs ≤ angles.len()`; 8 · pairs ≤ 4 · d = head_bytes.
            unsafe { interleaved(start, table, pairs, heads, head_bytes, dir) }
        }
        Layout::Half => {
            // In bounds: first_pair < half_dim ≤ d/2 and half_dim + first_pair < d ≤ x.len().
            let lo = x.as_mut_ptr().wrapping_add(first_pair);
            let hi = lo.wrapping_add(half_dim);
            // The inverse: the forward loop with the halves exchanged (see `half`).
            let (lo, hi) = match dir {
                Direction::Forward => (lo, hi),
                Direction::Inverse => (hi, lo),
            };
            // SAFETY: head h's `lo` floats h·d + first_pair + k and `hi` floats
            // h·d + half_dim + first_pair + k, k < pairs ≤ half_dim − first_pair, lie in
            // h·d .. h·d + 2·half_dim ≤ (h+1)·d ≤ x.len() and are disjoint (the first set ends
            // below h·d + half_dim), in either order; `pairs ≤ angles.len()`;
            // 4 · pairs ≤ head_bytes.
            unsafe { half(lo, hi, table, pairs, heads, head_bytes) }
        }
    }
}
