//! x86_64 CPU detection without `std`: CPUID and XGETBV (the OS must save the AVX and AVX-512
//! register state, not only the CPU have the instructions), read once and cached in an
//! atomic.
//!
//! `core::arch` directly rather than a crate (`cpufeatures`, or std's
//! `is_x86_feature_detected!`): three CPUID leaves and one XGETBV are all the backends need,
//! and this way the answer is the same with and without `std` and costs no dependency.

use core::arch::x86_64::{
    __m256, __m256i, _CMP_ORD_Q, _MM_FROUND_TO_NEAREST_INT, _mm_loadl_epi64, _mm_loadu_si128,
    _mm_packs_epi16, _mm_storel_epi64, _mm_storeu_si128, _mm256_add_epi32, _mm256_and_ps,
    _mm256_and_si256, _mm256_blendv_epi8, _mm256_castps_si256, _mm256_castsi256_ps,
    _mm256_castsi256_si128, _mm256_cmp_ps, _mm256_cmpgt_epi32, _mm256_cvtepi8_epi32,
    _mm256_cvtepi16_epi32, _mm256_cvtepi32_ps, _mm256_cvtepu16_epi32, _mm256_cvtph_ps,
    _mm256_cvtps_epi32, _mm256_cvtps_ph, _mm256_extracti128_si256, _mm256_loadu_ps, _mm256_max_ps,
    _mm256_min_ps, _mm256_mul_ps, _mm256_or_si256, _mm256_packs_epi32, _mm256_packus_epi32,
    _mm256_permute4x64_epi64, _mm256_set1_epi32, _mm256_set1_ps, _mm256_slli_epi32,
    _mm256_srli_epi32, _mm256_storeu_ps,
};
use core::sync::atomic::{AtomicU8, Ordering};

use crate::element::{self, Element, sealed::Format};

/// The CPU has AVX2 and FMA, and the OS saves the YMM state.
pub(crate) const AVX2_FMA: u8 = 1 << 0;
/// The CPU has AVX-512F, and the OS saves the ZMM and opmask state (on top of [`AVX2_FMA`]).
pub(crate) const AVX512F: u8 = 1 << 1;
/// The CPU has F16C (half-precision conversions), with the YMM state saved (on top of
/// [`AVX2_FMA`]).
pub(crate) const F16C: u8 = 1 << 2;
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
    let osxsave = leaf1.ecx & (1 << 27) != 0;
    let avx = leaf1.ecx & (1 << 28) != 0;
    let fma = leaf1.ecx & (1 << 12) != 0;
    let f16c = leaf1.ecx & (1 << 29) != 0;
    let avx2 = leaf7.ebx & (1 << 5) != 0;
    let avx512f = leaf7.ebx & (1 << 16) != 0;
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
        if zmm && avx512f {
            features |= AVX512F;
        }
        if f16c {
            features |= F16C;
        }
    }
    features
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

/// This CPU's identity (two CPUID leaves; called for descriptions, never on a rotation path).
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

/// How the `avx2` and `avx512` backends convert element types on this CPU.
pub(crate) fn conversions() -> &'static str {
    if features() & F16C != 0 {
        "f16 by F16C, bf16, i16 and i8 by AVX2, eight values at a time"
    } else {
        "f16 in scalar code (no F16C), bf16, i16 and i8 by AVX2, eight values at a time"
    }
}

// --- element conversions (the `avx2` and `avx512` backends' `load` and `store`) -------------
//
// Eight values at a time with AVX2 (+ F16C for f16), the tail and every other case by the
// reference conversions of `element`: the results are those of `element::load` and
// `element::store` bit for bit (f16: F16C rounds to nearest-even like `half`; bf16: the same
// integer rounding as `half`; integers: the same product, clamp and nearest-even rounding,
// NaN to 0). AVX-512's own `vcvtneps2bf16` is not used: it flushes subnormals.

/// Whether this CPU converts `E` with the vector loops below (`f32` needs no conversion).
#[inline(always)]
fn converts_in_vectors<E: Element>() -> bool {
    let f = features();
    f & AVX2_FMA != 0
        && match E::FORMAT {
            Format::F16 => f & F16C != 0,
            Format::Bf16 | Format::I16 | Format::I8 => true,
            Format::F32 => false,
        }
}

