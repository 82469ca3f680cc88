//! The SIMD algorithm, written once over a small vector trait ([`Vector`]); each arch file
//! (`avx2.rs`, `avx512.rs`, `neon.rs`) only provides loads, stores, the pair swap, a lane
//! select and the multiply-adds for its registers.
//!
//! A token's angles are expanded once into a [`Row`] in the form the loop consumes —
//! interleaved: cosines duplicated per pair and sines with the direction's alternating sign;
//! half layout: cosines and signed sines de-interleaved — and every head of the token is then
//! rotated in address order (heads outer, pairs inner), the row re-read from L1. Tokens at
//! explicit positions whose heads fit the register form read their angles from the table
//! entries straight into registers instead ([`Kernel::rotate_tokens_from_tables`]), and so do
//! grids, a line's shared vectors once per line and the last axis' once per token
//! ([`Kernel::rotate_grid_from_tables`]). Every
//! output is `fl(a·c ∓ fl(b·s))` with one fused product, so every backend built on this
//! module gives the same bits.
//!
//! The buffer's values are of any [`Element`] type: each vector converts them as it loads and
//! stores them ([`Stored`]), so an `f16`, `bf16` or integer buffer is read and written once,
//! with the `f32` loop's arithmetic in between. Interleaved `bf16` pairs are split into their
//! first and second elements as they load ([`Form::Split`]: a pair is one 32-bit word, so the
//! split is the conversion's own shift and a mask) and rotated with the half layout's
//! arithmetic and row — no swap within pairs — the same bits as the in-place form.
//!
//! Q15 tables rotate `i16`/`i8` with the scalar kernel's integer arithmetic, its pair loop in
//! an arch file's integer vectors ([`Q15Blocks`]).
//!
//! The loops over heads (grids, batches of tokens, grid lines, a token's row) are the code's
//! bulk, one per vector type, element type, head size and axis count. They are compiled out
//! of line ([`Forms`], with the arch file's instruction set) and called once per grid, batch,
//! line or row, so every driver that reaches them shares them; the rest of the driver (the
//! plan, the positions, the staging of rows) is inlined into the arch file's
//! `#[target_feature]` entry.

use core::mem::MaybeUninit;

use super::{Kernel, Pairing};
use crate::config::{Direction, Layout};
use crate::element::{Element, sealed::Format};

// The large loops below are `inline(always)` in optimised builds only: inlined at every call
// site of an unoptimised build, where nothing is shared or folded, they made one driver
// function per element type and angle source gigabytes of compiler IR (the fuzz targets'
// debug builds ran out of memory).

/// Interleaved pairs a [`Row`] holds (two floats each; [`row_pairs`] for either layout):
/// rotary dimensions up to 1 024 (longer heads take the kernel's [`Kernel::rotate_pairs`]
/// run by run), and a grid line's varying section prepared once for every line (a line's
/// tokens × the line axis' pairs, for sections that share a vector; those on whole vectors
/// read the table entries, [`Kernel::rotate_grid_from_tables`]). A row is 8 320 bytes; a
/// call keeps up to three on the stack (each 4 KiB of frame is a page probe per call: 1 024
/// pairs took `tiny` to 1.14× the time).
pub(super) const ROW_PAIRS: usize = 512;

/// Pairs a [`Row`] holds in `layout`'s form: [`ROW_PAIRS`] interleaved, twice as many in the
/// half layout, whose pairs take one float of each row array — rotary dimensions up to 2 048,
/// and lines of up to 1 024 pairs (Qwen2-VL M-RoPE's 24-token image lines of 24 pairs take
/// the line loop).
#[inline(always)]
const fn row_pairs(layout: Layout) -> usize {
    2 * ROW_PAIRS / floats_per_pair(layout)
}

/// A token's angles expanded for the vector loop: interleaved, `a[2k] = a[2k+1] = cos_k`,
/// `b[2k] = ∓sin_k`, `b[2k+1] = ±sin_k`; half layout, `a[k] = cos_k`, `b[k] = ±sin_k` (the
/// upper sign for [`Direction::Forward`]).
///
/// Only the floats staged by [`Kernel::prepare`] and a vector's worth
/// of padding after them, which a tail's whole-vector load reads, are initialised — a prefix
/// of each array, of length `floats`, that the loops check before reading: a row costs
/// nothing for the sizes a call does not use, and nothing is written twice (zeroing the row
/// before staging it was a tenth of a one-head decode step on an Intel Xeon, family 6,
/// model 207).
#[repr(C, align(64))]
pub(super) struct Row {
    a: [MaybeUninit<f32>; ROW_FLOATS],
    b: [MaybeUninit<f32>; ROW_FLOATS],
    /// Floats `.. floats` of each array are initialised.
    floats: usize,
}

/// Floats of padding after a row's staged floats: a vector's worth on every backend.
const PADDING: usize = 16;

/// Floats of each row array: two per pair, and the padding.
const ROW_FLOATS: usize = 2 * ROW_PAIRS + PADDING;

/// Floats a pair takes in each row array of `layout`'s form: interleaved, `[c, c]` and
/// `[∓s, ±s]`; half, one cosine and one sine.
#[inline(always)]
const fn floats_per_pair(layout: Layout) -> usize {
    match layout {
        Layout::Interleaved => 2,
        Layout::Half => 1,
    }
}

impl super::RowBuffer for Row {
    #[inline(always)]
    fn init(slot: &mut MaybeUninit<Self>) -> &mut Self {
        let p = slot.as_mut_ptr();
        // SAFETY: `p` points to the slot's `Row`; its `floats` field is written through a raw
        // pointer, without a reference to the uninitialised struct.
        unsafe { core::ptr::addr_of_mut!((*p).floats).write(0) };
        // SAFETY: `floats` is initialised just now, and the other fields are arrays of
        // `MaybeUninit<f32>`, for which any bytes, initialised or not, are a valid value.
        unsafe { slot.assume_init_mut() }
    }
}

impl Row {
    /// The pairs a loop reading the row in `layout` may take: their floats and the padding
    /// after them are initialised.
    #[inline(always)]
    fn pairs(&self, layout: Layout) -> usize {
        self.floats.saturating_sub(PADDING) / floats_per_pair(layout)
    }

    /// Zeroes each array's floats from the initialised prefix to `end`, extending it.
    #[inline(always)]
    fn zero_to(&mut self, end: usize) {
        let end = end.min(ROW_FLOATS);
        for array in [&mut self.a, &mut self.b] {
            for v in array.get_mut(self.floats..end).unwrap_or(&mut []) {
                v.write(0.0);
            }
        }
        self.floats = self.floats.max(end);
    }
}

/// `f32` vectors of one instruction set. Implementations are thin wrappers of intrinsics.
///
/// # Safety
///
/// Implementations may only be used where their instruction set is available (the arch
/// file's `run` checks it); every method's pointer arguments must be valid as stated.
pub(super) unsafe trait Vector: Copy {
    /// `f32` lanes.
    const LANES: usize;
    /// Whether the loops over angles read from memory take wide steps — eight vectors of
    /// interleaved pairs ([`interleaved_wide_step`]), four of each half-layout half
    /// ([`half_wide_step`]), each phase of the rotation over all of them before the next —
    /// rather than two vectors: with 4-lane vectors a narrow step leaves too little
    /// independent work to cover the load, swap, multiply and fused multiply-add latencies,
    /// in-order cores most of all (NEON). AVX2 and AVX-512 are throughput-bound at two.
    const WIDE_STEPS: bool = false;
    /// Most vectors of angles (a cosine and a sine register each) a head loop keeps in
    /// registers beside its working ones: [`REGISTER_VECTORS`] with 32 registers, fewer with
    /// AVX2's 16 — there [`grid_from_entries`] keeps a grid line's vectors of an 8-vector head
    /// in memory.
    const ANGLE_REGISTERS: usize = REGISTER_VECTORS;
    /// `LANES` floats from `p` (unaligned).
    unsafe fn load(p: *const f32) -> Self;
    /// Stores `LANES` floats at `p` (unaligned).
    unsafe fn store(self, p: *mut f32);
    /// The first `n < LANES` floats from `p`, the other lanes zero; nothing else is read.
    unsafe fn load_partial(p: *const f32, n: usize) -> Self;
    /// Stores the first `n < LANES` lanes at `p`; nothing else is written.
    unsafe fn store_partial(self, p: *mut f32, n: usize);
    /// `[x1, x0, x3, x2, …]`: the two elements of each pair exchanged.
    unsafe fn swap_pairs(self) -> Self;
    /// `[x0, x0, x2, x2, …]`.
    unsafe fn dup_even(self) -> Self;
    /// `[x1, x1, x3, x3, …]`.
    unsafe fn dup_odd(self) -> Self;
    /// De-interleaves `2·LANES` floats `[c0, s0, c1, s1, …]` into `([c…], [s…])`.
    unsafe fn deinterleave(lo: Self, hi: Self) -> (Self, Self);
    /// Lane-wise `self · other`, rounded.
    unsafe fn mul(self, other: Self) -> Self;
    /// Lane-wise bitwise exclusive or: with sign bits for `other`, the lanes negated exactly
    /// (as a product by −1, off the multiply pipes).
    unsafe fn xor(self, other: Self) -> Self;
    /// Lane-wise `self + other`, rounded.
    unsafe fn add(self, other: Self) -> Self;
    /// Lane-wise `self · b + c`, rounded once (fused).
    unsafe fn fmadd(self, b: Self, c: Self) -> Self;
    /// Lane-wise `self · b − c`, rounded once (fused).
    unsafe fn fmsub(self, b: Self, c: Self) -> Self;
    /// `[−1, 1, −1, 1, …]`, or its negation when `negate_odd`.
    unsafe fn alternating(negate_odd: bool) -> Self;
    /// Even lanes `self − other`, odd lanes `self + other`, each rounded once.
    #[inline(always)]
    unsafe fn addsub(self, other: Self) -> Self {
        // SAFETY: as for the trait's other methods; multiplying by ±1 is exact.
        unsafe { self.add(other.mul(Self::alternating(false))) }
    }
    /// Even lanes `self · b − c`, odd lanes `self · b + c`, fused.
    #[inline(always)]
    unsafe fn fmaddsub(self, b: Self, c: Self) -> Self {
        // SAFETY: as above.
        unsafe { self.fmadd(b, c.mul(Self::alternating(false))) }
    }
    /// Even lanes `self · b + c`, odd lanes `self · b − c`, fused.
    #[inline(always)]
    unsafe fn fmsubadd(self, b: Self, c: Self) -> Self {
        // SAFETY: as above.
        unsafe { self.fmadd(b, c.mul(Self::alternating(true))) }
    }
    /// Every lane `x`.
    unsafe fn splat(x: f32) -> Self;
    /// Each lane of `a` where `mask`'s lane has every bit set, else of `b` (`mask`'s lanes
    /// are all ones or all zeros).
    unsafe fn select(mask: Self, a: Self, b: Self) -> Self;
    /// A hint to bring the cache line of `p` into L1 ([`Prefetch`]); `p` need not point
    /// into memory the program may read (nothing is read, nothing faults). None by default.
    #[inline(always)]
    unsafe fn prefetch(_p: *const u8) {}
}

/// Most lanes of any [`Vector`] (AVX-512's 16).
const MAX_LANES: usize = 16;

/// How a [`Vector`] loads and stores a buffer's values of element type `E`: loads convert
/// exactly to `f32` lanes (integers as their value: the rotation is linear, so a buffer's
/// scale needs no factor when input and output scales are the same), stores round each lane
/// to nearest-even as [`element::store`](crate::element::store) does (integers saturated,
/// NaN to 0) — bit for bit.
///
/// # Safety
///
/// As for [`Vector`]; moreover implementations may only be used where the conversions'
/// instructions are available (the arch file's `fuses` and `run` check them).
pub(super) unsafe trait Stored<E: Element>: Bf16Pairs {
    /// `LANES` values from `p` (unaligned), converted.
    unsafe fn load_values(p: *const E) -> Self;
    /// Stores `LANES` lanes at `p` (unaligned), rounded.
    unsafe fn store_values(self, p: *mut E);
    /// Stores `LANES` lanes of a rotation loop's output at `p`, rounded as
    /// [`store_values`](Self::store_values) rounds them, for lanes that are, when `E` is an
    /// integer type, finite and below 2³⁰ in magnitude: the loops rotate values of `E` (at
    /// most 2¹⁵ in magnitude) by `[cos, sin]` of magnitude at most
    /// [`FUSED_MSCALE_MAX`](crate::element::FUSED_MSCALE_MAX) = 2¹⁴ (`|c| + |s| ≤ √2·2¹⁴`),
    /// or they rotate `f32`. An arch file may then convert integers without the clamp and
    /// NaN mask of `store_values`: a 32-bit conversion is exact and a saturating narrow
    /// clamps. When `E` is `bf16`, the lanes' NaNs are quiet and their low 16 bits zero:
    /// every NaN a loop makes from `bf16` values and finite angles is an input's (a `bf16`
    /// widened, quieted by the arithmetic, which keeps its payload) or the default NaN. An
    /// arch file may then round with no NaN case: adding `0x7FFF` and the lowest kept bit
    /// leaves such a NaN's top half as it is, and `half`, which quiets a NaN, leaves it too.
    /// These bounds are of the values stored, not of memory safety (lanes outside them store
    /// wrong values, within the same `LANES` values); `Rope::check` keeps `mscale` within
    /// `FUSED_MSCALE_MAX` for every loop that stores this way.
    #[inline(always)]
    unsafe fn store_rotated(self, p: *mut E) {
        // SAFETY: as for `store_values` (caller).
        unsafe { self.store_values(p) }
    }
    /// Stores two rotation outputs as `2·LANES` consecutive values at `p`, `first` then
    /// `second`, each rounded as [`store_rotated`](Self::store_rotated) rounds it. An arch
    /// file may narrow both with one pack and one store: AVX2's packs work within 128-bit
    /// lanes, and the shuffle that puts their lanes in order then serves two vectors.
    #[inline(always)]
    unsafe fn store_rotated_pair(first: Self, second: Self, p: *mut E) {
        // SAFETY: `2·LANES` values writable at `p` (caller), as for `store_rotated`.
        unsafe {
            first.store_rotated(p);
            second.store_rotated(p.add(Self::LANES));
        }
    }
    /// The first `n < LANES` values from `p`, the other lanes zero; nothing else is read.
    #[inline(always)]
    unsafe fn load_values_partial(p: *const E, n: usize) -> Self {
        if E::FORMAT == Format::F32 {
            // SAFETY: `E` is `f32` (its format); `n` values readable at `p` (caller).
            return unsafe { Self::load_partial(p.cast(), n) };
        }
        let mut buffer = [E::default(); MAX_LANES];
        // SAFETY: `n < LANES ≤ MAX_LANES` values readable at `p` (caller) and writable in
        // `buffer`, which holds `LANES` values for the whole-vector load.
        unsafe {
            core::ptr::copy_nonoverlapping(p, buffer.as_mut_ptr(), n);
            Self::load_values(buffer.as_ptr())
        }
    }
    /// Stores the first `n < LANES` lanes at `p`, rounded; nothing else is written.
    #[inline(always)]
    unsafe fn store_values_partial(self, p: *mut E, n: usize) {
        if E::FORMAT == Format::F32 {
            // SAFETY: `E` is `f32`; `n` values writable at `p` (caller).
            return unsafe { self.store_partial(p.cast(), n) };
        }
        let mut buffer = [E::default(); MAX_LANES];
        // SAFETY: `LANES ≤ MAX_LANES` values writable in `buffer`; `n < LANES` of them
        // copied to `p`, writable for `n` values (caller).
        unsafe {
            self.store_values(buffer.as_mut_ptr());
            core::ptr::copy_nonoverlapping(buffer.as_ptr(), p, n);
        }
    }
}

/// Interleaved `bf16` pairs split into their first and second elements as they load, and
/// merged as they store ([`Form::Split`]): a pair is one 32-bit word, its first element's
/// `f32` the word shifted left by 16, its second's the word's high half — so the half
/// layout's arithmetic and row apply with no swap within pairs.
///
/// # Safety
///
/// As for [`Vector`].
pub(super) unsafe trait Bf16Pairs: Vector {
    /// `LANES` interleaved `bf16` pairs (`2·LANES` values, unaligned) from `p`, converted:
    /// their first elements and their second.
    unsafe fn load_bf16_pairs(p: *const u16) -> (Self, Self);
    /// Stores first elements `a` and second elements `b` of a rotation loop's output as
    /// `LANES` interleaved `bf16` pairs at `p` (unaligned), each rounded as
    /// [`Stored::store_rotated`] rounds `bf16` (its NaNs quiet, their low 16 bits zero).
    unsafe fn store_bf16_pairs(a: Self, b: Self, p: *mut u16);
}

