//! The AVX2 + FMA backend (x86_64), through `core::arch` intrinsics.
//!
//! Interleaved pairs: each 8-lane step is one swap within pairs (`vpermilps`), one multiply
//! and one `vfmaddsub` against the token's `[cos, sin]` entries duplicated with
//! `vmovsldup`/`vmovshdup`. Half layout: the table is de-interleaved once per 8 pairs and the
//! two halves of a head are rotated with one multiply and one FMA each. A token's angles are
//! loaded once and reused for all of its heads (heads are the inner loop).
//!
//! # Difference from [`Backend::Scalar`](super::Backend::Scalar)
//!
//! Scalar computes `a' = rnd(rnd(a·c) − rnd(b·s))`, `b' = rnd(rnd(b·c) + rnd(a·s))`; this
//! backend fuses the first product of each output: `a' = rnd(a·c − rnd(b·s))`,
//! `b' = rnd(b·c + rnd(a·s))` (the inverse flips the sign of `s`). Hence, per output,
//!
//! `|avx2 − scalar| ≤ 3·2⁻²⁴·(|a·c| + |b·s|) + 3·2⁻¹⁵⁰ ≤ 2⁻²²·(|a| + |b|) + 2⁻¹⁴⁸`
//!
//! (the second term only matters for subnormal results). RoPE-Mixed angle sums
//! `cos(α+β) = cα·cβ − sα·sβ`, `sin(α+β) = sα·cβ + cα·sβ` are formed without FMA, bit for bit
//! as in scalar, so the same bound holds with those sums as `c`, `s`. Results are deterministic
//! and identical to the `neon` backend's. NaN propagates as in scalar (a NaN in either element
//! of a pair makes both outputs NaN); infinities give the same infinities and NaNs as scalar
//! unless a result lies within an ulp of overflow.

use core::arch::x86_64::{
    __m128, __m256, _mm_castps_si128, _mm_castsi128_ps, _mm_fmadd_ps, _mm_fmaddsub_ps,
    _mm_fmsub_ps, _mm_fmsubadd_ps, _mm_load_ss, _mm_loadu_ps, _mm_loadu_si64, _mm_movehdup_ps,
    _mm_moveldup_ps, _mm_mul_ps, _mm_permute_ps, _mm_shuffle_ps, _mm_store_ss, _mm_storeu_ps,
    _mm_storeu_si64, _mm256_add_ps, _mm256_addsub_ps, _mm256_castpd_ps, _mm256_castps_pd,
    _mm256_fmadd_ps, _mm256_fmaddsub_ps, _mm256_fmsub_ps, _mm256_fmsubadd_ps, _mm256_loadu_ps,
    _mm256_movehdup_ps, _mm256_moveldup_ps, _mm256_mul_ps, _mm256_permute_ps,
    _mm256_permute4x64_pd, _mm256_setzero_ps, _mm256_shuffle_ps, _mm256_storeu_ps, _mm256_sub_ps,
};

use super::{AngleSource, Job, Kernel, drive};
use crate::config::{Direction, Layout};

/// The kernel type. Private to this module and never constructed: its methods are only
/// instantiated by `drive::<Avx2>` inside [`run_avx2`], which runs only on CPUs with AVX2
/// and FMA. Every `unsafe` block below relies on that.
struct Avx2;

/// Whether this CPU has AVX2 and FMA: with `std`, detected at run time (std caches the CPUID
/// result, and a build that enables the features at compile time answers `true` without it);
/// without `std`, the build's target features.
#[inline]
pub(crate) fn is_available() -> bool {
    #[cfg(feature = "std")]
    {
        std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")
    }
    #[cfg(not(feature = "std"))]
    {
        cfg!(all(target_feature = "avx2", target_feature = "fma"))
    }
}

pub(crate) fn run<A: AngleSource>(job: Job<'_, A>) {
    if is_available() {
        // SAFETY: the CPU supports AVX2 and FMA, checked just above.
        unsafe { run_avx2(job) }
    } else {
        // Unreachable through the public API (tables only accept available backends); kept
        // so that this safe function is sound on any CPU.
        super::scalar::run(job);
    }
}

/// The whole driver loop, compiled with AVX2 and FMA so every kernel call inlines into it.
///
/// # Safety
///
/// The CPU must support AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
unsafe fn run_avx2<A: AngleSource>(job: Job<'_, A>) {
    drive::<Avx2, A>(job);
}

