//! Target cfgs for the hand-written Q15 loops, which no stable `cfg` can name (the Arm
//! `target_feature`s are unstable), decided by the target name as the `cortex-m` crate does:
//! - `rope2d_armv6m`: ARMv6-M (`thumbv6m-*`: Cortex-M0/M0+/M1) — Thumb-1 only, no
//!   32 × 32 → 64-bit multiply (ARMv8-M Baseline, the M23, is alike but not built here);
//! - `rope2d_armv7em`: ARMv7E-M (`thumbv7em-*`: Cortex-M4/M7) — the DSP extension.

fn main() {
    println!("cargo:rustc-check-cfg=cfg(rope2d_armv6m, rope2d_armv7em)");
    println!("cargo:rerun-if-env-changed=TARGET");
    let target = std::env::var("TARGET").unwrap_or_default();
    if target.starts_with("thumbv6m-") {
        println!("cargo:rustc-cfg=rope2d_armv6m");
    }
    if target.starts_with("thumbv7em-") {
        println!("cargo:rustc-cfg=rope2d_armv7em");
    }
}