/// Converts `src` to `f32` into `dst` (the same length), times `ratio`: `V::LANES` values at
/// a time, the tail by the reference ([`element::load`](crate::element::load)), bit for bit
/// the reference's results (one product, rounded once).
///
/// # Safety
///
/// `V`'s instruction set and conversions are available.
#[inline(always)]
pub(super) unsafe fn load_array<V: Stored<E>, E: Element>(src: &[E], dst: &mut [f32], ratio: f32) {
    let n = src.len().min(dst.len());
    let (s, d) = (src.as_ptr(), dst.as_mut_ptr());
    let lanes = V::LANES;
    let mut i = 0;
    // SAFETY: the instruction set is available (caller).
    let r = unsafe { V::splat(ratio) };
    while i + lanes <= n {
        // SAFETY: values `i .. i + LANES ≤ n` of both buffers.
        unsafe {
            let v = V::load_values(s.add(i));
            let v = if E::INTEGER { v.mul(r) } else { v };
            v.store(d.add(i));
        }
        i += lanes;
    }
    crate::element::load(&src[i..n], &mut dst[i..n], ratio);
}

/// Rounds `src` into `dst` (the same length) as [`element::store`](crate::element::store)
/// does, `V::LANES` values at a time.
///
/// # Safety
///
/// As for [`load_array`].
#[inline(always)]
pub(super) unsafe fn store_array<V: Stored<E>, E: Element>(src: &[f32], dst: &mut [E]) {
    let n = src.len().min(dst.len());
    let (s, d) = (src.as_ptr(), dst.as_mut_ptr());
    let lanes = V::LANES;
    let mut i = 0;
    while i + lanes <= n {
        // SAFETY: values `i .. i + LANES ≤ n` of both buffers; the instruction set (caller).
        unsafe { V::load(s.add(i)).store_values(d.add(i)) };
        i += lanes;
    }
    crate::element::store(&src[i..n], &mut dst[i..n]);
}

/// An arch file's `load` and `store` — the registry's staging of requantised integer
/// buffers — over [`load_array`] and [`store_array`] compiled for the vector type `$v` with
/// `$features`, taken when `$available` (otherwise `element`'s loops, the same bits).
macro_rules! staging {
    ($v:ty, features = $features:literal, available = $available:expr) => {
        /// `element::load`, a vector at a time, bit for bit.
        pub(crate) fn load<E: Element>(src: &[E], dst: &mut [f32], ratio: f32) {
            if $available {
                // SAFETY: the CPU has the loop's target features, checked just above.
                unsafe { staged::load::<E>(src, dst, ratio) }
            } else {
                crate::element::load(src, dst, ratio);
            }
        }

        /// `element::store`, a vector at a time, bit for bit.
        pub(crate) fn store<E: Element>(src: &[f32], dst: &mut [E]) {
            if $available {
                // SAFETY: as in `load`.
                unsafe { staged::store::<E>(src, dst) }
            } else {
                crate::element::store(src, dst);
            }
        }

        /// The staging loops compiled with the backend's target features.
        mod staged {
            use super::*;

            /// # Safety
            ///
            /// The CPU has the target features enabled here.
            #[target_feature(enable = $features)]
            pub(super) unsafe fn load<E: Element>(src: &[E], dst: &mut [f32], ratio: f32) {
                // SAFETY: as the caller guarantees.
                unsafe { crate::backend::simd::load_array::<$v, E>(src, dst, ratio) }
            }

            /// # Safety
            ///
            /// As for [`load`].
            #[target_feature(enable = $features)]
            pub(super) unsafe fn store<E: Element>(src: &[f32], dst: &mut [E]) {
                // SAFETY: as the caller guarantees.
                unsafe { crate::backend::simd::store_array::<$v, E>(src, dst) }
            }
        }
    };
}
pub(super) use staging;

/// The Q15 vector glue, for the backends with integer vector loops (avx2, avx512, neon): an
/// arch file provides a [`Q15Blocks`] loop, [`q15_loop`] makes its registry entry. The x86
/// files write theirs as [`lane_blocks`] over their [`Q15Lanes`] vector.
#[cfg(any(all(target_arch = "x86_64", feature = "avx2"), rope2d_neon))]
mod q15 {
    use super::super::scalar::{Fixed, Number, Q15, rotate_pairs_rust};
    #[cfg(target_arch = "x86_64")]
    use super::{super::Tokens, Layout};
    use super::{Direction, Pairing};

    /// A Q15 pair loop in integer vectors (an arch file's): it rotates, in every head of `x`,
    /// what whole vector blocks it can of pairs `first_pair ..` by `angles`, bit for bit as the
    /// scalar kernel ([`Q15`]) does, and returns how many of `angles` it took.
    ///
    /// # Safety
    ///
    /// An implementation names the instruction set `blocks` needs; it runs only through a
    /// [`Q15Vectors`] value, whose maker vouches that the instruction set is available (the
    /// driver [`q15_loop`] generates).
    pub(crate) unsafe trait Q15Blocks {
        /// # Safety
        ///
        /// The instruction set is available.
        unsafe fn blocks<V: Fixed>(
            x: &mut [V],
            head_dim: usize,
            pairing: Pairing,
            first_pair: usize,
            angles: &[[i16; 2]],
            dir: Direction,
        ) -> usize;
    }

    /// An arch file's Q15 entry point `run_q15` (the registry's): the scalar Q15 kernel with its
    /// pair loop in the file's `$blocks` (a [`Q15Blocks::blocks`] function), compiled with
    /// `$features` so that its intrinsics inline, taken when `$available` (otherwise
    /// `$fallback`, another `run_q15`: the same bits).
    macro_rules! q15_loop {
        (
            features = $features:literal,
            available = $available:expr,
            blocks = $blocks:path,
            fallback = $fallback:path
        ) => {
            /// A Q15 table's job: the integer vector loop where the CPU has its instruction set,
            /// else the fallback's.
            pub(crate) fn run_q15<
                V: $crate::backend::scalar::Fixed,
                A: $crate::backend::AngleSource<[i16; 2]>,
            >(
                job: $crate::backend::Job<'_, A, V>,
            ) {
                if $available {
                    // SAFETY: the CPU has the loop's target features, checked just above.
                    unsafe { run_q15_vectors(job) }
                } else {
                    $fallback(job);
                }
            }

            /// The driver loop, compiled with the block loop's target features.
            ///
            /// # Safety
            ///
            /// The CPU has `$features`.
            #[target_feature(enable = $features)]
            unsafe fn run_q15_vectors<
                V: $crate::backend::scalar::Fixed,
                A: $crate::backend::AngleSource<[i16; 2]>,
            >(
                job: $crate::backend::Job<'_, A, V>,
            ) {
                // SAFETY: the CPU has `$features` (this function's contract), what `$blocks`
                // needs.
                let format = unsafe { $crate::backend::simd::Q15Vectors::<V, Blocks>::new() };
                $crate::backend::drive($crate::backend::scalar::Scalar(format), job);
            }

            /// The block loop, run only through a `Q15Vectors` value (made where the CPU has
            /// `$features`).
            struct Blocks;

            // SAFETY: `blocks` is `$blocks`, which needs `$features`: what `run_q15_vectors`
            // vouches for when it makes the `Q15Vectors` value that runs it.
            unsafe impl $crate::backend::simd::Q15Blocks for Blocks {
                #[inline(always)]
                unsafe fn blocks<V: $crate::backend::scalar::Fixed>(
                    x: &mut [V],
                    head_dim: usize,
                    pairing: $crate::backend::Pairing,
                    first_pair: usize,
                    angles: &[[i16; 2]],
                    dir: $crate::config::Direction,
                ) -> usize {
                    // SAFETY: the instruction set is available (the trait's contract).
                    unsafe { $blocks(x, head_dim, pairing, first_pair, angles, dir) }
                }
            }
        };
    }
    pub(crate) use q15_loop;

    /// A vector of `LANES` 16-bit lanes (an x86 arch file's) and the operations the x86 Q15
    /// block loop [`lane_blocks`] takes from it: `vpmaddwd` forms each output's `a·c − b·s`
    /// exactly in 32 bits, `+2¹⁴` and `>> 15` round it as the scalar `round_q15` does, and the
    /// saturating packs saturate alike.
    ///
    /// # Safety
    ///
    /// Implementations may only be used where their instruction set is available; the methods'
    /// contract is that it is.
    #[cfg(target_arch = "x86_64")]
    pub(crate) unsafe trait Q15Lanes: Copy {
        /// 16-bit lanes: a block is `LANES / 2` interleaved pairs or `LANES` half-layout ones.
        const LANES: usize;
        /// A narrower vector's blocks take what this one's leave (the `avx512` loop's 256-bit
        /// rest): `i8` interleaved pairs then leave it what their double blocks do not tile,
        /// rather than take a single block here (widened and narrowed across lanes).
        const NARROWER_FOLLOWS: bool = false;
        /// `LANES` values of `x` as `i16` lanes (an `i8` sign-extended).
        unsafe fn load<V: Fixed>(x: &[V]) -> Self;
        /// `LANES` `i16` lanes into `x`, saturated to `V`.
        unsafe fn store<V: Fixed>(x: &mut [V], v: Self);
        /// `LANES / 2` entries `[c, s]` of `angles` from `i`.
        unsafe fn entries(angles: &[[i16; 2]], i: usize) -> Self;
        /// The `vpmaddwd` weights of entries `e` for direction `dir`: `[c, −s]` and `[s, c]`
        /// forward, `[c, s]` and `[−s, c]` inverse (entries are at most 32 767 in magnitude:
        /// negating one is exact).
        unsafe fn weights(e: Self, dir: Direction) -> (Self, Self);
        /// The entries, from those of pairs `0 .. LANES / 2` and `LANES / 2 .. LANES`, of the
        /// pairs [`unpack`](Self::unpack) brings together in its first and second results.
        unsafe fn half_entries(e0: Self, e1: Self) -> (Self, Self);
        /// `round((x · w summed per 32 bits) / 2¹⁵)` per 32-bit lane: `vpmaddwd`, `+2¹⁴`,
        /// `>> 15`. With `BYTES`, of lanes scaled by 256 ([`load_bytes`](Self::load_bytes)):
        /// `+2²²`, `>> 23`, the same bits as without of the unscaled lanes. The sum stays
        /// below 2³¹ there: `|a|, |b| ≤ 128` and `|c| + |s| ≤ √2 · 32 767` (entries of one
        /// angle) bound it, rounding term included, by 1.53·10⁹.
        unsafe fn madd_round<const BYTES: bool>(x: Self, w: Self) -> Self;
        /// `vpackssdw`: 32-bit lanes narrowed with saturation, per 128-bit lane `a`'s then
        /// `b`'s.
        unsafe fn packs(a: Self, b: Self) -> Self;
        /// Per 128-bit lane, `[a'0..3, b'0..3]` → `[a'0, b'0, a'1, b'1, …]` (16-bit lanes).
        unsafe fn zip(v: Self) -> Self;
        /// `vpunpcklwd` and `vpunpckhwd` of `a` and `b`.
        unsafe fn unpack(a: Self, b: Self) -> (Self, Self);
        /// `2 · LANES` values of `x` (`V` is `i8`) as two vectors of `i16` lanes holding
        /// `256 · v`: per 128-bit lane, bytes `0 .. 8` (`vpunpcklbw` with zero) and `8 .. 16`
        /// (`vpunpckhbw`) — no cross-lane widening.
        unsafe fn load_bytes<V: Fixed>(x: &[V]) -> (Self, Self);
        /// `vpacksswb` of `lo` and `hi` into `2 · LANES` values of `x` (`V` is `i8`),
        /// saturated (per 128-bit lane `lo`'s 8 then `hi`'s 8: the order of
        /// [`load_bytes`](Self::load_bytes) undone).
        unsafe fn store_bytes<V: Fixed>(x: &mut [V], lo: Self, hi: Self);
    }

    /// Rotates, in every head of `x`, the whole blocks of `L` (`L::LANES / 2` interleaved
    /// pairs, `L::LANES` half-layout pairs) of pairs `first_pair ..` by `angles`, bit for bit
    /// as the scalar kernel does; returns how many of `angles` it took. Blocks outer, heads
    /// inner: a block's weights stay in registers across the token's heads.
    ///
    /// # Safety
    ///
    /// `L`'s instruction set is available.
    #[cfg(target_arch = "x86_64")]
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) unsafe fn lane_blocks<L: Q15Lanes, V: Fixed>(
        x: &mut [V],
        head_dim: usize,
        pairing: Pairing,
        first_pair: usize,
        angles: &[[i16; 2]],
        dir: Direction,
    ) -> usize {
        let rotary = pairing.pairs.min(head_dim / 2);
        let n = angles.len().min(rotary.saturating_sub(first_pair));
        let block = match pairing.layout {
            Layout::Interleaved => L::LANES / 2,
            Layout::Half => L::LANES,
        };
        // `i8` interleaved pairs: double steps first (below), over `wide` pairs.
        let bytes = pairing.layout == Layout::Interleaved && size_of::<V>() == 1;
        let wide = if bytes { n - n % L::LANES } else { 0 };
        let done = if bytes && L::NARROWER_FOLLOWS {
            wide
        } else {
            n - n % block
        };
        // SAFETY: `L`'s instruction set (caller); every load and store is of a subslice
        // (checked by slicing).
        unsafe {
            match pairing.layout {
                Layout::Interleaved => {
                    // `i8` (`wide` is 0 otherwise): twice a block's pairs a step, one load
                    // and one store of `2 · LANES` bytes, widened and narrowed within 128-bit
                    // lanes (`vpmovsxbw` and `vpmovswb` cross them); each half's entries as
                    // the half layout brings them together (the lanes `vpunpck[lh]bw` pick:
                    // pairs `8j .. 8j + 4` and `8j + 4 .. 8j + 8`).
                    for i in (0..wide).step_by(L::LANES) {
                        let e0 = L::entries(angles, i);
                        let e1 = L::entries(angles, i + block);
                        let (lo, hi) = L::half_entries(e0, e1);
                        let ((w1lo, w2lo), (w1hi, w2hi)) =
                            (L::weights(lo, dir), L::weights(hi, dir));
                        let p = 2 * (first_pair + i);
                        for head in Tokens::new(&mut *x, head_dim) {
                            let v = &mut head[p..p + 2 * L::LANES];
                            let (l, h) = L::load_bytes(v);
                            let a = L::packs(
                                L::madd_round::<true>(l, w1lo),
                                L::madd_round::<true>(l, w2lo),
                            );
                            let b = L::packs(
                                L::madd_round::<true>(h, w1hi),
                                L::madd_round::<true>(h, w2hi),
                            );
                            L::store_bytes(v, L::zip(a), L::zip(b));
                        }
                    }
                    // Single blocks: every one for `i16`; for `i8` one the double steps
                    // leave, unless a narrower vector follows.
                    for i in (wide..done).step_by(block) {
                        let (w1, w2) = L::weights(L::entries(angles, i), dir);
                        let p = 2 * (first_pair + i);
                        for head in Tokens::new(&mut *x, head_dim) {
                            let v = &mut head[p..p + L::LANES];
                            let ab = L::load(v);
                            let r = L::packs(
                                L::madd_round::<false>(ab, w1),
                                L::madd_round::<false>(ab, w2),
                            );
                            L::store(v, L::zip(r));
                        }
                    }
                }
                Layout::Half => {
                    for i in (0..done).step_by(block) {
                        let e0 = L::entries(angles, i);
                        let e1 = L::entries(angles, i + block / 2);
                        let (lo, hi) = L::half_entries(e0, e1);
                        let ((w1lo, w2lo), (w1hi, w2hi)) =
                            (L::weights(lo, dir), L::weights(hi, dir));
                        let p = first_pair + i;
                        for head in Tokens::new(&mut *x, head_dim) {
                            let (lo, hi) = head.split_at_mut(rotary);
                            let (va, vb) = (&mut lo[p..p + L::LANES], &mut hi[p..p + L::LANES]);
                            let (l, h) = L::unpack(L::load(va), L::load(vb));
                            // `vpackssdw` undoes the unpacks' lane order: pairs in order.
                            let a = L::packs(
                                L::madd_round::<false>(l, w1lo),
                                L::madd_round::<false>(h, w1hi),
                            );
                            let b = L::packs(
                                L::madd_round::<false>(l, w2lo),
                                L::madd_round::<false>(h, w2hi),
                            );
                            L::store(va, a);
                            L::store(vb, b);
                        }
                    }
                }
            }
        }
        done
    }

    /// The scalar Q15 kernel ([`Q15`]) with its pair loop in `L`'s vector blocks; the pairs after
    /// the last whole block, and RoPE-Mixed's summed entries, in scalar code.
    /// A value is the proof that `L`'s instruction set is available ([`Q15Vectors::new`]).
    pub(crate) struct Q15Vectors<V, L>(core::marker::PhantomData<(V, L)>);

    impl<V, L: Q15Blocks> Q15Vectors<V, L> {
        /// The number format.
        ///
        /// # Safety
        ///
        /// `L`'s instruction set is available on this CPU.
        #[inline(always)]
        pub(crate) const unsafe fn new() -> Self {
            Self(core::marker::PhantomData)
        }
    }

    impl<V, L> Clone for Q15Vectors<V, L> {
        #[inline(always)]
        fn clone(&self) -> Self {
            *self
        }
    }

    impl<V, L> Copy for Q15Vectors<V, L> {}

    impl<V: Fixed, L: Q15Blocks> Number for Q15Vectors<V, L> {
        type Value = V;
        type Entry = [i16; 2];

        #[inline(always)]
        fn rotate(a: &mut V, b: &mut V, cs: [i16; 2], dir: Direction) {
            Q15::<V>::rotate(a, b, cs, dir);
        }

        #[inline(always)]
        fn sum(a: [i16; 2], b: [i16; 2]) -> [i16; 2] {
            Q15::<V>::sum(a, b)
        }

        #[inline(always)]
        fn rotate_pairs(
            self,
            x: &mut [V],
            head_dim: usize,
            pairing: Pairing,
            first_pair: usize,
            angles: &[[i16; 2]],
            dir: Direction,
        ) {
            // SAFETY: `L`'s instruction set is available: `self` exists (`Q15Vectors::new`).
            let done = unsafe { L::blocks(x, head_dim, pairing, first_pair, angles, dir) };
            // Most sections are whole blocks: no walk over the heads for nothing.
            if let Some(rest) = angles.get(done..).filter(|rest| !rest.is_empty()) {
                rotate_pairs_rust::<Q15<V>>(x, head_dim, pairing, first_pair + done, rest, dir);
            }
        }
    }
}
#[cfg(any(all(target_arch = "x86_64", feature = "avx2"), rope2d_neon))]
pub(super) use q15::{Q15Blocks, Q15Vectors, q15_loop};
#[cfg(all(target_arch = "x86_64", feature = "avx2"))]
pub(super) use q15::{Q15Lanes, lane_blocks};