// ---------------------------------------------------------------------------------------
// Single-head steps. Each is `unsafe` only for its pointer arguments: the caller guarantees
// the stated elements are in bounds (unaligned is fine). AVX2/FMA availability is the
// module-wide invariant documented on `Avx2`.
// ---------------------------------------------------------------------------------------

/// Interleaved: rotates the 4 pairs at `p` by `[cos, sin]` duplicated as `cc`, `ss`.
///
/// # Safety
///
/// `p .. p + 8` must be valid for reads and writes.
#[inline(always)]
unsafe fn il4<const INV: bool>(p: *mut f32, cc: __m256, ss: __m256) {
    // SAFETY: the caller guarantees 8 valid floats at `p`; AVX2/FMA: see `Avx2`.
    unsafe {
        let x = _mm256_loadu_ps(p);
        let swapped = _mm256_mul_ps(_mm256_permute_ps::<0b10_11_00_01>(x), ss);
        let out = if INV {
            _mm256_fmsubadd_ps(x, cc, swapped)
        } else {
            _mm256_fmaddsub_ps(x, cc, swapped)
        };
        _mm256_storeu_ps(p, out);
    }
}

/// Interleaved: rotates the 2 pairs at `p`.
///
/// # Safety
///
/// `p .. p + 4` must be valid for reads and writes.
#[inline(always)]
unsafe fn il2<const INV: bool>(p: *mut f32, cc: __m128, ss: __m128) {
    // SAFETY: the caller guarantees 4 valid floats at `p`; AVX2/FMA: see `Avx2`.
    unsafe {
        let x = _mm_loadu_ps(p);
        let swapped = _mm_mul_ps(_mm_permute_ps::<0b10_11_00_01>(x), ss);
        let out = if INV {
            _mm_fmsubadd_ps(x, cc, swapped)
        } else {
            _mm_fmaddsub_ps(x, cc, swapped)
        };
        _mm_storeu_ps(p, out);
    }
}

/// Interleaved: rotates the single pair at `p` (`cc`, `ss` hold it in lanes 0 and 1).
///
/// # Safety
///
/// `p .. p + 2` must be valid for reads and writes.
#[inline(always)]
unsafe fn il1<const INV: bool>(p: *mut f32, cc: __m128, ss: __m128) {
    // SAFETY: the caller guarantees 2 valid floats at `p` (8 bytes, read and written
    // unaligned); AVX2/FMA: see `Avx2`.
    unsafe {
        let x = _mm_castsi128_ps(_mm_loadu_si64(p.cast::<u8>()));
        let swapped = _mm_mul_ps(_mm_permute_ps::<0b10_11_00_01>(x), ss);
        let out = if INV {
            _mm_fmsubadd_ps(x, cc, swapped)
        } else {
            _mm_fmaddsub_ps(x, cc, swapped)
        };
        _mm_storeu_si64(p.cast::<u8>(), _mm_castps_si128(out));
    }
}

/// Loads 4 `[cos, sin]` entries duplicated as `([c0 c0 c1 c1 …], [s0 s0 s1 s1 …])`.
///
/// # Safety
///
/// `t .. t + 8` must be valid for reads.
#[inline(always)]
unsafe fn dup4(t: *const f32) -> (__m256, __m256) {
    // SAFETY: the caller guarantees 8 readable floats; AVX2: see `Avx2`.
    unsafe {
        let v = _mm256_loadu_ps(t);
        (_mm256_moveldup_ps(v), _mm256_movehdup_ps(v))
    }
}

/// [`dup4`] for 2 entries.
///
/// # Safety
///
/// `t .. t + 4` must be valid for reads.
#[inline(always)]
unsafe fn dup2(t: *const f32) -> (__m128, __m128) {
    // SAFETY: the caller guarantees 4 readable floats; AVX2: see `Avx2`.
    unsafe {
        let v = _mm_loadu_ps(t);
        (_mm_moveldup_ps(v), _mm_movehdup_ps(v))
    }
}

