//! 1-D RoPE tables: one row of `d/2` `[cos, sin]` entries per position `0 .. len`.

#![forbid(unsafe_code)]

use core::fmt;

use crate::apply::{self, Plan};
use crate::backend::{Backend, Positions1d, Table1d};
use crate::config::{Direction, Layout, Rope1d, Shape};
use crate::dims::{Dim, HeadDim};
use crate::error::Error;
use crate::freq::{Schedule1d, fill_1d};

fn rope1d_entries(head_dim: usize, positions: usize) -> Result<usize, Error> {
    if head_dim == 0 || !head_dim.is_multiple_of(2) {
        return Err(Error::InvalidHeadDim {
            head_dim,
            multiple_of: 2,
        });
    }
    if positions == 0 {
        return Err(Error::EmptyTable);
    }
    apply::entries(positions, head_dim / 2)
}

fn build_rope1d(out: &mut [[f32; 2]], config: &Rope1d, head_dim: usize) -> Result<(), Error> {
    let schedule = Schedule1d::new(
        config.base,
        config.freq_scale,
        head_dim / 2,
        config.precision,
    )?;
    fill_1d(out, head_dim / 2, schedule);
    Ok(())
}

/// A 1-D table for positions `0 .. len` in caller-provided storage (`len · d/2` entries).
/// All rotation methods live here; [`Rope1dTable`] hands one out with [`Rope1dTable::view`].
/// For positions without a table, see [`Rope1dDirect`](crate::Rope1dDirect).
#[derive(Clone, Copy)]
pub struct Rope1dTableRef<'a> {
    table: &'a [[f32; 2]],
    len: usize,
    plan: Plan,
}

impl fmt::Debug for Rope1dTableRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rope1dTableRef")
            .field("head_dim", &self.plan.head_dim)
            .field("len", &self.len)
            .field("layout", &self.plan.layout)
            .field("backend", &self.plan.backend)
            .finish()
    }
}

impl<'a> Rope1dTableRef<'a> {
    /// `[cos, sin]` entries a table of `positions` positions needs: `positions · head_dim / 2`.
    ///
    /// Errors: [`Error::InvalidHeadDim`] unless `head_dim` is even and non-zero,
    /// [`Error::EmptyTable`] for zero positions, [`Error::ShapeOverflow`].
    pub fn storage_len(head_dim: usize, positions: usize) -> Result<usize, Error> {
        rope1d_entries(head_dim, positions)
    }

    /// Builds the table for positions `0 .. positions` into `storage`.
    ///
    /// Errors: those of [`storage_len`](Self::storage_len), [`Error::StorageLength`],
    /// [`Error::InvalidBase`], [`Error::InvalidFreqScale`]. `storage` is untouched on error.
    pub fn build(
        storage: &'a mut [[f32; 2]],
        config: &Rope1d,
        head_dim: usize,
        positions: usize,
    ) -> Result<Self, Error> {
        apply::check_storage(rope1d_entries(head_dim, positions)?, storage.len())?;
        build_rope1d(storage, config, head_dim)?;
        Ok(Self::from_parts(
            storage,
            positions,
            config.layout,
            head_dim,
        ))
    }

    fn from_parts(table: &'a [[f32; 2]], len: usize, layout: Layout, head_dim: usize) -> Self {
        Self {
            table,
            len,
            plan: Plan {
                head_dim,
                layout,
                backend: Backend::auto(),
            },
        }
    }

    /// The same table, rotating with `backend`. Error: [`Error::BackendUnavailable`].
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

    /// Head dimension `d`.
    pub fn head_dim(&self) -> usize {
        self.plan.head_dim
    }

    /// Positions covered: `0 .. len()`.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true: a table has at least one position.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The pair layout.
    pub fn layout(&self) -> Layout {
        self.plan.layout
    }

    /// The backend rotations run on.
    pub fn backend(&self) -> Backend {
        self.plan.backend
    }

