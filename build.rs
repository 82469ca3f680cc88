//! Target cfgs that no stable `cfg` can name (the Arm `target_feature`s are unstable), the Arm
//! ones decided by the target name as the `cortex-m` crate does:
//! - `rope2d_armv6m`: ARMv6-M (`thumbv6m-*`: Cortex-M0/M0+/M1) — Thumb-1 only, no
//!   32 × 32 → 64-bit multiply (ARMv8-M Baseline, the M23, is alike but not built here);
//! - `rope2d_arm_dsp`: the Arm DSP extension — ARMv7E-M (`thumbv7em-*`: Cortex-M4/M7), or
//!   Armv8-M Mainline (`thumbv8m.main-*`: Cortex-M33/M35P/M55) with the crate's `dsp`
//!   feature (optional on those cores, and no stable `target_feature` names it);
//! - `rope2d_mprofile_fpu`: an M-profile hard-float target (`thumbv7em-*eabihf`,
//!   `thumbv8m.main-*eabihf`, and `thumbv8.1m.main-*eabihf` should one appear: FPv4-SP or
//!   FPv5, Cortex-M4F/M7/M33/M55…), whose chained `vmla` the f32 scalar loop of `cortex_m.rs`
//!   uses;
//! - `rope2d_neon`: the `Neon` backend is built — aarch64 with the `neon` feature where NEON
//!   is a baseline target feature (every aarch64 target but bare-metal ones without it, such
//!   as `aarch64-unknown-none-softfloat`, where it could not run).

fn main() {
    println!(
        "cargo:rustc-check-cfg=cfg(rope2d_armv6m, rope2d_arm_dsp, rope2d_mprofile_fpu, rope2d_neon)"
    );
    println!("cargo:rerun-if-env-changed=TARGET");
    let target = std::env::var("TARGET").unwrap_or_default();
    if target.starts_with("thumbv6m-") {
        println!("cargo:rustc-cfg=rope2d_armv6m");
    }
    let dsp_feature = std::env::var_os("CARGO_FEATURE_DSP").is_some();
    if target.starts_with("thumbv7em-") || (target.starts_with("thumbv8m.main-") && dsp_feature) {
        println!("cargo:rustc-cfg=rope2d_arm_dsp");
    }
    let m_profile = ["thumbv7em-", "thumbv8m.main-", "thumbv8.1m.main-"]
        .iter()
        .any(|p| target.starts_with(p));
    if m_profile && target.ends_with("eabihf") {
        println!("cargo:rustc-cfg=rope2d_mprofile_fpu");
    }
    let env = |name: &str| std::env::var(name).unwrap_or_default();
    let baseline_neon = env("CARGO_CFG_TARGET_FEATURE")
        .split(',')
        .any(|f| f == "neon");
    let neon_feature = std::env::var_os("CARGO_FEATURE_NEON").is_some();
    if env("CARGO_CFG_TARGET_ARCH") == "aarch64" && neon_feature && baseline_neon {
        println!("cargo:rustc-cfg=rope2d_neon");
    }
}