/// The scalar kernel on values of `E`: the loops past a row's reach.
#[inline(always)]
fn scalar<E: Element>() -> super::scalar::Scalar<super::scalar::Float<E>> {
    super::scalar::Scalar(super::scalar::Float::new())
}

/// The kernel of a vector type on buffers of element type `E`. A value is the proof that
/// `V`'s instruction set is available: it is made only by [`Simd::new`], whose caller
/// vouches for the CPU, so the kernel's methods are safe.
pub(super) struct Simd<V, E = f32>(core::marker::PhantomData<(V, E)>);

impl<V: Vector, E> Simd<V, E> {
    /// The kernel.
    ///
    /// # Safety
    ///
    /// `V`'s instruction set is available on this CPU (an arch file's `run` after its check,
    /// or its tests after `is_available`).
    #[inline(always)]
    pub(super) const unsafe fn new() -> Self {
        Self(core::marker::PhantomData)
    }
}

impl<V, E> Clone for Simd<V, E> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}

impl<V, E> Copy for Simd<V, E> {}

/// The loops over heads ([`grid_from_entries`], [`tokens_from_entries`],
/// [`tokens_in_registers`], [`line_in_registers`], [`rotate`]), each compiled once per vector
/// type, element type, head size and axis count, out of line, with the vector type's
/// instruction set. Inlined, they were copied into every driver that reaches them — one per
/// element type, angle source and position kind, 66 `avx512` drivers in the C library, whose
/// release build took 16 minutes (`docs/performance-log.md`, stops 53 and 60). The call costs
/// a few instructions per grid, batch of tokens, line or token. An arch file implements it
/// with [`forms`].
///
/// # Safety
///
/// An implementation's methods are compiled with the instruction set its vector type's
/// operations need (the callers' contract: that instruction set is available), and do what
/// the loop of the same name does.
pub(super) unsafe trait Forms: Vector {
    /// [`grid_from_entries`].
    ///
    /// # Safety
    ///
    /// As for [`grid_from_entries`].
    #[allow(clippy::too_many_arguments)]
    unsafe fn grid_from_entries<E: Element, const N: usize, const A: usize>(
        x: &mut [E],
        line_len: usize,
        token_len: usize,
        head_dim: usize,
        form: Form,
        dir: Direction,
        vectors: &[EntryVector; REGISTER_VECTORS],
        origin: [u32; A],
        extents: [usize; A],
    ) where
        Self: Stored<E>;

    /// [`tokens_from_entries`].
    ///
    /// # Safety
    ///
    /// As for [`tokens_from_entries`].
    unsafe fn tokens_from_entries<E: Element, const N: usize, const A: usize>(
        x: &mut [E],
        token_len: usize,
        head_dim: usize,
        form: Form,
        dir: Direction,
        vectors: &[EntryVector; REGISTER_VECTORS],
        positions: impl Iterator<Item = [u32; A]>,
    ) where
        Self: Stored<E>;

    /// [`tokens_in_registers`].
    ///
    /// # Safety
    ///
    /// As for [`tokens_in_registers`].
    unsafe fn tokens_in_registers<E: Element, const N: usize, const A: usize>(
        x: &mut [E],
        token_len: usize,
        head_dim: usize,
        form: Form,
        tables: [TokenTable; 2],
        axes: [usize; 2],
        positions: impl Iterator<Item = [u32; A]>,
    ) where
        Self: Stored<E>;

    /// [`line_in_registers`].
    ///
    /// # Safety
    ///
    /// As for [`line_in_registers`].
    #[allow(clippy::too_many_arguments)]
    unsafe fn line_in_registers<E: Element, const N: usize>(
        lines: &mut [E],
        line_len: usize,
        token_len: usize,
        head_dim: usize,
        form: Form,
        row: (*const f32, *const f32),
        section: (usize, usize),
        split: impl Fn(usize) -> (*const f32, *const f32),
    ) where
        Self: Stored<E>;

    /// [`rotate`].
    ///
    /// # Safety
    ///
    /// As for [`rotate`].
    unsafe fn rotate<E: Element>(
        x: &mut [E],
        head_dim: usize,
        form: Form,
        pairs: usize,
        row: (*const f32, *const f32),
    ) where
        Self: Stored<E>;
}

/// An arch file's [`Forms`] for vector type `$v`: each loop compiled with `$features`, the
/// instruction set `$v`'s operations need, so that they inline into it.
macro_rules! forms {
    ($v:ty, features = $features:literal) => {
        // SAFETY: each method is its loop, compiled with `$features`, `$v`'s instruction set.
        unsafe impl $crate::backend::simd::Forms for $v {
            #[inline(never)]
            #[target_feature(enable = $features)]
            unsafe fn grid_from_entries<
                E: $crate::element::Element,
                const N: usize,
                const A: usize,
            >(
                x: &mut [E],
                line_len: usize,
                token_len: usize,
                head_dim: usize,
                form: $crate::backend::simd::Form,
                dir: $crate::config::Direction,
                vectors: &[$crate::backend::simd::EntryVector;
                     $crate::backend::simd::REGISTER_VECTORS],
                origin: [u32; A],
                extents: [usize; A],
            ) where
                Self: $crate::backend::simd::Stored<E>,
            {
                // SAFETY: as the caller guarantees; the instruction set is `$features`.
                unsafe {
                    $crate::backend::simd::grid_from_entries::<Self, E, N, A>(
                        x, line_len, token_len, head_dim, form, dir, vectors, origin, extents,
                    )
                }
            }

            #[inline(never)]
            #[target_feature(enable = $features)]
            unsafe fn tokens_from_entries<
                E: $crate::element::Element,
                const N: usize,
                const A: usize,
            >(
                x: &mut [E],
                token_len: usize,
                head_dim: usize,
                form: $crate::backend::simd::Form,
                dir: $crate::config::Direction,
                vectors: &[$crate::backend::simd::EntryVector;
                     $crate::backend::simd::REGISTER_VECTORS],
                positions: impl Iterator<Item = [u32; A]>,
            ) where
                Self: $crate::backend::simd::Stored<E>,
            {
                // SAFETY: as the caller guarantees; the instruction set is `$features`.
                unsafe {
                    $crate::backend::simd::tokens_from_entries::<Self, E, N, A>(
                        x, token_len, head_dim, form, dir, vectors, positions,
                    )
                }
            }

            #[inline(never)]
            #[target_feature(enable = $features)]
            unsafe fn tokens_in_registers<
                E: $crate::element::Element,
                const N: usize,
                const A: usize,
            >(
                x: &mut [E],
                token_len: usize,
                head_dim: usize,
                form: $crate::backend::simd::Form,
                tables: [$crate::backend::simd::TokenTable; 2],
                axes: [usize; 2],
                positions: impl Iterator<Item = [u32; A]>,
            ) where
                Self: $crate::backend::simd::Stored<E>,
            {
                // SAFETY: as the caller guarantees; the instruction set is `$features`.
                unsafe {
                    $crate::backend::simd::tokens_in_registers::<Self, E, N, A>(
                        x, token_len, head_dim, form, tables, axes, positions,
                    )
                }
            }

            #[inline(never)]
            #[target_feature(enable = $features)]
            unsafe fn line_in_registers<E: $crate::element::Element, const N: usize>(
                lines: &mut [E],
                line_len: usize,
                token_len: usize,
                head_dim: usize,
                form: $crate::backend::simd::Form,
                row: (*const f32, *const f32),
                section: (usize, usize),
                split: impl Fn(usize) -> (*const f32, *const f32),
            ) where
                Self: $crate::backend::simd::Stored<E>,
            {
                // SAFETY: as the caller guarantees; the instruction set is `$features`.
                unsafe {
                    $crate::backend::simd::line_in_registers::<Self, E, N>(
                        lines, line_len, token_len, head_dim, form, row, section, split,
                    )
                }
            }

            #[inline(never)]
            #[target_feature(enable = $features)]
            unsafe fn rotate<E: $crate::element::Element>(
                x: &mut [E],
                head_dim: usize,
                form: $crate::backend::simd::Form,
                pairs: usize,
                row: (*const f32, *const f32),
            ) where
                Self: $crate::backend::simd::Stored<E>,
            {
                // SAFETY: as the caller guarantees; the instruction set is `$features`.
                unsafe { $crate::backend::simd::rotate::<Self, E>(x, head_dim, form, pairs, row) }
            }
        }
    };
}
pub(super) use forms;

/// How the loops walk a head's pairs.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Form {
    /// Interleaved pairs rotated in place: a swap within pairs, the row's duplicated
    /// cosines and alternating signed sines.
    Interleaved,
    /// The half layout: first elements in the head's first half, second in its second.
    Half,
    /// Interleaved `bf16` pairs split into first and second elements as they load
    /// ([`Bf16Pairs`]): the half layout's arithmetic and row, on interleaved memory.
    Split,
}

impl Form {
    /// The form of `layout` on values of `E`.
    #[inline(always)]
    fn of<E: Element>(layout: Layout) -> Self {
        match layout {
            Layout::Interleaved if E::FORMAT == Format::Bf16 => Form::Split,
            Layout::Interleaved => Form::Interleaved,
            Layout::Half => Form::Half,
        }
    }

    /// The layout whose row (and indexing: by float or by pair) the form reads.
    #[inline(always)]
    fn row(self) -> Layout {
        match self {
            Form::Interleaved => Layout::Interleaved,
            Form::Half | Form::Split => Layout::Half,
        }
    }
}

/// The sign of the sines: `+1` forward, `−1` inverse.
#[inline(always)]
fn sine_sign(dir: Direction) -> f32 {
    match dir {
        Direction::Forward => 1.0,
        Direction::Inverse => -1.0,
    }
}

/// Writes pairs `first .. first + entries.len()` of `row` (already clipped to the row) and
/// keeps its initialised floats a prefix: a gap before them (runs staged out of pair order)
/// and the padding after them are zeroed, unless already initialised.
///
/// # Safety
///
/// `V`'s instruction set is available; `first + entries.len() ≤ row_pairs(layout)`.
// Not forced inline where debug assertions are on (unoptimised builds, where it stays one
// copy per vector type instead of one at each of the token loops' call sites — half of every
// inlined driver in the fuzz, Miri and debug test builds; LLVM still inlines it in cargo
// fuzz's optimised builds).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
unsafe fn prepare<V: Vector>(
    row: &mut Row,
    layout: Layout,
    dir: Direction,
    first: usize,
    entries: &[[f32; 2]],
) {
    let scale = floats_per_pair(layout);
    let (start, end) = (scale * first, scale * (first + entries.len()));
    row.zero_to(start);
    // The direction a constant inside in optimised builds (the driver does not specialise on
    // it for SIMD kernels): the sign folds away forward and into a sign flip inverse, instead
    // of a multiply per staged vector on the pipes the rotation's FMAs need (`large_bf16`,
    // which stages angles per token, took 5–8 % longer with the multiply on the Zen 4).
    // Unoptimised builds keep one copy: nothing folds there.
    // SAFETY: forwarded from the caller.
    #[cfg(not(debug_assertions))]
    unsafe {
        match dir {
            Direction::Forward => prepare_in::<V>(row, layout, Direction::Forward, first, entries),
            Direction::Inverse => prepare_in::<V>(row, layout, Direction::Inverse, first, entries),
        }
    }
    // SAFETY: forwarded from the caller.
    #[cfg(debug_assertions)]
    unsafe {
        prepare_in::<V>(row, layout, dir, first, entries)
    }
    // Floats `.. end` are initialised now. The padding, when none of it is, as whole vector
    // stores (a variable-length zeroing is a `memset` call).
    if row.floats <= end {
        let (a, b) = (
            row.a.as_mut_ptr().cast::<f32>(),
            row.b.as_mut_ptr().cast::<f32>(),
        );
        const { assert!(PADDING.is_multiple_of(V::LANES)) };
        // SAFETY: the instruction set is available (caller); `end + PADDING ≤ ROW_FLOATS`
        // (`first + entries.len() ≤ row_pairs(layout)`), and `PADDING` is whole vectors.
        unsafe {
            let zero = V::splat(0.0);
            for i in (0..PADDING).step_by(V::LANES) {
                zero.store(a.add(end + i));
                zero.store(b.add(end + i));
            }
        }
        row.floats = end + PADDING;
    } else {
        row.zero_to(end + PADDING);
    }
}

/// [`prepare`]'s body, inlined with a constant `dir` in optimised builds.
///
/// # Safety
///
/// As [`prepare`].
#[inline(always)]
unsafe fn prepare_in<V: Vector>(
    row: &mut Row,
    layout: Layout,
    dir: Direction,
    first: usize,
    entries: &[[f32; 2]],
) {
    let n = entries.len();
    let e = entries.as_ptr().cast::<f32>();
    let sign = sine_sign(dir);
    let lanes = V::LANES;
    match layout {
        Layout::Interleaved => {
            let (a, b) = (
                row.a.as_mut_ptr().cast::<f32>(),
                row.b.as_mut_ptr().cast::<f32>(),
            );
            // SAFETY: the instruction set is available (caller).
            let signs = unsafe { V::alternating(dir == Direction::Inverse) };
            let mut k = 0;
            // `lanes / 2` pairs a step: the floats `2k .. 2k + lanes` of entries and row.
            while k + lanes / 2 <= n {
                // SAFETY: `2k + lanes ≤ 2n` floats of `entries`; `2(first + k) + lanes ≤
                // 2·ROW_PAIRS` floats of each row array.
                unsafe {
                    let v = V::load(e.add(2 * k));
                    v.dup_even().store(a.add(2 * (first + k)));
                    v.dup_odd().mul(signs).store(b.add(2 * (first + k)));
                }
                k += lanes / 2;
            }
            // The tail as the run's last whole vector, overlapping pairs already written
            // (with the same values): no scalar loop, and nothing written past the run.
            if k < n && n >= lanes / 2 {
                let k = n - lanes / 2;
                // SAFETY: as in the loop above, with `k + lanes / 2 = n`.
                unsafe {
                    let v = V::load(e.add(2 * k));
                    v.dup_even().store(a.add(2 * (first + k)));
                    v.dup_odd().mul(signs).store(b.add(2 * (first + k)));
                }
                return;
            }
            for (j, &[c, s]) in entries.iter().enumerate().skip(k) {
                let at = 2 * (first + j);
                row.a[at].write(c);
                row.a[at + 1].write(c);
                row.b[at].write(-(s * sign));
                row.b[at + 1].write(s * sign);
            }
        }
        Layout::Half => {
            let (a, b) = (
                row.a.as_mut_ptr().cast::<f32>(),
                row.b.as_mut_ptr().cast::<f32>(),
            );
            // SAFETY: the instruction set is available (caller).
            let sign_v = unsafe { V::splat(sign) };
            let mut k = 0;
            while k + lanes <= n {
                // SAFETY: `2(k + lanes) ≤ 2n` floats of `entries`; `first + k + lanes ≤
                // 2·ROW_PAIRS` floats of each row array.
                unsafe {
                    let (c, s) =
                        V::deinterleave(V::load(e.add(2 * k)), V::load(e.add(2 * k + lanes)));
                    c.store(a.add(first + k));
                    s.mul(sign_v).store(b.add(first + k));
                }
                k += lanes;
            }
            // The tail as the run's last whole vector (as above).
            if k < n && n >= lanes {
                let k = n - lanes;
                // SAFETY: as in the loop above, with `k + lanes = n`.
                unsafe {
                    let (c, s) =
                        V::deinterleave(V::load(e.add(2 * k)), V::load(e.add(2 * k + lanes)));
                    c.store(a.add(first + k));
                    s.mul(sign_v).store(b.add(first + k));
                }
                return;
            }
            for (j, &[c, s]) in entries.iter().enumerate().skip(k) {
                row.a[first + j].write(c);
                row.b[first + j].write(s * sign);
            }
        }
    }
}

