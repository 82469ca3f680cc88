//! x86_64 CPU detection without `std`: CPUID and XGETBV (the OS must save the AVX and AVX-512
//! register state, not only the CPU have the instructions), read once and cached in an
//! atomic.
//!
//! `core::arch` directly rather than a crate (`cpufeatures`, or std's
//! `is_x86_feature_detected!`): three CPUID leaves and one XGETBV are all the backends need,
//! and this way the answer is the same with and without `std` and costs no dependency.

use core::sync::atomic::{AtomicU8, Ordering};

/// The CPU has AVX2 and FMA, and the OS saves the YMM state.
pub(crate) const AVX2_FMA: u8 = 1 << 0;
/// The CPU has AVX-512F, and the OS saves the ZMM and opmask state (on top of [`AVX2_FMA`]).
pub(crate) const AVX512F: u8 = 1 << 1;
/// The CPU has F16C (half-precision conversions), with the YMM state saved (on top of
/// [`AVX2_FMA`]).
pub(crate) const F16C: u8 = 1 << 2;
/// The CPU has AVX-512 BF16 (`vcvtneps2bf16`), AVX-512DQ (`vfpclassps`) and AVX-512BW
/// (`vpermw`) — every CPU with AVX-512 BF16 has the other two — on top of [`AVX512F`].
pub(crate) const AVX512BF16: u8 = 1 << 3;
/// The 512-bit loop streams interleaved pairs faster than the 256-bit one beyond L2 too
/// ([`wide_interleaved`]: AMD Zen 4 and later, and the Intel Xeon of family 6, model 207;
/// with [`AVX512F`]). Measured on a Zen 4 (family 25, model 17), buffers of 3–32 MiB:
/// 1.13–1.52× faster (`large` 1.46 → 0.96 ms), while in the half layout the 256-bit loop
/// stayed faster (`prefill_1d_half` 301 against 339 µs; measured again on 2026-11-28 with
/// the later kernels, alternating pairs of builds: the 512-bit loop 0.86, 0.98 and 0.98×
/// the time on `prefill_1d_half` in three rounds, 0.97–0.99× on `rope1d_4096`, the median
/// under the 5 % a change of form needs; the 256-bit form for interleaved pairs 1.23–1.40×
/// on `large`, `prefill_1d` and `video_wan`). On the Intel Xeon of model 207
/// (Emerald Rapids), `avx512` ÷ the 512-bit stream, medians of three alternating rounds of
/// both builds: `large` 1.17 → 1.09, `prefill_1d` 1.22 → 1.10, `video_wan` 1.12 → 1.01,
/// `medium` 1.02 → 1.01. On the Intel Xeon guest that reported model 167 (with AVX-512 FP16
/// and 2 MiB of L2, a Sapphire Rapids-class core behind a hypervisor's model number) the
/// 256-bit loop measured faster beyond L2 in both layouts, 512-bit stores slower there (the
/// bare stream too).
pub(crate) const WIDE_INTERLEAVED: u8 = 1 << 4;
/// The CPU has AVX-512VL (EVEX encodings of 128- and 256-bit instructions, hence 32 vector
/// registers for them), on top of [`AVX512F`]. Every AVX-512 CPU since Skylake-SP has it;
/// the Xeon Phi (Knights Landing) does not.
pub(crate) const AVX512VL: u8 = 1 << 5;
/// The CPU has AVX-512BW (512-bit 8- and 16-bit integer instructions: `vpmaddwd`,
/// `vpackssdw`, `vpmovswb` on `zmm`), on top of [`AVX512F`]. Every AVX-512 CPU since
/// Skylake-SP has it; the Xeon Phi does not.
pub(crate) const AVX512BW: u8 = 1 << 6;
/// The cache holds an answer.
const KNOWN: u8 = 1 << 7;

static FEATURES: AtomicU8 = AtomicU8::new(0);

/// The features of [`AVX2_FMA`] and [`AVX512F`] this CPU and OS support, detected on the
/// first call.
#[inline]
pub(crate) fn features() -> u8 {
    let cached = FEATURES.load(Ordering::Relaxed);
    if cached & KNOWN != 0 {
        return cached;
    }
    let detected = detect() | KNOWN;
    // Racing first calls store the same value.
    FEATURES.store(detected, Ordering::Relaxed);
    detected
}

/// Under Miri, which does not implement CPUID: the build's target features.
#[cfg(miri)]
fn detect() -> u8 {
    let mut features = 0;
    if cfg!(all(target_feature = "avx2", target_feature = "fma")) {
        features |= AVX2_FMA;
        if cfg!(target_feature = "avx512f") {
            features |= AVX512F;
            if cfg!(target_feature = "avx512vl") {
                features |= AVX512VL;
            }
            if cfg!(target_feature = "avx512bw") {
                features |= AVX512BW;
            }
            if cfg!(all(
                target_feature = "avx512bf16",
                target_feature = "avx512dq",
                target_feature = "avx512bw"
            )) {
                features |= AVX512BF16;
            }
        }
        if cfg!(target_feature = "f16c") {
            features |= F16C;
        }
    }
    features
}

