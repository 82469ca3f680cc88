//! The one public API shape of every convention: [`Rope`], over per-axis tables
//! ([`Table`], [`FixedTable`]) or computed angles ([`Direct`]).

#![forbid(unsafe_code)]

use core::fmt;

use crate::apply;
use crate::backend::{
    Backend, Computed, ComputedFreqs, IntegerCoords, Job, Pairing, RealCoords, Tables,
};
use crate::config::{Coords, Direction, Layout, Shape};
use crate::element::{
    Element, Scales,
    sealed::{FixedSlice, Format},
};
use crate::error::Error;
use crate::freq::{self, PairFreqs, TableEntry};
use crate::positions::{Order, Positions};
use crate::spec::{Assign, Freqs, Plan, Run, Sections, Spec};

/// Rotation of `[tokens][heads][head_dim]` buffers by a [`Spec`], with angles from `S`:
/// per-axis tables ([`Table`], the usual form) or computed per token ([`Direct`]). Every
/// convention has this one API: [`rotate`](Self::rotate) (tokens in a generated order, see
/// [`Positions`]), [`rotate_at`](Self::rotate_at) (explicit positions),
/// [`rotate_qk`](Self::rotate_qk), [`rotate_head`](Self::rotate_head), an unrotated prefix
/// ([`Shape::prefix`]) and either [`Direction`].
///
/// Every rotation checks its whole input first: on `Err` no buffer has been written.
#[derive(Clone, Copy)]
pub struct Rope<const A: usize, S> {
    head_dim: usize,
    pairing: Pairing,
    backend: Backend,
    source: S,
}

/// Rotation by per-axis tables in caller storage: axis `a`'s table holds one row of
/// `[cos, sin]` entries per coordinate `0 .. extents[a]`, covering the pairs that axis
/// rotates (`Σ extents[a] · pairs on a` entries in all, [`Table::storage_len`]). Build it
/// with [`Table::build`], or own the storage with [`FixedTable`].
pub type Table<'a, const A: usize, P = Sections<A>> = Rope<A, TableAngles<'a, A, P>>;

/// Rotation of `i16` and `i8` buffers by per-axis Q15 tables (`[cos, sin]` as `[i16; 2]`,
/// 32 767 ≈ 1), built and applied with integer arithmetic only: on a core without an FPU
/// (Cortex-M0/M0+, most RISC-V MCUs) no soft-float routine runs or is linked, when the spec
/// is a constant preset with exact angles. Same API as [`Table`]: [`Q15Table::build`],
/// [`Table::storage_len`] entries.
///
/// - Each entry is within 1 LSB (2⁻¹⁵) of the exact `cos`/`sin`, within 0.68 LSB unless
///   its magnitude rounds past 32 767 (the saturated value of 1).
/// - Each output is `round((a·c − b·s) / 2¹⁵)` (ties up), saturated to the buffer's type,
///   with the table's `c`, `s`: within `0.5 + (|a|·εc + |b|·εs) / 2¹⁵` LSB of the exact
///   rotation, where `ε ≤ 1` is an entry's error — within 1 LSB for `|a| + |b| ≤ 2¹⁴`, at
///   most 2.5 LSB at full scale (`i8`: the rounding's 0.5 LSB). RoPE-Mixed's summed angles
///   are rounded once more (`ε ≤ 2.5`). Asserted by `tests/suite/q15.rs` for every plan.
/// - Buffers are rotated in their own scale: [`Shape`]'s scales must be
///   [`Scales::SAME`] (or any one finite positive scale in and out), the spec's `mscale` 1,
///   and the buffer `i16` or `i8` ([`Error::FixedPoint`] otherwise). Every backend gives the
///   same bits: the scalar kernel's integer arithmetic, its pair loop in integer vectors on
///   `avx2` (256-bit `vpmaddwd`), `avx512` (512-bit, with AVX-512BW) and `neon` (`smull`,
///   `sqrshrn`).
///
/// ```
/// use rope2d::{Direction, Grid, Q15Table, Shape, Table, preset};
///
/// let spec = preset::rope_vit(64);
/// let mut storage = [[0i16; 2]; 448]; // (14 + 14) · 64/4 entries: 1 792 bytes
/// assert_eq!(Table::storage_len(&spec, [14, 14])?, 448);
/// let table = Q15Table::build(&mut storage, &spec, [14, 14])?;
/// let mut q = vec![8_192i16; 14 * 14 * 6 * 64]; // 0.25 in Q15
/// table.rotate(&mut q, Shape::heads(6), Grid::new([14, 14]), Direction::Forward)?;
/// table.rotate(&mut q, Shape::heads(6), Grid::new([14, 14]), Direction::Inverse)?;
/// assert!(q.iter().all(|&v| (v - 8_192).abs() <= 2));
/// # Ok::<(), rope2d::Error>(())
/// ```
pub type Q15Table<'a, const A: usize, P = Sections<A>> = Rope<A, TableAngles<'a, A, P, [i16; 2]>>;

/// Rotation without a table: each token's `[cos, sin]` entries computed from its coordinates
/// (one exact phase reduction and sin/cos per pair per token), for integer positions of any
/// size and for real-valued coordinates ([`Direct::rotate_coords`]). Coordinates are used as
/// they are: the spec's [`Coords`] must all be [`Coords::Index`].
pub type Direct<'f, const A: usize, P = Sections<A>> = Rope<A, DirectAngles<'f, A, P>>;

/// Where a [`Table`]'s (or [`Q15Table`]'s) angles come from: the per-axis tables of
/// entries `T`.
#[derive(Clone, Copy, Debug)]
pub struct TableAngles<'a, const A: usize, P, T = [f32; 2]> {
    tables: [&'a [T]; A],
    widths: [usize; A],
    extents: [usize; A],
    /// A sections plan's runs, `run_count` of them (none for other plans).
    runs: [Run; A],
    run_count: usize,
    plan: P,
    /// The entries' magnitude (the spec's `mscale`).
    mscale: f32,
}