/// Where a head's pairs read their angles: pairs `lo .. hi` from arrays `a`, `b` indexed by
/// float (interleaved) or pair (half) position within the head.
#[derive(Clone, Copy)]
struct Segment {
    lo: usize,
    hi: usize,
    a: *const f32,
    b: *const f32,
}

/// A token's angles: a row's arrays, with pairs `first .. end` taken from other arrays
/// (`split`, a section of a table prepared for the whole grid, shifted to the head's
/// indices) when `first < end`.
#[derive(Clone, Copy)]
struct Angles {
    a: *const f32,
    b: *const f32,
    first: usize,
    end: usize,
    split: (*const f32, *const f32),
}

impl Angles {
    /// The arrays pair `k` reads.
    #[inline(always)]
    fn at(&self, k: usize) -> (*const f32, *const f32) {
        if k >= self.first && k < self.end {
            self.split
        } else {
            (self.a, self.b)
        }
    }

    /// The segments of a head of `pairs` pairs, and how many there are.
    #[inline(always)]
    fn segments(&self, pairs: usize) -> ([Segment; 3], usize) {
        let row = |lo, hi| Segment {
            lo,
            hi,
            a: self.a,
            b: self.b,
        };
        if self.first >= self.end {
            return ([row(0, pairs), row(pairs, pairs), row(pairs, pairs)], 1);
        }
        let split = Segment {
            lo: self.first,
            hi: self.end,
            a: self.split.0,
            b: self.split.1,
        };
        ([row(0, self.first), split, row(self.end, pairs)], 3)
    }
}

/// Rotates the pairs of `segments` (in order, together covering `0 .. pairs`) of every head
/// in `x` (whole heads of `head_dim`), in address order: heads outer, pairs inner.
///
/// # Safety
///
/// `V`'s instruction set is available; `2·pairs ≤ head_dim`; each segment's arrays are
/// readable at every index its pairs use plus a vector of padding (see [`Row`]); segment
/// boundaries but the last are multiples of a vector (`LANES` floats interleaved, `LANES`
/// pairs half).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
unsafe fn rotate_segments<V: Stored<E>, E: Element>(
    x: &mut [E],
    head_dim: usize,
    form: Form,
    pairs: usize,
    segments: &[Segment],
) {
    let lanes = V::LANES;
    let base = x.as_mut_ptr();
    let len = x.len();
    let mut head = 0;
    while head + head_dim <= len {
        for seg in segments {
            // SAFETY: the head is floats `head .. head + d` of `x`; the segment's floats
            // (interleaved `2·lo .. 2·hi`, half `lo .. hi` and `pairs + lo .. pairs + hi`)
            // lie within its first `2·pairs ≤ d` (a half-layout segment's last whole vector,
            // pairs `hi − LANES .. hi`, only when `hi − lo ≥ LANES`); the arrays are readable
            // as the caller guarantees. A table section's pointers are shifted (they may
            // point before the table), so the angle offsets wrap: only in-bounds results are
            // dereferenced.
            unsafe {
                let (a, b) = (seg.a, seg.b);
                match form {
                    Form::Interleaved => {
                        let p = base.add(head);
                        let (mut i, end) = (2 * seg.lo, 2 * seg.hi);
                        if V::WIDE_STEPS {
                            while i + 8 * lanes <= end {
                                interleaved_wide_step::<V, E>(
                                    p.add(i),
                                    a.wrapping_add(i),
                                    b.wrapping_add(i),
                                );
                                i += 8 * lanes;
                            }
                        }
                        while i + 2 * lanes <= end {
                            interleaved_step::<V, E>(
                                p.add(i),
                                a.wrapping_add(i),
                                b.wrapping_add(i),
                            );
                            i += 2 * lanes;
                        }
                        if i < end {
                            let n = end - i;
                            let x0 = if n >= lanes {
                                V::load_values(p.add(i))
                            } else {
                                V::load_values_partial(p.add(i), n)
                            };
                            let out = interleaved(
                                x0,
                                V::load(a.wrapping_add(i)),
                                V::load(b.wrapping_add(i)),
                            );
                            if n >= lanes {
                                out.store_rotated(p.add(i));
                                i += lanes;
                                if i < end {
                                    let n = end - i;
                                    let x0 = V::load_values_partial(p.add(i), n);
                                    interleaved(
                                        x0,
                                        V::load(a.wrapping_add(i)),
                                        V::load(b.wrapping_add(i)),
                                    )
                                    .store_values_partial(p.add(i), n);
                                }
                            } else {
                                out.store_values_partial(p.add(i), n);
                            }
                        }
                    }
                    Form::Split => {
                        // `E` is `bf16` (`Form::of`): its values are `u16` bit patterns.
                        let p = base.add(head);
                        let mut k = seg.lo;
                        while k + lanes <= seg.hi {
                            let (c, s) = (V::load(a.wrapping_add(k)), V::load(b.wrapping_add(k)));
                            split_step::<V>(p.add(2 * k).cast(), c, s);
                            k += lanes;
                        }
                        if k < seg.hi {
                            // The last `n < LANES` pairs through a buffer of whole vectors.
                            let n = 2 * (seg.hi - k);
                            let mut buffer = [E::default(); 2 * MAX_LANES];
                            let t = buffer.as_mut_ptr();
                            core::ptr::copy_nonoverlapping(p.add(2 * k), t, n);
                            let (c, s) = (V::load(a.wrapping_add(k)), V::load(b.wrapping_add(k)));
                            split_step::<V>(t.cast(), c, s);
                            core::ptr::copy_nonoverlapping(t, p.add(2 * k), n);
                        }
                    }
                    Form::Half => {
                        let lo = base.add(head);
                        let hi = lo.add(pairs);
                        // A segment of whole vectors and a rest: the rest is rotated as the
                        // segment's last whole vector, loaded before any of the segment is
                        // stored and stored last (the overlap gets the same values twice).
                        // Masked at the end of the segment instead, its load spanned the
                        // bytes of the store just issued and waited for it to reach the
                        // cache (Zen 4: 2-D d = 40 half layout ~10× the stream).
                        let len = seg.hi - seg.lo;
                        let last = (len >= lanes && !len.is_multiple_of(lanes)).then(|| {
                            let k = seg.hi - lanes;
                            let (xv, yv) = half(
                                V::load_values(lo.add(k)),
                                V::load_values(hi.add(k)),
                                V::load(a.wrapping_add(k)),
                                V::load(b.wrapping_add(k)),
                            );
                            (k, xv, yv)
                        });
                        let mut k = seg.lo;
                        if V::WIDE_STEPS {
                            while k + 4 * lanes <= seg.hi {
                                half_wide_step::<V, E>(
                                    lo.add(k),
                                    hi.add(k),
                                    a.wrapping_add(k),
                                    b.wrapping_add(k),
                                );
                                k += 4 * lanes;
                            }
                        }
                        while k + lanes <= seg.hi {
                            half_step::<V, E>(
                                lo.add(k),
                                hi.add(k),
                                a.wrapping_add(k),
                                b.wrapping_add(k),
                            );
                            k += lanes;
                        }
                        if let Some((k, xv, yv)) = last {
                            xv.store_rotated(lo.add(k));
                            yv.store_rotated(hi.add(k));
                        } else if k < seg.hi {
                            let n = seg.hi - k;
                            let (xv, yv) = (
                                V::load_values_partial(lo.add(k), n),
                                V::load_values_partial(hi.add(k), n),
                            );
                            let (xv, yv) = half(
                                xv,
                                yv,
                                V::load(a.wrapping_add(k)),
                                V::load(b.wrapping_add(k)),
                            );
                            xv.store_values_partial(lo.add(k), n);
                            yv.store_values_partial(hi.add(k), n);
                        }
                    }
                }
            }
        }
        head += head_dim;
    }
}

/// A vector of interleaved pairs rotated by duplicated cosines `a` and signed sines `b`:
/// `x·a + swap(x)·b`, the product with `a` fused.
///
/// # Safety
///
/// `V`'s instruction set is available.
#[inline(always)]
unsafe fn interleaved<V: Vector>(x: V, a: V, b: V) -> V {
    // SAFETY: as the caller guarantees.
    unsafe { x.fmadd(a, x.swap_pairs().mul(b)) }
}

/// A vector of half-layout pairs (first elements `x`, second `y`) rotated by cosines `c` and
/// signed sines `s`: `(x·c − y·s, y·c + x·s)`, the products with `c` fused.
///
/// # Safety
///
/// `V`'s instruction set is available.
#[inline(always)]
unsafe fn half<V: Vector>(x: V, y: V, c: V, s: V) -> (V, V) {
    // SAFETY: as the caller guarantees.
    unsafe { (x.fmsub(c, y.mul(s)), y.fmadd(c, x.mul(s))) }
}

/// The interleaved loop body of [`rotate_segments`]: two vectors of floats at `p` rotated by
/// the row's duplicated cosines at `a` and signed sines at `b` (swap within pairs, one
/// multiply, one fused multiply-add per vector).
///
/// # Safety
///
/// `V`'s instruction set is available; `2·LANES` floats readable at `a`, `b` and readable
/// and writable at `p`.
#[inline(always)]
unsafe fn interleaved_step<V: Stored<E>, E: Element>(p: *mut E, a: *const f32, b: *const f32) {
    let lanes = V::LANES;
    // SAFETY: as the caller guarantees.
    unsafe {
        let (x0, x1) = (V::load_values(p), V::load_values(p.add(lanes)));
        let y0 = interleaved(x0, V::load(a), V::load(b));
        let y1 = interleaved(x1, V::load(a.add(lanes)), V::load(b.add(lanes)));
        V::store_rotated_pair(y0, y1, p);
    }
}

/// [`interleaved_step`] over eight vectors, phase by phase ([`Vector::WIDE_STEPS`]): every
/// load, then every swap, every product, every fused multiply-add and every store — eight
/// independent chains in flight whatever order the compiler keeps, and a schedule an
/// in-order core can issue without waiting on each result.
///
/// # Safety
///
/// `V`'s instruction set is available; `8·LANES` floats readable at `a`, `b` and readable
/// and writable at `p`.
#[inline(always)]
unsafe fn interleaved_wide_step<V: Stored<E>, E: Element>(p: *mut E, a: *const f32, b: *const f32) {
    const STEP: [usize; 8] = [0, 1, 2, 3, 4, 5, 6, 7];
    let lanes = V::LANES;
    // SAFETY: as the caller guarantees; vector `j` covers floats `j·LANES ..` of each array.
    unsafe {
        let x = STEP.map(|j| V::load_values(p.add(j * lanes)));
        let sines = STEP.map(|j| V::load(b.add(j * lanes)));
        let cosines = STEP.map(|j| V::load(a.add(j * lanes)));
        let swapped = x.map(|v| v.swap_pairs());
        let products = STEP.map(|j| swapped[j].mul(sines[j]));
        // `interleaved`'s arithmetic: `x·a + swap(x)·b`, the product with `a` fused.
        let out = STEP.map(|j| x[j].fmadd(cosines[j], products[j]));
        for j in [0, 2, 4, 6] {
            V::store_rotated_pair(out[j], out[j + 1], p.add(j * lanes));
        }
    }
}

/// The half-layout loop body of [`rotate_segments`]: a vector of pairs, first elements at
/// `lo` and second at `hi`, rotated by the cosines at `c` and signed sines at `s` (no
/// shuffle: two multiplies, two fused multiply-adds).
///
/// # Safety
///
/// `V`'s instruction set is available; `LANES` floats readable at `c`, `s` and readable and
/// writable at `lo`, `hi`.
#[inline(always)]
unsafe fn half_step<V: Stored<E>, E: Element>(
    lo: *mut E,
    hi: *mut E,
    c: *const f32,
    s: *const f32,
) {
    // SAFETY: as the caller guarantees.
    unsafe {
        let (xv, yv) = half(
            V::load_values(lo),
            V::load_values(hi),
            V::load(c),
            V::load(s),
        );
        xv.store_rotated(lo);
        yv.store_rotated(hi);
    }
}

/// [`half_step`] over four vectors of each half, phase by phase ([`Vector::WIDE_STEPS`]), as
/// [`interleaved_wide_step`] is.
///
/// # Safety
///
/// `V`'s instruction set is available; `4·LANES` floats readable at `c`, `s` and readable and
/// writable at `lo`, `hi`.
#[inline(always)]
unsafe fn half_wide_step<V: Stored<E>, E: Element>(
    lo: *mut E,
    hi: *mut E,
    c: *const f32,
    s: *const f32,
) {
    const STEP: [usize; 4] = [0, 1, 2, 3];
    let lanes = V::LANES;
    // SAFETY: as the caller guarantees; vector `j` covers floats `j·LANES ..` of each array.
    unsafe {
        let x = STEP.map(|j| V::load_values(lo.add(j * lanes)));
        let y = STEP.map(|j| V::load_values(hi.add(j * lanes)));
        let cosines = STEP.map(|j| V::load(c.add(j * lanes)));
        let sines = STEP.map(|j| V::load(s.add(j * lanes)));
        let ys = STEP.map(|j| y[j].mul(sines[j]));
        let xs = STEP.map(|j| x[j].mul(sines[j]));
        // `half`'s arithmetic: `(x·c − y·s, y·c + x·s)`, the products with `c` fused.
        let x_out = STEP.map(|j| x[j].fmsub(cosines[j], ys[j]));
        let y_out = STEP.map(|j| y[j].fmadd(cosines[j], xs[j]));
        if E::FORMAT == Format::F32 {
            // Nothing to narrow: each vector's two halves in turn (stored in pairs, an
            // in-order Cortex-A53 waits longer: llvm-mca's `neon half`, 31 → 34 cycles).
            for j in STEP {
                x_out[j].store_rotated(lo.add(j * lanes));
                y_out[j].store_rotated(hi.add(j * lanes));
            }
        } else {
            for j in [0, 2] {
                V::store_rotated_pair(x_out[j], x_out[j + 1], lo.add(j * lanes));
                V::store_rotated_pair(y_out[j], y_out[j + 1], hi.add(j * lanes));
            }
        }
    }
}

/// The split loop body ([`Form::Split`]): `LANES` interleaved `bf16` pairs at `p` split into
/// first and second elements as they load, rotated as [`half()`] rotates them by the cosines
/// `c` and signed sines `s`, and merged back as they store.
///
/// # Safety
///
/// `V`'s instruction set is available; `2·LANES` `bf16` values readable and writable at `p`.
#[inline(always)]
unsafe fn split_step<V: Bf16Pairs>(p: *mut u16, c: V, s: V) {
    // SAFETY: as the caller guarantees.
    unsafe {
        let (x, y) = V::load_bf16_pairs(p);
        let (x, y) = half(x, y, c, s);
        V::store_bf16_pairs(x, y, p);
    }
}

/// Most vectors of angles a head may take in registers ([`rotate_in_registers`]).
pub(super) const REGISTER_VECTORS: usize = 8;