/// [`element::load`] with vector instructions where this CPU has them.
pub(crate) fn load<E: Element>(src: &[E], dst: &mut [f32], ratio: f32) {
    let n = src.len().min(dst.len());
    let done = if converts_in_vectors::<E>() {
        // SAFETY: AVX2 (and F16C for f16) are available (`converts_in_vectors`); `src`
        // holds `n` values of `E`, whose layout is that of the integer type each arm reads
        // (`f16` and `bf16` are `repr(transparent)` over `u16`), and `dst` has room for `n`
        // floats.
        unsafe {
            let (s, d) = (src.as_ptr(), dst.as_mut_ptr());
            match E::FORMAT {
                Format::F16 => load_f16(s.cast(), d, n),
                Format::Bf16 => load_bf16(s.cast(), d, n),
                Format::I16 => load_i16(s.cast(), d, n, ratio),
                Format::I8 => load_i8(s.cast(), d, n, ratio),
                Format::F32 => 0,
            }
        }
    } else {
        0
    };
    element::load(&src[done..n], &mut dst[done..n], ratio);
}

/// [`element::store`] with vector instructions where this CPU has them.
pub(crate) fn store<E: Element>(src: &[f32], dst: &mut [E]) {
    let n = src.len().min(dst.len());
    let done = if converts_in_vectors::<E>() {
        // SAFETY: as in `load`, with `dst` writable for `n` values of `E`.
        unsafe {
            let (s, d) = (src.as_ptr(), dst.as_mut_ptr());
            match E::FORMAT {
                Format::F16 => store_f16(s, d.cast(), n),
                Format::Bf16 => store_bf16(s, d.cast(), n),
                Format::I16 => store_i16(s, d.cast(), n),
                Format::I8 => store_i8(s, d.cast(), n),
                Format::F32 => 0,
            }
        }
    } else {
        0
    };
    element::store(&src[done..n], &mut dst[done..n]);
}

/// Converts the first `n / 8 · 8` of `n` values; returns how many.
///
/// # Safety
///
/// AVX2 and F16C are available; `s` is readable for `n` u16s and `d` writable for `n` floats.
#[target_feature(enable = "avx2,f16c")]
unsafe fn load_f16(s: *const u16, d: *mut f32, n: usize) -> usize {
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: `i + 8 ≤ n` values lie within both buffers (caller).
        unsafe {
            let h = _mm_loadu_si128(s.add(i).cast());
            _mm256_storeu_ps(d.add(i), _mm256_cvtph_ps(h));
        }
        i += 8;
    }
    i
}

/// As [`load_f16`], for bf16 (the high half of an f32: a shift).
///
/// # Safety
///
/// As [`load_f16`] (F16C not needed).
#[target_feature(enable = "avx2")]
unsafe fn load_bf16(s: *const u16, d: *mut f32, n: usize) -> usize {
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: `i + 8 ≤ n` values lie within both buffers (caller).
        unsafe {
            let h = _mm256_cvtepu16_epi32(_mm_loadu_si128(s.add(i).cast()));
            _mm256_storeu_ps(d.add(i), _mm256_castsi256_ps(_mm256_slli_epi32::<16>(h)));
        }
        i += 8;
    }
    i
}

/// As [`load_f16`], for i16 times `ratio`.
///
/// # Safety
///
/// As [`load_bf16`].
#[target_feature(enable = "avx2")]
unsafe fn load_i16(s: *const i16, d: *mut f32, n: usize, ratio: f32) -> usize {
    let r = _mm256_set1_ps(ratio);
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: `i + 8 ≤ n` values lie within both buffers (caller).
        unsafe {
            let v = _mm256_cvtepi16_epi32(_mm_loadu_si128(s.add(i).cast()));
            _mm256_storeu_ps(d.add(i), _mm256_mul_ps(_mm256_cvtepi32_ps(v), r));
        }
        i += 8;
    }
    i
}

/// As [`load_f16`], for i8 times `ratio`.
///
/// # Safety
///
/// As [`load_bf16`], `s` readable for `n` bytes.
#[target_feature(enable = "avx2")]
unsafe fn load_i8(s: *const i8, d: *mut f32, n: usize, ratio: f32) -> usize {
    let r = _mm256_set1_ps(ratio);
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: `i + 8 ≤ n` values lie within both buffers (caller).
        unsafe {
            let v = _mm256_cvtepi8_epi32(_mm_loadl_epi64(s.add(i).cast()));
            _mm256_storeu_ps(d.add(i), _mm256_mul_ps(_mm256_cvtepi32_ps(v), r));
        }
        i += 8;
    }
    i
}

/// Rounds the first `n / 8 · 8` of `n` floats to f16 (nearest-even); returns how many.
///
/// # Safety
///
/// AVX2 and F16C are available; `s` is readable for `n` floats and `d` writable for `n` u16s.
#[target_feature(enable = "avx2,f16c")]
unsafe fn store_f16(s: *const f32, d: *mut u16, n: usize) -> usize {
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: `i + 8 ≤ n` values lie within both buffers (caller).
        unsafe {
            let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm256_loadu_ps(s.add(i)));
            _mm_storeu_si128(d.add(i).cast(), h);
        }
        i += 8;
    }
    i
}