impl<'a, const A: usize, P: Plan<A>, T> TableAngles<'a, A, P, T> {
    /// The source over `tables`, with the plan's runs worked out once: in pair order, except
    /// that the last axis' runs go last (those vary along a grid line; runs cover disjoint
    /// pairs, so their order does not change a result).
    #[inline(always)]
    fn new(
        tables: [&'a [T]; A],
        widths: [usize; A],
        extents: [usize; A],
        plan: P,
        mscale: f32,
    ) -> Self {
        let (mut runs, run_count) = plan.assign().runs::<A>().unwrap_or(([Run::EMPTY; A], 0));
        // A stable partition (at most A runs): each last-axis run bubbles past the others.
        let runs_used = runs.get_mut(..run_count).unwrap_or(&mut []);
        for end in (1..runs_used.len()).rev() {
            for j in 0..end {
                if runs_used[j].axis + 1 == A && runs_used[j + 1].axis + 1 != A {
                    runs_used.swap(j, j + 1);
                }
            }
        }
        Self {
            tables,
            widths,
            extents,
            runs,
            run_count,
            plan,
            mscale,
        }
    }
}

/// Where a [`Direct`]'s angles come from: the frequencies, evaluated per token.
#[derive(Clone, Copy, Debug)]
pub struct DirectAngles<'f, const A: usize, P> {
    plan: P,
    freqs: ComputedFreqs<'f, A>,
    mscale: f32,
    /// [`coordinate_limit`](crate::freq::coordinate_limit): what a real coordinate's
    /// magnitude must stay below.
    limit: f32,
}

/// The angle sources of [`Rope`]: [`TableAngles`] and [`DirectAngles`]. Sealed.
pub trait Source<const A: usize>: sealed::SourceImpl<A> {}

impl<const A: usize, P: Plan<A>> Source<A> for TableAngles<'_, A, P> {}
impl<const A: usize, P: Plan<A>> Source<A> for TableAngles<'_, A, P, [i16; 2]> {}
impl<const A: usize, P: Plan<A>> Source<A> for DirectAngles<'_, A, P> {}

mod sealed {
    use super::*;

    /// What [`Rope`] needs of its source.
    pub trait SourceImpl<const A: usize>: Copy {
        /// Coordinates must be below these, per axis.
        fn limits(&self) -> [u64; A];
        /// The heads a buffer must have (RoPE-Mixed's learned frequencies), if fixed.
        fn heads(&self) -> Option<usize>;
        /// The factor between a stored input and output of `E` at `scales`, if this source
        /// rotates `E` at those scales.
        #[inline(always)]
        fn ratio<E: Element>(scales: Scales) -> Result<f32, Error> {
            scales.ratio::<E>()
        }
        /// The magnitude of the `[cos, sin]` it gives: the spec's `mscale`.
        fn mscale(&self) -> f32;
        /// Whether a buffer of `E` at scale ratio `ratio` is rotated through the staging
        /// buffer (its size then limits a RoPE-Mixed token): when `backend` does not convert
        /// `E` at that ratio itself, and for an integer type when `mscale` is above
        /// [`FUSED_MSCALE_MAX`](crate::element::FUSED_MSCALE_MAX) (the bound the rotation
        /// loops' integer stores rely on).
        #[inline(always)]
        fn stages<E: Element>(&self, backend: Backend, ratio: f32) -> bool {
            !backend.fuses::<E>(ratio)
                || (E::INTEGER && self.mscale() > crate::element::FUSED_MSCALE_MAX)
        }
        /// Rotates a checked buffer (its ratios from [`ratio`](Self::ratio)).
        fn rotate<E: Element, Po: Positions<A>>(
            rope: &Rope<A, Self>,
            x: &mut [E],
            tokens: apply::Tokens,
            ratio: Ratio<'_>,
            positions: Po,
            dir: Direction,
        );
    }

    /// The sources of `[f32; 2]` angles, which rotate every element type in `f32`.
    pub trait FloatSource<const A: usize>: SourceImpl<A> {
        /// Runs a validated job.
        fn run<E: Element, Po: Positions<A>>(
            &self,
            backend: Backend,
            job: Job<'_, (), E>,
            positions: Po,
        );
    }
}

/// [`sealed::SourceImpl::rotate`] of the `[f32; 2]` sources: in place, or staged when requantising.
macro_rules! rotate_in_f32 {
    () => {
        #[inline(always)]
        fn rotate<E: Element, Po: Positions<A>>(
            rope: &Rope<A, Self>,
            x: &mut [E],
            tokens: apply::Tokens,
            ratio: Ratio<'_>,
            positions: Po,
            dir: Direction,
        ) {
            rope.run(x, tokens, ratio, positions, dir);
        }
    };
}

impl<const A: usize, P: Plan<A>> sealed::SourceImpl<A> for TableAngles<'_, A, P> {
    fn limits(&self) -> [u64; A] {
        self.extents.map(|n| n as u64)
    }

    fn heads(&self) -> Option<usize> {
        summed_heads(self.plan.assign())
    }

    fn mscale(&self) -> f32 {
        self.mscale
    }

    rotate_in_f32!();
}

impl<const A: usize, P: Plan<A>> sealed::FloatSource<A> for TableAngles<'_, A, P> {
    #[inline(never)]
    fn run<E: Element, Po: Positions<A>>(
        &self,
        backend: Backend,
        job: Job<'_, (), E>,
        positions: Po,
    ) {
        backend.run(job.with(Tables {
            tables: self.tables,
            widths: self.widths,
            runs: self.runs.get(..self.run_count).unwrap_or(&[]),
            plan: self.plan,
            positions,
        }));
    }
}

