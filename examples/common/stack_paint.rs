//! The peak stack of a call, measured on the device by painting (shared by the firmware
//! examples): the free stack below the caller's frame is filled with a pattern, the call runs,
//! and the lowest word that no longer holds the pattern is as deep as the call went.
//! `.ci/firmware.sh` compares each figure with the bound it computes from the disassembly
//! (`.ci/firmware_closure.py`): the bound covers every path, the measurement the one taken.

/// `stacked!("calls::f", calls::f(…))`: the call, with its peak stack measured on the device
/// ([`peak_stack`] over `STACK_WINDOW` bytes, a constant where the macro is used) and printed
/// by `say!` as `stack: <name> <bytes>`, which `.ci/firmware.sh` holds against the bound it
/// computes for the function named `<name>`.
macro_rules! stacked {
    ($name:literal, $call:expr) => {{
        let (result, depth) = crate::stack_paint::peak_stack(STACK_WINDOW, || $call);
        match depth {
            Some(bytes) => say!("stack: {} {}", $name, bytes),
            None => say!("stack: {} beyond {}", $name, STACK_WINDOW),
        }
        result
    }};
}

/// Written into every free stack word before a measured call.
const PAINT: u32 = 0x5AA5_C33C;

unsafe extern "C" {
    /// First RAM address past `.data`, `.bss` and `.uninit` (cortex-m-rt's linker script):
    /// the stack may grow down to it, nothing else in these firmwares lives between it and
    /// the stack.
    static __sheap: u32;
}

/// Runs `call` and returns its result with the bytes of stack it used below this function's
/// frame (its arguments' setup and the callee's frames: the figure a caller adds to its own
/// stack). At most `window` bytes are painted; a call that reaches the last of them returns
/// `None` for the depth (the measurement is then a lower bound only).
///
/// No interrupt is enabled in these firmwares, so nothing but `call` writes below the stack
/// pointer while it runs.
#[inline(never)]
pub fn peak_stack<R>(window: usize, call: impl FnOnce() -> R) -> (R, Option<usize>) {
    let top: usize;
    // SAFETY: reads the stack pointer into a register; no memory is touched.
    #[cfg(target_arch = "arm")]
    unsafe {
        core::arch::asm!("mov {}, sp", out(reg) top, options(nomem, nostack, preserves_flags))
    };
    // SAFETY: as above.
    #[cfg(target_arch = "riscv32")]
    unsafe {
        core::arch::asm!("mv {}, sp", out(reg) top, options(nomem, nostack, preserves_flags))
    };
    let floor = (&raw const __sheap as usize).max(top.saturating_sub(window)) & !3;
    // The loops below keep their state in registers or in this function's frame, above
    // `top`, and write only below it: free stack, never a live frame.
    let words = top.saturating_sub(floor) / 4;
    let base = floor as *mut u32;
    for i in 0..words {
        // SAFETY: `floor .. top` is RAM between the end of the statics and the stack pointer
        // (see `__sheap`), word-aligned: free stack that no frame holds while this function
        // runs, and that no interrupt handler uses (none is enabled).
        unsafe { base.add(i).write_volatile(PAINT) };
    }
    let result = call();
    let untouched = (0..words)
        // SAFETY: as above; the frames `call` used there have returned.
        .take_while(|&i| unsafe { base.add(i).read_volatile() } == PAINT)
        .count();
    let depth = (untouched > 0).then_some((words - untouched) * 4);
    (result, depth)
}
