//! Rotation without a table: every angle is computed when it is needed, from the exact phase
//! of the token's coordinate. For arbitrary real-valued 2-D coordinates and for 1-D positions
//! anywhere in `0 ..= u32::MAX` (long contexts, decoding one token at a time).
//!
//! Cost: one `f32` sin/cos pair per rotated pair per token (rather than a table lookup);
//! memory: the frequency schedule only (a few words).

#![forbid(unsafe_code)]

use crate::apply::{self, Plan};
use crate::backend::{Backend, Direct1d, DirectAxial, Positions1d};
use crate::config::{Axial2d, AxisOrder, Coord, Direction, Rope1d, Shape};
use crate::error::Error;
use crate::freq::{Schedule, Schedule1d};
use crate::rope1d::count_tokens;

/// Axial 2-D rotation at real-valued coordinates (after cropping, jitter or any other
/// non-grid placement). Coordinates are used as given; [`Axial2d::coords`] applies only to
/// tables. Any finite `f32` coordinate is reduced exactly (see the crate docs on accuracy).
#[derive(Clone, Copy, Debug)]
pub struct AxialDirect {
    freqs: Schedule,
    col_first: bool,
    plan: Plan,
}

impl AxialDirect {
    /// Prepares rotation for `config` at head dimension `head_dim`.
    ///
    /// Errors: [`Error::InvalidHeadDim`] unless `head_dim` is a non-zero multiple of 4,
    /// [`Error::InvalidBase`], [`Error::InvalidFreqScale`], [`Error::ShapeOverflow`] above
    /// `head_dim` 262 140.
    pub fn new(config: &Axial2d, head_dim: usize) -> Result<Self, Error> {
        if head_dim == 0 || !head_dim.is_multiple_of(4) {
            return Err(Error::InvalidHeadDim {
                head_dim,
                multiple_of: 4,
            });
        }
        Ok(Self {
            freqs: Schedule::new(config.base, config.freq_scale, head_dim / 4)?,
            col_first: config.axis_order == AxisOrder::ColFirst,
            plan: Plan {
                head_dim,
                layout: config.layout,
                backend: Backend::auto(),
            },
        })
    }

    /// The same rotation on `backend`. Error: [`Error::BackendUnavailable`].
    pub fn with_backend(self, backend: Backend) -> Result<Self, Error> {
        let backend = apply::check_backend(backend)?;
        Ok(Self {
            plan: Plan {
                backend,
                ..self.plan
            },
            ..self
        })
    }

    /// The backend rotations run on.
    pub fn backend(&self) -> Backend {
        self.plan.backend
    }

    fn angles<'t>(&self, coords: &'t [Coord]) -> Result<DirectAxial<'t>, Error> {
        if coords
            .iter()
            .any(|c| !c.row.is_finite() || !c.col.is_finite())
        {
            return Err(Error::NonFiniteCoordinate);
        }
        Ok(DirectAxial {
            freqs: self.freqs,
            col_first: self.col_first,
            coords,
        })
    }

    /// Rotates one head vector at `coord`.
    ///
    /// Errors: [`Error::HeadLength`], [`Error::NonFiniteCoordinate`].
    pub fn rotate_head(&self, head: &mut [f32], coord: Coord, dir: Direction) -> Result<(), Error> {
        let coords = core::slice::from_ref(&coord);
        let job = self.plan.head_job(head, dir, self.angles(coords)?)?;
        self.plan.run([job]);
        Ok(())
    }

    /// Rotates a `[tokens][heads][d]` buffer whose tokens after `shape.prefix` sit at
    /// `coords`, one each.
    ///
    /// Errors: [`Error::ZeroHeads`], [`Error::BufferLength`], [`Error::TokenCount`],
    /// [`Error::NonFiniteCoordinate`].
    pub fn rotate(
        &self,
        x: &mut [f32],
        shape: Shape,
        coords: &[Coord],
        dir: Direction,
    ) -> Result<(), Error> {
        let job = self
            .plan
            .job(x, shape, coords.len(), dir, self.angles(coords)?)?;
        self.plan.run([job]);
        Ok(())
    }

    /// [`rotate`](Self::rotate) for queries and keys; neither is touched unless both are valid.
    pub fn rotate_qk(
        &self,
        q: &mut [f32],
        k: &mut [f32],
        shape: Shape,
        coords: &[Coord],
        dir: Direction,
    ) -> Result<(), Error> {
        let q = self
            .plan
            .job(q, shape, coords.len(), dir, self.angles(coords)?)?;
        let k = self
            .plan
            .job(k, shape, coords.len(), dir, self.angles(coords)?)?;
        self.plan.run([q, k]);
        Ok(())
    }
}

