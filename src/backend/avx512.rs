//! The AVX-512 backend (x86_64, AVX-512F + FMA), through `core::arch` intrinsics.
//!
//! The arithmetic of the [`avx2`](super::avx2) backend on 16-lane vectors: interleaved pairs
//! are rotated 8 at a time with one swap within pairs (`vpermilps`), one multiply and one
//! `vfmaddsub` against the `[cos, sin]` entries duplicated with `vmovsldup`/`vmovshdup`; the
//! half layout rotates 16 pairs at a time, the table de-interleaved with `vpermt2ps`. Tails
//! shorter than a vector use masked loads and stores (lanes outside the mask are neither read
//! nor written) instead of narrower vectors. A token's angles are loaded once and reused for
//! all of its heads, and axial grid rows whose sections fill whole vectors (head dims 32, 64
//! and 128 interleaved, 64 and 128 half) are rotated in one pass ([`axial_block`]). For grids
//! whose columns' entries fit in 4 KiB once duplicated (interleaved) or de-interleaved (half),
//! for example 8×8 at d = 32 interleaved and 14×14 at d = 64 in both layouts, they are
//! prepared once per call onto the stack and the whole grid is rotated in one loop
//! ([`axial_grid`]), so the tokens spend no shuffles on their column entries. Both loops are
//! written once for both layouts, over [`SectionLayout`].
//!
//! # Difference from [`Backend::Scalar`](super::Backend::Scalar)
//!
//! Exactly that of `Avx2`: every lane performs the operations the `Avx2` backend performs on
//! it (the same products, the same single fused product per output, the same unfused
//! RoPE-Mixed angle sums), so the results are bit for bit those of `Avx2` (and `Neon`), and
//!
//! `|avx512 − scalar| ≤ 3·2⁻²⁴·(|a·c| + |b·s|) + 3·2⁻¹⁵⁰ ≤ 2⁻²²·(|a| + |b|) + 2⁻¹⁴⁸`
//!
//! per output. (AVX-512 has no `addsub`; the RoPE-Mixed sums use `vfmaddsub` with a factor
//! of exactly 1, whose product is exact, so each lane is rounded once as `addsub` rounds it.)
//! NaN and infinities propagate as in `Avx2`.

use core::arch::x86_64::{
    __m512, __mmask16, _mm512_add_ps, _mm512_fmadd_ps, _mm512_fmaddsub_ps, _mm512_fmsub_ps,
    _mm512_fmsubadd_ps, _mm512_loadu_ps, _mm512_mask_storeu_ps, _mm512_maskz_loadu_ps,
    _mm512_movehdup_ps, _mm512_moveldup_ps, _mm512_mul_ps, _mm512_permute_ps, _mm512_set1_ps,
    _mm512_setzero_ps, _mm512_storeu_ps, _mm512_sub_ps,
};

use core::mem::MaybeUninit;

use super::{AngleSource, Job, Kernel, axial_block_by_sections, drive};
use crate::config::{Direction, Layout};

/// The kernel type. Private to this module and never constructed: its methods are only
/// instantiated by `drive::<Avx512>` inside [`run_avx512`], which runs only on CPUs with
/// AVX-512F, AVX2 and FMA. Every `unsafe` block below relies on that.
struct Avx512;

/// Whether this CPU has AVX-512F, AVX2 and FMA (and the OS saves the AVX-512 state): with `std`,
/// detected at run time (std caches the CPUID result, and a build that enables the features at
/// compile time answers `true` without it); without `std`, the build's target features.
#[inline]
pub(crate) fn is_available() -> bool {
    #[cfg(feature = "std")]
    {
        std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx2")
            && std::is_x86_feature_detected!("fma")
    }
    #[cfg(not(feature = "std"))]
    {
        cfg!(all(
            target_feature = "avx512f",
            target_feature = "avx2",
            target_feature = "fma"
        ))
    }
}

pub(crate) fn run<A: AngleSource>(job: Job<'_, A>) {
    if is_available() {
        // SAFETY: the CPU supports AVX-512F, AVX2 and FMA, checked just above.
        unsafe { run_avx512(job) }
    } else {
        // Unreachable through the public API (tables only accept available backends); kept
        // so that this safe function is sound on any CPU.
        super::scalar::run(job);
    }
}

/// The whole driver loop, compiled with AVX-512F, AVX2 and FMA so every kernel call inlines
/// into it.
///
/// # Safety
///
/// The CPU must support AVX-512F, AVX2 and FMA.
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn run_avx512<A: AngleSource>(job: Job<'_, A>) {
    drive::<Avx512, A>(job);
}

// ---------------------------------------------------------------------------------------
// Single-head steps. Each is `unsafe` only for its pointer arguments: the caller guarantees
// the stated elements are in bounds (unaligned is fine; lanes outside a mask are not
// accessed). AVX-512F/FMA availability is the module-wide invariant documented on `Avx512`.
// ---------------------------------------------------------------------------------------

