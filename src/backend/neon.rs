//! The NEON backend (aarch64), through `core::arch` intrinsics.
//!
//! Interleaved pairs: each 4-lane step is one `vrev64q_f32` (swap within pairs), one
//! multiply by the sines (sign-alternated) and one `vfmaq_f32` with the cosines, both
//! duplicated per pair by `vtrn1q`/`vtrn2q` once per token and reused for all heads. Half
//! layout: the table is de-interleaved by `vld2q_f32`.
//!
//! # Difference from [`Backend::Scalar`](super::Backend::Scalar)
//!
//! Exactly that of the `avx2` backend, bit for bit: each output fuses its first product,
//! `a' = rnd(a·c − rnd(b·s))`, `b' = rnd(b·c + rnd(a·s))` (the inverse flips the sign of
//! `s`), so per output
//!
//! `|neon − scalar| ≤ 3·2⁻²⁴·(|a·c| + |b·s|) + 3·2⁻¹⁵⁰ ≤ 2⁻²²·(|a| + |b|) + 2⁻¹⁴⁸`.
//!
//! RoPE-Mixed angle sums are formed without FMA, bit for bit as in scalar. NaN propagates as
//! in scalar; infinities give the same infinities and NaNs as scalar unless a result lies
//! within an ulp of overflow.

use core::arch::aarch64::{
    float32x2_t, float32x4_t, vaddq_f32, vfma_f32, vfmaq_f32, vld1_dup_f32, vld1_f32, vld1q_f32,
    vld2q_f32, vmul_f32, vmulq_f32, vnegq_f32, vrev64_f32, vrev64q_f32, vst1_f32, vst1_lane_f32,
    vst1q_f32, vsubq_f32, vtrn1_f32, vtrn1q_f32, vtrn2_f32, vtrn2q_f32,
};

use super::{AngleSource, Job, Kernel, drive};
use crate::config::{Direction, Layout};

/// The kernel type. Private to this module and never constructed: its methods are only
/// instantiated by `drive::<Neon>` inside [`run_neon`], which runs only on CPUs with NEON.
/// Every `unsafe` block below relies on that.
struct Neon;

/// Whether this CPU has NEON (always, on the usual aarch64 targets).
#[inline]
pub(crate) fn is_available() -> bool {
    #[cfg(target_feature = "neon")]
    {
        true
    }
    #[cfg(all(not(target_feature = "neon"), feature = "std"))]
    {
        std::arch::is_aarch64_feature_detected!("neon")
    }
    #[cfg(all(not(target_feature = "neon"), not(feature = "std")))]
    {
        false
    }
}

pub(crate) fn run<A: AngleSource>(job: Job<'_, A>) {
    if is_available() {
        // SAFETY: the CPU supports NEON, checked just above.
        unsafe { run_neon(job) }
    } else {
        // Unreachable through the public API; keeps this safe function sound everywhere.
        super::scalar::run(job);
    }
}

/// The whole driver loop, compiled with NEON so every kernel call inlines into it.
///
/// # Safety
///
/// The CPU must support NEON.
#[target_feature(enable = "neon")]
unsafe fn run_neon<A: AngleSource>(job: Job<'_, A>) {
    drive::<Neon, A>(job);
}

/// Sign pattern applied to the duplicated sines: forward `[−1, 1, −1, 1]`, inverse negated.
const FORWARD_SIGNS: [f32; 4] = [-1.0, 1.0, -1.0, 1.0];
const INVERSE_SIGNS: [f32; 4] = [1.0, -1.0, 1.0, -1.0];

/// Interleaved: rotates the 2 pairs at `p`; `ss` are the sines already sign-alternated.
///
/// # Safety
///
/// `p .. p + 4` must be valid for reads and writes.
#[inline(always)]
unsafe fn il2(p: *mut f32, cc: float32x4_t, ss: float32x4_t) {
    // SAFETY: the caller guarantees 4 valid floats at `p`; NEON: see `Neon`.
    unsafe {
        let x = vld1q_f32(p);
        let out = vfmaq_f32(vmulq_f32(vrev64q_f32(x), ss), x, cc);
        vst1q_f32(p, out);
    }
}