impl<const A: usize, P: Plan<A>> sealed::SourceImpl<A> for TableAngles<'_, A, P, [i16; 2]> {
    fn limits(&self) -> [u64; A] {
        self.extents.map(|n| n as u64)
    }

    fn heads(&self) -> Option<usize> {
        summed_heads(self.plan.assign())
    }

    fn mscale(&self) -> f32 {
        self.mscale
    }

    /// `i16` and `i8` at their own scale; the comparison is of bits, so that an FPU-less core
    /// links no float routine.
    #[inline(always)]
    fn ratio<E: Element>(scales: Scales) -> Result<f32, Error> {
        if scales.is_unit_ratio() && matches!(E::FORMAT, Format::I16 | Format::I8) {
            Ok(1.0)
        } else {
            Err(Error::FixedPoint)
        }
    }

    /// Never: a Q15 table rotates `i16` and `i8` in place.
    #[inline(always)]
    fn stages<E: Element>(&self, _: Backend, _: f32) -> bool {
        false
    }

    #[inline(never)]
    fn rotate<E: Element, Po: Positions<A>>(
        rope: &Rope<A, Self>,
        x: &mut [E],
        tokens: apply::Tokens,
        _ratio: Ratio<'_>,
        positions: Po,
        dir: Direction,
    ) {
        // The prefix stays as it is: the scales are the same (every ratio is 1).
        let (_, x) = x
            .split_at_mut_checked(tokens.prefix_len)
            .unwrap_or_default();
        let source = &rope.source;
        let angles = Tables {
            tables: source.tables,
            widths: source.widths,
            runs: source.runs.get(..source.run_count).unwrap_or(&[]),
            plan: source.plan,
            positions,
        };
        match E::as_fixed(x) {
            Some(FixedSlice::I16(x)) => {
                rope.backend
                    .run_q15(rope.job(x, tokens.token_len, dir).with(angles));
            }
            Some(FixedSlice::I8(x)) => {
                rope.backend
                    .run_q15(rope.job(x, tokens.token_len, dir).with(angles));
            }
            // Refused by `ratio`.
            None => {}
        }
    }
}

impl<const A: usize, P: Plan<A>> sealed::SourceImpl<A> for DirectAngles<'_, A, P> {
    fn limits(&self) -> [u64; A] {
        [1 << 32; A]
    }

    fn heads(&self) -> Option<usize> {
        summed_heads(self.plan.assign())
    }

    fn mscale(&self) -> f32 {
        self.mscale
    }

    rotate_in_f32!();
}

impl<const A: usize, P: Plan<A>> sealed::FloatSource<A> for DirectAngles<'_, A, P> {
    #[inline(never)]
    fn run<E: Element, Po: Positions<A>>(
        &self,
        backend: Backend,
        job: Job<'_, (), E>,
        positions: Po,
    ) {
        backend.run(job.with(Computed {
            plan: self.plan,
            freqs: self.freqs,
            mscale: self.mscale,
            coords: IntegerCoords(positions),
        }));
    }
}

fn summed_heads<const A: usize>(assign: Assign<'_, A>) -> Option<usize> {
    match assign {
        Assign::Summed(s) => Some(s.heads),
        _ => None,
    }
}

impl<const A: usize, S> fmt::Debug for Rope<A, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rope")
            .field("axes", &A)
            .field("head_dim", &self.head_dim)
            .field("pairs", &self.pairing.pairs)
            .field("layout", &self.pairing.layout)
            .field("backend", &self.backend)
            .finish_non_exhaustive()
    }
}

impl<const A: usize, S: Source<A>> Rope<A, S> {
    /// The same rotation on `backend`. Error: [`Error::BackendUnavailable`].
    pub fn with_backend(self, backend: Backend) -> Result<Self, Error> {
        Ok(Self {
            backend: apply::check_backend(backend)?,
            ..self
        })
    }

    /// The backend rotations run on ([`Backend::auto`] unless chosen).
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The length of one head vector.
    pub fn head_dim(&self) -> usize {
        self.head_dim
    }

    /// Rotated pairs per head (the rotary dimension is twice this).
    pub fn pairs(&self) -> usize {
        self.pairing.pairs
    }

    /// Which elements pair up.
    pub fn layout(&self) -> Layout {
        self.pairing.layout
    }

    /// Checks a buffer of `len` elements of type `E` against `shape` and `positions`, and
    /// returns its tokens and `E`'s scale ratio. Out of line: one copy serves `rotate_qk`'s two
    /// buffers.
    #[inline(never)]
    fn check<E: Element, Po: Positions<A>>(
        &self,
        len: usize,
        shape: Shape,
        positions: &Po,
    ) -> Result<(apply::Tokens, f32), Error> {
        let order: Order<'_, A> = positions.order();
        let tokens = self.check_tokens::<E>(len, shape, order.tokens()?)?;
        order.check(tokens.tokens, self.source.limits())?;
        Ok((tokens, S::ratio::<E>(shape.scales)?))
    }

    /// The checks that do not depend on the positions' kind.
    fn check_tokens<E: Element>(
        &self,
        len: usize,
        shape: Shape,
        count: Option<usize>,
    ) -> Result<apply::Tokens, Error> {
        let fixed_heads = self.source.heads();
        if let Some(heads) = fixed_heads
            && heads != shape.heads
        {
            return Err(Error::HeadCount {
                expected: heads,
                actual: shape.heads,
            });
        }
        let tokens = apply::split_tokens(len, shape, self.head_dim, count)?;
        // (Invalid scales are reported after the positions' errors.)
        let staged =
            S::ratio::<E>(shape.scales).is_ok_and(|r| self.source.stages::<E>(self.backend, r));
        if staged && !self.stageable(tokens.token_len) {
            return Err(Error::ShapeOverflow);
        }
        Ok(tokens)
    }

    /// Whether tokens of `token_len` values can be staged (requantised integers, or a backend
    /// that does not convert `E` itself): a token larger than the staging buffer is split
    /// between heads, except RoPE-Mixed's, whose heads differ.
    fn stageable(&self, token_len: usize) -> bool {
        if self.source.heads().is_some() {
            token_len <= STAGE
        } else {
            self.head_dim <= STAGE
        }
    }

