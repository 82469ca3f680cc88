//! rope2d on a RISC-V microcontroller without an FPU (RV32IMAC): integer arithmetic only,
//! checked on the device against the golden vectors.
//!
//! ```text
//! cargo run --release --target riscv32imac-unknown-none-elf --example riscv32
//! ```
//!
//! runs it under QEMU (sifive_e board, a SiFive FE310: E31 core, RV32IMAC, 16 KiB of data
//! RAM; semihosting) through the runner in `.cargo/config.toml`. It prints one line per
//! check and `N passed, M failed`, and exits QEMU with status 0 only when every check passes.
//! `.ci/firmware.sh` runs it, measures the instruction budgets on the same image and checks
//! that no soft-float routine is linked.
//!
//! The checks are `common/q15_firmware.rs`, shared with `cortex_m0.rs`; on this core the Q15
//! rotation is the crate's plain-Rust loop (no RISC-V assembly), compiled for RV32IMAC.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(not(target_os = "none"))]
fn main() {
    println!(
        "examples/riscv32.rs is firmware: \
         cargo run --release --target riscv32imac-unknown-none-elf --example riscv32"
    );
}

/// The const-fn golden JSON reader (shared with the Cortex-M examples).
#[cfg(target_os = "none")]
#[path = "common/golden_json.rs"]
mod json;

/// The peak stack of a call, measured by painting, and `stacked!` (shared with the other
/// firmware examples).
#[cfg(target_os = "none")]
#[macro_use]
#[path = "common/stack_paint.rs"]
mod stack_paint;

/// One line of output, through semihosting.
#[cfg(target_os = "none")]
macro_rules! say {
    ($($arg:tt)*) => { semihosting::println!($($arg)*) };
}

/// `take!(: T = init)`: a `static` of its own, `Some(&'static mut T)` the first time.
#[cfg(target_os = "none")]
macro_rules! take {
    (: $t:ty = $init:expr) => {{
        static TAKEN: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
        static mut VALUE: $t = $init;
        if TAKEN.swap(true, core::sync::atomic::Ordering::Relaxed) {
            None
        } else {
            // SAFETY: `TAKEN` lets this reference be made once; no other code names `VALUE`.
            Some(unsafe { &mut *(&raw mut VALUE) })
        }
    }};
}

/// What the shared firmware needs from this board.
#[cfg(target_os = "none")]
mod platform {
    pub const CORE: &str = "SiFive E31 (RV32IMAC)";

    #[riscv_rt::entry]
    fn main() -> ! {
        crate::firmware::run()
    }

    /// Brackets a measured region, as in `cortex_m4.rs`: `.ci/firmware.sh` counts the
    /// instructions between a call of `measure_begin` and the next call of `measure_end`.
    /// The two bodies differ (`nop`, `fence`), so the linker cannot fold them into one.
    #[inline(never)]
    #[unsafe(no_mangle)]
    pub extern "C" fn measure_begin() {
        // SAFETY: an instruction that does nothing.
        unsafe { core::arch::asm!("nop", options(nomem, nostack, preserves_flags)) };
    }

    #[inline(never)]
    #[unsafe(no_mangle)]
    pub extern "C" fn measure_end() {
        // SAFETY: a memory fence; no state changes.
        unsafe { core::arch::asm!("fence", options(nostack, preserves_flags)) };
    }

    /// Ends the QEMU run with status 0 (`success`) or 1.
    pub fn exit(success: bool) -> ! {
        semihosting::process::exit(if success { 0 } else { 1 })
    }

    /// A trap the firmware does not expect (an illegal instruction, a misaligned or faulting
    /// access) ends the run as a failure instead of spinning until QEMU's timeout.
    #[unsafe(export_name = "ExceptionHandler")]
    fn exception(frame: &riscv_rt::TrapFrame) -> ! {
        say!("unexpected exception, ra {:#010x}", frame.ra);
        exit(false)
    }
}

/// The integer-only checks, shared with `cortex_m0.rs`.
#[cfg(target_os = "none")]
#[path = "common/q15_firmware.rs"]
mod firmware;