/// The register loops' prefetch of half-layout heads: in buffers beyond L2 (over
/// [`Prefetch::FROM_BYTES`]), each head first asks ([`Vector::prefetch`]) for the lines
/// [`Prefetch::AHEAD`] bytes on. A half-layout head is read and written as two streams, its
/// halves, `d/2` values apart, and from memory the loop's time depended on where 4 KiB page
/// boundaries fell in the heads (the hardware prefetchers losing track of the two streams, it
/// seems; an `x = −x` stream, and interleaved pairs, did not). Measured on an Intel Xeon
/// (family 6, model 167; `avx512`, whose 256-bit loop takes such buffers; 1 024 tokens × 32
/// heads × d = 128, 16 MiB), the time ÷ the stream's by the buffer's address modulo 512:
/// without, 1.20–1.27 at 64–159 bytes, 1.05–1.10 at 256–351, 1.00–1.05 elsewhere; with,
/// 1.00–1.05, 1.05–1.13 at 128–159 (4 096 tokens × 16 heads: 1.26–1.27 at 64 and 128 bytes,
/// then 1.04–1.09). Buffers of 0.6–4 MiB showed no dependence on the address, and within L2
/// the prefetch only adds instructions.
#[derive(Clone, Copy)]
pub(super) struct Prefetch {
    /// The buffer's end; null when nothing is prefetched.
    end: *const u8,
}

impl Prefetch {
    /// How far ahead of the head being rotated: 1 KiB (1.5 and 2 KiB measured alike; 512 B
    /// left 1.06× at 128 bytes, 4 KiB 1.04–1.09× at every address).
    const AHEAD: usize = 1024;
    /// The largest buffer not prefetched: 1 MiB, as `avx512`'s 512-bit loop (at 0.6–1 MiB the
    /// prefetch measured 1.00–1.03× the time).
    const FROM_BYTES: usize = 1 << 20;

    /// No prefetch (the `llvm-mca` regions: the loops within L2).
    #[cfg(rope2d_mca)]
    const NONE: Self = Self {
        end: core::ptr::null(),
    };

    /// The prefetch of the loops over heads of `x` in `form`.
    #[inline(always)]
    fn of<E>(x: &[E], form: Form) -> Self {
        let bytes = size_of_val(x);
        let end = if matches!(form, Form::Half) && bytes > Self::FROM_BYTES {
            x.as_ptr().cast::<u8>().wrapping_add(bytes)
        } else {
            core::ptr::null()
        };
        Self { end }
    }

    /// Prefetches the `bytes` bytes [`AHEAD`](Self::AHEAD) of `head` when they are inside the
    /// buffer.
    ///
    /// # Safety
    ///
    /// `V`'s instruction set is available.
    #[inline(always)]
    unsafe fn head<V: Vector, E>(self, head: *const E, bytes: usize) {
        let from = head.cast::<u8>().wrapping_add(Self::AHEAD);
        // The null test first, so that no prefetch compiles to nothing where it is known.
        if !self.end.is_null() && from.wrapping_add(bytes) <= self.end {
            let mut line = 0;
            while line < bytes {
                // SAFETY: the instruction set is available (caller); a prefetch reads nothing.
                unsafe { V::prefetch(from.wrapping_add(line)) };
                line += 64;
            }
        }
    }
}

/// `$body` with the constant `$n` set to `count` when [`register_vectors`] found a head of
/// 1 ..= [`REGISTER_VECTORS`] vectors (each loop instantiated per count, its angles in
/// arrays of registers), else `$other`: one dispatch for every register-form loop.
macro_rules! with_register_count {
    ($count:expr, $n:ident => $body:expr, _ => $other:expr $(,)?) => {
        with_register_count!(@arms $count, $n, $body, $other; 1 2 3 4 5 6 7 8)
    };
    (@arms $count:expr, $n:ident, $body:expr, $other:expr; $($k:literal)*) => {{
        const _: () = assert!(REGISTER_VECTORS == 8);
        match $count {
            $(Some($k) => {
                const $n: usize = $k;
                $body
            })*
            _ => $other,
        }
    }};
}

/// `Some(N)` when `V`'s loops hold a head's angles in `N` registers of each array
/// ([`rotate_in_registers`], [`line_in_registers`]): the rotated pairs are the whole head
/// (full rotary) and fill `N ≤ REGISTER_VECTORS` whole vectors — `N · LANES` floats
/// interleaved, `N · LANES` pairs in the half layout. Otherwise the loops read the angles
/// from memory, a head's last vector masked.
#[inline(always)]
fn register_vectors<V: Vector>(head_dim: usize, form: Form, pairs: usize) -> Option<usize> {
    let unit = match form.row() {
        Layout::Interleaved => head_dim,
        Layout::Half => pairs,
    };
    let vectors = unit / V::LANES;
    (2 * pairs == head_dim
        && unit.is_multiple_of(V::LANES)
        && (1..=REGISTER_VECTORS).contains(&vectors))
    .then_some(vectors)
}

/// Whether `V`'s register form takes heads of `head_dim` values of `E` paired as `pairing`
/// ([`register_vectors`]): for `avx512`, which chooses between vector widths per call.
#[cfg(all(target_arch = "x86_64", feature = "avx2", feature = "avx512"))]
#[inline(always)]
pub(super) fn holds_in_registers<V: Vector, E: Element>(head_dim: usize, pairing: Pairing) -> bool {
    register_vectors::<V>(head_dim, Form::of::<E>(pairing.layout), pairing.pairs).is_some()
}

/// Whether pairs `first .. first + len` start and end on whole vectors of `V`'s register
/// form for values of `E` paired as `pairing`: then a line's or grid's loop reads them from
/// their own table with whole-vector loads.
#[inline(always)]
fn splits<V: Vector, E: Element>(pairing: Pairing, first: usize, len: usize) -> bool {
    let unit = register_unit::<V>(Form::of::<E>(pairing.layout));
    first.is_multiple_of(unit) && len.is_multiple_of(unit)
}

/// Whether every one of `runs` starts and ends on a whole vector of `V`'s register form
/// ([`splits`]): then the grid and token loops read the table entries straight into
/// registers ([`grid_from_entries`], [`tokens_from_entries`]).
#[cfg(all(target_arch = "x86_64", feature = "avx2", feature = "avx512"))]
#[inline(always)]
pub(super) fn splits_runs<V: Stored<E>, E: Element>(
    pairing: Pairing,
    runs: &[crate::spec::Run],
) -> bool {
    // A loop, not `Iterator::all`, which is not inlined into the dispatch.
    for run in runs {
        if !splits::<V, E>(pairing, run.first, run.len) {
            return false;
        }
    }
    true
}

/// Pairs per vector of angles in the register form: `LANES / 2` interleaved, `LANES` half.
#[inline(always)]
fn register_unit<V: Vector>(form: Form) -> usize {
    match form.row() {
        Layout::Interleaved => V::LANES / 2,
        Layout::Half => V::LANES,
    }
}

/// [`rotate_segments`] for heads that are exactly `N` vectors of rotated floats (full rotary
/// dimension, no tail): the angles are loaded into registers once and every head of `x` is
/// rotated from them — for small heads, where the row's loads would cost as much as the
/// rotation.
///
/// # Safety
///
/// As for [`rotate_segments`]; moreover `2·pairs = head_dim = N · LANES` (interleaved) or
/// `pairs = N · LANES` with `2·pairs = head_dim` (half).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
unsafe fn rotate_in_registers<V: Stored<E>, E: Element, const N: usize>(
    x: &mut [E],
    head_dim: usize,
    form: Form,
    angles: Angles,
) {
    let lanes = V::LANES;
    // SAFETY: the instruction set is available (caller).
    let zero = unsafe { V::splat(0.0) };
    let (mut a, mut b) = ([zero; N], [zero; N]);
    let unit = match form.row() {
        Layout::Interleaved => 1,
        Layout::Half => 2,
    };
    for j in 0..N {
        // The vector's first pair (interleaved: float index; half: pair index).
        let at = j * lanes;
        let (pa, pb) = angles.at(at / (2 / unit));
        // SAFETY: vector `j` lies inside one segment (its boundaries are multiples of a
        // vector), whose arrays are readable there (caller); a table section's pointers are
        // shifted, so the offset wraps and only its in-bounds result is read.
        unsafe {
            a[j] = V::load(pa.wrapping_add(at));
            b[j] = V::load(pb.wrapping_add(at));
        }
    }
    // SAFETY: as the caller guarantees.
    unsafe { heads_from_registers::<V, E, N>(x, head_dim, form, &a, &b) }
}

/// Every head of `x` rotated by the angles `a`, `b` held in `N` registers each.
///
/// # Safety
///
/// As for [`rotate_in_registers`].
#[inline(always)]
unsafe fn heads_from_registers<V: Stored<E>, E: Element, const N: usize>(
    x: &mut [E],
    head_dim: usize,
    form: Form,
    a: &[V; N],
    b: &[V; N],
) {
    let prefetch = Prefetch::of(x, form);
    let base = x.as_mut_ptr();
    let len = x.len();
    let mut head = 0;
    while head + head_dim <= len {
        // SAFETY: the head is floats `head .. head + d` of `x` (`d = N · LANES`, or twice
        // that for the half layout's two halves).
        unsafe { head_from_registers::<V, E, N>(base.add(head), form, a, b, prefetch) };
        head += head_dim;
    }
}

/// One head of `N` vectors (of floats, or of pairs for [`Form::Half`] and [`Form::Split`]) at
/// `p`, rotated by angles held in registers.
///
/// # Safety
///
/// `V`'s instruction set is available; the head's `N·LANES` floats (interleaved) or `2·N·LANES`
/// (half, split) readable and writable at `p`.
#[inline(always)]
unsafe fn head_from_registers<V: Stored<E>, E: Element, const N: usize>(
    p: *mut E,
    form: Form,
    a: &[V; N],
    b: &[V; N],
    prefetch: Prefetch,
) {
    // SAFETY: the instruction set is available (caller); the half layout's head is
    // `2·N·LANES` values (the only form `prefetch` is not null for).
    unsafe { prefetch.head::<V, E>(p, 2 * N * V::LANES * size_of::<E>()) };
    let mut j = 0;
    while j + 1 < N {
        // SAFETY: vectors `j`, `j + 1 < N` of the head (caller).
        unsafe {
            vectors_from_registers::<V, E, N>(p, form, j, [a[j], a[j + 1]], [b[j], b[j + 1]])
        };
        j += 2;
    }
    if j < N {
        // SAFETY: vector `j < N` of the head (caller).
        unsafe { vector_from_registers::<V, E, N>(p, form, j, a[j], b[j]) };
    }
}

/// Vector `j` of the head of `N` vectors at `p` (as [`head_from_registers`]), rotated by the
/// angles `a`, `b`.
///
/// # Safety
///
/// As for [`head_from_registers`]; `j < N`.
#[inline(always)]
unsafe fn vector_from_registers<V: Stored<E>, E: Element, const N: usize>(
    p: *mut E,
    form: Form,
    j: usize,
    a: V,
    b: V,
) {
    let lanes = V::LANES;
    // SAFETY: vector `j` of the head (interleaved: floats `j·LANES ..`; half: pairs
    // `j·LANES ..` of each half; split: values `2·j·LANES ..`), inside it (caller).
    unsafe {
        match form {
            Form::Interleaved => {
                let q = p.add(j * lanes);
                interleaved(V::load_values(q), a, b).store_rotated(q);
            }
            Form::Half => {
                let (lo, hi) = (p.add(j * lanes), p.add((N + j) * lanes));
                let (xv, yv) = half(V::load_values(lo), V::load_values(hi), a, b);
                xv.store_rotated(lo);
                yv.store_rotated(hi);
            }
            // `E` is `bf16` (`Form::of`): its values are `u16` bit patterns.
            Form::Split => split_step::<V>(p.add(2 * j * lanes).cast(), a, b),
        }
    }
}

/// Vectors `j` and `j + 1` of the head of `N` vectors at `p` (as [`head_from_registers`]),
/// rotated by the angles `a`, `b` (one per vector) and stored as pairs
/// ([`Stored::store_rotated_pair`]).
///
/// # Safety
///
/// As for [`head_from_registers`]; `j + 1 < N`.
#[inline(always)]
unsafe fn vectors_from_registers<V: Stored<E>, E: Element, const N: usize>(
    p: *mut E,
    form: Form,
    j: usize,
    a: [V; 2],
    b: [V; 2],
) {
    let lanes = V::LANES;
    let narrowed = E::FORMAT != Format::F32;
    // SAFETY: vectors `j` and `j + 1` of the head, consecutive in memory in each form
    // (interleaved: floats `j·LANES .. (j + 2)·LANES`; half: pairs `j·LANES ..` of each
    // half), inside it (caller).
    unsafe {
        match form {
            Form::Interleaved if narrowed => {
                let q = p.add(j * lanes);
                let y0 = interleaved(V::load_values(q), a[0], b[0]);
                let y1 = interleaved(V::load_values(q.add(lanes)), a[1], b[1]);
                V::store_rotated_pair(y0, y1, q);
            }
            Form::Half if narrowed => {
                let (lo, hi) = (p.add(j * lanes), p.add((N + j) * lanes));
                let (x0, y0) = half(V::load_values(lo), V::load_values(hi), a[0], b[0]);
                let (x1, y1) = half(
                    V::load_values(lo.add(lanes)),
                    V::load_values(hi.add(lanes)),
                    a[1],
                    b[1],
                );
                V::store_rotated_pair(x0, x1, lo);
                V::store_rotated_pair(y0, y1, hi);
            }
            // `f32` has nothing to narrow: one vector at a time, each one's values live the
            // shortest (two at once, `f32`'s half layout at 8 vectors spills on AVX2,
            // llvm-mca's `half_registers8`). The split form (interleaved `bf16`) rotates and
            // stores each vector's words in `split_step`.
            _ => {
                vector_from_registers::<V, E, N>(p, form, j, a[0], b[0]);
                vector_from_registers::<V, E, N>(p, form, j + 1, a[1], b[1]);
            }
        }
    }
}

/// For each vector `j` whose bit is set in `vectors`, a mask of its lanes whose float index in
/// the head (`j · LANES + lane`) lies in `from .. to` (all bits set there, zero elsewhere);
/// zero for the other vectors. For [`Vector::select`].
///
/// # Safety
///
/// `V`'s instruction set is available.
#[inline(always)]
unsafe fn lane_masks<V: Vector, const N: usize>(
    vectors: u32,
    (from, to): (usize, usize),
) -> [V; N] {
    let lanes = V::LANES;
    // SAFETY: the instruction set is available (caller).
    let mut masks = [unsafe { V::splat(0.0) }; N];
    for (j, mask) in masks.iter_mut().enumerate() {
        if vectors & (1 << j) != 0 {
            let mut lanes_of = [0f32; MAX_LANES];
            for (i, lane) in lanes_of.iter_mut().enumerate().take(lanes) {
                if (from..to).contains(&(j * lanes + i)) {
                    *lane = f32::from_bits(u32::MAX);
                }
            }
            // SAFETY: the instruction set is available (caller); `MAX_LANES` floats.
            *mask = unsafe { V::load(lanes_of.as_ptr()) };
        }
    }
    masks
}