/// The first `n` lanes (`n ≤ 16`).
#[inline(always)]
fn lanes(n: usize) -> __mmask16 {
    ((1u32 << n.min(16)) - 1) as __mmask16
}

/// Interleaved: rotates the 8 pairs at `p` by `[cos, sin]` duplicated as `cc`, `ss`.
///
/// # Safety
///
/// `p .. p + 16` must be valid for reads and writes.
#[inline(always)]
unsafe fn il8<const INV: bool>(p: *mut f32, cc: __m512, ss: __m512) {
    // SAFETY: the caller guarantees 16 valid floats at `p`; AVX-512F/FMA: see `Avx512`.
    unsafe {
        let x = _mm512_loadu_ps(p);
        _mm512_storeu_ps(p, rotate_il::<INV>(x, cc, ss));
    }
}

/// Interleaved: rotates the pairs at `p` in the lanes of `mask` (whole pairs).
///
/// # Safety
///
/// The floats `p + i` for the lanes `i` of `mask` must be valid for reads and writes.
#[inline(always)]
unsafe fn il_masked<const INV: bool>(p: *mut f32, mask: __mmask16, cc: __m512, ss: __m512) {
    // SAFETY: the caller guarantees the masked lanes at `p` are valid; the others are not
    // accessed. AVX-512F/FMA: see `Avx512`.
    unsafe {
        let x = _mm512_maskz_loadu_ps(mask, p);
        _mm512_mask_storeu_ps(p, mask, rotate_il::<INV>(x, cc, ss));
    }
}

/// The interleaved rotation of `x`, lane for lane `Avx2`'s `il4`.
#[inline(always)]
fn rotate_il<const INV: bool>(x: __m512, cc: __m512, ss: __m512) -> __m512 {
    // SAFETY: register-only AVX-512F/FMA operations: see `Avx512`.
    unsafe {
        let swapped = _mm512_mul_ps(_mm512_permute_ps::<0b10_11_00_01>(x), ss);
        if INV {
            _mm512_fmsubadd_ps(x, cc, swapped)
        } else {
            _mm512_fmaddsub_ps(x, cc, swapped)
        }
    }
}

/// Loads 8 `[cos, sin]` entries duplicated as `([c0 c0 c1 c1 …], [s0 s0 s1 s1 …])`.
///
/// # Safety
///
/// `t .. t + 16` must be valid for reads.
#[inline(always)]
unsafe fn dup8(t: *const f32) -> (__m512, __m512) {
    // SAFETY: the caller guarantees 16 readable floats; AVX-512F: see `Avx512`.
    unsafe { dup(_mm512_loadu_ps(t)) }
}

/// [`dup8`] for the entries in the lanes of `mask` (zero elsewhere).
///
/// # Safety
///
/// The floats `t + i` for the lanes `i` of `mask` must be valid for reads.
#[inline(always)]
unsafe fn dup_masked(t: *const f32, mask: __mmask16) -> (__m512, __m512) {
    // SAFETY: the caller guarantees the masked lanes are readable; AVX-512F: see `Avx512`.
    unsafe { dup(_mm512_maskz_loadu_ps(mask, t)) }
}

/// `[c0 s0 c1 s1 …]` → `([c0 c0 c1 c1 …], [s0 s0 s1 s1 …])`.
#[inline(always)]
fn dup(v: __m512) -> (__m512, __m512) {
    // SAFETY: register-only AVX-512F operations: see `Avx512`.
    unsafe { (_mm512_moveldup_ps(v), _mm512_movehdup_ps(v)) }
}

/// Half layout: rotates the 16 pairs `(a[i], b[i])` at `a`, `b` by cosines `c`, sines `s`.
///
/// # Safety
///
/// `a .. a + 16` and `b .. b + 16` must be valid for reads and writes.
#[inline(always)]
unsafe fn half16<const INV: bool>(a: *mut f32, b: *mut f32, c: __m512, s: __m512) {
    // SAFETY: the caller guarantees 16 valid floats at `a` and at `b`; AVX-512F/FMA: see
    // `Avx512`.
    unsafe {
        let (x2, y2) = rotate_half::<INV>(_mm512_loadu_ps(a), _mm512_loadu_ps(b), c, s);
        _mm512_storeu_ps(a, x2);
        _mm512_storeu_ps(b, y2);
    }
}

/// [`half16`] for the pairs in the lanes of `mask`.
///
/// # Safety
///
/// The floats `a + i` and `b + i` for the lanes `i` of `mask` must be valid for reads and
/// writes.
#[inline(always)]
unsafe fn half_masked<const INV: bool>(
    a: *mut f32,
    b: *mut f32,
    mask: __mmask16,
    c: __m512,
    s: __m512,
) {
    // SAFETY: the caller guarantees the masked lanes at `a` and `b` are valid; the others
    // are not accessed. AVX-512F/FMA: see `Avx512`.
    unsafe {
        let x = _mm512_maskz_loadu_ps(mask, a);
        let y = _mm512_maskz_loadu_ps(mask, b);
        let (x2, y2) = rotate_half::<INV>(x, y, c, s);
        _mm512_mask_storeu_ps(a, mask, x2);
        _mm512_mask_storeu_ps(b, mask, y2);
    }
}