#[cfg(not(miri))]
#[cold]
// `__cpuid_count` became a safe function in Rust 1.90; the `unsafe` blocks keep the MSRV.
#[allow(unused_unsafe)]
fn detect() -> u8 {
    use core::arch::x86_64::__cpuid_count;

    // SAFETY: CPUID exists on every x86_64 CPU; leaf 0 reports the highest standard leaf.
    let max_leaf = unsafe { __cpuid_count(0, 0) }.eax;
    if max_leaf < 7 {
        return 0;
    }
    // SAFETY: leaves 1 and 7 are at most the highest standard leaf (checked above).
    let (leaf1, leaf7) = unsafe { (__cpuid_count(1, 0), __cpuid_count(7, 0)) };
    // Leaf 7's EAX is its highest sub-leaf; sub-leaf 1's EAX bit 5 is AVX512_BF16.
    // SAFETY: sub-leaf 1 exists when leaf 7 reports it. `--cfg rope2d_no_avx512bf16` hides
    // it, so that CI tests the AVX-512 path of CPUs without it on a CPU with it.
    let avx512bf16 = !cfg!(rope2d_no_avx512bf16)
        && leaf7.eax >= 1
        && unsafe { __cpuid_count(7, 1) }.eax & (1 << 5) != 0;
    let osxsave = leaf1.ecx & (1 << 27) != 0;
    let avx = leaf1.ecx & (1 << 28) != 0;
    let fma = leaf1.ecx & (1 << 12) != 0;
    let f16c = leaf1.ecx & (1 << 29) != 0;
    let avx2 = leaf7.ebx & (1 << 5) != 0;
    let avx512f = leaf7.ebx & (1 << 16) != 0;
    let avx512dq = leaf7.ebx & (1 << 17) != 0;
    let avx512bw = leaf7.ebx & (1 << 30) != 0;
    let avx512vl = leaf7.ebx & (1 << 31) != 0;
    if !(osxsave && avx) {
        return 0;
    }
    // SAFETY: OSXSAVE is set, so XGETBV is available and enabled by the OS.
    let xcr0 = unsafe { xcr0() };
    // XMM and YMM state (bits 1, 2); opmask, upper ZMM and high ZMM state (bits 5, 6, 7).
    let ymm = xcr0 & 0b110 == 0b110;
    let zmm = xcr0 & 0b1110_0000 == 0b1110_0000;
    let mut features = 0;
    if ymm && avx2 && fma {
        features |= AVX2_FMA;
        // `avx512f` code may use F16C and FMA: rustc's `avx512f` implies both, and std's
        // detection, too, reports AVX-512F only with them.
        if zmm && avx512f && f16c {
            features |= AVX512F;
            if avx512vl {
                features |= AVX512VL;
            }
            if avx512bw {
                features |= AVX512BW;
            }
            if avx512bf16 && avx512dq && avx512bw {
                features |= AVX512BF16;
            }
        }
        if f16c {
            features |= F16C;
        }
    }
    // `--cfg rope2d_flip_wide_interleaved` inverts the choice, so that CI tests the other
    // form beyond L2 too, whichever the machine's CPU takes.
    let wide = cpu_id().is_some_and(|c| wide_interleaved(&c));
    if features & AVX512F != 0 && wide != cfg!(rope2d_flip_wide_interleaved) {
        features |= WIDE_INTERLEAVED;
    }
    features
}

/// Whether `cpu` (with AVX-512F) keeps the 512-bit loop for interleaved pairs beyond L2
/// ([`WIDE_INTERLEAVED`]): AMD Zen 4 and later (AuthenticAMD, family 0x19 and above), and
/// the Intel Xeon reporting family 6, model 207 (Emerald Rapids): the CPUs where it was
/// measured faster (on a Zen 5, family 0x1a, the 256-bit loop took 1.45× the time on
/// `prefill_1d` and 1.53× on `video_wan`). Every other Intel CPU keeps the 256-bit loop
/// there, as measured on the guest reporting model 167; Sapphire Rapids (model 143), Ice
/// Lake-SP and Skylake-SP are unmeasured.
// Under Miri, detection has no CPUID to consult (only the unit tests call this there).
#[cfg_attr(miri, allow(dead_code))]
pub(crate) fn wide_interleaved(cpu: &CpuId) -> bool {
    match &cpu.vendor {
        b"AuthenticAMD" => cpu.family >= 0x19,
        b"GenuineIntel" => cpu.family == 6 && cpu.model == 207,
        _ => false,
    }
}

/// XCR0, the register-state components the OS saves.
///
/// # Safety
///
/// The CPU must report OSXSAVE (CPUID leaf 1, ECX bit 27).
#[cfg(not(miri))]
#[target_feature(enable = "xsave")]
unsafe fn xcr0() -> u64 {
    // SAFETY: XGETBV is available (the caller checked OSXSAVE); register 0 always exists.
    unsafe { core::arch::x86_64::_xgetbv(0) }
}