/// [`dup4`] for 1 entry (upper lanes zero).
///
/// # Safety
///
/// `t .. t + 2` must be valid for reads.
#[inline(always)]
unsafe fn dup1(t: *const f32) -> (__m128, __m128) {
    // SAFETY: the caller guarantees 2 readable floats (read unaligned); AVX2: see `Avx2`.
    unsafe {
        let v = _mm_castsi128_ps(_mm_loadu_si64(t.cast::<u8>()));
        (_mm_moveldup_ps(v), _mm_movehdup_ps(v))
    }
}

/// Half layout: rotates the 8 pairs `(a[i], b[i])` at `a`, `b` by cosines `c`, sines `s`.
///
/// # Safety
///
/// `a .. a + 8` and `b .. b + 8` must be valid for reads and writes.
#[inline(always)]
unsafe fn half8<const INV: bool>(a: *mut f32, b: *mut f32, c: __m256, s: __m256) {
    // SAFETY: the caller guarantees 8 valid floats at `a` and at `b`; AVX2/FMA: see `Avx2`.
    unsafe {
        let x = _mm256_loadu_ps(a);
        let y = _mm256_loadu_ps(b);
        let ys = _mm256_mul_ps(y, s);
        let xs = _mm256_mul_ps(x, s);
        let (x2, y2) = if INV {
            (_mm256_fmadd_ps(x, c, ys), _mm256_fmsub_ps(y, c, xs))
        } else {
            (_mm256_fmsub_ps(x, c, ys), _mm256_fmadd_ps(y, c, xs))
        };
        _mm256_storeu_ps(a, x2);
        _mm256_storeu_ps(b, y2);
    }
}

/// [`half8`] for 4 pairs.
///
/// # Safety
///
/// `a .. a + 4` and `b .. b + 4` must be valid for reads and writes.
#[inline(always)]
unsafe fn half4<const INV: bool>(a: *mut f32, b: *mut f32, c: __m128, s: __m128) {
    // SAFETY: the caller guarantees 4 valid floats at `a` and at `b`; AVX2/FMA: see `Avx2`.
    unsafe {
        let x = _mm_loadu_ps(a);
        let y = _mm_loadu_ps(b);
        let ys = _mm_mul_ps(y, s);
        let xs = _mm_mul_ps(x, s);
        let (x2, y2) = if INV {
            (_mm_fmadd_ps(x, c, ys), _mm_fmsub_ps(y, c, xs))
        } else {
            (_mm_fmsub_ps(x, c, ys), _mm_fmadd_ps(y, c, xs))
        };
        _mm_storeu_ps(a, x2);
        _mm_storeu_ps(b, y2);
    }
}

/// [`half8`] for 1 pair (`c`, `s` in lane 0).
///
/// # Safety
///
/// `a` and `b` must be valid for reads and writes.
#[inline(always)]
unsafe fn half1<const INV: bool>(a: *mut f32, b: *mut f32, c: __m128, s: __m128) {
    // SAFETY: the caller guarantees `a` and `b` are valid; AVX2/FMA: see `Avx2`.
    unsafe {
        let x = _mm_load_ss(a);
        let y = _mm_load_ss(b);
        let ys = _mm_mul_ps(y, s);
        let xs = _mm_mul_ps(x, s);
        let (x2, y2) = if INV {
            (_mm_fmadd_ps(x, c, ys), _mm_fmsub_ps(y, c, xs))
        } else {
            (_mm_fmsub_ps(x, c, ys), _mm_fmadd_ps(y, c, xs))
        };
        _mm_store_ss(a, x2);
        _mm_store_ss(b, y2);
    }
}

/// De-interleaves 8 `[cos, sin]` entries into `([c0 … c7], [s0 … s7])`.
///
/// # Safety
///
/// `t .. t + 16` must be valid for reads.
#[inline(always)]
unsafe fn split8(t: *const f32) -> (__m256, __m256) {
    // SAFETY: the caller guarantees 16 readable floats; AVX2: see `Avx2`.
    unsafe {
        let lo = _mm256_loadu_ps(t);
        let hi = _mm256_loadu_ps(t.add(8));
        // [c0 c1 c4 c5 | c2 c3 c6 c7] → lane order fixed by a 64-bit permute.
        let c = _mm256_shuffle_ps::<0b10_00_10_00>(lo, hi);
        let s = _mm256_shuffle_ps::<0b11_01_11_01>(lo, hi);
        (fix_lanes(c), fix_lanes(s))
    }
}