/// [`Kernel::rotate_line_split`] for heads of exactly `N` vectors: the row's vectors load into
/// registers once per line, each token's section from the table, and every head is rotated
/// from registers. `lines` holds whole lines of `line_len` floats, each rotated by the row at
/// `(ra, rb)`. A vector the section shares with the row (Wan's
/// 22/21/21 pairs, FLUX's 8/28/28 in 512-bit vectors) is loaded whole from both, once a line
/// from the row and once a token from the table, and its lanes selected: no row staged and
/// reloaded per token, whose stores the reloads wait for (figures at
/// [`Kernel::line_table_lead`]'s implementation).
///
/// # Safety
///
/// As for [`rotate_in_registers`], with `split(t)` the table arrays token `t` of a line reads
/// for the vectors that hold pairs `first .. end`, readable at every float of those vectors
/// (when `first` or `end` is not a multiple of a vector, the table's floats around the
/// section), and the row arrays of every line readable for the other vectors and for those
/// the section shares.
#[allow(clippy::too_many_arguments)]
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub(super) unsafe fn line_in_registers<V: Stored<E>, E: Element, const N: usize>(
    lines: &mut [E],
    line_len: usize,
    token_len: usize,
    head_dim: usize,
    form: Form,
    (ra, rb): (*const f32, *const f32),
    (first, end): (usize, usize),
    split: impl Fn(usize) -> (*const f32, *const f32),
) {
    let lanes = V::LANES;
    // Vector `j` covers pairs from `j · per`.
    let per = match form.row() {
        Layout::Interleaved => lanes / 2,
        Layout::Half => lanes,
    };
    let (j0, j1) = (first / per, end.div_ceil(per));
    // Vectors `j0 .. j1` (the section) come from the table, moving `step` bytes from one token
    // to the next; the others from the line's row. Once the loops over `N` unroll, every
    // index into `a` and `b` is a constant (only the tests against `j0`, `j1` are not), so
    // they stay in registers.
    let (sa, sb) = split(0);
    let (sa1, _) = split(1);
    let step = (sa1 as usize).wrapping_sub(sa as usize);
    let in_section = |j: usize| j >= j0 && j < j1;
    // SAFETY: the instruction set is available (caller).
    let zero = unsafe { V::splat(0.0) };
    let (mut a, mut b) = ([zero; N], [zero; N]);
    // The section's vectors that the row shares (its first and last, when the section does
    // not start or end on a vector): bit `j` of `shared`, the lanes the section owns set in
    // `owned[j]`, the row's part of the line in `(ka[j], kb[j])`.
    let scale = lanes / per;
    let (from, to) = (scale * first, scale * end);
    let shared = (u32::from(!from.is_multiple_of(lanes)) << j0)
        | (u32::from(!to.is_multiple_of(lanes)) << j1.saturating_sub(1));
    // SAFETY: the instruction set is available (caller).
    let owned = unsafe { lane_masks::<V, N>(shared, (from, to)) };
    let (mut ka, mut kb) = ([zero; N], [zero; N]);
    // Counted loops over one pointer: a small grid's token is a few vectors (two heads of
    // two, say), so the loops' own instructions are a good part of each token's. A token
    // is a whole number of heads (`heads · head_dim`, `apply`), so the heads of a line's
    // tokens follow each other.
    debug_assert!(head_dim != 0 && token_len.is_multiple_of(head_dim));
    let line_count = lines.len().checked_div(line_len).unwrap_or(0);
    let tokens = line_len.checked_div(token_len).unwrap_or(0);
    let heads = token_len.checked_div(head_dim).unwrap_or(0);
    let prefetch = Prefetch::of(lines, form);
    let mut line = lines.as_mut_ptr();
    for _ in 0..line_count {
        // The row's vectors, once for the whole line: reloading them for every token made a
        // small grid's token loop load-bound (Zen 4, measured when `tiny` and `vit_s` took
        // this loop: 281 → 232 ns and 3.51 → 3.16 µs).
        for j in 0..N {
            if !in_section(j) || shared & (1 << j) != 0 {
                // SAFETY: vector `j` of this line's row (caller).
                unsafe {
                    ka[j] = V::load(ra.wrapping_add(j * lanes));
                    kb[j] = V::load(rb.wrapping_add(j * lanes));
                }
                (a[j], b[j]) = (ka[j], kb[j]);
            }
        }
        let (mut pa, mut pb) = (sa, sb);
        let mut head = line;
        for _ in 0..tokens {
            for j in 0..N {
                if in_section(j) {
                    // SAFETY: vector `j` of this token's section in the table (caller); the
                    // pointers only advance by whole sections of the table. They are shifted
                    // (they may point before the table), so their offsets wrap: only the
                    // in-bounds result is dereferenced.
                    unsafe {
                        a[j] = V::load(pa.wrapping_add(j * lanes));
                        b[j] = V::load(pb.wrapping_add(j * lanes));
                        if shared & (1 << j) != 0 {
                            a[j] = V::select(owned[j], a[j], ka[j]);
                            b[j] = V::select(owned[j], b[j], kb[j]);
                        }
                    }
                }
            }
            (pa, pb) = (pa.wrapping_byte_add(step), pb.wrapping_byte_add(step));
            for _ in 0..heads {
                // SAFETY: the head is `d` floats of `lines`: the heads of a token, the tokens
                // of a line and the lines are counted to fit in `lines` (so advancing past the
                // last one stays one past the end at most).
                unsafe {
                    head_from_registers::<V, E, N>(head, form, &a, &b, prefetch);
                    head = head.add(head_dim);
                }
            }
        }
        // SAFETY: as above.
        unsafe { line = line.add(line_len) };
    }
}

/// One table of [`tokens_in_registers`]: coordinate `c`'s angles for pairs `first .. end`
/// start `c · stride` floats after the arrays `(a, b)` (shifted so that float `j · LANES` of
/// a head reads the table's vector `j`); `count` coordinates.
#[derive(Clone, Copy)]
pub(super) struct TokenTable {
    a: *const f32,
    b: *const f32,
    stride: usize,
    count: usize,
    first: usize,
    end: usize,
}

/// [`Kernel::rotate_tokens_split`] for heads of exactly `N` vectors: each token's vectors load
/// into registers from the two tables at its coordinates — a vector both sections share
/// (Qwen2-VL's 20/20 pairs in vectors of 8) loaded from both and its lanes selected — and
/// every head is rotated from registers. No row is staged and reloaded per token.
///
/// # Safety
///
/// As for [`rotate_in_registers`]; moreover each table's arrays are readable at the floats of
/// its vectors `first / per .. end.div_ceil(per)` for every coordinate below its `count`, the
/// two sections are disjoint and make up every pair of a head.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub(super) unsafe fn tokens_in_registers<
    V: Stored<E>,
    E: Element,
    const N: usize,
    const A: usize,
>(
    x: &mut [E],
    token_len: usize,
    head_dim: usize,
    form: Form,
    tables: [TokenTable; 2],
    axes: [usize; 2],
    mut positions: impl Iterator<Item = [u32; A]>,
) {
    let lanes = V::LANES;
    let per = register_unit::<V>(form);
    // Bit `j` of `from[k]`: vector `j` reads table `k`.
    let mut from = [0u32; 2];
    for (bits, t) in from.iter_mut().zip(&tables) {
        for j in t.first / per..t.end.div_ceil(per).min(N) {
            *bits |= 1 << j;
        }
    }
    // SAFETY: the instruction set is available (caller).
    let zero = unsafe { V::splat(0.0) };
    // A vector both tables cover takes the lanes of table 1's pairs from table 1.
    let scale = lanes / per;
    let owned_by_1 = (scale * tables[1].first, scale * tables[1].end);
    // SAFETY: the instruction set is available (caller).
    let owned = unsafe { lane_masks::<V, N>(from[0] & from[1], owned_by_1) };
    let (mut a, mut b) = ([zero; N], [zero; N]);
    debug_assert!(head_dim != 0 && token_len.is_multiple_of(head_dim));
    let tokens = x.len().checked_div(token_len).unwrap_or(0);
    let heads = token_len.checked_div(head_dim).unwrap_or(0);
    let prefetch = Prefetch::of(x, form);
    let mut head = x.as_mut_ptr();
    for _ in 0..tokens {
        let Some(position) = positions.next() else {
            return;
        };
        // A coordinate past a table reads its last row: wrong angles, never memory out of
        // bounds (the engine rotates positions inside the tables only).
        let at = |k: usize| {
            let t = tables[k];
            let c = position.get(axes[k]).map_or(0, |&c| c as usize);
            let offset = c.min(t.count.saturating_sub(1)) * t.stride;
            (t.a.wrapping_add(offset), t.b.wrapping_add(offset))
        };
        let ((a0, b0), (a1, b1)) = (at(0), at(1));
        for j in 0..N {
            // SAFETY: vector `j` of the coordinate's rows of the tables that cover it
            // (caller). The arrays are shifted (they may point before the tables), so their
            // offsets wrap: only the in-bounds results are dereferenced.
            unsafe {
                if from[0] & (1 << j) != 0 {
                    a[j] = V::load(a0.wrapping_add(j * lanes));
                    b[j] = V::load(b0.wrapping_add(j * lanes));
                }
                if from[1] & (1 << j) != 0 {
                    let (va, vb) = (
                        V::load(a1.wrapping_add(j * lanes)),
                        V::load(b1.wrapping_add(j * lanes)),
                    );
                    if from[0] & (1 << j) != 0 {
                        a[j] = V::select(owned[j], va, a[j]);
                        b[j] = V::select(owned[j], vb, b[j]);
                    } else {
                        (a[j], b[j]) = (va, vb);
                    }
                }
            }
        }
        for _ in 0..heads {
            // SAFETY: the head is `d` floats of `x`: the heads of a token and the tokens are
            // counted to fit in `x` (so advancing past the last one stays one past the end at
            // most).
            unsafe {
                head_from_registers::<V, E, N>(head, form, &a, &b, prefetch);
                head = head.add(head_dim);
            }
        }
    }
}

/// Where vector `j` of a token's register form reads its table entries: `[cos, sin]` floats
/// at `at + c · stride` for the token's coordinate `c` on `axis`, which
/// [`tokens_from_entries`] clamps to `last` and [`grid_from_entries`] takes from the grid
/// (whose coordinates its caller checked against the tables).
#[derive(Clone, Copy)]
pub(super) struct EntryVector {
    at: *const f32,
    stride: usize,
    last: usize,
    axis: usize,
}

/// The sign bits that turn a vector's sines into the register form's `b` for direction `dir`
/// ([`angles_from_entries`]): the lanes `prepare` multiplies by −1.
///
/// # Safety
///
/// `V`'s instruction set is available.
#[inline(always)]
unsafe fn sine_flips<V: Vector>(layout: Layout, dir: Direction) -> V {
    // SAFETY: as the caller guarantees. `±1 · 0` is `±0`: the sign bits alone.
    unsafe {
        match layout {
            Layout::Interleaved => V::alternating(dir == Direction::Inverse).mul(V::splat(0.0)),
            Layout::Half => V::splat(sine_sign(dir) * 0.0),
        }
    }
}

/// Vector `j`'s angles in the register form from the table entries at `e` (`[cos, sin]`
/// floats of its first pair on), the sines' signs flipped by `flips` ([`sine_flips`]): the
/// values of `prepare` (a sign flipped is the product by −1), so the same bits as a staged
/// row.
///
/// # Safety
///
/// `V`'s instruction set is available; a vector's pairs of entries readable at `e`.
#[inline(always)]
unsafe fn angles_from_entries<V: Vector>(layout: Layout, e: *const f32, flips: V) -> (V, V) {
    // SAFETY: as the caller guarantees.
    unsafe {
        match layout {
            Layout::Interleaved => {
                let v = V::load(e);
                (v.dup_even(), v.dup_odd().xor(flips))
            }
            Layout::Half => {
                let (c, s) = V::deinterleave(V::load(e), V::load(e.add(V::LANES)));
                (c, s.xor(flips))
            }
        }
    }
}

/// [`Kernel::rotate_tokens_from_tables`] for heads of exactly `N` vectors: each token's
/// vectors load into registers straight from the table entries at its coordinates
/// (`vectors`), and every head is rotated from registers — no row staged, no per-token
/// bookkeeping beyond a clamped offset per vector.
///
/// # Safety
///
/// As for [`rotate_in_registers`]; moreover for each of the first `N` of `vectors`, a
/// vector's pairs of entries are readable at `at + c · stride` for every `c ≤ last`.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub(super) unsafe fn tokens_from_entries<
    V: Stored<E>,
    E: Element,
    const N: usize,
    const A: usize,
>(
    x: &mut [E],
    token_len: usize,
    head_dim: usize,
    form: Form,
    dir: Direction,
    vectors: &[EntryVector; REGISTER_VECTORS],
    mut positions: impl Iterator<Item = [u32; A]>,
) {
    // SAFETY: the instruction set is available (caller).
    let zero = unsafe { V::splat(0.0) };
    let (mut a, mut b) = ([zero; N], [zero; N]);
    // SAFETY: the instruction set is available (caller).
    let flips = unsafe { sine_flips::<V>(form.row(), dir) };
    debug_assert!(head_dim != 0 && token_len.is_multiple_of(head_dim));
    let tokens = x.len().checked_div(token_len).unwrap_or(0);
    let heads = token_len.checked_div(head_dim).unwrap_or(0);
    let prefetch = Prefetch::of(x, form);
    let mut head = x.as_mut_ptr();
    for _ in 0..tokens {
        let Some(position) = positions.next() else {
            return;
        };
        for j in 0..N {
            let v = vectors[j];
            // A coordinate past a table reads its last row: wrong angles, never memory out
            // of bounds (the engine rotates positions inside the tables only).
            let c = position.get(v.axis).map_or(0, |&c| c as usize).min(v.last);
            // SAFETY: vector `j`'s entries of coordinate `c ≤ last` (caller).
            (a[j], b[j]) = unsafe {
                angles_from_entries::<V>(form.row(), v.at.wrapping_add(c * v.stride), flips)
            };
        }
        for _ in 0..heads {
            // SAFETY: the head is `d` values of `x`: the heads of a token and the tokens are
            // counted to fit in `x` (so advancing past the last one stays one past the end at
            // most).
            unsafe {
                head_from_registers::<V, E, N>(head, form, &a, &b, prefetch);
                head = head.add(head_dim);
            }
        }
    }
}

/// Where each vector of a head's register form reads its entries, when heads of `head_dim`
/// values of `E` paired as `pairing` are `V`'s register form and `runs` fall on its whole
/// vectors, together covering every vector once. `last_row(axis, width, len)`: the last
/// coordinate whose entries a loop may read from the axis' table (`len` entries, rows of
/// `width`), `None` to refuse. `None` when any of this fails; vectors past the head's keep a
/// null `at`.
#[inline(always)]
fn entry_vectors<V: Vector, E: Element, const A: usize>(
    head_dim: usize,
    pairing: Pairing,
    runs: &[crate::spec::Run],
    tables: ([&[[f32; 2]]; A], [usize; A]),
    last_row: impl Fn(usize, usize, usize) -> Option<usize>,
) -> Option<[EntryVector; REGISTER_VECTORS]> {
    let form = Form::of::<E>(pairing.layout);
    let count = register_vectors::<V>(head_dim, form, pairing.pairs)?;
    let unit = register_unit::<V>(form);
    let mut vectors = [EntryVector {
        at: core::ptr::null(),
        stride: 0,
        last: 0,
        axis: 0,
    }; REGISTER_VECTORS];
    // Every vector covered by exactly one run: bit `j` of `seen` for vector `j`.
    let mut seen = 0u32;
    for run in runs {
        let (Some(table), Some(&width)) = (tables.0.get(run.axis), tables.1.get(run.axis)) else {
            return None;
        };
        if !run.first.is_multiple_of(unit) || !run.len.is_multiple_of(unit) {
            return None;
        }
        // The run's entries of every coordinate up to `last` lie inside the table.
        let last = last_row(run.axis, width, table.len())?;
        if run
            .column
            .checked_add(run.len)
            .is_none_or(|end| end > width)
        {
            return None;
        }
        let at = table.as_ptr().cast::<f32>().wrapping_add(2 * run.column);
        for (k, j) in (run.first / unit..(run.first + run.len) / unit).enumerate() {
            if j >= count || seen & (1 << j) != 0 {
                return None;
            }
            seen |= 1 << j;
            if let Some(slot) = vectors.get_mut(j) {
                *slot = EntryVector {
                    at: at.wrapping_add(2 * k * unit),
                    stride: 2 * width,
                    last,
                    axis: run.axis,
                };
            }
        }
    }
    (seen == (1u32 << count) - 1).then_some(vectors)
}