    /// The job of a buffer's rotated tokens.
    #[inline(always)]
    fn job<'x, V>(&self, x: &'x mut [V], token_len: usize, dir: Direction) -> Job<'x, (), V> {
        Job {
            x,
            token_len,
            head_dim: self.head_dim,
            pairing: self.pairing,
            dir,
            angles: (),
        }
    }

    /// Rotates a `[tokens][heads][head_dim]` buffer whose tokens after `shape.prefix` are at
    /// `positions` ([`Grid`](crate::Grid), [`Run`](crate::Run), a `&[[u32; A]]` list or
    /// `&[Piece<A>]`). The buffer holds any [`Element`] type, rotated in place: the kernels
    /// convert each value to `f32` as they load it and round it back as they store it (a
    /// requantising integer call, scales whose ratio is not 1, goes block by block through a
    /// stack buffer).
    ///
    /// Errors: [`Error::ZeroHeads`], [`Error::BufferLength`], [`Error::TokenCount`] (the
    /// buffer must hold `prefix` plus as many tokens as the positions describe; a bare
    /// [`Run`](crate::Run) takes all of them), [`Error::PositionOutOfRange`] (a coordinate
    /// past a table's extent, or past `u32::MAX`), [`Error::HeadCount`] (RoPE-Mixed),
    /// [`Error::EmptyTable`] (a [`Piece::Windows`](crate::Piece::Windows) with a zero window),
    /// [`Error::InvalidScales`], [`Error::FixedPoint`] (a [`Q15Table`] on anything but `i16` /
    /// `i8` at their own scale), [`Error::ShapeOverflow`] (also, when the call is staged — an
    /// integer buffer that is requantised or whose spec's `mscale` is above 2¹⁴ — a head of
    /// more than 4 096 values, 512 on bare metal, or a RoPE-Mixed token of more than that).
    pub fn rotate<E: Element, Po: Positions<A>>(
        &self,
        x: &mut [E],
        shape: Shape,
        positions: Po,
        dir: Direction,
    ) -> Result<(), Error> {
        let (tokens, ratio) = self.check::<E, Po>(x.len(), shape, &positions)?;
        S::rotate(self, x, tokens, Ratio::Tensor(ratio), positions, dir);
        Ok(())
    }

    /// [`rotate`](Self::rotate) with one explicit position per token (patch dropping, any
    /// order).
    pub fn rotate_at<E: Element>(
        &self,
        x: &mut [E],
        shape: Shape,
        positions: &[[u32; A]],
        dir: Direction,
    ) -> Result<(), Error> {
        self.rotate(x, shape, positions, dir)
    }

    /// [`rotate`](Self::rotate) for queries and keys of the same shape and positions;
    /// neither is touched unless both are valid. (With grouped-query attention, call
    /// `rotate` once for each.)
    ///
    /// Errors: those of `rotate`, for either buffer; [`Error::TokenCount`] when q and k hold
    /// different numbers of tokens (a bare [`Run`](crate::Run) would otherwise take each
    /// buffer's own count: `expected` is q's, `actual` k's, prefix included).
    pub fn rotate_qk<E: Element, Po: Positions<A>>(
        &self,
        q: &mut [E],
        k: &mut [E],
        shape: Shape,
        positions: Po,
        dir: Direction,
    ) -> Result<(), Error> {
        let (q_tokens, ratio) = self.check::<E, Po>(q.len(), shape, &positions)?;
        let (k_tokens, _) = self.check::<E, Po>(k.len(), shape, &positions)?;
        if k_tokens.tokens != q_tokens.tokens {
            // Both counts came from dividing a slice length: the sums cannot overflow.
            return Err(Error::TokenCount {
                expected: shape.prefix + q_tokens.tokens,
                actual: shape.prefix + k_tokens.tokens,
            });
        }
        S::rotate(self, q, q_tokens, Ratio::Tensor(ratio), positions, dir);
        S::rotate(self, k, k_tokens, Ratio::Tensor(ratio), positions, dir);
        Ok(())
    }

    /// [`rotate`](Self::rotate) for an integer buffer quantised per head: head `h` of every
    /// token is stored at scale `scales[h].input` and rotated into `scales[h].output`, with
    /// the rounding, saturation and supported ratios of [`Scales`]; the unrotated prefix is
    /// requantised head by head likewise. (One scale pair for the whole buffer:
    /// [`Shape::with_scales`](crate::Shape::with_scales).) Unless every head's ratio is 1, the
    /// call is staged through the stack buffer, as a requantising `rotate` is.
    ///
    /// ```
    /// use rope2d::{Direction, Grid, Scales, Shape, Table, preset};
    ///
    /// let spec = preset::rope_vit(16);
    /// let mut storage = vec![[0.0f32; 2]; Table::storage_len(&spec, [2, 2])?];
    /// let table = Table::build(&mut storage, &spec, [2, 2])?;
    /// let mut q = [64i8; 4 * 2 * 16]; // 2×2 tokens, 2 heads of 16
    /// let scales = [
    ///     Scales { input: 0.02, output: 0.04 }, // head 0: halved
    ///     Scales::SAME,                         // head 1: as stored
    /// ];
    /// table.rotate_with_head_scales(&mut q, Shape::heads(2), Grid::new([2, 2]), &scales,
    ///     Direction::Forward)?;
    /// assert_eq!(q[0], 32); // token (0, 0) is not moved: head 0 only rescaled
    /// assert_eq!(q[16], 64);
    /// # Ok::<(), rope2d::Error>(())
    /// ```
    ///
    /// Errors: those of `rotate`; [`Error::InvalidScales`] when `scales` does not hold one
    /// entry per head, when `shape` has scales of its own, or when an entry is not supported
    /// for `E` (floats take only [`Scales::SAME`]); on a [`Q15Table`], [`Error::FixedPoint`]
    /// for any entry whose input and output scales differ (or are not finite and positive).
    /// Nothing is written on error.
    pub fn rotate_with_head_scales<E: Element, Po: Positions<A>>(
        &self,
        x: &mut [E],
        shape: Shape,
        positions: Po,
        scales: &[Scales],
        dir: Direction,
    ) -> Result<(), Error> {
        let (tokens, _) = self.check::<E, Po>(x.len(), shape, &positions)?;
        if scales.len() != shape.heads || !shape.scales.is_same() {
            return Err(Error::InvalidScales);
        }
        let mut same = true;
        for &head in scales {
            // Of bits, as `is_same`: a Q15 table's check links no float routine.
            same &= S::ratio::<E>(head)?.to_bits() == 1f32.to_bits();
        }
        let ratio = if same {
            Ratio::Tensor(1.0)
        } else if self.stageable(tokens.token_len) {
            Ratio::Heads(scales)
        } else {
            return Err(Error::ShapeOverflow);
        };
        S::rotate(self, x, tokens, ratio, positions, dir);
        Ok(())
    }

    /// Rotates one head vector (`head_dim` values) of the token at `position`.
    ///
    /// Errors: [`Error::HeadLength`], [`Error::PositionOutOfRange`]; [`Error::HeadCount`] for
    /// RoPE-Mixed with more than one head (its frequencies differ per head: rotate whole
    /// tokens with [`rotate_at`](Self::rotate_at)); [`Error::FixedPoint`] (a [`Q15Table`] on
    /// anything but `i16` / `i8`, or a spec whose `mscale` is not 1); [`Error::ShapeOverflow`]
    /// when the head is staged (an integer head whose spec's `mscale` is above 2¹⁴) and holds
    /// more than 4 096 values, 512 on bare metal. Nothing is written on error.
    pub fn rotate_head<E: Element>(
        &self,
        head: &mut [E],
        position: [u32; A],
        dir: Direction,
    ) -> Result<(), Error> {
        if head.len() != self.head_dim {
            return Err(Error::HeadLength {
                expected: self.head_dim,
                actual: head.len(),
            });
        }
        let positions: &[[u32; A]] = core::slice::from_ref(&position);
        self.rotate(head, Shape::heads(1), positions, dir)
    }
}

