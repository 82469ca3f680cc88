//! RoPE-Mixed tables (rope-vit): learned per-head frequencies, still separable because
//! `R(col·fx + row·fy) = R(col·fx) · R(row·fy)`: one table per column and one per row,
//! `heads · d/2` entries each, combined per pair when rotating.

#![forbid(unsafe_code)]

use core::fmt;

use crate::apply::{self, Plan};
use crate::axial::Grid;
use crate::backend::{Backend, Mixed, Positions2d};
use crate::config::{Coords, Direction, GridPos, Layout, Mixed2d, Shape};
use crate::dims::{Dim, HeadDim};
use crate::error::Error;
use crate::freq::{AxisMap, fill_axis};
use crate::math::{self, Turns};

/// Learned RoPE-Mixed frequencies as stored in a model, in radians per unit coordinate:
/// `x` multiplies the column, `y` the row; each `[heads][head_dim / 2]`, flattened head-major.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LearnedFreqs<'f> {
    /// Heads the frequencies are for.
    pub heads: usize,
    /// Column frequencies (rope-vit `freqs[0]`).
    pub x: &'f [f32],
    /// Row frequencies (rope-vit `freqs[1]`).
    pub y: &'f [f32],
}

fn mixed_entries(head_dim: usize, heads: usize, grid: Grid) -> Result<usize, Error> {
    if head_dim == 0 || !head_dim.is_multiple_of(2) {
        return Err(Error::InvalidHeadDim {
            head_dim,
            multiple_of: 2,
        });
    }
    if heads == 0 || grid.rows == 0 || grid.cols == 0 {
        return Err(Error::EmptyTable);
    }
    grid.tokens().ok_or(Error::ShapeOverflow)?;
    let width = apply::entries(heads, head_dim / 2)?;
    apply::entries(
        grid.rows
            .checked_add(grid.cols)
            .ok_or(Error::ShapeOverflow)?,
        width,
    )
}

fn to_turns(radians: f32) -> Option<Turns> {
    math::decode_f32(radians).and_then(math::radians_to_turns)
}

fn build_mixed(
    rows_out: &mut [[f32; 2]],
    cols_out: &mut [[f32; 2]],
    config: &Mixed2d,
    head_dim: usize,
    grid: Grid,
    freqs: LearnedFreqs<'_>,
) -> Result<(), Error> {
    let width = freqs.heads * (head_dim / 2);
    for values in [freqs.x, freqs.y] {
        if values.len() != width {
            return Err(Error::FrequencyLength {
                expected: width,
                actual: values.len(),
            });
        }
        if values.iter().any(|&f| to_turns(f).is_none()) {
            return Err(Error::InvalidFrequency);
        }
    }
    let (ref_rows, ref_cols) = match config.coords {
        Coords::Rescale { ref_rows, ref_cols } => (ref_rows, ref_cols),
        Coords::Index | Coords::Centered => (0, 0),
    };
    let row_map = AxisMap::new(config.coords, grid.rows, ref_rows)?;
    let col_map = AxisMap::new(config.coords, grid.cols, ref_cols)?;
    fill_axis(
        rows_out,
        width,
        row_map,
        freqs.y.iter().map(|&f| to_turns(f).unwrap_or(Turns(0))),
    );
    fill_axis(
        cols_out,
        width,
        col_map,
        freqs.x.iter().map(|&f| to_turns(f).unwrap_or(Turns(0))),
    );
    Ok(())
}

/// A RoPE-Mixed table in caller-provided storage: `(rows + cols) · heads · d/2` entries.
/// All rotation methods live here; [`MixedTable`] hands one out with [`MixedTable::view`].
#[derive(Clone, Copy)]
pub struct MixedTableRef<'a> {
    rows_table: &'a [[f32; 2]],
    cols_table: &'a [[f32; 2]],
    heads: usize,
    grid: Grid,
    plan: Plan,
}

impl fmt::Debug for MixedTableRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MixedTableRef")
            .field("head_dim", &self.plan.head_dim)
            .field("heads", &self.heads)
            .field("grid", &self.grid)
            .field("layout", &self.plan.layout)
            .field("backend", &self.plan.backend)
            .finish()
    }
}

impl<'a> MixedTableRef<'a> {
    /// `[cos, sin]` entries a table of this shape needs: `(rows + cols) · heads · head_dim / 2`.
    ///
    /// Errors: [`Error::InvalidHeadDim`] unless `head_dim` is even and non-zero,
    /// [`Error::EmptyTable`] for zero heads or an empty grid, [`Error::ShapeOverflow`].
    pub fn storage_len(head_dim: usize, heads: usize, grid: Grid) -> Result<usize, Error> {
        mixed_entries(head_dim, heads, grid)
    }