/// Interleaved: rotates the pair at `p`.
///
/// # Safety
///
/// `p .. p + 2` must be valid for reads and writes.
#[inline(always)]
unsafe fn il1(p: *mut f32, cc: float32x2_t, ss: float32x2_t) {
    // SAFETY: the caller guarantees 2 valid floats at `p`; NEON: see `Neon`.
    unsafe {
        let x = vld1_f32(p);
        let out = vfma_f32(vmul_f32(vrev64_f32(x), ss), x, cc);
        vst1_f32(p, out);
    }
}

/// Loads 2 `[cos, sin]` entries as `([c0 c0 c1 c1], [±s0 ∓s0 ±s1 ∓s1])`.
///
/// # Safety
///
/// `t .. t + 4` must be valid for reads.
#[inline(always)]
unsafe fn dup2(t: *const f32, signs: float32x4_t) -> (float32x4_t, float32x4_t) {
    // SAFETY: the caller guarantees 4 readable floats; NEON: see `Neon`.
    unsafe {
        let v = vld1q_f32(t);
        (vtrn1q_f32(v, v), vmulq_f32(vtrn2q_f32(v, v), signs))
    }
}

/// [`dup2`] for 1 entry.
///
/// # Safety
///
/// `t .. t + 2` must be valid for reads.
#[inline(always)]
unsafe fn dup1(t: *const f32, signs: float32x2_t) -> (float32x2_t, float32x2_t) {
    // SAFETY: the caller guarantees 2 readable floats; NEON: see `Neon`.
    unsafe {
        let v = vld1_f32(t);
        (vtrn1_f32(v, v), vmul_f32(vtrn2_f32(v, v), signs))
    }
}

/// Half layout: rotates the 4 pairs `(a[i], b[i])`: `a' = a·c + rnd(b·sb)`,
/// `b' = b·c + rnd(a·sa)`, where `(sb, sa)` is `(−s, s)` forward and `(s, −s)` inverse.
///
/// # Safety
///
/// `a .. a + 4` and `b .. b + 4` must be valid for reads and writes.
#[inline(always)]
unsafe fn half4(a: *mut f32, b: *mut f32, c: float32x4_t, sb: float32x4_t, sa: float32x4_t) {
    // SAFETY: the caller guarantees 4 valid floats at `a` and at `b`; NEON: see `Neon`.
    unsafe {
        let x = vld1q_f32(a);
        let y = vld1q_f32(b);
        vst1q_f32(a, vfmaq_f32(vmulq_f32(y, sb), x, c));
        vst1q_f32(b, vfmaq_f32(vmulq_f32(x, sa), y, c));
    }
}

/// [`half4`] for 1 pair (all lanes equal, lane 0 stored).
///
/// # Safety
///
/// `a` and `b` must be valid for reads and writes.
#[inline(always)]
unsafe fn half1(a: *mut f32, b: *mut f32, c: float32x2_t, sb: float32x2_t, sa: float32x2_t) {
    // SAFETY: the caller guarantees `a` and `b` are valid; NEON: see `Neon`.
    unsafe {
        let x = vld1_dup_f32(a);
        let y = vld1_dup_f32(b);
        vst1_lane_f32::<0>(a, vfma_f32(vmul_f32(y, sb), x, c));
        vst1_lane_f32::<0>(b, vfma_f32(vmul_f32(x, sa), y, c));
    }
}

/// `(c, sb, sa)` for [`half4`] from 4 entries at `t`.
///
/// # Safety
///
/// `t .. t + 8` must be valid for reads.
#[inline(always)]
unsafe fn split4<const INV: bool>(t: *const f32) -> (float32x4_t, float32x4_t, float32x4_t) {
    // SAFETY: the caller guarantees 8 readable floats; NEON: see `Neon`.
    unsafe {
        let v = vld2q_f32(t);
        half_signs::<INV>(v.0, v.1)
    }
}

#[inline(always)]
fn half_signs<const INV: bool>(
    c: float32x4_t,
    s: float32x4_t,
) -> (float32x4_t, float32x4_t, float32x4_t) {
    // SAFETY: NEON: see `Neon`.
    let ns = unsafe { vnegq_f32(s) };
    if INV { (c, s, ns) } else { (c, ns, s) }
}