/// The rotations of the `[f32; 2]` sources, which take every element type in `f32`.
impl<const A: usize, S: Source<A> + sealed::FloatSource<A>> Rope<A, S> {
    /// Rotates a checked buffer: in place (converting as the kernels load and store), or
    /// staged when the backend does not take `E` at this ratio.
    fn run<E: Element, Po: Positions<A>>(
        &self,
        x: &mut [E],
        tokens: apply::Tokens,
        ratio: Ratio<'_>,
        positions: Po,
        dir: Direction,
    ) {
        let order = positions.order();
        // Chunks keep the positions' own form where they can (whole grid lines, sub-runs,
        // sub-lists: the engine's fast paths); pieces are listed position by position.
        let chunks = match order {
            Order::Pieces(_) => Chunks {
                align: 1,
                span: STAGE_TOKENS,
            },
            _ => {
                let (align, span) = order.chunking();
                Chunks { align, span }
            }
        };
        let mut iter = order.iter();
        let mut next = 0;
        let mut list = [[0u32; A]; STAGE_TOKENS];
        let mut listed = usize::MAX;
        let whole = |job: Job<'_, (), E>| self.source.run(self.backend, job, positions);
        let part = |job: Job<'_, ()>, first: usize, n: usize| {
            match order.sub(first, n) {
                Some(Order::Grid(grid)) => return self.source.run(self.backend, job, grid),
                Some(Order::Run(run)) => return self.source.run(self.backend, job, run),
                Some(Order::List(list)) => return self.source.run(self.backend, job, list),
                _ => {}
            }
            // Only pieces come here (`sub` gives every checked grid, run and list chunk its
            // own positions), in chunks of `STAGE_TOKENS`. A token split between heads comes
            // back with the same `first`: same position.
            if first != listed {
                for _ in next..first {
                    iter.next();
                }
                for p in list.iter_mut().take(n) {
                    *p = iter.next().unwrap_or([0; A]);
                }
                (listed, next) = (first, first + n);
            }
            let list: &[[u32; A]] = list.get(..n).unwrap_or_default();
            self.source.run(self.backend, job, list);
        };
        self.rotate_elements(x, tokens, ratio, dir, chunks, whole, part);
    }

    /// Rotates a checked buffer of any element type: after the unrotated prefix, a buffer the
    /// source does not stage ([`stages`](sealed::SourceImpl::stages): `f32`, and every type at
    /// ratio 1, integers at an `mscale` up to 2¹⁴) goes to `whole` as one job; otherwise the
    /// prefix is requantised and the rest staged in `f32`, chunk by chunk, each chunk's
    /// tokens `first .. first + n` going to `part`.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn rotate_elements<E: Element>(
        &self,
        x: &mut [E],
        tokens: apply::Tokens,
        ratio: Ratio<'_>,
        dir: Direction,
        chunks: Chunks,
        whole: impl FnOnce(Job<'_, (), E>),
        mut part: impl FnMut(Job<'_, ()>, usize, usize),
    ) {
        let (prefix, x) = x
            .split_at_mut_checked(tokens.prefix_len)
            .unwrap_or_default();
        // Per-head ratios are staged (all 1 is `Tensor(1.0)`). `f32` always fuses, whatever
        // the ratio, so that for it everything below folds away (firmware links none of it).
        let tensor = match ratio {
            Ratio::Tensor(r) => r,
            Ratio::Heads(_) => f32::NAN,
        };
        if !self.source.stages::<E>(self.backend, tensor) {
            return whole(self.job(x, tokens.token_len, dir));
        }
        requantise(prefix, ratio, self.head_dim, self.backend);
        let (head_dim, backend) = (self.head_dim, self.backend);
        staged(
            x,
            tokens,
            head_dim,
            ratio,
            backend,
            chunks,
            |buffer, token_len, first, n| part(self.job(buffer, token_len, dir), first, n),
        );
    }
}

/// Checks `spec` and `extents` and returns the per-axis widths and the total entries.
#[inline(always)]
fn table_shape<const A: usize, P: Plan<A>>(
    spec: &Spec<'_, A, P>,
    extents: [usize; A],
) -> Result<([usize; A], usize), Error> {
    spec.check()?;
    if extents.contains(&0) {
        return Err(Error::EmptyTable);
    }
    let widths = spec.plan.assign().widths();
    let mut total = 0usize;
    for (&n, &w) in extents.iter().zip(&widths) {
        total = n
            .checked_mul(w)
            .and_then(|entries| total.checked_add(entries))
            .ok_or(Error::ShapeOverflow)?;
    }
    Ok((widths, total))
}