/// The half-layout rotation of `(x, y)`, lane for lane `Avx2`'s `half8`.
#[inline(always)]
fn rotate_half<const INV: bool>(x: __m512, y: __m512, c: __m512, s: __m512) -> (__m512, __m512) {
    // SAFETY: register-only AVX-512F/FMA operations: see `Avx512`.
    unsafe {
        let ys = _mm512_mul_ps(y, s);
        let xs = _mm512_mul_ps(x, s);
        if INV {
            (_mm512_fmadd_ps(x, c, ys), _mm512_fmsub_ps(y, c, xs))
        } else {
            (_mm512_fmsub_ps(x, c, ys), _mm512_fmadd_ps(y, c, xs))
        }
    }
}

/// De-interleaves 16 `[cos, sin]` entries into `([c0 … c15], [s0 … s15])`.
///
/// # Safety
///
/// `t .. t + 32` must be valid for reads.
#[inline(always)]
unsafe fn split16(t: *const f32) -> (__m512, __m512) {
    // SAFETY: the caller guarantees 32 readable floats; AVX-512F: see `Avx512`.
    unsafe { split(_mm512_loadu_ps(t), _mm512_loadu_ps(t.add(16))) }
}

/// [`split16`] for the first `n < 16` entries (zero elsewhere).
///
/// # Safety
///
/// `t .. t + 2n` must be valid for reads.
#[inline(always)]
unsafe fn split_first(t: *const f32, n: usize) -> (__m512, __m512) {
    // SAFETY: the caller guarantees `2n` readable floats: lanes `0 .. min(2n, 16)` at `t`
    // and, when `2n > 16`, lanes `0 .. 2n − 16` at `t + 16 < t + 2n`. AVX-512F: see `Avx512`.
    unsafe {
        let lo = _mm512_maskz_loadu_ps(lanes(2 * n), t);
        let hi = if 2 * n > 16 {
            _mm512_maskz_loadu_ps(lanes(2 * n - 16), t.add(16))
        } else {
            _mm512_setzero_ps()
        };
        split(lo, hi)
    }
}

/// `([c0 s0 … c7 s7], [c8 s8 … c15 s15])` → `([c0 … c15], [s0 … s15])`, one `vpermt2ps` each.
#[cfg(not(miri))]
#[inline(always)]
fn split(lo: __m512, hi: __m512) -> (__m512, __m512) {
    use core::arch::x86_64::{_mm512_permutex2var_ps, _mm512_setr_epi32};
    // SAFETY: register-only AVX-512F operations: see `Avx512`.
    unsafe {
        let even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        let odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
        (
            _mm512_permutex2var_ps(lo, even, hi),
            _mm512_permutex2var_ps(lo, odd, hi),
        )
    }
}

/// [`split`] under Miri, which does not implement `vpermt2ps`: the same lanes moved by three
/// shuffles it does implement (registers only; every memory access is the same as natively).
#[cfg(miri)]
#[inline(always)]
fn split(lo: __m512, hi: __m512) -> (__m512, __m512) {
    use core::arch::x86_64::{
        _mm512_castpd_ps, _mm512_castps_pd, _mm512_permutex_pd, _mm512_shuffle_f64x2,
        _mm512_shuffle_ps,
    };
    // `[v0 v1 v8 v9 | v2 v3 v10 v11 | v4 v5 v12 v13 | v6 v7 v14 v15]` → `[v0 … v15]`.
    fn fix(v: __m512) -> __m512 {
        // SAFETY: register-only AVX-512F operations: see `Avx512`.
        unsafe {
            let pairs = _mm512_permutex_pd::<0b11_01_10_00>(_mm512_castps_pd(v));
            _mm512_castpd_ps(_mm512_shuffle_f64x2::<0b11_01_10_00>(pairs, pairs))
        }
    }
    // SAFETY: register-only AVX-512F operations: see `Avx512`.
    unsafe {
        (
            fix(_mm512_shuffle_ps::<0b10_00_10_00>(lo, hi)),
            fix(_mm512_shuffle_ps::<0b11_01_11_01>(lo, hi)),
        )
    }
}

/// `[cos, sin]` of `α + β` for 8 interleaved entries `a` (`α`) and `b` (`β`), exactly as
/// scalar computes it (`cα·cβ − sα·sβ`, `sα·cβ + cα·sβ`, no fused product).
#[inline(always)]
fn sum8(a: __m512, b: __m512) -> __m512 {
    // SAFETY: register-only AVX-512F/FMA operations: see `Avx512`.
    unsafe {
        let (cb, sb) = dup(b);
        let p = _mm512_mul_ps(a, cb);
        let q = _mm512_mul_ps(_mm512_permute_ps::<0b10_11_00_01>(a), sb);
        // `Avx2`'s `addsub(p, q)`: `p·1` is exact, so each lane is `rnd(p ∓ q)`.
        _mm512_fmaddsub_ps(p, _mm512_set1_ps(1.0), q)
    }
}