    /// `[cos, sin]` of position `position`'s angles, `d/2` entries (`None` outside the table).
    pub fn entries(&self, position: usize) -> Option<&'a [[f32; 2]]> {
        let width = self.plan.head_dim / 2;
        self.table.get(position.checked_mul(width)?..)?.get(..width)
    }

    fn angles<'t>(&self, positions: Positions1d<'t>) -> Table1d<'t>
    where
        'a: 't,
    {
        Table1d {
            table: self.table,
            positions,
        }
    }

    /// Rotates one head vector at `position`.
    ///
    /// Errors: [`Error::HeadLength`], [`Error::PositionOutOfRange`].
    pub fn rotate_head(
        &self,
        head: &mut [f32],
        position: u32,
        dir: Direction,
    ) -> Result<(), Error> {
        let positions = core::slice::from_ref(&position);
        apply::check_positions(positions, self.len as u64)?;
        let job = self
            .plan
            .head_job(head, dir, self.angles(Positions1d::List(positions)))?;
        self.plan.run([job]);
        Ok(())
    }

    /// Rotates a `[tokens][heads][d]` buffer whose tokens after `shape.prefix` sit at
    /// positions `start, start + 1, …`.
    ///
    /// Errors: [`Error::ZeroHeads`], [`Error::BufferLength`], [`Error::TokenCount`] (fewer
    /// tokens than the prefix), [`Error::PositionOutOfRange`] (a position past the table).
    pub fn rotate(
        &self,
        x: &mut [f32],
        shape: Shape,
        start: u32,
        dir: Direction,
    ) -> Result<(), Error> {
        let count = self.count(x.len(), shape)?;
        apply::check_run(start, count, self.len as u64)?;
        let job = self
            .plan
            .job(x, shape, count, dir, self.angles(Positions1d::From(start)))?;
        self.plan.run([job]);
        Ok(())
    }

    /// [`rotate`](Self::rotate) for queries and keys of the same shape; neither is touched
    /// unless both are valid. (With grouped-query attention, call `rotate` once for each.)
    pub fn rotate_qk(
        &self,
        q: &mut [f32],
        k: &mut [f32],
        shape: Shape,
        start: u32,
        dir: Direction,
    ) -> Result<(), Error> {
        let count = self.count(q.len(), shape)?;
        apply::check_run(start, count, self.len as u64)?;
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
    /// Errors: those of [`rotate`](Self::rotate), with [`Error::TokenCount`] when the buffer
    /// does not hold `prefix + positions.len()` tokens.
    pub fn rotate_at(
        &self,
        x: &mut [f32],
        shape: Shape,
        positions: &[u32],
        dir: Direction,
    ) -> Result<(), Error> {
        apply::check_positions(positions, self.len as u64)?;
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

    fn count(&self, len: usize, shape: Shape) -> Result<usize, Error> {
        count_tokens(len, shape, self.plan.head_dim)
    }
}

/// Tokens after the prefix in a buffer of `len` values, for APIs whose token count follows
/// from the buffer (1-D runs).
pub(crate) fn count_tokens(len: usize, shape: Shape, head_dim: usize) -> Result<usize, Error> {
    if shape.heads == 0 {
        return Err(Error::ZeroHeads);
    }
    let token_len = shape
        .heads
        .checked_mul(head_dim)
        .ok_or(Error::ShapeOverflow)?;
    if !len.is_multiple_of(token_len) {
        return Err(Error::BufferLength {
            actual: len,
            token_len,
        });
    }
    (len / token_len)
        .checked_sub(shape.prefix)
        .ok_or(Error::TokenCount {
            expected: shape.prefix,
            actual: len / token_len,
        })
}

/// A 1-D table with head dimension `D` and positions `0 .. LEN` fixed at compile time.
///
/// `D` must be a multiple of 4 from 4 to 512 (use [`Rope1dTableRef`] for other even head
/// dimensions) and `LEN` non-zero. Size: [`Rope1dTable::BYTES`] `= LEN · D/2 · 8`.
///
/// ```
/// use rope2d::{Direction, Rope1d, Rope1dTable, Shape};
///
/// let table = Rope1dTable::<64, 128>::new(&Rope1d::LLAMA)?;
/// let mut k = [1.0f32; 4 * 2 * 64]; // 4 tokens, 2 heads
/// table.rotate(&mut k, Shape::heads(2), 100, Direction::Forward)?; // positions 100..104
/// # Ok::<(), rope2d::Error>(())
/// ```
#[derive(Clone)]
pub struct Rope1dTable<const D: usize, const LEN: usize>
where
    Dim<D>: HeadDim,
{
    rows: [<Dim<D> as HeadDim>::Half; LEN],
    layout: Layout,
    backend: Backend,
}

impl<const D: usize, const LEN: usize> fmt::Debug for Rope1dTable<D, LEN>
where
    Dim<D>: HeadDim,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.view().fmt(f)
    }
}