/// The CPU's identity from CPUID (vendor string, display family and model, stepping), for
/// [`Backend::describe`](super::Backend::describe): what a bug report needs to name the
/// microarchitecture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CpuId {
    pub vendor: [u8; 12],
    pub family: u32,
    pub model: u32,
    pub stepping: u32,
}

/// This CPU's identity; `None` under Miri (no CPUID).
#[cfg(miri)]
pub(crate) fn cpu_id() -> Option<CpuId> {
    None
}

/// This CPU's identity (two CPUID leaves; called for descriptions and by [`detect`], never
/// on a rotation path).
#[cfg(not(miri))]
// `__cpuid_count` became a safe function in Rust 1.90; the `unsafe` blocks keep the MSRV.
#[allow(unused_unsafe)]
pub(crate) fn cpu_id() -> Option<CpuId> {
    use core::arch::x86_64::__cpuid_count;

    // SAFETY: CPUID exists on every x86_64 CPU, and leaf 1 on every one of them.
    let (leaf0, leaf1) = unsafe { (__cpuid_count(0, 0), __cpuid_count(1, 0)) };
    let mut vendor = [0u8; 12];
    for (bytes, word) in vendor
        .chunks_exact_mut(4)
        .zip([leaf0.ebx, leaf0.edx, leaf0.ecx])
    {
        bytes.copy_from_slice(&word.to_le_bytes());
    }
    // The display family and model of Intel's and AMD's manuals: the extended fields count
    // for family 15 (family) and families 6 and 15 (model).
    let eax = leaf1.eax;
    let base_family = (eax >> 8) & 0xf;
    let base_model = (eax >> 4) & 0xf;
    let family = match base_family {
        0xf => base_family + ((eax >> 20) & 0xff),
        _ => base_family,
    };
    let model = match base_family {
        0x6 | 0xf => base_model | ((eax >> 16) & 0xf) << 4,
        _ => base_model,
    };
    Some(CpuId {
        vendor,
        family,
        model,
        stepping: eax & 0xf,
    })
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    /// The detection agrees with std's.
    #[test]
    fn matches_std_detection() {
        let f = features();
        assert!(f & KNOWN != 0);
        if cfg!(miri) {
            return;
        }
        let std_avx2 =
            std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma");
        assert_eq!(f & AVX2_FMA != 0, std_avx2);
        let std_avx512 = std_avx2 && std::is_x86_feature_detected!("avx512f");
        assert_eq!(f & AVX512F != 0, std_avx512);
        let std_avx512vl = std_avx512 && std::is_x86_feature_detected!("avx512vl");
        assert_eq!(f & AVX512VL != 0, std_avx512vl);
        let std_avx512bw = std_avx512 && std::is_x86_feature_detected!("avx512bw");
        assert_eq!(f & AVX512BW != 0, std_avx512bw);
        let std_bf16 = std_avx512
            && !cfg!(rope2d_no_avx512bf16)
            && std::is_x86_feature_detected!("avx512bf16")
            && std::is_x86_feature_detected!("avx512dq")
            && std::is_x86_feature_detected!("avx512bw");
        assert_eq!(f & AVX512BF16 != 0, std_bf16);
        let std_f16c = std_avx2 && std::is_x86_feature_detected!("f16c");
        assert_eq!(f & F16C != 0, std_f16c);
        // The wide interleaved form: only with AVX-512, only on the CPUs `wide_interleaved`
        // names (inverted by the CI's flip).
        let wide = cpu_id().is_some_and(|c| wide_interleaved(&c));
        let wide = wide != cfg!(rope2d_flip_wide_interleaved);
        assert_eq!(f & WIDE_INTERLEAVED != 0, std_avx512 && wide);
        // Cached: the same answer again.
        assert_eq!(features(), f);
    }

    /// The CPUs that keep the 512-bit loop for interleaved pairs beyond L2, and some that
    /// do not.
    #[test]
    fn wide_interleaved_cpus() {
        let cpu = |vendor: &[u8; 12], family, model| CpuId {
            vendor: *vendor,
            family,
            model,
            stepping: 0,
        };
        let amd = b"AuthenticAMD";
        let intel = b"GenuineIntel";
        // Zen 4 (EPYC 9004, Ryzen 7000) and Zen 5.
        assert!(wide_interleaved(&cpu(amd, 0x19, 0x11)));
        assert!(wide_interleaved(&cpu(amd, 0x19, 0x61)));
        assert!(wide_interleaved(&cpu(amd, 0x1a, 0x02)));
        // Zen 2. (Zen 3 is family 0x19 too, but has no AVX-512F, without which `detect`
        // never sets the flag.)
        assert!(!wide_interleaved(&cpu(amd, 0x17, 0x31)));
        // Emerald Rapids.
        assert!(wide_interleaved(&cpu(intel, 6, 207)));
        // Model 167 (measured faster on the 256-bit loop); Sapphire Rapids, Skylake-SP and
        // Ice Lake-SP (unmeasured).
        for model in [167, 143, 85, 106] {
            assert!(!wide_interleaved(&cpu(intel, 6, model)));
        }
        assert!(!wide_interleaved(&cpu(b"HygonGenuine", 0x18, 0)));
    }
}