/// `[v0 v1 v4 v5 | v2 v3 v6 v7]` → `[v0 … v7]` (no closure: it would not inline the intrinsic).
#[inline(always)]
fn fix_lanes(v: __m256) -> __m256 {
    // SAFETY: AVX2: see `Avx2`.
    unsafe { _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(v))) }
}

/// [`split8`] for 4 entries.
///
/// # Safety
///
/// `t .. t + 8` must be valid for reads.
#[inline(always)]
unsafe fn split4(t: *const f32) -> (__m128, __m128) {
    // SAFETY: the caller guarantees 8 readable floats; AVX2: see `Avx2`.
    unsafe {
        let lo = _mm_loadu_ps(t);
        let hi = _mm_loadu_ps(t.add(4));
        (
            _mm_shuffle_ps::<0b10_00_10_00>(lo, hi),
            _mm_shuffle_ps::<0b11_01_11_01>(lo, hi),
        )
    }
}

/// [`split8`] for 1 entry, in lane 0.
///
/// # Safety
///
/// `t .. t + 2` must be valid for reads.
#[inline(always)]
unsafe fn split1(t: *const f32) -> (__m128, __m128) {
    // SAFETY: the caller guarantees 2 readable floats; AVX2: see `Avx2`.
    unsafe { (_mm_load_ss(t), _mm_load_ss(t.add(1))) }
}

/// `[cos, sin]` of `α + β` for 4 pairs of interleaved entries, exactly as scalar computes it
/// (`cα·cβ − sα·sβ`, `sα·cβ + cα·sβ`, no FMA).
///
/// # Safety
///
/// `ta .. ta + 8` and `tb .. tb + 8` must be valid for reads.
#[inline(always)]
unsafe fn sum4(ta: *const f32, tb: *const f32) -> __m256 {
    // SAFETY: the caller guarantees 8 readable floats at each; AVX2: see `Avx2`.
    unsafe {
        let a = _mm256_loadu_ps(ta);
        let (cb, sb) = dup4(tb);
        _mm256_addsub_ps(
            _mm256_mul_ps(a, cb),
            _mm256_mul_ps(_mm256_permute_ps::<0b10_11_00_01>(a), sb),
        )
    }
}

/// `(cos, sin)` of `α + β` for 8 pairs, de-interleaved, exactly as scalar computes it.
///
/// # Safety
///
/// `ta .. ta + 16` and `tb .. tb + 16` must be valid for reads.
#[inline(always)]
unsafe fn sum8_split(ta: *const f32, tb: *const f32) -> (__m256, __m256) {
    // SAFETY: the caller guarantees 16 readable floats at each; AVX2: see `Avx2`.
    unsafe {
        let (ca, sa) = split8(ta);
        let (cb, sb) = split8(tb);
        (
            _mm256_sub_ps(_mm256_mul_ps(ca, cb), _mm256_mul_ps(sa, sb)),
            _mm256_add_ps(_mm256_mul_ps(sa, cb), _mm256_mul_ps(ca, sb)),
        )
    }
}

/// `[cos, sin]` of `α + β`, the scalar formula, for the tails of RoPE-Mixed rows.
#[inline(always)]
fn sum1([ca, sa]: [f32; 2], [cb, sb]: [f32; 2]) -> [f32; 2] {
    [ca * cb - sa * sb, sa * cb + ca * sb]
}

// ---------------------------------------------------------------------------------------
// Whole sections, heads inner.
// ---------------------------------------------------------------------------------------

