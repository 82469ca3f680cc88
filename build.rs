//! `--cfg rope2d_armv7em` on ARMv7E-M targets (Cortex-M4/M7: `thumbv7em-*`), whose DSP
//! extension the Q15 kernel uses. No stable `cfg` names the DSP extension (`target_feature =
//! "dsp"` is unstable), so the target name decides, as the `cortex-m` crate does.

fn main() {
    println!("cargo:rustc-check-cfg=cfg(rope2d_armv7em)");
    println!("cargo:rerun-if-env-changed=TARGET");
    if std::env::var("TARGET").is_ok_and(|t| t.starts_with("thumbv7em-")) {
        println!("cargo:rustc-cfg=rope2d_armv7em");
    }
}