/// `(cos, sin)` of `α + β` for de-interleaved entries, exactly as scalar computes it.
#[inline(always)]
fn sum_split((ca, sa): (__m512, __m512), (cb, sb): (__m512, __m512)) -> (__m512, __m512) {
    // SAFETY: register-only AVX-512F operations: see `Avx512`.
    unsafe {
        (
            _mm512_sub_ps(_mm512_mul_ps(ca, cb), _mm512_mul_ps(sa, sb)),
            _mm512_add_ps(_mm512_mul_ps(sa, cb), _mm512_mul_ps(ca, sb)),
        )
    }
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
    while k + 8 <= n {
        // SAFETY: entries `k .. k + 8 ≤ n` of `angles` are 16 floats from `t + 2k`.
        let (cc, ss) = unsafe { dup8(t.add(2 * k)) };
        let offset = start + 2 * k;
        let mut head = 0;
        // Two heads per step.
        while head + head_dim <= last {
            // SAFETY: floats `offset .. offset + 16 ≤ 2(first + n) ≤ head_dim` of the heads at
            // `head` and `head + head_dim ≤ last`, which lie within `x` (`last + head_dim = len`).
            unsafe {
                il8::<INV>(base.add(head + offset), cc, ss);
                il8::<INV>(base.add(head + head_dim + offset), cc, ss);
            }
            head += 2 * head_dim;
        }
        if head <= last {
            // SAFETY: as above, for the head at `head ≤ last`.
            unsafe { il8::<INV>(base.add(head + offset), cc, ss) };
        }
        k += 8;
    }
    if k < n {
        // The last `n − k < 8` entries: `2(n − k)` floats.
        let mask = lanes(2 * (n - k));
        // SAFETY: entries `k .. n` are the floats `t + 2k .. t + 2n`, the lanes of `mask`.
        let (cc, ss) = unsafe { dup_masked(t.add(2 * k), mask) };
        let offset = start + 2 * k;
        let mut head = 0;
        while head + head_dim <= len {
            // SAFETY: the lanes of `mask` are floats `offset .. 2(first + n) ≤ head_dim` of the
            // head at `head`, within `x`.
            unsafe { il_masked::<INV>(base.add(head + offset), mask, cc, ss) };
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
    while k + 16 <= n {
        // SAFETY: entries `k .. k + 16 ≤ n`: 32 floats from `t + 2k`.
        let (c, s) = unsafe { split16(t.add(2 * k)) };
        let mut a = first + k;
        while a <= last + first + k {
            // SAFETY: `a` is `head + first + k` for a head at `head ≤ last`:
            // `a + 16 ≤ head + first + n ≤ head + half` and `a + half + 16 ≤ head + head_dim ≤ len`.
            unsafe { half16::<INV>(base.add(a), base.add(a + half), c, s) };
            a += head_dim;
        }
        k += 16;
    }
    if k < n {
        // SAFETY: entries `k .. n`, `n − k < 16` of them: floats `t + 2k .. t + 2n`.
        let (c, s) = unsafe { split_first(t.add(2 * k), n - k) };
        let mask = lanes(n - k);
        let mut a = first + k;
        while a <= last + first + k {
            // SAFETY: the lanes of `mask` are floats `a .. a + n − k ≤ head + first + n ≤
            // head + half` and the same `+ half ≤ head + head_dim ≤ len`.
            unsafe { half_masked::<INV>(base.add(a), base.add(a + half), mask, c, s) };
            a += head_dim;
        }
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
    while k + 8 <= n {
        // SAFETY: floats `2k .. 2k + 16 ≤ 2n` of the head and of both tables.
        unsafe {
            let c = sum8(
                _mm512_loadu_ps(ta.add(2 * k)),
                _mm512_loadu_ps(tb.add(2 * k)),
            );
            let (cc, ss) = dup(c);
            il8::<INV>(p.add(2 * k), cc, ss);
        }
        k += 8;
    }
    if k < n {
        let mask = lanes(2 * (n - k));
        // SAFETY: the lanes of `mask` are floats `2k .. 2n` of the head and of both tables.
        unsafe {
            let a = _mm512_maskz_loadu_ps(mask, ta.add(2 * k));
            let b = _mm512_maskz_loadu_ps(mask, tb.add(2 * k));
            let (cc, ss) = dup(sum8(a, b));
            il_masked::<INV>(p.add(2 * k), mask, cc, ss);
        }
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
    while k + 16 <= n {
        // SAFETY: pairs `k .. k + 16 ≤ n`: floats `k .. k + 16` and `n + k .. n + k + 16` of
        // the head, `2k .. 2k + 32 ≤ 2n` of both tables.
        unsafe {
            let (c, s) = sum_split(split16(ta.add(2 * k)), split16(tb.add(2 * k)));
            half16::<INV>(p.add(k), p.add(n + k), c, s);
        }
        k += 16;
    }
    if k < n {
        // SAFETY: pairs `k .. n`, `n − k < 16` of them: the lanes of the mask at `p + k` and
        // `p + n + k`, floats `2k .. 2n` of both tables.
        unsafe {
            let (c, s) = sum_split(
                split_first(ta.add(2 * k), n - k),
                split_first(tb.add(2 * k), n - k),
            );
            half_masked::<INV>(p.add(k), p.add(n + k), lanes(n - k), c, s);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Axial grids: both sections of every token in one pass, one loop for both layouts.
// ---------------------------------------------------------------------------------------

/// The `(c, s)` vectors that rotate one group of pairs (see [`SectionLayout`]).
type Group = (__m512, __m512);

/// How a layout's sections map onto vectors: a section is rotated in groups of `ENTRIES`
/// pairs, each group by one `(c, s)` vector pair that [`load`](Self::load) makes from its
/// `ENTRIES` `[cos, sin]` entries. Implemented by [`IlLayout`] and [`HalfLayout`].
trait SectionLayout {
    /// Pairs (and table entries) a group.
    const ENTRIES: usize;

    /// Whether [`token_sections`] rotates two heads a step (else one).
    const TWO_HEADS: bool;

    /// Loads the `ENTRIES` entries of one group as the vectors [`rotate`](Self::rotate)
    /// takes.
    ///
    /// # Safety
    ///
    /// `t .. t + 2·ENTRIES` must be valid for reads.
    unsafe fn load(t: *const f32) -> Group;

    /// Rotates pairs `pair .. pair + ENTRIES` of the head at `head` (`half` pairs, `2·half`
    /// floats) by a group's vectors from [`load`](Self::load), reversed if `INV`: the
    /// operations [`rotate_pairs`](Kernel::rotate_pairs) performs on these pairs.
    ///
    /// # Safety
    ///
    /// `pair + ENTRIES ≤ half`, and `head .. head + 2·half` must be valid for reads and
    /// writes.
    unsafe fn rotate<const INV: bool>(head: *mut f32, pair: usize, half: usize, group: Group);

    /// Rotates pairs `first .. first + angles.len()` of every head in `x` by `angles`
    /// ([`section_il`] or [`section_half`]). Requires `first + angles.len() ≤ head_dim / 2`.
    fn section<const INV: bool>(x: &mut [f32], head_dim: usize, first: usize, angles: &[[f32; 2]]);
}

/// Interleaved pairs `(v[2k], v[2k + 1])`: 8 a group, entries duplicated by [`dup8`],
/// rotated by [`il8`].
struct IlLayout;

impl SectionLayout for IlLayout {
    const ENTRIES: usize = 8;
    const TWO_HEADS: bool = true;

    #[inline(always)]
    unsafe fn load(t: *const f32) -> Group {
        // SAFETY: the caller guarantees the 16 floats `dup8` reads.
        unsafe { dup8(t) }
    }

    #[inline(always)]
    unsafe fn rotate<const INV: bool>(head: *mut f32, pair: usize, _: usize, (c, s): Group) {
        // SAFETY: pairs `pair .. pair + 8 ≤ half` are the floats `2·pair .. 2·pair + 16 ≤
        // 2·half` of the head, which the caller guarantees valid.
        unsafe { il8::<INV>(head.add(2 * pair), c, s) }
    }

    #[inline(always)]
    fn section<const INV: bool>(x: &mut [f32], head_dim: usize, first: usize, angles: &[[f32; 2]]) {
        section_il::<INV>(x, head_dim, first, angles);
    }
}

/// Half-layout pairs `(v[k], v[k + d/2])`: 16 a group, entries de-interleaved by
/// [`split16`], rotated by [`half16`].
struct HalfLayout;

impl SectionLayout for HalfLayout {
    const ENTRIES: usize = 16;
    // Two heads a step keep eight row/column address streams live (interleaved: four), and
    // measured about 15% slower than one on an 8×8 grid at d = 64, 2 heads.
    const TWO_HEADS: bool = false;

    #[inline(always)]
    unsafe fn load(t: *const f32) -> Group {
        // SAFETY: the caller guarantees the 32 floats `split16` reads.
        unsafe { split16(t) }
    }

    #[inline(always)]
    unsafe fn rotate<const INV: bool>(head: *mut f32, pair: usize, half: usize, (c, s): Group) {
        // SAFETY: pairs `pair .. pair + 16 ≤ half` are the floats `pair .. pair + 16 ≤ half`
        // and `half + pair .. half + pair + 16 ≤ 2·half` of the head, which the caller
        // guarantees valid.
        unsafe { half16::<INV>(head.add(pair), head.add(half + pair), c, s) }
    }

    #[inline(always)]
    fn section<const INV: bool>(x: &mut [f32], head_dim: usize, first: usize, angles: &[[f32; 2]]) {
        section_half::<INV>(x, head_dim, first, angles);
    }
}

/// One section's entries as [`SectionLayout::load`] makes them: `C` groups, group `j` for
/// pairs `ENTRIES·j ..` of the section.
type Groups<const C: usize> = [Group; C];

/// Loads `C` groups of layout `L` from consecutive `[cos, sin]` entries.
///
/// # Safety
///
/// `t .. t + 2C·L::ENTRIES` must be valid for reads.
#[inline(always)]
unsafe fn load_groups<L: SectionLayout, const C: usize>(t: *const f32) -> Groups<C> {
    // SAFETY: AVX-512F: see `Avx512`.
    let zero = unsafe { _mm512_setzero_ps() };
    let mut groups = [(zero, zero); C];
    for (j, group) in groups.iter_mut().enumerate() {
        // SAFETY: group `j < C` is the floats `2·ENTRIES·j .. 2·ENTRIES·(j + 1) ≤ 2C·ENTRIES`
        // from `t`, which the caller guarantees readable.
        *group = unsafe { L::load(t.add(2 * L::ENTRIES * j)) };
    }
    groups
}

/// Rotates group `j` of the row section (pairs `row_pair ..`, by `rows`) and of the column
/// section (pairs `col_pair ..`, by `cols`) of the head at `head` (`2·half` floats), for
/// every `j < C`.
///
/// # Safety
///
/// `head .. head + 2·half` must be valid for reads and writes, and `row_pair + C·L::ENTRIES
/// ≤ half`, `col_pair + C·L::ENTRIES ≤ half`.
#[inline(always)]
unsafe fn head_sections<L: SectionLayout, const INV: bool, const C: usize>(
    head: *mut f32,
    half: usize,
    (row_pair, rows): (usize, &Groups<C>),
    (col_pair, cols): (usize, &Groups<C>),
) {
    for j in 0..C {
        // SAFETY: both groups' pairs end at `pair + ENTRIES·(j + 1) ≤ pair + C·ENTRIES ≤
        // half`, in the head the caller guarantees valid.
        unsafe {
            L::rotate::<INV>(head, row_pair + L::ENTRIES * j, half, rows[j]);
            L::rotate::<INV>(head, col_pair + L::ENTRIES * j, half, cols[j]);
        }
    }
}

/// [`head_sections`] for every whole head in `x[token .. end]`, two heads a step if
/// [`SectionLayout::TWO_HEADS`]; a partial head at the end (not produced by the public API)
/// is left alone, as [`section_il`] and [`section_half`] leave it.
///
/// # Safety
///
/// `x + token .. x + end` must be valid for reads and writes (`token ≤ end`),
/// `0 < head_dim ≤ isize::MAX`, and `row_pair + C·L::ENTRIES ≤ head_dim / 2`,
/// `col_pair + C·L::ENTRIES ≤ head_dim / 2`.
#[inline(always)]
unsafe fn token_sections<L: SectionLayout, const INV: bool, const C: usize>(
    x: *mut f32,
    (token, end): (usize, usize),
    head_dim: usize,
    rows: (usize, &Groups<C>),
    cols: (usize, &Groups<C>),
) {
    let half = head_dim / 2;
    let mut head = token;
    if L::TWO_HEADS {
        while 2 * head_dim <= end - head {
            // SAFETY: `head + 2·head_dim ≤ end`: the heads at `head` and `head + head_dim`,
            // each `head_dim ≥ 2·half` floats, lie in the token; the sections fit (caller).
            unsafe {
                head_sections::<L, INV, C>(x.add(head), half, rows, cols);
                head_sections::<L, INV, C>(x.add(head + head_dim), half, rows, cols);
            }
            head += 2 * head_dim;
        }
        if head_dim <= end - head {
            // SAFETY: as above, for the head at `head` (`head + head_dim ≤ end`).
            unsafe { head_sections::<L, INV, C>(x.add(head), half, rows, cols) };
        }
    } else {
        while head_dim <= end - head {
            // SAFETY: as above, for the head at `head` (`head + head_dim ≤ end`).
            unsafe { head_sections::<L, INV, C>(x.add(head), half, rows, cols) };
            head += head_dim;
        }
    }
}

/// Whether a section of `width` pairs from `first` fits in a head of `head_dim` values.
#[inline(always)]
fn fits(first: usize, width: usize, head_dim: usize) -> bool {
    first
        .checked_add(width)
        .is_some_and(|end| end <= head_dim / 2)
}

/// [`Kernel::rotate_axial_block`] in one pass, `C` groups of layout `L` a section: rotates
/// the row section (`width = C·L::ENTRIES` pairs from `row_pair`, entries `row`, shared) and
/// the column section (`width` pairs from `col_pair`, token `t` by entries `width·t ..` of
/// `cols`) of every head of a block of whole tokens. The row entries stay in registers for
/// the block, a token's column entries for its heads. Tokens past the last whole chunk of
/// `cols` get the row section only. Each pair gets the operations of `rotate_pairs`, so
/// the results are the same.
///
/// Returns `false`, touching nothing, unless `row.len() = width`, both sections fit in a
/// head, `0 < head_dim ≤ x.len()` and `token_len` is a non-zero multiple of `head_dim`; the
/// caller then rotates the sections one by one (which does nothing if `head_dim > x.len()`).
#[inline(always)]
fn axial_block<L: SectionLayout, const INV: bool, const C: usize>(
    x: &mut [f32],
    token_len: usize,
    head_dim: usize,
    (row_pair, row): (usize, &[[f32; 2]]),
    (col_pair, cols): (usize, &[[f32; 2]]),
) -> bool {
    let width = C * L::ENTRIES;
    if head_dim == 0
        || head_dim > x.len()
        || token_len == 0
        || !token_len.is_multiple_of(head_dim)
        || row.len() != width
        || !fits(row_pair, width, head_dim)
        || !fits(col_pair, width, head_dim)
    {
        return false;
    }
    let len = x.len();
    let base = x.as_mut_ptr();
    let tc = cols.as_ptr().cast::<f32>();
    // SAFETY: `row` has `width = C·ENTRIES` entries, `2C·ENTRIES` floats.
    let row_groups = (row_pair, &unsafe {
        load_groups::<L, C>(row.as_ptr().cast())
    });
    // `token ≤ len` and `entry ≤ cols.len()` throughout.
    let mut token = 0;
    let mut entry = 0;
    while token_len <= len - token && width <= cols.len() - entry {
        // SAFETY: entries `entry .. entry + width ≤ cols.len()`: `2C·ENTRIES` floats from
        // `tc + 2·entry`.
        let col = (col_pair, &unsafe { load_groups::<L, C>(tc.add(2 * entry)) });
        let end = token + token_len;
        // SAFETY: the token's floats `token .. end ≤ len` lie in `x`; `0 < head_dim ≤ len ≤
        // isize::MAX` and both sections fit in a head (checked above).
        unsafe { token_sections::<L, INV, C>(base, (token, end), head_dim, row_groups, col) };
        token = end;
        entry += width;
    }
    if let Some(rest) = x.get_mut(token..) {
        L::section::<INV>(rest, head_dim, row_pair, row);
    }
    true
}

/// The most column-entry vectors [`axial_grid`] keeps on the stack (4 KiB), as
/// [`SectionLayout::load`] makes them: 4 entries a vector interleaved (duplicated), 8 in the
/// half layout (de-interleaved).
const GRID_DUP_VECTORS: usize = 64;

/// [`Kernel::rotate_axial_grid`], `C` groups of layout `L` a section: rotates each grid row
/// as [`axial_block`] rotates a block, but with every column's entries loaded
/// ([`SectionLayout::load`]: duplicated or de-interleaved) once per call into a stack buffer
/// (the same for all grid rows) instead of once per token: the token loop reads its column
/// vectors instead of shuffling them, which leaves the shuffle port to the pairs. Each pair
/// gets the same operations on the same operands as in `axial_block`, so the results are
/// the same.
///
/// Returns `false`, touching nothing, unless `0 < head_dim ≤ x.len()`, `token_len` and
/// `grid_cols` are non-zero, `grid_cols·token_len` does not overflow, the columns'
/// `2C·grid_cols` vectors fit in `GRID_DUP_VECTORS` and their entries in `cols`, and both
/// sections fit in a head; the caller then runs its block loop.
#[inline(always)]
fn axial_grid<L: SectionLayout, const INV: bool, const C: usize>(
    x: &mut [f32],
    token_len: usize,
    head_dim: usize,
    (row_pair, rows): (usize, &[[f32; 2]]),
    (col_pair, cols): (usize, &[[f32; 2]]),
    grid_cols: usize,
) -> bool {
    let width = C * L::ENTRIES;
    let Some(row_len) = grid_cols.checked_mul(token_len) else {
        return false;
    };
    // `grid_cols·width` is computed only once `grid_cols ≤ GRID_DUP_VECTORS / 2C`.
    if head_dim == 0
        || head_dim > x.len()
        || row_len == 0
        || grid_cols > GRID_DUP_VECTORS / (2 * C)
        || grid_cols * width > cols.len()
        || !fits(row_pair, width, head_dim)
        || !fits(col_pair, width, head_dim)
    {
        return false;
    }
    // The column entries, `C` groups a column, in grid-column order: group `i = t·C + j`
    // (column `t`, group `j` of its chunk) is entries `ENTRIES·i ..` of `cols`. Only the
    // first `grid_cols·C ≤ GRID_DUP_VECTORS / 2` are written, and only those are read.
    let mut buffer = [MaybeUninit::<Group>::uninit(); GRID_DUP_VECTORS / 2];
    let tc = cols.as_ptr().cast::<f32>();
    for (i, group) in buffer.iter_mut().take(grid_cols * C).enumerate() {
        // SAFETY: `i < grid_cols·C`, so entries `ENTRIES·i .. ENTRIES·(i + 1) ≤
        // grid_cols·width ≤ cols.len()` are the floats `2·ENTRIES·i ..` from `tc`.
        group.write(unsafe { L::load(tc.add(2 * L::ENTRIES * i)) });
    }
    let buffer = buffer.as_ptr().cast::<Group>();

    let len = x.len();
    let base = x.as_mut_ptr();
    let tr = rows.as_ptr().cast::<f32>();
    // Grid rows start at `start ≤ len` and take entries `entry ≤ rows.len()` of `rows`.
    let mut start = 0;
    let mut entry = 0;
    while row_len <= len - start && width <= rows.len() - entry {
        // SAFETY: entries `entry .. entry + width ≤ rows.len()`: `2C·ENTRIES` floats from
        // `tr + 2·entry`.
        let row = (row_pair, &unsafe { load_groups::<L, C>(tr.add(2 * entry)) });
        let row_end = start + row_len;
        let mut token = start;
        let mut column = buffer;
        // `grid_cols` tokens: `token = start + t·token_len`, `column = buffer + C·t`, `t <
        // grid_cols`.
        while token < row_end {
            // SAFETY: groups `C·t .. C·(t + 1) ≤ C·grid_cols` of the buffer, written above.
            let col = (col_pair, &unsafe { column.cast::<Groups<C>>().read() });
            let end = token + token_len;
            // SAFETY: the token's floats `token .. end ≤ row_end ≤ len` lie in `x`; `0 <
            // head_dim ≤ len ≤ isize::MAX` and both sections fit in a head (checked above).
            unsafe { token_sections::<L, INV, C>(base, (token, end), head_dim, row, col) };
            token = end;
            // SAFETY: at most `grid_cols` steps of `C` from `buffer`: within (or one past)
            // its `GRID_DUP_VECTORS / 2 ≥ C·grid_cols` groups.
            column = unsafe { column.add(C) };
        }
        start = row_end;
        entry += width;
    }
    true
}

/// Runs `$pass::<L, INV, C>($args)` ([`axial_block`] or [`axial_grid`]) for the sections a
/// one-pass loop takes — interleaved 8, 16 or 32 pairs (head dims 32, 64, 128), half 16 or
/// 32 (head dims 64, 128), where the entries of both sections fit in registers — and
/// `false` for any other `(layout, dir, width)`.
macro_rules! one_pass {
    ($layout:expr, $dir:expr, $width:expr, $pass:ident($($arg:expr),* $(,)?)) => {{
        use {Direction::*, Layout::*};
        match ($layout, $dir, $width) {
            (Interleaved, Forward, 8) => $pass::<IlLayout, false, 1>($($arg),*),
            (Interleaved, Inverse, 8) => $pass::<IlLayout, true, 1>($($arg),*),
            (Interleaved, Forward, 16) => $pass::<IlLayout, false, 2>($($arg),*),
            (Interleaved, Inverse, 16) => $pass::<IlLayout, true, 2>($($arg),*),
            (Interleaved, Forward, 32) => $pass::<IlLayout, false, 4>($($arg),*),
            (Interleaved, Inverse, 32) => $pass::<IlLayout, true, 4>($($arg),*),
            (Half, Forward, 16) => $pass::<HalfLayout, false, 1>($($arg),*),
            (Half, Inverse, 16) => $pass::<HalfLayout, true, 1>($($arg),*),
            (Half, Forward, 32) => $pass::<HalfLayout, false, 2>($($arg),*),
            (Half, Inverse, 32) => $pass::<HalfLayout, true, 2>($($arg),*),
            _ => false,
        }
    }};
}

impl Kernel for Avx512 {
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
        row: (usize, &[[f32; 2]]),
        cols: (usize, &[[f32; 2]]),
        width: usize,
        dir: Direction,
    ) {
        // One pass for the sections that fill whole vectors and whose entries fit in
        // registers (no check that `x` holds whole tokens: the loop stops at the last one);
        // otherwise the provided implementation: the row section, then each token's columns.
        if !one_pass!(
            layout,
            dir,
            width,
            axial_block(x, token_len, head_dim, row, cols)
        ) {
            axial_block_by_sections::<Self>(x, token_len, head_dim, layout, row, cols, width, dir);
        }
    }

    #[inline(always)]
    fn rotate_axial_grid(
        x: &mut [f32],
        token_len: usize,
        head_dim: usize,
        layout: Layout,
        rows: (usize, &[[f32; 2]]),
        cols: (usize, &[[f32; 2]]),
        width: usize,
        grid_cols: usize,
        dir: Direction,
    ) -> bool {
        // The one-pass sections whose column entries fit in `GRID_DUP_VECTORS`; anything
        // else takes the block loop.
        one_pass!(
            layout,
            dir,
            width,
            axial_grid(x, token_len, head_dim, rows, cols, grid_cols)
        )
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