/// Interleaved: rotates pairs `first .. first + angles.len()` of every head in `x`.
/// Requires `first + angles.len() ≤ head_dim / 2` (established by the caller).
#[inline(always)]
fn section_il<const INV: bool>(x: &mut [f32], head_dim: usize, first: usize, angles: &[[f32; 2]]) {
    let len = x.len();
    let base = x.as_mut_ptr();
    let t = angles.as_ptr().cast::<f32>();
    let n = angles.len();
    // Float offset of the section within a head; every access below is at
    // `head + start + i` with `head + head_dim ≤ len` and `start + i < 2·(first + n) ≤ head_dim`.
    let start = 2 * first;
    // Heads start at `0, head_dim, …, ≤ last`.
    let Some(last) = len.checked_sub(head_dim) else {
        return;
    };
    let mut k = 0;
    while k + 4 <= n {
        // SAFETY: entries `k .. k + 4 ≤ n` of `angles` are 8 floats from `t + 2k`.
        let (cc, ss) = unsafe { dup4(t.add(2 * k)) };
        let offset = start + 2 * k;
        let mut head = 0;
        // Two heads per step.
        while head + head_dim <= last {
            // SAFETY: floats `offset .. offset + 8 ≤ 2(first + n) ≤ head_dim` of the heads at
            // `head` and `head + head_dim ≤ last`, which lie within `x` (`last + head_dim = len`).
            unsafe {
                il4::<INV>(base.add(head + offset), cc, ss);
                il4::<INV>(base.add(head + head_dim + offset), cc, ss);
            }
            head += 2 * head_dim;
        }
        if head <= last {
            // SAFETY: as above, for the head at `head ≤ last`.
            unsafe { il4::<INV>(base.add(head + offset), cc, ss) };
        }
        k += 4;
    }
    if k + 2 <= n {
        // SAFETY: entries `k .. k + 2 ≤ n`.
        let (cc, ss) = unsafe { dup2(t.add(2 * k)) };
        let mut head = 0;
        while head + head_dim <= len {
            // SAFETY: as above, 4 floats ending at or before `head + 2(first + n)`.
            unsafe { il2::<INV>(base.add(head + start + 2 * k), cc, ss) };
            head += head_dim;
        }
        k += 2;
    }
    if k < n {
        // SAFETY: entry `k < n`.
        let (cc, ss) = unsafe { dup1(t.add(2 * k)) };
        let mut head = 0;
        while head + head_dim <= len {
            // SAFETY: as above, 2 floats ending at `head + 2(first + n)`.
            unsafe { il1::<INV>(base.add(head + start + 2 * k), cc, ss) };
            head += head_dim;
        }
    }
}

/// Half layout: rotates pairs `(v[k], v[k + d/2])`, `k = first .. first + angles.len()`, of
/// every head in `x`. Requires `first + angles.len() ≤ head_dim / 2`.
#[inline(always)]
fn section_half<const INV: bool>(
    x: &mut [f32],
    head_dim: usize,
    first: usize,
    angles: &[[f32; 2]],
) {
    let len = x.len();
    let base = x.as_mut_ptr();
    let t = angles.as_ptr().cast::<f32>();
    let n = angles.len();
    let half = head_dim / 2;
    // Accesses are at `head + first + i` and `head + half + first + i` with
    // `first + i < first + n ≤ half` and `head + head_dim ≤ len`; heads start at
    // `0, head_dim, …, ≤ last`.
    let Some(last) = len.checked_sub(head_dim) else {
        return;
    };
    let mut k = 0;
    while k + 8 <= n {
        // SAFETY: entries `k .. k + 8 ≤ n`: 16 floats from `t + 2k`.
        let (c, s) = unsafe { split8(t.add(2 * k)) };
        let mut a = first + k;
        while a <= last + first + k {
            // SAFETY: `a` is `head + first + k` for a head at `head ≤ last`:
            // `a + 8 ≤ head + first + n ≤ head + half` and `a + half + 8 ≤ head + head_dim ≤ len`.
            unsafe { half8::<INV>(base.add(a), base.add(a + half), c, s) };
            a += head_dim;
        }
        k += 8;
    }
    if k + 4 <= n {
        // SAFETY: entries `k .. k + 4 ≤ n`.
        let (c, s) = unsafe { split4(t.add(2 * k)) };
        let mut head = 0;
        while head + head_dim <= len {
            let a = head + first + k;
            // SAFETY: as above with 4 floats.
            unsafe { half4::<INV>(base.add(a), base.add(a + half), c, s) };
            head += head_dim;
        }
        k += 4;
    }
    while k < n {
        // SAFETY: entry `k < n`.
        let (c, s) = unsafe { split1(t.add(2 * k)) };
        let mut head = 0;
        while head + head_dim <= len {
            let a = head + first + k;
            // SAFETY: as above with 1 float.
            unsafe { half1::<INV>(base.add(a), base.add(a + half), c, s) };
            head += head_dim;
        }
        k += 1;
    }
}