/// `(c, sb, sa)` for [`half1`] from the entry at `t`.
///
/// # Safety
///
/// `t .. t + 2` must be valid for reads.
#[inline(always)]
unsafe fn split1<const INV: bool>(t: *const f32) -> (float32x2_t, float32x2_t, float32x2_t) {
    // SAFETY: the caller guarantees 2 readable floats; NEON: see `Neon`.
    unsafe {
        let c = vld1_dup_f32(t);
        let s = vld1_dup_f32(t.add(1));
        let ns = vmul_f32(s, vld1_dup_f32(&-1.0));
        if INV { (c, s, ns) } else { (c, ns, s) }
    }
}

/// `[cos, sin]` of `α + β`, the scalar formula, for the tails of RoPE-Mixed rows.
#[inline(always)]
fn sum1([ca, sa]: [f32; 2], [cb, sb]: [f32; 2]) -> [f32; 2] {
    [ca * cb - sa * sb, sa * cb + ca * sb]
}

/// Interleaved: rotates pairs `first .. first + angles.len()` of every head in `x`
/// (`first + angles.len() ≤ head_dim / 2`, established by the caller), heads inner.
#[inline(always)]
fn section_il<const INV: bool>(x: &mut [f32], head_dim: usize, first: usize, angles: &[[f32; 2]]) {
    let len = x.len();
    let base = x.as_mut_ptr();
    let t = angles.as_ptr().cast::<f32>();
    let n = angles.len();
    let start = 2 * first;
    let signs = if INV { INVERSE_SIGNS } else { FORWARD_SIGNS };
    // SAFETY: reads 4 floats from a local array; NEON: see `Neon`.
    let signs = unsafe { vld1q_f32(signs.as_ptr()) };
    // Accesses are at `head + start + i`, `i < 2n`, with `start + 2n ≤ head_dim` and
    // `head + head_dim ≤ len`.
    let mut k = 0;
    while k + 4 <= n {
        // SAFETY: entries `k .. k + 4 ≤ n`: 8 floats from `t + 2k`.
        let (c0, s0, c1, s1) = unsafe {
            let (c0, s0) = dup2(t.add(2 * k), signs);
            let (c1, s1) = dup2(t.add(2 * k + 4), signs);
            (c0, s0, c1, s1)
        };
        let mut head = 0;
        while head + head_dim <= len {
            let p = head + start + 2 * k;
            // SAFETY: floats `p .. p + 8 ≤ head + start + 2n ≤ head + head_dim ≤ len`.
            unsafe {
                il2(base.add(p), c0, s0);
                il2(base.add(p + 4), c1, s1);
            }
            head += head_dim;
        }
        k += 4;
    }
    if k + 2 <= n {
        // SAFETY: entries `k .. k + 2 ≤ n`.
        let (cc, ss) = unsafe { dup2(t.add(2 * k), signs) };
        let mut head = 0;
        while head + head_dim <= len {
            // SAFETY: 4 floats ending at or before `head + start + 2n`.
            unsafe { il2(base.add(head + start + 2 * k), cc, ss) };
            head += head_dim;
        }
        k += 2;
    }
    if k < n {
        // SAFETY: entry `k < n`; the low half of `signs` is the 2-lane pattern.
        let (cc, ss) = unsafe {
            dup1(
                t.add(2 * k),
                vld1_f32(if INV { INVERSE_SIGNS } else { FORWARD_SIGNS }.as_ptr()),
            )
        };
        let mut head = 0;
        while head + head_dim <= len {
            // SAFETY: 2 floats ending at `head + start + 2n`.
            unsafe { il1(base.add(head + start + 2 * k), cc, ss) };
            head += head_dim;
        }
    }
}