/// Splits `storage` into the per-axis tables.
fn split_tables<const A: usize, T>(
    storage: &[T],
    extents: [usize; A],
    widths: [usize; A],
) -> [&[T]; A] {
    let mut tables = [&[][..]; A];
    let mut rest = storage;
    for ((table, &n), &w) in tables.iter_mut().zip(&extents).zip(&widths) {
        let (here, next) = rest.split_at_checked(n * w).unwrap_or((rest, &[]));
        *table = here;
        rest = next;
    }
    tables
}

/// [`Table`] and [`Q15Table`]: the same tables, in entries of `f32` or Q15.
impl<'a, const A: usize, P: Plan<A>, T: TableEntry> Rope<A, TableAngles<'a, A, P, T>> {
    /// `[cos, sin]` entries the tables of `spec` over `extents` need:
    /// `Σ_a extents[a] · (pairs rotated by axis a)` (RoPE-Mixed: `heads · pairs` per row).
    ///
    /// Errors: those of [`Spec::check`], [`Error::EmptyTable`] (a zero extent),
    /// [`Error::ShapeOverflow`].
    pub fn storage_len(spec: &Spec<'_, A, P>, extents: [usize; A]) -> Result<usize, Error> {
        table_shape(spec, extents).map(|(_, total)| total)
    }

    /// Builds the tables of `spec` for coordinates `0 .. extents[a]` on each axis into
    /// `storage` (exactly [`storage_len`](Self::storage_len) entries), without any `f64`
    /// arithmetic: axis 0's table first, each row's entries in pair order. Q15 entries
    /// (`[i16; 2]`, [`Q15Table`]) are computed with integer arithmetic only, unless the spec
    /// asks for [`AnglePrecision::Float32`](crate::AnglePrecision::Float32) angles or
    /// [`Coords::Linspace`] coordinates (`f32` values by definition).
    ///
    /// Errors: those of [`storage_len`](Self::storage_len), [`Error::StorageLength`]; beyond
    /// 65 535 on an axis with rescaled or centred coordinates, [`Error::ShapeOverflow`]; for
    /// Q15 entries, an `mscale` other than 1: [`Error::FixedPoint`]. `storage` is untouched
    /// on error.
    ///
    /// Inlined: when `spec` is a constant (a preset), the checks and the paths of the
    /// coordinate modes, precisions and frequency kinds it does not use fold away, so
    /// firmware links only what its convention needs.
    #[inline(always)]
    pub fn build(
        storage: &'a mut [T],
        spec: &Spec<'_, A, P>,
        extents: [usize; A],
    ) -> Result<Self, Error> {
        let (widths, total) = table_shape(spec, extents)?;
        apply::check_storage(total, storage.len())?;
        T::check_mscale(spec.mscale)?;
        {
            let mut tables: [&mut [T]; A] = [(); A].map(|_| &mut [][..]);
            let mut rest = &mut *storage;
            for ((table, &n), &w) in tables.iter_mut().zip(&extents).zip(&widths) {
                let (here, next) = rest
                    .split_at_mut_checked(n * w)
                    .ok_or(Error::ShapeOverflow)?;
                *table = here;
                rest = next;
            }
            freq::fill(
                tables,
                extents,
                widths,
                spec.plan.assign(),
                spec.freqs,
                spec.coords,
                spec.mscale,
                spec.precision,
            )?;
        }
        let storage: &'a [T] = storage;
        Ok(Self::from_parts(storage, spec, extents, widths))
    }

    #[inline(always)]
    fn from_parts(
        storage: &'a [T],
        spec: &Spec<'_, A, P>,
        extents: [usize; A],
        widths: [usize; A],
    ) -> Self {
        Self {
            head_dim: spec.head_dim,
            pairing: Pairing {
                layout: spec.layout,
                pairs: spec.pairs(),
            },
            backend: Backend::auto(),
            source: TableAngles::new(
                split_tables(storage, extents, widths),
                widths,
                extents,
                spec.plan,
                spec.mscale,
            ),
        }
    }

    /// The tables' extents: coordinates `0 .. extents[a]` on each axis.
    pub fn extents(&self) -> [usize; A] {
        self.source.extents
    }

    /// `[cos, sin]` entries of coordinate `index` on `axis`: the pairs that axis rotates, in
    /// pair order, times `mscale` (`None` outside the table). A [`Summed`](crate::Summed)
    /// plan's rotation is the product of a row entry and a column entry, so there only axis
    /// 0's entries carry `mscale`; axis 1's have magnitude 1.
    pub fn entries(&self, axis: usize, index: usize) -> Option<&'a [T]> {
        let (table, &width) = (self.source.tables.get(axis)?, self.source.widths.get(axis)?);
        // The extent, not the table's length: an axis that rotates no pairs has an empty table.
        if index >= *self.source.extents.get(axis)? {
            return None;
        }
        table.get(index.checked_mul(width)?..)?.get(..width)
    }
}

/// A [`Table`] that owns its `N` entries, to keep on the stack or in a `static`; with Q15
/// entries (`T = [i16; 2]`), a [`Q15FixedTable`].
///
/// `N` must be the tables' [`storage_len`](Table::storage_len); for sections it is a
/// `const fn`, [`Sections::table_len`]:
///
/// ```
/// use rope2d::{Direction, FixedTable, Grid, Shape, preset};
///
/// const SPEC: rope2d::Spec<'static, 2> = preset::rope_vit(64);
/// const N: usize = SPEC.plan.table_len([14, 14]); // (14 + 14) · 64/4 = 448 entries
/// let table = FixedTable::<N, 2>::new(&SPEC, [14, 14])?;
/// let mut q = vec![0.5f32; (1 + 14 * 14) * 6 * 64]; // CLS + 196 patches, 6 heads
/// table.view().rotate(&mut q, Shape::heads(6).with_prefix(1), Grid::new([14, 14]), Direction::Forward)?;
/// # Ok::<(), rope2d::Error>(())
/// ```
#[derive(Clone)]
pub struct FixedTable<
    const N: usize,
    const A: usize,
    P: Plan<A> = Sections<A>,
    T: TableEntry = [f32; 2],