/// [`Kernel::rotate_grid_from_tables`] for heads of exactly `N` vectors: the vectors of the
/// axes before the last load into registers from the table entries once per line, the last
/// axis' once per token, and every head is rotated from registers.
///
/// # Safety
///
/// As for [`rotate_in_registers`]; moreover for each of the first `N` of `vectors`, a
/// vector's pairs of entries are readable at `at + c · stride` for every coordinate `c` of its
/// axis in the grid (`origin .. origin + extents`); `line_len` is `extents[A − 1] ·
/// token_len`, not zero; `x` holds at most the grid's lines (`line_len` times the product of
/// the other extents), so every line rotated is one of the grid's.
#[allow(clippy::too_many_arguments)]
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub(super) unsafe fn grid_from_entries<V: Stored<E>, E: Element, const N: usize, const A: usize>(
    x: &mut [E],
    line_len: usize,
    token_len: usize,
    head_dim: usize,
    form: Form,
    dir: Direction,
    vectors: &[EntryVector; REGISTER_VECTORS],
    origin: [u32; A],
    extents: [usize; A],
) {
    // SAFETY: the instruction set is available (caller).
    let zero = unsafe { V::splat(0.0) };
    let (mut a, mut b) = ([zero; N], [zero; N]);
    // SAFETY: the instruction set is available (caller).
    let flips = unsafe { sine_flips::<V>(form.row(), dir) };
    debug_assert!(head_dim != 0 && token_len.is_multiple_of(head_dim));
    let last = A - 1;
    let lines = x.len().checked_div(line_len).unwrap_or(0);
    let tokens = extents[last];
    let heads = token_len.checked_div(head_dim).unwrap_or(0);
    // Vector `j` of a token reads its line's entries (`a`, `b` set once a line) unless bit
    // `j` of `varying` is set: then those at `from[j]` moved on by one coordinate a token
    // (the last axis has one table: one offset `along` for them all).
    let (mut varying, mut from, mut stride) = (0u32, [core::ptr::null::<f32>(); N], 0);
    for j in 0..N {
        let v = vectors[j];
        if v.axis == last {
            varying |= 1 << j;
            from[j] =
                v.at.wrapping_add((origin[last] as usize).wrapping_mul(v.stride));
            stride = v.stride;
        }
    }
    // Heads of 8 vectors whose line and token angles are their two halves (2-D axial
    // grids), on vectors with fewer angle registers (AVX2): the token's half in registers,
    // the line's read by the head loop from memory. Held in arrays, the 16 angle vectors were
    // spilled and moved between registers and the stack at every token (about 45 `vmovaps`
    // a token, a quarter of `vit_s`'s time on an AMD Zen 3).
    const HALF: usize = REGISTER_VECTORS / 2;
    let token_half = match varying {
        _ if N != 2 * HALF || N <= V::ANGLE_REGISTERS => None,
        0x0F => Some(0),
        0xF0 => Some(HALF),
        _ => None,
    };
    let prefetch = Prefetch::of(x, form);
    let mut position = origin;
    let mut head = x.as_mut_ptr();
    for _ in 0..lines {
        for j in 0..N {
            let v = vectors[j];
            if varying & (1 << j) == 0 {
                let p = v.at.wrapping_add(position[v.axis] as usize * v.stride);
                // SAFETY: vector `j`'s entries of a coordinate in the grid (caller).
                (a[j], b[j]) = unsafe { angles_from_entries::<V>(form.row(), p, flips) };
            }
        }
        let mut along = 0;
        if let Some(first) = token_half {
            let line_first = HALF - first;
            let mut line = [zero; 2 * HALF];
            for k in 0..HALF {
                (line[k], line[HALF + k]) = (a[line_first + k], b[line_first + k]);
            }
            // Opaque to the optimiser, so that it reads the line's angles in the head loop
            // (memory operands) rather than hoisting them into registers it does not have.
            let line = core::hint::black_box(&line);
            for _ in 0..tokens {
                let (mut ta, mut tb) = ([zero; HALF], [zero; HALF]);
                for k in 0..HALF {
                    // SAFETY: vector `first + k`'s entries (it varies along the line) of
                    // the token's coordinate on the last axis, inside the grid (caller).
                    (ta[k], tb[k]) = unsafe {
                        angles_from_entries::<V>(
                            form.row(),
                            from[first + k].wrapping_add(along),
                            flips,
                        )
                    };
                }
                along += stride;
                for _ in 0..heads {
                    // SAFETY: the head is `d` values of `x`, counted as below; vectors
                    // `first + k` and `line_first + k` are below `N = 2·HALF`.
                    unsafe {
                        prefetch.head::<V, E>(head, 2 * N * V::LANES * size_of::<E>());
                        // In pairs of vectors (`HALF` is even).
                        for k in (0..HALF).step_by(2) {
                            let (a, b) = ([ta[k], ta[k + 1]], [tb[k], tb[k + 1]]);
                            vectors_from_registers::<V, E, N>(head, form, first + k, a, b);
                        }
                        for k in (0..HALF).step_by(2) {
                            let a = [line[k], line[k + 1]];
                            let b = [line[HALF + k], line[HALF + k + 1]];
                            vectors_from_registers::<V, E, N>(head, form, line_first + k, a, b);
                        }
                        head = head.add(head_dim);
                    }
                }
            }
            super::engine::next_line(&mut position, origin, extents);
            continue;
        }
        for _ in 0..tokens {
            for j in 0..N {
                if varying & (1 << j) != 0 {
                    // SAFETY: as above, the token's coordinate on the last axis.
                    (a[j], b[j]) = unsafe {
                        angles_from_entries::<V>(form.row(), from[j].wrapping_add(along), flips)
                    };
                }
            }
            along += stride;
            for _ in 0..heads {
                // SAFETY: the head is `d` values of `x`: the heads of a token, the tokens of a
                // line and the lines are counted to fit in `x`.
                unsafe {
                    head_from_registers::<V, E, N>(head, form, &a, &b, prefetch);
                    head = head.add(head_dim);
                }
            }
        }
        super::engine::next_line(&mut position, origin, extents);
    }
}

/// Rotates every head of `x` by a token's row (its arrays `a` and `b`): in registers when the
/// heads allow it ([`rotate_in_registers`]), else from memory.
///
/// # Safety
///
/// As for [`rotate_segments`], the segments being the row's `pairs` pairs.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub(super) unsafe fn rotate<V: Stored<E>, E: Element>(
    x: &mut [E],
    head_dim: usize,
    form: Form,
    pairs: usize,
    (a, b): (*const f32, *const f32),
) {
    let angles = Angles {
        a,
        b,
        first: 0,
        end: 0,
        split: (a, b),
    };
    with_register_count!(
        register_vectors::<V>(head_dim, form, pairs),
        // SAFETY: the heads are exactly `N` vectors (`register_vectors`); the rest as the
        // caller guarantees.
        N => unsafe { rotate_in_registers::<V, E, N>(x, head_dim, form, angles) },
        _ => {
            let (segments, count) = angles.segments(pairs);
            let segments = segments.get(..count).unwrap_or(&[]);
            // SAFETY: as the caller guarantees.
            unsafe { rotate_segments::<V, E>(x, head_dim, form, pairs, segments) }
        },
    )
}

/// `[cos, sin]` of `α + β` for each pair of `a` and `b` into `out`, exactly as scalar forms
/// it (`cα·cβ − sα·sβ`, `sα·cβ + cα·sβ`, no fused multiply-add).
///
/// # Safety
///
/// `V`'s instruction set is available; `out`, `a`, `b` have the same length.
#[inline(always)]
unsafe fn sum_entries<V: Vector>(out: &mut [[f32; 2]], a: &[[f32; 2]], b: &[[f32; 2]]) {
    let n = out.len();
    let (o, pa, pb) = (
        out.as_mut_ptr().cast::<f32>(),
        a.as_ptr().cast::<f32>(),
        b.as_ptr().cast::<f32>(),
    );
    let lanes = V::LANES;
    let mut k = 0;
    while k + lanes / 2 <= n {
        // SAFETY: the instruction set is available (caller); floats `2k .. 2k + lanes ≤ 2n`
        // of all three.
        unsafe {
            let (va, vb) = (V::load(pa.add(2 * k)), V::load(pb.add(2 * k)));
            // Even lanes: cα·cβ − sα·sβ; odd lanes: sα·cβ + cα·sβ.
            let sum = va
                .mul(vb.dup_even())
                .addsub(va.swap_pairs().mul(vb.dup_odd()));
            sum.store(o.add(2 * k));
        }
        k += lanes / 2;
    }
    for ((slot, &[ca, sa]), &[cb, sb]) in out.iter_mut().zip(a).zip(b).skip(k) {
        *slot = [ca * cb - sa * sb, sa * cb + ca * sb];
    }
}

/// RoPE-Mixed for one head whose pairs fill whole vectors: each vector's angle sums (as
/// [`sum_entries`] forms them) go straight into the rotation — the arithmetic of
/// [`prepare`] then [`rotate_segments`], without the trip through memory.
///
/// # Safety
///
/// `V`'s instruction set is available; `head` holds `2·pairs` floats (the half layout's
/// second half at `head + pairs`), `a` and `b` `pairs` entries each; `pairs` is a multiple of
/// `LANES / 2` (interleaved) or `LANES` (half).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
unsafe fn summed_head<V: Stored<E>, E: Element>(
    head: *mut E,
    a: *const f32,
    b: *const f32,
    pairs: usize,
    layout: Layout,
    dir: Direction,
) {
    let lanes = V::LANES;
    // SAFETY: the instruction set is available (caller); every access is inside the ranges
    // the caller guarantees.
    unsafe {
        // A function, not a closure: a closure would not inline the intrinsics.
        // Even lanes: cα·cβ − sα·sβ; odd lanes: sα·cβ + cα·sβ (each product rounded, then
        // the sum: scalar's arithmetic).
        #[inline(always)]
        unsafe fn sum<V: Vector>(a: *const f32, b: *const f32) -> V {
            // SAFETY: as for `summed_head`.
            unsafe {
                let (va, vb) = (V::load(a), V::load(b));
                va.mul(vb.dup_even())
                    .addsub(va.swap_pairs().mul(vb.dup_odd()))
            }
        }
        match layout {
            Layout::Interleaved => {
                // `fmaddsub`/`fmsubadd` apply the sines' signs: the bits of `rotate_row`'s
                // pre-signed sines (a multiplication by ±1 is exact).
                #[inline(always)]
                unsafe fn one<V: Stored<E>, E: Element>(p: *mut E, s: V, dir: Direction) {
                    // SAFETY: as for `summed_head`.
                    unsafe {
                        let x = V::load_values(p);
                        let t = x.swap_pairs().mul(s.dup_odd());
                        let out = match dir {
                            Direction::Forward => x.fmaddsub(s.dup_even(), t),
                            Direction::Inverse => x.fmsubadd(s.dup_even(), t),
                        };
                        out.store_rotated(p);
                    }
                }
                let mut i = 0;
                // Two vectors a step: independent chains in flight.
                while i + 2 * lanes <= 2 * pairs {
                    let s0 = sum::<V>(a.add(i), b.add(i));
                    let s1 = sum::<V>(a.add(i + lanes), b.add(i + lanes));
                    one(head.add(i), s0, dir);
                    one(head.add(i + lanes), s1, dir);
                    i += 2 * lanes;
                }
                if i < 2 * pairs {
                    one(head.add(i), sum::<V>(a.add(i), b.add(i)), dir);
                }
            }
            Layout::Half => {
                let sign = V::splat(sine_sign(dir));
                let hi = head.add(pairs);
                let mut k = 0;
                while k < pairs {
                    let lo = sum::<V>(a.add(2 * k), b.add(2 * k));
                    let hi_sum = sum::<V>(a.add(2 * k + lanes), b.add(2 * k + lanes));
                    let (c, s) = V::deinterleave(lo, hi_sum);
                    let s = s.mul(sign);
                    let (x, y) = half(V::load_values(head.add(k)), V::load_values(hi.add(k)), c, s);
                    x.store_rotated(head.add(k));
                    y.store_rotated(hi.add(k));
                    k += lanes;
                }
            }
        }
    }
}

/// Whether a line of `line_len` values, tokens of `token_len` values that each read `len`
/// pairs of a table section, stays within the `table_pairs` pairs the table staged:
/// `tokens · len ≤ table_pairs` for `tokens = line_len / token_len`, checked without a
/// division (one per line otherwise) — `line_len · len ≤ table_pairs · token_len` implies it,
/// the same condition for a line of whole tokens.
#[inline(always)]
fn line_fits(line_len: usize, token_len: usize, len: usize, table_pairs: usize) -> bool {
    line_len.checked_mul(len).is_some_and(|n| {
        token_len
            .checked_mul(table_pairs)
            .is_none_or(|limit| n <= limit)
    })
}

/// The arrays of `table` (a section of `len` pairs a token after `lead` pairs, in `layout`'s
/// row form) that token `t` reads for pairs `first ..`: shifted so that index `scale·first`
/// reads `scale·(lead + t·len)` (`scale` floats a pair). The wrapping offsets are only
/// dereferenced at indices inside the table.
#[inline(always)]
fn token_sections(
    table: &Row,
    layout: Layout,
    lead: usize,
    (first, len): (usize, usize),
) -> impl Fn(usize) -> (*const f32, *const f32) + Copy {
    let scale = floats_per_pair(layout);
    let (a, b) = (
        table.a.as_ptr().cast::<f32>(),
        table.b.as_ptr().cast::<f32>(),
    );
    move |t| {
        let shift = scale * (lead + t * len);
        (
            a.wrapping_add(shift).wrapping_sub(scale * first),
            b.wrapping_add(shift).wrapping_sub(scale * first),
        )
    }
}

impl<V: Stored<E> + Forms, E: Element> Kernel for Simd<V, E> {
    type Value = E;
    type Entry = [f32; 2];
    const ROWS: bool = true;
    type Row = Row;

    // By the pairing's layout, not the row's form: interleaved `bf16`, rotated split in
    // half-layout rows, takes the paths its `f32` values take, whose results it rounds bit
    // for bit (a head of 520 pairs, rotated from a row in `bf16` and section by section from
    // the tables in `f32`, came out an ulp apart: `tests/suite/elements.rs`).
    #[inline(always)]
    fn row_pairs(pairing: Pairing) -> usize {
        row_pairs(pairing.layout)
    }