    /// Builds the table for `config` and the model's learned `freqs` into `storage`.
    ///
    /// Errors: those of [`storage_len`](Self::storage_len), [`Error::StorageLength`],
    /// [`Error::FrequencyLength`], [`Error::InvalidFrequency`], [`Error::InvalidRefGrid`].
    /// `storage` is untouched on error.
    pub fn build(
        storage: &'a mut [[f32; 2]],
        config: &Mixed2d,
        head_dim: usize,
        grid: Grid,
        freqs: LearnedFreqs<'_>,
    ) -> Result<Self, Error> {
        apply::check_storage(mixed_entries(head_dim, freqs.heads, grid)?, storage.len())?;
        let (rows_out, cols_out) = storage
            .split_at_mut_checked(grid.rows * freqs.heads * (head_dim / 2))
            .ok_or(Error::ShapeOverflow)?;
        build_mixed(rows_out, cols_out, config, head_dim, grid, freqs)?;
        Ok(Self::from_parts(
            rows_out,
            cols_out,
            config.layout,
            head_dim,
            freqs.heads,
            grid,
        ))
    }

    fn from_parts(
        rows_table: &'a [[f32; 2]],
        cols_table: &'a [[f32; 2]],
        layout: Layout,
        head_dim: usize,
        heads: usize,
        grid: Grid,
    ) -> Self {
        Self {
            rows_table,
            cols_table,
            heads,
            grid,
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

    /// Heads the learned frequencies are for; buffers must have exactly this many.
    pub fn heads(&self) -> usize {
        self.heads
    }

    /// The grid the table covers.
    pub fn grid(&self) -> Grid {
        self.grid
    }

    /// The pair layout.
    pub fn layout(&self) -> Layout {
        self.plan.layout
    }

    /// The backend rotations run on.
    pub fn backend(&self) -> Backend {
        self.plan.backend
    }

    fn angles<'t>(&self, positions: Positions2d<'t>) -> Mixed<'t>
    where
        'a: 't,
    {
        let stride = self.heads * (self.plan.head_dim / 2);
        Mixed {
            rows: self.rows_table,
            cols: self.cols_table,
            stride,
            positions,
        }
    }

    fn check_heads(&self, heads: usize) -> Result<(), Error> {
        if heads == self.heads {
            Ok(())
        } else {
            Err(Error::HeadCount {
                expected: self.heads,
                actual: heads,
            })
        }
    }

    /// Rotates head `head_index`'s vector of the token at `pos`.
    ///
    /// Errors: [`Error::HeadCount`] (`head_index ≥ heads`), [`Error::HeadLength`],
    /// [`Error::GridPositionOutOfRange`].
    pub fn rotate_head(
        &self,
        head: &mut [f32],
        head_index: usize,
        pos: GridPos,
        dir: Direction,
    ) -> Result<(), Error> {
        if head_index >= self.heads {
            return Err(Error::HeadCount {
                expected: self.heads,
                actual: head_index,
            });
        }
        let positions = core::slice::from_ref(&pos);
        apply::check_grid_positions(positions, self.grid.rows, self.grid.cols)?;
        // Rows hold `heads · d/2` entries; start the view at this head and keep the stride.
        let offset = head_index * (self.plan.head_dim / 2);
        let angles = Mixed {
            rows: self.rows_table.get(offset..).unwrap_or(&[]),
            cols: self.cols_table.get(offset..).unwrap_or(&[]),
            stride: self.heads * (self.plan.head_dim / 2),
            positions: Positions2d::List(positions),
        };
        let job = self.plan.head_job(head, dir, angles)?;
        self.plan.run([job]);
        Ok(())
    }

    /// Rotates a `[tokens][heads][d]` buffer whose tokens after `shape.prefix` are the grid in
    /// row-major order. `shape.heads` must equal [`heads`](Self::heads).
    ///
    /// Errors: [`Error::HeadCount`], [`Error::BufferLength`], [`Error::TokenCount`].
    pub fn rotate(&self, x: &mut [f32], shape: Shape, dir: Direction) -> Result<(), Error> {
        self.check_heads(shape.heads)?;
        let job = self
            .plan
            .job(x, shape, self.grid_tokens(), dir, self.grid_angles())?;
        self.plan.run([job]);
        Ok(())
    }

    /// [`rotate`](Self::rotate) for queries and keys; neither is touched unless both are valid.
    pub fn rotate_qk(
        &self,
        q: &mut [f32],
        k: &mut [f32],
        shape: Shape,
        dir: Direction,
    ) -> Result<(), Error> {
        self.check_heads(shape.heads)?;
        let q = self
            .plan
            .job(q, shape, self.grid_tokens(), dir, self.grid_angles())?;
        let k = self
            .plan
            .job(k, shape, self.grid_tokens(), dir, self.grid_angles())?;
        self.plan.run([q, k]);
        Ok(())
    }

    /// Rotates a buffer whose tokens after `shape.prefix` sit at `positions`, one each.
    ///
    /// Errors: those of [`rotate`](Self::rotate) and [`Error::GridPositionOutOfRange`].
    pub fn rotate_at(
        &self,
        x: &mut [f32],
        shape: Shape,
        positions: &[GridPos],
        dir: Direction,
    ) -> Result<(), Error> {
        self.check_heads(shape.heads)?;
        apply::check_grid_positions(positions, self.grid.rows, self.grid.cols)?;
        let job = self.plan.job(
            x,
            shape,
            positions.len(),
            dir,
            self.angles(Positions2d::List(positions)),
        )?;
        self.plan.run([job]);
        Ok(())
    }

    fn grid_tokens(&self) -> usize {
        self.grid.rows * self.grid.cols
    }

    fn grid_angles(&self) -> Mixed<'a> {
        self.angles(Positions2d::Grid {
            cols: self.grid.cols,
        })
    }
}