/// RoPE-Mixed, interleaved: rotates all `n` pairs of the head at `p` by `a[k] + b[k]`.
///
/// # Safety
///
/// `p .. p + 2n` valid for reads and writes, `ta`, `tb` valid for `2n` reads.
#[inline(always)]
unsafe fn summed_il<const INV: bool>(p: *mut f32, ta: *const f32, tb: *const f32, n: usize) {
    let mut k = 0;
    while k + 4 <= n {
        // SAFETY: floats `2k .. 2k + 8 ≤ 2n` of the head and of both tables.
        unsafe {
            let c = sum4(ta.add(2 * k), tb.add(2 * k));
            il4::<INV>(p.add(2 * k), _mm256_moveldup_ps(c), _mm256_movehdup_ps(c));
        }
        k += 4;
    }
    while k < n {
        // SAFETY: float pair `2k, 2k + 1 < 2n` of the head and of both tables.
        unsafe {
            let entry = sum1(
                *ta.add(2 * k).cast::<[f32; 2]>(),
                *tb.add(2 * k).cast::<[f32; 2]>(),
            );
            let (cc, ss) = dup1(entry.as_ptr());
            il1::<INV>(p.add(2 * k), cc, ss);
        }
        k += 1;
    }
}

/// RoPE-Mixed, half layout: rotates all `n` pairs `(p[k], p[k + n])` by `a[k] + b[k]`.
///
/// # Safety
///
/// `p .. p + 2n` valid for reads and writes, `ta`, `tb` valid for `2n` reads.
#[inline(always)]
unsafe fn summed_half<const INV: bool>(p: *mut f32, ta: *const f32, tb: *const f32, n: usize) {
    let mut k = 0;
    while k + 8 <= n {
        // SAFETY: pairs `k .. k + 8 ≤ n`: floats `k .. k + 8` and `n + k .. n + k + 8` of the
        // head, `2k .. 2k + 16 ≤ 2n` of both tables.
        unsafe {
            let (c, s) = sum8_split(ta.add(2 * k), tb.add(2 * k));
            half8::<INV>(p.add(k), p.add(n + k), c, s);
        }
        k += 8;
    }
    while k < n {
        // SAFETY: pair `k < n`, as above.
        unsafe {
            let [c, s] = sum1(
                *ta.add(2 * k).cast::<[f32; 2]>(),
                *tb.add(2 * k).cast::<[f32; 2]>(),
            );
            half1::<INV>(p.add(k), p.add(n + k), _mm_load_ss(&c), _mm_load_ss(&s));
        }
        k += 1;
    }
}

// ---------------------------------------------------------------------------------------
// Axial blocks: both sections of every token in one pass.
// ---------------------------------------------------------------------------------------

/// Interleaved: rotates, in one pass over a block of whole tokens, the row section
/// (`4C` pairs from `row_pair`, entries `row`, shared) and the column section (`4C` pairs
/// from `col_pair`, token `t` by entries `4C·t ..` of `cols`) of every head. The row entries
/// stay in registers for the block, a token's column entries for its heads. Tokens past the
/// last whole chunk of `cols` get the row section only.
///
/// Requires `row.len() = 4C`, `row_pair + 4C ≤ head_dim / 2`, `col_pair + 4C ≤ head_dim / 2`,
/// `head_dim > 0`, `token_len` a multiple of `head_dim` and `x.len()` one of `token_len`
/// (established by the caller).
#[inline(always)]
fn axial_il<const INV: bool, const C: usize>(
    x: &mut [f32],
    token_len: usize,
    head_dim: usize,
    (row_pair, row): (usize, &[[f32; 2]]),
    (col_pair, cols): (usize, &[[f32; 2]]),
) {
    let width = 4 * C;
    let tokens = (x.len() / token_len).min(cols.len() / width);
    let (row_start, col_start) = (2 * row_pair, 2 * col_pair);
    let base = x.as_mut_ptr();
    let (tr, tc) = (row.as_ptr().cast::<f32>(), cols.as_ptr().cast::<f32>());
    // SAFETY: AVX2: see `Avx2`.
    let zero = unsafe { _mm256_setzero_ps() };
    let (mut rc, mut rs) = ([zero; C], [zero; C]);
    for j in 0..C {
        // SAFETY: `row` has `4C` entries, `8C` floats: `8j + 8 ≤ 8C`.
        (rc[j], rs[j]) = unsafe { dup4(tr.add(8 * j)) };
    }
    let (mut cc, mut cs) = ([zero; C], [zero; C]);
    let mut token = 0;
    let mut entry = 0;
    while token < tokens * token_len {
        for j in 0..C {
            // SAFETY: entries `entry/2 .. entry/2 + 4C ≤ tokens·width ≤ cols.len()`
            // (`entry = 2·width·t` for token `t < tokens`), read as floats `entry + 8j ..`.
            (cc[j], cs[j]) = unsafe { dup4(tc.add(entry + 8 * j)) };
        }
        let mut head = token;
        while head < token + token_len {
            for j in 0..C {
                // SAFETY: the head at `head` lies in `x` (`head + head_dim ≤ token +
                // token_len ≤ x.len()`, `token_len` a multiple of `head_dim`), and both
                // sections' floats `start + 8j .. start + 8j + 8 ≤ start + 8C ≤ head_dim`.
                unsafe {
                    il4::<INV>(base.add(head + row_start + 8 * j), rc[j], rs[j]);
                    il4::<INV>(base.add(head + col_start + 8 * j), cc[j], cs[j]);
                }
            }
            head += head_dim;
        }
        token += token_len;
        entry += 2 * width;
    }
    if let Some(rest) = x.get_mut(token..) {
        section_il::<INV>(rest, head_dim, row_pair, row);
    }
}