/// Half layout: rotates pairs `(v[k], v[k + d/2])`, `k = first .. first + angles.len()`, of
/// every head in `x` (`first + angles.len() ≤ head_dim / 2`), heads inner.
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
    // Accesses are at `head + first + i` and `head + half + first + i`, `first + i < half`.
    let mut k = 0;
    while k + 4 <= n {
        // SAFETY: entries `k .. k + 4 ≤ n`.
        let (c, sb, sa) = unsafe { split4::<INV>(t.add(2 * k)) };
        let mut head = 0;
        while head + head_dim <= len {
            let a = head + first + k;
            // SAFETY: `a + 4 ≤ head + half`, `a + half + 4 ≤ head + head_dim ≤ len`.
            unsafe { half4(base.add(a), base.add(a + half), c, sb, sa) };
            head += head_dim;
        }
        k += 4;
    }
    while k < n {
        // SAFETY: entry `k < n`.
        let (c, sb, sa) = unsafe { split1::<INV>(t.add(2 * k)) };
        let mut head = 0;
        while head + head_dim <= len {
            let a = head + first + k;
            // SAFETY: as above with 1 float.
            unsafe { half1(base.add(a), base.add(a + half), c, sb, sa) };
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
    let signs = if INV { INVERSE_SIGNS } else { FORWARD_SIGNS };
    // SAFETY: reads 4 floats from a local array; NEON: see `Neon`.
    let (signs, forward) =
        unsafe { (vld1q_f32(signs.as_ptr()), vld1q_f32(FORWARD_SIGNS.as_ptr())) };
    let mut k = 0;
    while k + 2 <= n {
        // SAFETY: floats `2k .. 2k + 4 ≤ 2n` of the head and of both tables.
        unsafe {
            let a = vld1q_f32(ta.add(2 * k));
            let (cb, sb) = dup2(tb.add(2 * k), forward);
            // Scalar's angle sum: separate products and one add (no FMA).
            let sum = vaddq_f32(vmulq_f32(a, cb), vmulq_f32(vrev64q_f32(a), sb));
            il2(
                p.add(2 * k),
                vtrn1q_f32(sum, sum),
                vmulq_f32(vtrn2q_f32(sum, sum), signs),
            );
        }
        k += 2;
    }
    if k < n {
        // SAFETY: float pair `2k, 2k + 1 < 2n` of the head and of both tables.
        unsafe {
            let entry = sum1(
                *ta.add(2 * k).cast::<[f32; 2]>(),
                *tb.add(2 * k).cast::<[f32; 2]>(),
            );
            let (cc, ss) = dup1(entry.as_ptr(), vld1_f32(signs_of::<INV>().as_ptr()));
            il1(p.add(2 * k), cc, ss);
        }
    }
}

#[inline(always)]
fn signs_of<const INV: bool>() -> [f32; 4] {
    if INV { INVERSE_SIGNS } else { FORWARD_SIGNS }
}

/// RoPE-Mixed, half layout: rotates all `n` pairs `(p[k], p[k + n])` by `a[k] + b[k]`.
///
/// # Safety
///
/// `p .. p + 2n` valid for reads and writes, `ta`, `tb` valid for `2n` reads.
#[inline(always)]
unsafe fn summed_half<const INV: bool>(p: *mut f32, ta: *const f32, tb: *const f32, n: usize) {
    let mut k = 0;
    while k + 4 <= n {
        // SAFETY: pairs `k .. k + 4 ≤ n`: floats `k .. k + 4` and `n + k .. n + k + 4` of the
        // head, `2k .. 2k + 8 ≤ 2n` of both tables.
        unsafe {
            let a = vld2q_f32(ta.add(2 * k));
            let b = vld2q_f32(tb.add(2 * k));
            let c = vsubq_f32(vmulq_f32(a.0, b.0), vmulq_f32(a.1, b.1));
            let s = vaddq_f32(vmulq_f32(a.1, b.0), vmulq_f32(a.0, b.1));
            let (c, sb, sa) = half_signs::<INV>(c, s);
            half4(p.add(k), p.add(n + k), c, sb, sa);
        }
        k += 4;
    }
    while k < n {
        // SAFETY: pair `k < n`, as above.
        unsafe {
            let entry = sum1(
                *ta.add(2 * k).cast::<[f32; 2]>(),
                *tb.add(2 * k).cast::<[f32; 2]>(),
            );
            let (c, sb, sa) = split1::<INV>(entry.as_ptr());
            half1(p.add(k), p.add(n + k), c, sb, sa);
        }
        k += 1;
    }
}

impl Kernel for Neon {
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