> {
    entries: [T; N],
    head_dim: usize,
    pairing: Pairing,
    backend: Backend,
    widths: [usize; A],
    extents: [usize; A],
    plan: P,
    mscale: f32,
}

/// A [`Q15Table`] that owns its `N` entries (`4·N` bytes), to keep on the stack or in a
/// `static`: built with integer arithmetic only, as [`Q15Table::build`] builds.
///
/// ```
/// use rope2d::{Direction, Grid, Q15FixedTable, Shape, preset};
///
/// const SPEC: rope2d::Spec<'static, 2> = preset::rope_vit(32);
/// const N: usize = SPEC.plan.table_len([8, 8]); // (8 + 8) · 32/4 = 128 entries
/// let table = Q15FixedTable::<N, 2>::new(&SPEC, [8, 8])?;
/// assert_eq!(Q15FixedTable::<N, 2>::BYTES, 512);
/// let mut q = [4_096i16; 8 * 8 * 32]; // 0.125 in Q15, one head
/// table.view().rotate(&mut q, Shape::heads(1), Grid::new([8, 8]), Direction::Forward)?;
/// # Ok::<(), rope2d::Error>(())
/// ```
pub type Q15FixedTable<const N: usize, const A: usize, P = Sections<A>> =
    FixedTable<N, A, P, [i16; 2]>;

impl<const N: usize, const A: usize, P: Plan<A>, T: TableEntry> fmt::Debug
    for FixedTable<N, A, P, T>
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.view().fmt(f)
    }
}

impl<const N: usize, const A: usize, P: Plan<A>, T: TableEntry> FixedTable<N, A, P, T> {
    /// Bytes of table data: `N · 8` (`f32` entries) or `N · 4` (Q15).
    pub const BYTES: usize = N * core::mem::size_of::<T>();

    /// Builds the tables of `spec` over `extents`.
    ///
    /// Errors: those of [`Table::build`] ([`Error::StorageLength`] when `N` is not the
    /// tables' size; Q15: [`Error::FixedPoint`] for an `mscale` other than 1).
    pub fn new(spec: &Spec<'_, A, P>, extents: [usize; A]) -> Result<Self, Error> {
        let mut entries = [T::IDENTITY; N];
        let table = Rope::<A, TableAngles<'_, A, P, T>>::build(&mut entries, spec, extents)?;
        let (head_dim, pairing, widths) = (table.head_dim, table.pairing, table.source.widths);
        Ok(Self {
            entries,
            head_dim,
            pairing,
            backend: Backend::auto(),
            widths,
            extents,
            plan: spec.plan,
            mscale: spec.mscale,
        })
    }

    /// The same table, rotating with `backend`. Error: [`Error::BackendUnavailable`].
    pub fn with_backend(self, backend: Backend) -> Result<Self, Error> {
        Ok(Self {
            backend: apply::check_backend(backend)?,
            ..self
        })
    }

    /// The table as a [`Table`] (or [`Q15Table`]), which has every rotation method.
    pub fn view(&self) -> Rope<A, TableAngles<'_, A, P, T>> {
        Rope {
            head_dim: self.head_dim,
            pairing: self.pairing,
            backend: self.backend,
            source: TableAngles::new(
                split_tables(&self.entries, self.extents, self.widths),
                self.widths,
                self.extents,
                self.plan,
                self.mscale,
            ),
        }
    }
}

impl<'f, const A: usize, P: Plan<A>> Direct<'f, A, P> {
    /// Tableless rotation by `spec`.
    ///
    /// Errors: those of [`Spec::check`]; [`Error::TableCoords`] unless every axis has
    /// [`Coords::Index`].
    pub fn new(spec: &Spec<'f, A, P>) -> Result<Self, Error> {
        spec.check()?;
        if spec.coords.iter().any(|c| *c != Coords::Index) {
            return Err(Error::TableCoords);
        }
        let freqs = match (spec.freqs, spec.plan.assign()) {
            (Freqs::Learned(learned), _) => ComputedFreqs::Learned {
                y: learned.y,
                x: learned.x,
                precision: spec.precision,
            },
            (freqs, assign) => ComputedFreqs::Pairs(PairFreqs::new(freqs, assign, spec.precision)?),
        };
        Ok(Self {
            head_dim: spec.head_dim,
            pairing: Pairing {
                layout: spec.layout,
                pairs: spec.pairs(),
            },
            backend: Backend::auto(),
            source: DirectAngles {
                plan: spec.plan,
                freqs,
                mscale: spec.mscale,
                limit: crate::freq::coordinate_limit(spec.precision),
            },
        })
    }

    /// Rotates a buffer whose tokens after `shape.prefix` are at real-valued coordinates,
    /// one `[f32; A]` each (jittered, cropped or otherwise non-grid positions), reduced
    /// exactly as given.
    ///
    /// Errors: those of [`rotate`](Rope::rotate); [`Error::NonFiniteCoordinate`] for a NaN or
    /// infinite coordinate, or, with [`AnglePrecision::Float32`](crate::AnglePrecision), one
    /// of magnitude 2⁹⁶ or more (whose `f32` angle could overflow).
    pub fn rotate_coords<E: Element>(
        &self,
        x: &mut [E],
        shape: Shape,
        coords: &[[f32; A]],
        dir: Direction,
    ) -> Result<(), Error> {
        // NaN and infinities, and with `f32` angles coordinates whose angle could overflow.
        let limit = self.source.limit;
        let refused = |c: &[f32; A]| !c.iter().all(|c| c.abs() < limit);
        if coords.iter().any(refused) {
            return Err(Error::NonFiniteCoordinate);
        }
        let tokens = self.check_tokens::<E>(x.len(), shape, Some(coords.len()))?;
        let ratio = shape.scales.ratio::<E>()?;
        let computed = |coords| Computed {
            plan: self.source.plan,
            freqs: self.source.freqs,
            mscale: self.source.mscale,
            coords: RealCoords(coords),
        };
        let chunks = Chunks {
            align: 1,
            span: usize::MAX,
        };
        let whole = |job: Job<'_, (), E>| self.backend.run(job.with(computed(coords)));
        let part = |job: Job<'_, ()>, first: usize, n: usize| {
            let here = coords.get(first..first + n).unwrap_or_default();
            self.backend.run(job.with(computed(here)));
        };
        let ratio = Ratio::Tensor(ratio);
        self.rotate_elements(x, tokens, ratio, dir, chunks, whole, part);
        Ok(())
    }
}