impl<const D: usize, const LEN: usize> Rope1dTable<D, LEN>
where
    Dim<D>: HeadDim,
{
    /// `[cos, sin]` entries held: `LEN · D / 2`.
    pub const ENTRIES: usize = LEN * (D / 2);
    /// Bytes of table data: `ENTRIES · 8`.
    pub const BYTES: usize = Self::ENTRIES * 8;

    /// Builds the table for `config`. Errors: [`Error::InvalidBase`], [`Error::InvalidFreqScale`].
    pub fn new(config: &Rope1d) -> Result<Self, Error> {
        const { assert!(LEN > 0, "a 1-D table needs at least one position") };
        let mut table = Self {
            rows: [<Dim<D> as HeadDim>::HALF_ZERO; LEN],
            layout: config.layout,
            backend: Backend::auto(),
        };
        build_rope1d(<Dim<D> as HeadDim>::halves_mut(&mut table.rows), config, D)?;
        Ok(table)
    }

    /// The same table, rotating with `backend`. Error: [`Error::BackendUnavailable`].
    pub fn with_backend(self, backend: Backend) -> Result<Self, Error> {
        let backend = apply::check_backend(backend)?;
        Ok(Self { backend, ..self })
    }

    /// The table as a [`Rope1dTableRef`], which has every rotation method.
    pub fn view(&self) -> Rope1dTableRef<'_> {
        let mut view = Rope1dTableRef::from_parts(
            <Dim<D> as HeadDim>::halves(&self.rows),
            LEN,
            self.layout,
            D,
        );
        view.plan.backend = self.backend;
        view
    }

    /// See [`Rope1dTableRef::rotate_head`].
    pub fn rotate_head(
        &self,
        head: &mut [f32],
        position: u32,
        dir: Direction,
    ) -> Result<(), Error> {
        self.view().rotate_head(head, position, dir)
    }

    /// See [`Rope1dTableRef::rotate`].
    pub fn rotate(
        &self,
        x: &mut [f32],
        shape: Shape,
        start: u32,
        dir: Direction,
    ) -> Result<(), Error> {
        self.view().rotate(x, shape, start, dir)
    }

    /// See [`Rope1dTableRef::rotate_qk`].
    pub fn rotate_qk(
        &self,
        q: &mut [f32],
        k: &mut [f32],
        shape: Shape,
        start: u32,
        dir: Direction,
    ) -> Result<(), Error> {
        self.view().rotate_qk(q, k, shape, start, dir)
    }

    /// See [`Rope1dTableRef::rotate_at`].
    pub fn rotate_at(
        &self,
        x: &mut [f32],
        shape: Shape,
        positions: &[u32],
        dir: Direction,
    ) -> Result<(), Error> {
        self.view().rotate_at(x, shape, positions, dir)
    }
}