/// [`axial_il`] for the half layout, `8C` pairs per section, pairs `(v[k], v[k + d/2])`.
///
/// Requires what `axial_il` does, with `8C` for `4C`.
#[inline(always)]
fn axial_half<const INV: bool, const C: usize>(
    x: &mut [f32],
    token_len: usize,
    head_dim: usize,
    (row_pair, row): (usize, &[[f32; 2]]),
    (col_pair, cols): (usize, &[[f32; 2]]),
) {
    let width = 8 * C;
    let half = head_dim / 2;
    let tokens = (x.len() / token_len).min(cols.len() / width);
    let base = x.as_mut_ptr();
    let (tr, tc) = (row.as_ptr().cast::<f32>(), cols.as_ptr().cast::<f32>());
    // SAFETY: AVX2: see `Avx2`.
    let zero = unsafe { _mm256_setzero_ps() };
    let (mut rc, mut rs) = ([zero; C], [zero; C]);
    for j in 0..C {
        // SAFETY: `row` has `8C` entries, `16C` floats: `16j + 16 ≤ 16C`.
        (rc[j], rs[j]) = unsafe { split8(tr.add(16 * j)) };
    }
    let (mut cc, mut cs) = ([zero; C], [zero; C]);
    let mut token = 0;
    let mut entry = 0;
    while token < tokens * token_len {
        for j in 0..C {
            // SAFETY: entries `entry/2 .. entry/2 + 8C ≤ tokens·width ≤ cols.len()`.
            (cc[j], cs[j]) = unsafe { split8(tc.add(entry + 16 * j)) };
        }
        let mut head = token;
        while head < token + token_len {
            for j in 0..C {
                let (r, c) = (head + row_pair + 8 * j, head + col_pair + 8 * j);
                // SAFETY: the head at `head` lies in `x` (as in `axial_il`); each section's
                // floats `pair + 8j .. pair + 8C ≤ half` and the same `+ half ≤ head_dim`.
                unsafe {
                    half8::<INV>(base.add(r), base.add(r + half), rc[j], rs[j]);
                    half8::<INV>(base.add(c), base.add(c + half), cc[j], cs[j]);
                }
            }
            head += head_dim;
        }
        token += token_len;
        entry += 2 * width;
    }
    if let Some(rest) = x.get_mut(token..) {
        section_half::<INV>(rest, head_dim, row_pair, row);
    }
}