/// Eight 32-bit lanes (each below 2¹⁶, or saturating as i16) packed into 8 × 16 bits in order.
///
/// # Safety
///
/// AVX2 is available.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn pack_u16(v: __m256i) -> __m256i {
    // packus works within 128-bit lanes: [v0..v3, v0..v3 | v4..v7, v4..v7]; keep qwords 0, 2.
    _mm256_permute4x64_epi64::<0b1000>(_mm256_packus_epi32(v, v))
}

/// As [`store_f16`], for bf16: `half`'s rounding (nearest-even on the top 16 bits; a NaN keeps
/// its top bits and becomes quiet).
///
/// # Safety
///
/// As [`store_f16`] (F16C not needed).
#[target_feature(enable = "avx2")]
unsafe fn store_bf16(s: *const f32, d: *mut u16, n: usize) -> usize {
    let (one, bias, abs, inf, quiet) = (
        _mm256_set1_epi32(1),
        _mm256_set1_epi32(0x7FFF),
        _mm256_set1_epi32(0x7FFF_FFFF),
        _mm256_set1_epi32(0x7F80_0000),
        _mm256_set1_epi32(0x0040),
    );
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: `i + 8 ≤ n` values lie within both buffers (caller).
        unsafe {
            let x = _mm256_castps_si256(_mm256_loadu_ps(s.add(i)));
            let lsb = _mm256_and_si256(_mm256_srli_epi32::<16>(x), one);
            let rounded = _mm256_srli_epi32::<16>(_mm256_add_epi32(x, _mm256_add_epi32(bias, lsb)));
            let nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, abs), inf);
            let quieted = _mm256_or_si256(_mm256_srli_epi32::<16>(x), quiet);
            let b = _mm256_blendv_epi8(rounded, quieted, nan);
            _mm_storeu_si128(d.add(i).cast(), _mm256_castsi256_si128(pack_u16(b)));
        }
        i += 8;
    }
    i
}

/// `v` with NaN lanes 0, clamped to `[lo, hi]`, rounded to nearest-even integers.
///
/// # Safety
///
/// AVX2 is available.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn round_clamped(v: __m256, lo: f32, hi: f32) -> __m256i {
    let v = _mm256_and_ps(v, _mm256_cmp_ps::<_CMP_ORD_Q>(v, v));
    let v = _mm256_max_ps(_mm256_min_ps(v, _mm256_set1_ps(hi)), _mm256_set1_ps(lo));
    // MXCSR's default rounding: nearest-even.
    _mm256_cvtps_epi32(v)
}

/// As [`store_f16`], for i16: nearest-even, saturated, NaN to 0.
///
/// # Safety
///
/// As [`store_f16`] (F16C not needed).
#[target_feature(enable = "avx2")]
unsafe fn store_i16(s: *const f32, d: *mut i16, n: usize) -> usize {
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: `i + 8 ≤ n` values lie within both buffers (caller).
        unsafe {
            let v = round_clamped(_mm256_loadu_ps(s.add(i)), -32768.0, 32767.0);
            let packed = _mm256_permute4x64_epi64::<0b1000>(_mm256_packs_epi32(v, v));
            _mm_storeu_si128(d.add(i).cast(), _mm256_castsi256_si128(packed));
        }
        i += 8;
    }
    i
}

/// As [`store_f16`], for i8: nearest-even, saturated, NaN to 0.
///
/// # Safety
///
/// As [`store_f16`] (F16C not needed), `d` writable for `n` bytes.
#[target_feature(enable = "avx2")]
unsafe fn store_i8(s: *const f32, d: *mut i8, n: usize) -> usize {
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: `i + 8 ≤ n` values lie within both buffers (caller).
        unsafe {
            let v = round_clamped(_mm256_loadu_ps(s.add(i)), -128.0, 127.0);
            let words = _mm256_packs_epi32(v, v);
            let (lo, hi) = (
                _mm256_castsi256_si128(words),
                _mm256_extracti128_si256::<1>(words),
            );
            // lo = [v0..v3, v0..v3], hi = [v4..v7, v4..v7] as i16: bytes v0..v3 v4..v7.
            let bytes = _mm_packs_epi16(lo, hi);
            let order = core::arch::x86_64::_mm_shuffle_epi32::<0b1000>(bytes);
            _mm_storel_epi64(d.add(i).cast(), order);
        }
        i += 8;
    }
    i
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
        let std_f16c = std_avx2 && std::is_x86_feature_detected!("f16c");
        assert_eq!(f & F16C != 0, std_f16c);
        // Cached: the same answer again.
        assert_eq!(features(), f);
    }
}