/// `f32` values a staged rotation converts at a time (16 KiB of stack; 2 KiB on bare metal).
const STAGE: usize = if cfg!(target_os = "none") { 512 } else { 4096 };
/// Tokens a staged rotation converts at a time (their positions are listed on the stack).
const STAGE_TOKENS: usize = 64;

/// The factor between a call's stored inputs and outputs: one for the whole buffer, or one
/// per head ([`Rope::rotate_with_head_scales`], every entry checked).
#[derive(Clone, Copy)]
pub enum Ratio<'s> {
    Tensor(f32),
    Heads(&'s [Scales]),
}

impl Ratio<'_> {
    /// Converts `src` into `dst` (the same length, whole heads of `head_dim` values; the first
    /// is head `first_head` of its token) to `f32`, each head times its ratio.
    fn load<E: Element>(
        self,
        backend: Backend,
        src: &[E],
        dst: &mut [f32],
        head_dim: usize,
        first_head: usize,
    ) {
        match self {
            Ratio::Tensor(ratio) => backend.load(src, dst, ratio),
            Ratio::Heads(scales) => {
                let mut head = first_head;
                let head_dim = head_dim.max(1);
                for (s, d) in src.chunks(head_dim).zip(dst.chunks_mut(head_dim)) {
                    let ratio = scales.get(head).map_or(Ok(1.0), |s| s.ratio::<E>());
                    backend.load(s, d, ratio.unwrap_or(1.0));
                    head = self.next_head(head);
                }
            }
        }
    }

    /// The head after `head` in a token (a counter, not `% heads`: no division on cores
    /// without one).
    fn next_head(self, head: usize) -> usize {
        match self {
            Ratio::Heads(scales) if head + 1 < scales.len() => head + 1,
            _ => 0,
        }
    }
}

/// Brings the unrotated prefix of an integer buffer (whole tokens of `head_dim`-value heads)
/// to the output scale (nothing to do when the scales are the same): every value of a buffer
/// is at one scale after a call (per head: each head at its own).
fn requantise<E: Element>(prefix: &mut [E], ratio: Ratio<'_>, head_dim: usize, backend: Backend) {
    if let Ratio::Tensor(1.0) = ratio {
        return;
    }
    let mut buffer = [0.0f32; STAGE];
    // Head by head (a staged call's heads fit the buffer: `check_tokens`).
    let mut head = 0;
    for values in prefix.chunks_mut(head_dim.max(1)) {
        let Some(here) = buffer.get_mut(..values.len()) else {
            return;
        };
        ratio.load(backend, values, here, head_dim, head);
        backend.store(here, values);
        head = ratio.next_head(head);
    }
}

/// How a staged rotation may cut its tokens into chunks: a whole number of `align` tokens
/// (grid lines) within each run of `span` tokens (grid planes), when `align` tokens fit.
struct Chunks {
    align: usize,
    span: usize,
}

/// Rotates `x` (the rotated tokens of a checked buffer of `E`) in `f32`: up to [`STAGE`]
/// values at a time are converted into a stack buffer (times the ratio for integer types),
/// rotated by `rotate(buffer, token_len, first_token, tokens)` and rounded back. A token
/// larger than the buffer is split between whole heads (`rotate` sees the same
/// `first_token` once per group of heads).
///
/// The checks before it make every slice below fit and every divisor non-zero; the code
/// says so without indexing or dividing by them, so that no panic path is linked
/// (`.ci/firmware.sh` checks the disassembly of a requantising call).
fn staged<E: Element>(
    x: &mut [E],
    tokens: apply::Tokens,
    head_dim: usize,
    ratio: Ratio<'_>,
    backend: Backend,
    chunks: Chunks,
    mut rotate: impl FnMut(&mut [f32], usize, usize, usize),
) {
    let mut buffer = [0.0f32; STAGE];
    let token_len = tokens.token_len;
    if token_len <= STAGE {
        let fit = (STAGE / token_len.max(1)).min(chunks.span).max(1);
        // Lines that do not fit: any split, of at most the tokens whose positions `rotate`
        // can list.
        let (align, span) = if chunks.align <= fit {
            (chunks.align.max(1), chunks.span.max(1))
        } else {
            (1, STAGE_TOKENS)
        };
        let fit = fit.min(span);
        let mut first = 0;
        while first < tokens.tokens {
            // Whole `align`s, not past the end of the current span.
            let in_span = span - first % span;
            let n = (fit / align * align)
                .min(in_span)
                .min(tokens.tokens - first)
                .max(1);
            let Some(chunk) = x.get_mut(first * token_len..(first + n) * token_len) else {
                return;
            };
            let Some(here) = buffer.get_mut(..chunk.len()) else {
                return;
            };
            ratio.load(backend, chunk, here, head_dim, 0);
            rotate(here, token_len, first, n);
            backend.store(here, chunk);
            first += n;
        }
    } else {
        // `check_tokens` made sure that a head fits.
        let head_dim = head_dim.max(1);
        let per_group = (STAGE / head_dim).max(1);
        // (Never 0; `max` so that the optimiser sees it, as a product may wrap.)
        let group = (per_group * head_dim).max(1);
        for (t, token) in x.chunks_mut(token_len).enumerate() {
            for (g, heads) in token.chunks_mut(group).enumerate() {
                let Some(here) = buffer.get_mut(..heads.len()) else {
                    return;
                };
                ratio.load(backend, heads, here, head_dim, g * per_group);
                rotate(here, heads.len(), t, 1);
                backend.store(here, heads);
            }
        }
    }
}
