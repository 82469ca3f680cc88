//! rope2d on a Cortex-M0 without an FPU: integer arithmetic only, checked on the device
//! against the golden vectors.
//!
//! ```text
//! cargo run --release --target thumbv6m-none-eabi --example cortex_m0
//! ```
//!
//! runs it under QEMU (micro:bit board, an nRF51822: Cortex-M0, 256 KiB of flash, 16 KiB of
//! RAM; semihosting) through the runner in `.cargo/config.toml`. It prints one line per
//! check and `N passed, M failed`, and exits QEMU with status 0 only when every check passes.
//! `.ci/firmware.sh` runs it, measures the instruction budgets on the same image and checks
//! that no soft-float routine is linked.
//!
//! The checks are `common/q15_firmware.rs`, shared with `riscv32.rs`; on this core the Q15
//! rotation takes the hand-written Thumb-1 loop of `src/backend/cortex_m0.rs` (word-aligned
//! buffers) and the plain-Rust one (a buffer at an odd offset), both checked bit for bit.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(not(target_os = "none"))]
fn main() {
    println!(
        "examples/cortex_m0.rs is firmware: \
         cargo run --release --target thumbv6m-none-eabi --example cortex_m0"
    );
}

/// The const-fn golden JSON reader (shared with `cortex_m4.rs`).
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
    ($($arg:tt)*) => { cortex_m_semihosting::hprintln!($($arg)*) };
}

/// `take!(: T = init)`: a `static` of its own, `Some(&'static mut T)` the first time.
#[cfg(target_os = "none")]
macro_rules! take {
    ($($arg:tt)*) => { cortex_m::singleton!($($arg)*) };
}

/// What the shared firmware needs from this board.
#[cfg(target_os = "none")]
mod platform {
    use cortex_m_rt::{ExceptionFrame, entry, exception};
    use cortex_m_semihosting::debug;

    pub const CORE: &str = "Cortex-M0";

    #[entry]
    fn main() -> ! {
        crate::firmware::run()
    }

    /// Brackets a measured region, as in `cortex_m4.rs`: `.ci/firmware.sh` counts the
    /// instructions between a call of `measure_begin` and the next call of `measure_end`.
    /// The two bodies differ (`nop`, `isb`), so the linker cannot fold them into one.
    #[inline(never)]
    #[unsafe(no_mangle)]
    pub extern "C" fn measure_begin() {
        cortex_m::asm::nop();
    }

    #[inline(never)]
    #[unsafe(no_mangle)]
    pub extern "C" fn measure_end() {
        cortex_m::asm::isb();
    }

    /// Ends the QEMU run with status 0 (`success`) or 1.
    pub fn exit(success: bool) -> ! {
        debug::exit(if success {
            debug::EXIT_SUCCESS
        } else {
            debug::EXIT_FAILURE
        });
        loop {
            cortex_m::asm::wfi();
        }
    }

    #[exception]
    unsafe fn HardFault(frame: &ExceptionFrame) -> ! {
        say!("hard fault at pc {:#010x}", frame.pc());
        exit(false)
    }

    #[exception]
    unsafe fn DefaultHandler(irqn: i16) {
        say!("unexpected exception {}", irqn);
        exit(false)
    }
}

/// The integer-only checks, shared with `riscv32.rs`.
#[cfg(target_os = "none")]
#[path = "common/q15_firmware.rs"]
mod firmware;