/// A RoPE-Mixed table with head dimension `D`, `HEADS` heads and a `ROWS × COLS` grid fixed at
/// compile time. Size: [`MixedTable::BYTES`] `= (ROWS + COLS) · HEADS · D/2 · 8`.
#[derive(Clone)]
pub struct MixedTable<const D: usize, const HEADS: usize, const ROWS: usize, const COLS: usize>
where
    Dim<D>: HeadDim,
{
    rows: [[<Dim<D> as HeadDim>::Half; HEADS]; ROWS],
    cols: [[<Dim<D> as HeadDim>::Half; HEADS]; COLS],
    layout: Layout,
    backend: Backend,
}

impl<const D: usize, const HEADS: usize, const ROWS: usize, const COLS: usize> fmt::Debug
    for MixedTable<D, HEADS, ROWS, COLS>
where
    Dim<D>: HeadDim,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.view().fmt(f)
    }
}

impl<const D: usize, const HEADS: usize, const ROWS: usize, const COLS: usize>
    MixedTable<D, HEADS, ROWS, COLS>
where
    Dim<D>: HeadDim,
{
    /// `[cos, sin]` entries held: `(ROWS + COLS) · HEADS · D / 2`.
    pub const ENTRIES: usize = (ROWS + COLS) * HEADS * (D / 2);
    /// Bytes of table data: `ENTRIES · 8`.
    pub const BYTES: usize = Self::ENTRIES * 8;

    /// Builds the table from the model's learned frequencies (`freqs.heads` must be `HEADS`).
    ///
    /// Errors: [`Error::HeadCount`], [`Error::FrequencyLength`], [`Error::InvalidFrequency`],
    /// [`Error::InvalidRefGrid`].
    pub fn new(config: &Mixed2d, freqs: LearnedFreqs<'_>) -> Result<Self, Error> {
        const {
            assert!(
                HEADS > 0 && ROWS > 0 && COLS > 0,
                "a RoPE-Mixed table needs heads, rows and columns"
            )
        };
        if freqs.heads != HEADS {
            return Err(Error::HeadCount {
                expected: HEADS,
                actual: freqs.heads,
            });
        }
        let zero = [<Dim<D> as HeadDim>::HALF_ZERO; HEADS];
        let mut table = Self {
            rows: [zero; ROWS],
            cols: [zero; COLS],
            layout: config.layout,
            backend: Backend::auto(),
        };
        build_mixed(
            <Dim<D> as HeadDim>::halves_mut(table.rows.as_flattened_mut()),
            <Dim<D> as HeadDim>::halves_mut(table.cols.as_flattened_mut()),
            config,
            D,
            Grid::new(ROWS, COLS),
            freqs,
        )?;
        Ok(table)
    }

    /// The same table, rotating with `backend`. Error: [`Error::BackendUnavailable`].
    pub fn with_backend(self, backend: Backend) -> Result<Self, Error> {
        let backend = apply::check_backend(backend)?;
        Ok(Self { backend, ..self })
    }

    /// The table as a [`MixedTableRef`], which has every rotation method.
    pub fn view(&self) -> MixedTableRef<'_> {
        let mut view = MixedTableRef::from_parts(
            <Dim<D> as HeadDim>::halves(self.rows.as_flattened()),
            <Dim<D> as HeadDim>::halves(self.cols.as_flattened()),
            self.layout,
            D,
            HEADS,
            Grid::new(ROWS, COLS),
        );
        view.plan.backend = self.backend;
        view
    }

    /// See [`MixedTableRef::rotate_head`].
    pub fn rotate_head(
        &self,
        head: &mut [f32],
        head_index: usize,
        pos: GridPos,
        dir: Direction,
    ) -> Result<(), Error> {
        self.view().rotate_head(head, head_index, pos, dir)
    }

    /// See [`MixedTableRef::rotate`].
    pub fn rotate(&self, x: &mut [f32], shape: Shape, dir: Direction) -> Result<(), Error> {
        self.view().rotate(x, shape, dir)
    }

    /// See [`MixedTableRef::rotate_qk`].
    pub fn rotate_qk(
        &self,
        q: &mut [f32],
        k: &mut [f32],
        shape: Shape,
        dir: Direction,
    ) -> Result<(), Error> {
        self.view().rotate_qk(q, k, shape, dir)
    }

    /// See [`MixedTableRef::rotate_at`].
    pub fn rotate_at(
        &self,
        x: &mut [f32],
        shape: Shape,
        positions: &[GridPos],
        dir: Direction,
    ) -> Result<(), Error> {
        self.view().rotate_at(x, shape, positions, dir)
    }
}