/// 1-D rotation at any position `0 ..= u32::MAX` without a table.
#[derive(Clone, Copy, Debug)]
pub struct Rope1dDirect {
    freqs: Schedule1d,
    plan: Plan,
}

/// Positions a [`Rope1dDirect`] accepts: all of `u32`.
const DIRECT_POSITIONS: u64 = 1 << 32;

impl Rope1dDirect {
    /// Prepares rotation for `config` at head dimension `head_dim`.
    ///
    /// Errors: [`Error::InvalidHeadDim`] unless `head_dim` is even and non-zero,
    /// [`Error::InvalidBase`], [`Error::InvalidFreqScale`], [`Error::ShapeOverflow`] above
    /// `head_dim` 131 070.
    pub fn new(config: &Rope1d, head_dim: usize) -> Result<Self, Error> {
        if head_dim == 0 || !head_dim.is_multiple_of(2) {
            return Err(Error::InvalidHeadDim {
                head_dim,
                multiple_of: 2,
            });
        }
        Ok(Self {
            freqs: Schedule1d::new(
                config.base,
                config.freq_scale,
                head_dim / 2,
                config.precision,
            )?,
            plan: Plan {
                head_dim,
                layout: config.layout,
                backend: Backend::auto(),
            },
        })
    }

    /// The same rotation on `backend`. Error: [`Error::BackendUnavailable`].
    pub fn with_backend(self, backend: Backend) -> Result<Self, Error> {
        let backend = apply::check_backend(backend)?;
        Ok(Self {
            plan: Plan {
                backend,
                ..self.plan
            },
            ..self
        })
    }

    /// The backend rotations run on.
    pub fn backend(&self) -> Backend {
        self.plan.backend
    }

    fn angles<'t>(&self, positions: Positions1d<'t>) -> Direct1d<'t> {
        Direct1d {
            freqs: self.freqs,
            positions,
        }
    }

    /// Rotates one head vector at `position`. Error: [`Error::HeadLength`].
    pub fn rotate_head(
        &self,
        head: &mut [f32],
        position: u32,
        dir: Direction,
    ) -> Result<(), Error> {
        let positions = core::slice::from_ref(&position);
        let job = self
            .plan
            .head_job(head, dir, self.angles(Positions1d::List(positions)))?;
        self.plan.run([job]);
        Ok(())
    }

    /// Rotates a `[tokens][heads][d]` buffer whose tokens after `shape.prefix` sit at
    /// `start, start + 1, …`.
    ///
    /// Errors: [`Error::ZeroHeads`], [`Error::BufferLength`], [`Error::TokenCount`],
    /// [`Error::PositionOutOfRange`] (a position past `u32::MAX`).
    pub fn rotate(
        &self,
        x: &mut [f32],
        shape: Shape,
        start: u32,
        dir: Direction,
    ) -> Result<(), Error> {
        let count = count_tokens(x.len(), shape, self.plan.head_dim)?;
        apply::check_run(start, count, DIRECT_POSITIONS)?;
        let job = self
            .plan
            .job(x, shape, count, dir, self.angles(Positions1d::From(start)))?;
        self.plan.run([job]);
        Ok(())
    }

    /// [`rotate`](Self::rotate) for queries and keys of the same shape; neither is touched
    /// unless both are valid.
    pub fn rotate_qk(
        &self,
        q: &mut [f32],
        k: &mut [f32],
        shape: Shape,
        start: u32,
        dir: Direction,
    ) -> Result<(), Error> {
        let count = count_tokens(q.len(), shape, self.plan.head_dim)?;
        apply::check_run(start, count, DIRECT_POSITIONS)?;
        let q = self
            .plan
            .job(q, shape, count, dir, self.angles(Positions1d::From(start)))?;
        let k = self
            .plan
            .job(k, shape, count, dir, self.angles(Positions1d::From(start)))?;
        self.plan.run([q, k]);
        Ok(())
    }

    /// Rotates a buffer whose tokens after `shape.prefix` sit at `positions`, one each.
    ///
    /// Errors: [`Error::ZeroHeads`], [`Error::BufferLength`], [`Error::TokenCount`].
    pub fn rotate_at(
        &self,
        x: &mut [f32],
        shape: Shape,
        positions: &[u32],
        dir: Direction,
    ) -> Result<(), Error> {
        let job = self.plan.job(
            x,
            shape,
            positions.len(),
            dir,
            self.angles(Positions1d::List(positions)),
        )?;
        self.plan.run([job]);
        Ok(())
    }
}