impl Kernel for Avx2 {
    #[inline(always)]
    fn rotate_pairs(
        x: &mut [f32],
        head_dim: usize,
        layout: Layout,
        first_pair: usize,
        angles: &[[f32; 2]],
        dir: Direction,
    ) {
        // Pairs past the end of a head are ignored, as in scalar.
        let room = (head_dim / 2).saturating_sub(first_pair);
        let angles = &angles[..angles.len().min(room)];
        if angles.is_empty() || head_dim == 0 {
            return;
        }
        match (layout, dir) {
            (Layout::Interleaved, Direction::Forward) => {
                section_il::<false>(x, head_dim, first_pair, angles)
            }
            (Layout::Interleaved, Direction::Inverse) => {
                section_il::<true>(x, head_dim, first_pair, angles)
            }
            (Layout::Half, Direction::Forward) => {
                section_half::<false>(x, head_dim, first_pair, angles)
            }
            (Layout::Half, Direction::Inverse) => {
                section_half::<true>(x, head_dim, first_pair, angles)
            }
        }
    }

    #[inline(always)]
    fn rotate_axial_block(
        x: &mut [f32],
        token_len: usize,
        head_dim: usize,
        layout: Layout,
        (row_pair, row): (usize, &[[f32; 2]]),
        (col_pair, cols): (usize, &[[f32; 2]]),
        width: usize,
        dir: Direction,
    ) {
        use {Direction::*, Layout::*};
        let room = |first: usize| {
            first
                .checked_add(width)
                .is_some_and(|end| end <= head_dim / 2)
        };
        // One pass for the small sections whose entries fit in registers (d = 16, 32);
        // each pair gets the arithmetic of `rotate_pairs`, so the results are the same.
        if head_dim != 0
            && token_len != 0
            && token_len.is_multiple_of(head_dim)
            && x.len().is_multiple_of(token_len)
            && row.len() == width
            && room(row_pair)
            && room(col_pair)
        {
            let (r, c) = ((row_pair, row), (col_pair, cols));
            match (layout, dir, width) {
                (Interleaved, Forward, 4) => {
                    return axial_il::<false, 1>(x, token_len, head_dim, r, c);
                }
                (Interleaved, Inverse, 4) => {
                    return axial_il::<true, 1>(x, token_len, head_dim, r, c);
                }
                (Interleaved, Forward, 8) => {
                    return axial_il::<false, 2>(x, token_len, head_dim, r, c);
                }
                (Interleaved, Inverse, 8) => {
                    return axial_il::<true, 2>(x, token_len, head_dim, r, c);
                }
                (Half, Forward, 8) => return axial_half::<false, 1>(x, token_len, head_dim, r, c),
                (Half, Inverse, 8) => return axial_half::<true, 1>(x, token_len, head_dim, r, c),
                _ => {}
            }
        }
        // Otherwise the provided implementation: the row section, then each token's columns.
        let (row, cols) = ((row_pair, row), (col_pair, cols));
        super::axial_block_by_sections::<Self>(
            x, token_len, head_dim, layout, row, cols, width, dir,
        );
    }

    #[inline(always)]
    fn rotate_pairs_summed(
        x: &mut [f32],
        head_dim: usize,
        layout: Layout,
        a: &[[f32; 2]],
        b: &[[f32; 2]],
        dir: Direction,
    ) {
        let n = head_dim / 2;
        if n == 0 {
            return;
        }
        let p = x.as_mut_ptr();
        let (ta, tb) = (a.as_ptr().cast::<f32>(), b.as_ptr().cast::<f32>());
        // Head `h` uses floats `h·d ..` of `x` and entries `h·n ..` of `a` and `b`; heads run
        // while all three have room, like scalar's zip of `chunks_exact`.
        let (mut head, mut entry) = (0, 0);
        while head + head_dim <= x.len() && entry + n <= a.len() && entry + n <= b.len() {
            // SAFETY: `2n ≤ head_dim` floats from `p + head` lie in `x`; `n` entries (`2n`
            // floats) from `entry` lie in `a` and in `b`.
            unsafe {
                let (ph, pa, pb) = (p.add(head), ta.add(2 * entry), tb.add(2 * entry));
                match (layout, dir) {
                    (Layout::Interleaved, Direction::Forward) => summed_il::<false>(ph, pa, pb, n),
                    (Layout::Interleaved, Direction::Inverse) => summed_il::<true>(ph, pa, pb, n),
                    (Layout::Half, Direction::Forward) => summed_half::<false>(ph, pa, pb, n),
                    (Layout::Half, Direction::Inverse) => summed_half::<true>(ph, pa, pb, n),
                }
            }
            head += head_dim;
            entry += n;
        }
    }
}