    #[inline(always)]
    fn prepare(
        self,
        row: &mut Row,
        pairing: Pairing,
        dir: Direction,
        first_pair: usize,
        entries: &[[f32; 2]],
    ) {
        let layout = Form::of::<E>(pairing.layout).row();
        // Past the row there is nothing to stage (and its padding would not fit): the
        // callers never ask, but this safe function must not rely on it.
        if first_pair > row_pairs(layout) {
            return;
        }
        let room = pairing
            .pairs
            .min(row_pairs(layout))
            .saturating_sub(first_pair);
        let entries = entries.get(..entries.len().min(room)).unwrap_or(&[]);
        // SAFETY: `V`'s instruction set is available (`self` exists: `Simd::new`);
        // `first_pair + entries.len() ≤ row_pairs(layout)` (checked above).
        unsafe { prepare::<V>(row, layout, dir, first_pair, entries) }
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn rotate_row(self, x: &mut [E], head_dim: usize, pairing: Pairing, row: &Row) {
        if head_dim == 0 {
            return;
        }
        let form = Form::of::<E>(pairing.layout);
        let pairs = pairing.pairs.min(head_dim / 2).min(row_pairs(form.row()));
        // The engine stages the row for every pair it rotates from it; a row staged for fewer
        // is a bug there (the pairs beyond are left as they are), not undefined behaviour
        // here.
        debug_assert!(pairs <= row.pairs(form.row()));
        let pairs = pairs.min(row.pairs(form.row()));
        let (a, b) = (row.a.as_ptr().cast(), row.b.as_ptr().cast());
        // SAFETY: as in `prepare`; `pairs ≤ row_pairs(form.row())`, `2·pairs ≤ head_dim`;
        // the row's floats of `pairs` pairs and the padding after them are initialised
        // (`row.pairs`).
        unsafe { V::rotate::<E>(x, head_dim, form, pairs, (a, b)) }
    }

    /// Sections on whole vectors: no lead. Others, for heads of the register form: a
    /// vector's pairs, so that the whole-vector load of the vector a section shares with the
    /// row stays inside the table (its other lanes are the row's); the rest take the token
    /// loop. Such lines had staged a row per token and waited on its reload: on an AMD EPYC
    /// Zen 4 (alternating pairs of two builds), Wan 4×16×24 with 12 heads at d = 128 (22/21/21
    /// pairs) 0.90× the time, at d = 64 0.70×, 14×14 rope-vit grids at d = 24 0.35× and
    /// d = 40 0.42×.
    #[inline(always)]
    fn line_table_lead(
        head_dim: usize,
        pairing: Pairing,
        first: usize,
        len: usize,
    ) -> Option<usize> {
        let form = Form::of::<E>(pairing.layout);
        if splits::<V, E>(pairing, first, len) {
            Some(0)
        } else {
            register_vectors::<V>(head_dim, form, pairing.pairs).map(|_| register_unit::<V>(form))
        }
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn rotate_line_split(
        self,
        line: &mut [E],
        token_len: usize,
        head_dim: usize,
        pairing: Pairing,
        row: &Row,
        (first, len): (usize, usize),
        table: &Row,
    ) -> bool {
        let form = Form::of::<E>(pairing.layout);
        let layout = form.row();
        let pairs = pairing.pairs.min(head_dim / 2).min(row_pairs(layout));
        let end = first + len;
        let Some(lead) = Self::line_table_lead(head_dim, pairing, first, len) else {
            return false;
        };
        // An empty section would pass `line_fits` whatever the table holds (runs never are
        // empty; refused so that the table bound below never rests on that).
        if head_dim == 0
            || token_len == 0
            || len == 0
            || end > pairs
            || pairs > row.pairs(layout)
            || !line_fits(
                line.len(),
                token_len,
                len,
                table.pairs(layout).saturating_sub(lead),
            )
        {
            return false;
        }
        let (ra, rb) = (row.a.as_ptr().cast::<f32>(), row.b.as_ptr().cast::<f32>());
        let shifted = token_sections(table, layout, lead, (first, len));
        with_register_count!(
            register_vectors::<V>(head_dim, form, pairs),
            // SAFETY: `V`'s instruction set is available (`self` exists: `Simd::new`); the
            // heads are exactly `N` vectors; the floats of the row's `pairs` pairs and of the
            // table's `lead + tokens·len` (and the padding after each) are initialised
            // (`Row::pairs`, `line_fits`); `first` and `end` are multiples of a vector (`lead`
            // 0), or the table has a vector's pairs before the first token's section
            // (`line_table_lead`).
            N => unsafe {
                let line_len = line.len();
                V::line_in_registers::<E, N>(
                    line, line_len, token_len, head_dim, form, (ra, rb), (first, end), shifted,
                )
            },
            _ => {
                // From memory: segments on whole vectors only.
                if lead != 0 {
                    return false;
                }
                for (t, token) in super::Tokens::new(line, token_len).enumerate() {
                    let angles = Angles { a: ra, b: rb, first, end, split: shifted(t) };
                    let (segments, count) = angles.segments(pairs);
                    let segments = segments.get(..count).unwrap_or(&[]);
                    // SAFETY: as above, from memory.
                    unsafe { rotate_segments::<V, E>(token, head_dim, form, pairs, segments) }
                }
            },
        );
        true
    }

    /// Heads of up to [`REGISTER_VECTORS`] whole vectors (the register form), every run on
    /// whole vectors: the entries go straight into registers, no row stored and reloaded per
    /// token. A token finds its entries by one clamped offset per vector (`EntryVector`, set
    /// up once per call): a per-token array of pointers, which LLVM filled with a masked
    /// vector store and read back a pointer at a time, stalled each token on the store
    /// (criterion on an AMD EPYC Zen 4, three alternating rounds: `mrope_text` 0.905× the
    /// time, `mrope_short` 0.893×).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn rotate_tokens_from_tables<const A: usize, I: Iterator<Item = [u32; A]>>(
        self,
        x: &mut [E],
        token_len: usize,
        head_dim: usize,
        pairing: Pairing,
        dir: Direction,
        runs: &[crate::spec::Run],
        tables: ([&[[f32; 2]]; A], [usize; A]),
        positions: I,
    ) -> bool {
        if head_dim == 0 || token_len == 0 {
            return false;
        }
        let rows = |_, width, len: usize| len.checked_div(width)?.checked_sub(1);
        let Some(vectors) = entry_vectors::<V, E, A>(head_dim, pairing, runs, tables, rows) else {
            return false;
        };
        // Opaque for the reason given in `rotate_grid_from_tables`.
        let vectors = core::hint::black_box(&vectors);
        let form = Form::of::<E>(pairing.layout);
        let pairs = pairing.pairs.min(head_dim / 2);
        with_register_count!(
            register_vectors::<V>(head_dim, form, pairs),
            // SAFETY: `V`'s instruction set is available (`self` exists: `Simd::new`); the
            // heads are exactly `N` vectors, each covered by one run on whole vectors
            // (`entry_vectors`), whose entries of every coordinate up to `last` are inside its
            // table (checked above).
            N => unsafe {
                V::tokens_from_entries::<E, N, A>(
                    x, token_len, head_dim, form, dir, vectors, positions,
                )
            },
            _ => return false,
        );
        true
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn rotate_grid_from_tables<const A: usize>(
        self,
        x: &mut [E],
        token_len: usize,
        head_dim: usize,
        pairing: Pairing,
        dir: Direction,
        runs: &[crate::spec::Run],
        tables: ([&[[f32; 2]]; A], [usize; A]),
        (origin, extents): ([u32; A], [usize; A]),
    ) -> bool {
        let Some(line_len) = extents[A - 1].checked_mul(token_len) else {
            return false;
        };
        // At most the grid's lines: the loop's coordinates stay inside the grid.
        let Some(grid_len) = extents[..A - 1]
            .iter()
            .try_fold(line_len, |n, &e| n.checked_mul(e))
        else {
            return false;
        };
        if head_dim == 0 || line_len == 0 || x.len() > grid_len {
            return false;
        }
        // Every coordinate of the grid inside every table it reads (no division).
        let rows = |axis: usize, width: usize, len| {
            let end = (origin[axis] as usize).checked_add(extents[axis])?;
            (end != 0 && end.checked_mul(width)? <= len).then(|| end - 1)
        };
        let Some(vectors) = entry_vectors::<V, E, A>(head_dim, pairing, runs, tables, rows) else {
            return false;
        };
        // Opaque, so that the loop reads each vector's fields from the array where it uses
        // them. Otherwise LLVM copied every field of all eight vectors into stack slots of
        // their own ahead of the dispatch on `N`: 8-byte loads from the 256-bit stores that
        // zeroed the array, which an AMD Zen 3 appears not to forward (a fifth of the
        // samples of a 1×1 grid's call; docs/performance-log.md, stop 53).
        let vectors = core::hint::black_box(&vectors);
        let form = Form::of::<E>(pairing.layout);
        let pairs = pairing.pairs.min(head_dim / 2);
        with_register_count!(
            register_vectors::<V>(head_dim, form, pairs),
            // SAFETY: `V`'s instruction set is available (`self` exists: `Simd::new`); the
            // heads are exactly `N` vectors, each covered by one run on whole vectors
            // (`entry_vectors`), whose entries of every coordinate of the grid are inside its
            // table, and `x` holds at most the grid's lines (both checked above).
            N => unsafe {
                V::grid_from_entries::<E, N, A>(
                    x, line_len, token_len, head_dim, form, dir, vectors, origin, extents,
                )
            },
            _ => return false,
        );
        true
    }

    /// Coordinate `c`'s pairs `first .. first + len` at pairs `c·stride + lead ..` of the
    /// table: whole vectors per coordinate (`stride`), the section at its lanes in them
    /// (`lead`), for heads of the register form.
    #[inline(always)]
    fn token_table(
        head_dim: usize,
        pairing: Pairing,
        first: usize,
        len: usize,
    ) -> Option<(usize, usize)> {
        let form = Form::of::<E>(pairing.layout);
        register_vectors::<V>(head_dim, form, pairing.pairs)?;
        let per = register_unit::<V>(form);
        let (v0, v1) = (first / per, (first + len).div_ceil(per));
        Some((first - v0 * per, (v1 - v0) * per))
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn rotate_tokens_split<const A: usize, I: Iterator<Item = [u32; A]>>(
        self,
        x: &mut [E],
        token_len: usize,
        head_dim: usize,
        pairing: Pairing,
        tables: [(&Row, (usize, usize)); 2],
        axes: [usize; 2],
        positions: I,
    ) -> bool {
        let form = Form::of::<E>(pairing.layout);
        let layout = form.row();
        let pairs = pairing.pairs.min(head_dim / 2).min(row_pairs(layout));
        let [(_, (f0, l0)), (_, (f1, l1))] = tables;
        // Two non-empty sections that together are every pair, once.
        let covers = l0 != 0
            && l1 != 0
            && ((f0 == 0 && f0 + l0 == f1 && f1 + l1 == pairs)
                || (f1 == 0 && f1 + l1 == f0 && f0 + l0 == pairs));
        if head_dim == 0 || token_len == 0 || !covers {
            return false;
        }
        let scale = floats_per_pair(layout);
        let mut split = [None; 2];
        for (slot, &(table, (first, len))) in split.iter_mut().zip(&tables) {
            let Some((lead, stride)) = Self::token_table(head_dim, pairing, first, len) else {
                return false;
            };
            // The coordinates whose pairs are initialised: the last one's vectors end at most
            // a vector past its pairs, inside the padding (`Row`).
            let Some(room) = table.pairs(layout).checked_sub(lead + len) else {
                return false;
            };
            let shift = scale * lead;
            *slot = Some(TokenTable {
                a: table
                    .a
                    .as_ptr()
                    .cast::<f32>()
                    .wrapping_add(shift)
                    .wrapping_sub(scale * first),
                b: table
                    .b
                    .as_ptr()
                    .cast::<f32>()
                    .wrapping_add(shift)
                    .wrapping_sub(scale * first),
                stride: scale * stride,
                count: room / stride + 1,
                first,
                end: first + len,
            });
        }
        let [Some(t0), Some(t1)] = split else {
            return false;
        };
        with_register_count!(
            register_vectors::<V>(head_dim, form, pairs),
            // SAFETY: `V`'s instruction set is available (`self` exists: `Simd::new`); the
            // heads are exactly `N` vectors; the two sections are every pair once (`covers`);
            // each table's vectors of a coordinate below its `count` are initialised
            // (`Row::pairs`, `room`).
            N => unsafe {
                V::tokens_in_registers::<E, N, A>(
                    x, token_len, head_dim, form, [t0, t1], axes, positions,
                )
            },
            _ => return false,
        );
        true
    }

    #[inline(always)]
    fn rotate_pairs(
        self,
        x: &mut [E],
        head_dim: usize,
        pairing: Pairing,
        first_pair: usize,
        angles: &[[f32; 2]],
        dir: Direction,
    ) {
        // Runs past a row's reach (rotary dimensions above 512): the scalar loop.
        scalar::<E>().rotate_pairs(x, head_dim, pairing, first_pair, angles, dir);
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn rotate_pairs_summed(
        self,
        x: &mut [E],
        head_dim: usize,
        pairing: Pairing,
        a: &[[f32; 2]],
        b: &[[f32; 2]],
        dir: Direction,
    ) {
        let pairs = pairing.pairs.min(head_dim / 2);
        if pairs == 0 || pairs > row_pairs(Form::of::<E>(pairing.layout).row()) {
            return scalar::<E>().rotate_pairs_summed(x, head_dim, pairing, a, b, dir);
        }
        let unit = match pairing.layout {
            Layout::Interleaved => V::LANES / 2,
            Layout::Half => V::LANES,
        };
        if pairs.is_multiple_of(unit) {
            let (pa, pb) = (a.as_ptr().cast::<f32>(), b.as_ptr().cast::<f32>());
            let base = x.as_mut_ptr();
            let (mut head, mut entry) = (0, 0);
            // Heads run while `x`, `a` and `b` all have room, like scalar's zip of chunks.
            while head + head_dim <= x.len() && entry + pairs <= a.len().min(b.len()) {
                // SAFETY: `V`'s instruction set is available (`self` exists: `Simd::new`); the
                // head's `2·pairs ≤ d` floats and `pairs` entries of `a` and `b` from `entry`
                // are in range; `pairs` is a multiple of `unit`.
                unsafe {
                    summed_head::<V, E>(
                        base.add(head),
                        pa.add(2 * entry),
                        pb.add(2 * entry),
                        pairs,
                        pairing.layout,
                        dir,
                    )
                };
                head += head_dim;
                entry += pairs;
            }
            return;
        }
        let mut slot = MaybeUninit::uninit();
        let row = <Row as super::RowBuffer>::init(&mut slot);
        let mut sums = [[0f32; 2]; 64];
        let heads = super::Tokens::new(x, head_dim);
        for ((head, a), b) in heads.zip(a.chunks_exact(pairs)).zip(b.chunks_exact(pairs)) {
            for (start, (a, b)) in a.chunks(64).zip(b.chunks(64)).enumerate() {
                let sums = sums.get_mut(..a.len()).unwrap_or(&mut []);
                // SAFETY: as in `prepare`; the three slices have `a.len()` entries.
                unsafe { sum_entries::<V>(sums, a, b) };
                self.prepare(row, pairing, dir, 64 * start, sums);
            }
            self.rotate_row(head, head_dim, pairing, row);
        }
    }
}

/// `llvm-mca` region markers (an assembly comment in the target's syntax) around `$body`.
#[cfg(rope2d_mca)]
macro_rules! mca_region {
    ($name:literal, $body:expr) => {{
        #[cfg(target_arch = "x86_64")]
        macro_rules! mark {
            ($what:literal) => {
                concat!("# LLVM-MCA-", $what, " ", $name)
            };
        }
        #[cfg(not(target_arch = "x86_64"))]
        macro_rules! mark {
            ($what:literal) => {
                concat!("// LLVM-MCA-", $what, " ", $name)
            };
        }
        // An assembler comment: no instruction is emitted (used inside an `unsafe` block).
        core::arch::asm!(mark!("BEGIN"), options(nomem, nostack, preserves_flags));
        $body;
        core::arch::asm!(mark!("END"), options(nomem, nostack, preserves_flags));
    }};
}

/// The kernels' loop bodies between `llvm-mca` region markers, for `.ci/mca.sh`: compiled
/// only with `--cfg rope2d_mca`, from each arch file's `mca` wrapper. A region is one
/// iteration of a production loop — the same inlined functions ([`interleaved_step`] and
/// [`half_step`], or [`interleaved_wide_step`] and [`half_wide_step`], whichever steps the
/// vector type's loops take; [`head_from_registers`]) — and its name ends in the vectors of
/// floats it rotates (`_2v`), which the script turns into cycles per 16 floats. `stream`
/// loads and stores as many bytes (a copy, `a` to `x`) with no arithmetic: the floor each
/// form is compared with.
///
/// # Safety
///
/// `V`'s instruction set is available; `n + 16·LANES` floats readable and writable at `x` and
/// `8·LANES` (and `n + 8·LANES`) readable at `a` and `b`.
#[cfg(rope2d_mca)]
#[inline(always)]
pub(super) unsafe fn mca_regions<V: Stored<f32>>(
    x: *mut f32,
    a: *const f32,
    b: *const f32,
    n: usize,
) {
    let lanes = V::LANES;
    // SAFETY: floats up to `i + 16·LANES` of `x` and `i + 8·LANES` of `a` and `b`, `i < n`,
    // and the instruction set (the caller's contract above); the region markers are
    // assembler comments.
    unsafe {
        let mut i = 0;
        while i < n {
            mca_region!("stream_2v", {
                let (x0, x1) = (V::load(a.add(i)), V::load(a.add(i + lanes)));
                x0.store(x.add(i));
                x1.store(x.add(i + lanes));
            });
            i += 2 * lanes;
        }
        i = 0;
        // The step the production loop takes (`Vector::WIDE_STEPS`).
        if V::WIDE_STEPS {
            while i < n {
                mca_region!(
                    "interleaved_8v",
                    interleaved_wide_step::<V, f32>(x.add(i), a.add(i), b.add(i))
                );
                i += 8 * lanes;
            }
        } else {
            while i < n {
                mca_region!(
                    "interleaved_2v",
                    interleaved_step::<V, f32>(x.add(i), a.add(i), b.add(i))
                );
                i += 2 * lanes;
            }
        }
        i = 0;
        if V::WIDE_STEPS {
            while i < n {
                mca_region!(
                    "half_8v",
                    half_wide_step::<V, f32>(x.add(i), x.add(i + 4 * lanes), a.add(i), b.add(i))
                );
                i += 8 * lanes;
            }
        } else {
            while i < n {
                mca_region!(
                    "half_2v",
                    half_step::<V, f32>(x.add(i), x.add(i + lanes), a.add(i), b.add(i))
                );
                i += 2 * lanes;
            }
        }
        let load4 = |p: *const f32| [0, 1, 2, 3].map(|j| V::load(p.add(j * lanes)));
        let (ra, rb) = (load4(a), load4(b));
        i = 0;
        while i < n {
            mca_region!(
                "interleaved_registers_4v",
                head_from_registers::<V, f32, 4>(
                    x.add(i),
                    Form::Interleaved,
                    &ra,
                    &rb,
                    Prefetch::NONE
                )
            );
            i += 4 * lanes;
        }
        let (ra, rb) = ([ra[0], ra[1]], [rb[0], rb[1]]);
        i = 0;
        while i < n {
            mca_region!(
                "half_registers_4v",
                head_from_registers::<V, f32, 2>(x.add(i), Form::Half, &ra, &rb, Prefetch::NONE)
            );
            i += 4 * lanes;
        }
        // The largest heads the register forms take (`REGISTER_VECTORS`): 8 vectors a head,
        // or a half — NEON's d = 32 interleaved and d = 64 half-layout heads, AVX2's d = 64
        // and AVX-512's d = 128 interleaved ones. A head's chain of load, product and store
        // weighs less there than in a 4-vector head.
        let load8 = |p: *const f32| [0, 1, 2, 3, 4, 5, 6, 7].map(|j| V::load(p.add(j * lanes)));
        let (ra, rb) = (load8(a), load8(b));
        i = 0;
        while i < n {
            mca_region!(
                "interleaved_registers8_8v",
                head_from_registers::<V, f32, 8>(
                    x.add(i),
                    Form::Interleaved,
                    &ra,
                    &rb,
                    Prefetch::NONE
                )
            );
            i += 8 * lanes;
        }
        i = 0;
        while i < n {
            mca_region!(
                "half_registers8_16v",
                head_from_registers::<V, f32, 8>(x.add(i), Form::Half, &ra, &rb, Prefetch::NONE)
            );
            i += 16 * lanes;
        }
    }
}
