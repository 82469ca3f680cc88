//! Axial 2-D RoPE tables: one `[cos, sin]` row of `d/4` entries per grid row and per grid
//! column — `(rows + cols) · d/4` entries instead of a full `rows · cols · d/2` table.

#![forbid(unsafe_code)]

use core::fmt;

use crate::apply::{self, Plan};
use crate::backend::{AxialGrid, AxialList, Backend};
use crate::config::{Axial2d, AxisOrder, Coords, Direction, GridPos, Layout, Shape};
use crate::dims::{Dim, HeadDim};
use crate::error::Error;
use crate::freq::{AxisMap, Schedule, fill_axis};

/// The size of a patch grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Grid {
    /// Rows (patches along y).
    pub rows: usize,
    /// Columns (patches along x).
    pub cols: usize,
}

impl Grid {
    /// A grid of `rows × cols` patches.
    pub const fn new(rows: usize, cols: usize) -> Self {
        Self { rows, cols }
    }

    /// `rows · cols`, or `None` on overflow.
    pub const fn tokens(self) -> Option<usize> {
        self.rows.checked_mul(self.cols)
    }
}

/// Checks the shape of an axial table and returns its entry count.
fn axial_entries(head_dim: usize, grid: Grid) -> Result<usize, Error> {
    if head_dim == 0 || !head_dim.is_multiple_of(4) {
        return Err(Error::InvalidHeadDim {
            head_dim,
            multiple_of: 4,
        });
    }
    if grid.rows == 0 || grid.cols == 0 {
        return Err(Error::EmptyTable);
    }
    grid.tokens().ok_or(Error::ShapeOverflow)?;
    apply::entries(
        grid.rows
            .checked_add(grid.cols)
            .ok_or(Error::ShapeOverflow)?,
        head_dim / 4,
    )
}

/// Fills the row and column parts of an axial table; checks everything before writing.
fn build_axial(
    rows_out: &mut [[f32; 2]],
    cols_out: &mut [[f32; 2]],
    config: &Axial2d,
    head_dim: usize,
    grid: Grid,
) -> Result<(), Error> {
    let width = head_dim / 4;
    let schedule = Schedule::new(config.base, config.freq_scale, width)?;
    let (ref_rows, ref_cols) = match config.coords {
        Coords::Rescale { ref_rows, ref_cols } => (ref_rows, ref_cols),
        Coords::Index | Coords::Centered => (0, 0),
    };
    let row_map = AxisMap::new(config.coords, grid.rows, ref_rows)?;
    let col_map = AxisMap::new(config.coords, grid.cols, ref_cols)?;
    fill_axis(rows_out, width, row_map, schedule.turns());
    fill_axis(cols_out, width, col_map, schedule.turns());
    Ok(())
}

/// An axial 2-D table in caller-provided storage: the runtime-shaped form, for firmware that
/// learns its image size at run time. All rotation methods live here; the const-generic
/// [`AxialTable`] hands out one with [`AxialTable::view`].
///
/// Cost: [`AxialTableRef::storage_len`] `= (rows + cols) · d/4` entries of 8 bytes
/// (3 584 B for 14×14, d = 64). Rotation reads one row entry and one column entry per pair.
#[derive(Clone, Copy)]
pub struct AxialTableRef<'a> {
    rows_table: &'a [[f32; 2]],
    cols_table: &'a [[f32; 2]],
    head_dim: usize,
    grid: Grid,
    axis_order: AxisOrder,
    plan: Plan,
}

impl fmt::Debug for AxialTableRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AxialTableRef")
            .field("head_dim", &self.head_dim)
            .field("grid", &self.grid)
            .field("layout", &self.plan.layout)
            .field("axis_order", &self.axis_order)
            .field("backend", &self.plan.backend)
            .finish()
    }
}

impl<'a> AxialTableRef<'a> {
    /// `[cos, sin]` entries a table of this shape needs: `(rows + cols) · head_dim / 4`.
    ///
    /// Errors: [`Error::InvalidHeadDim`] unless `head_dim` is a non-zero multiple of 4,
    /// [`Error::EmptyTable`] for an empty grid, [`Error::ShapeOverflow`].
    pub fn storage_len(head_dim: usize, grid: Grid) -> Result<usize, Error> {
        axial_entries(head_dim, grid)
    }

    /// Builds the table for `config` into `storage` (exactly
    /// [`storage_len`](Self::storage_len) entries) without any `f64` arithmetic.
    ///
    /// Errors: those of [`storage_len`](Self::storage_len), [`Error::StorageLength`],
    /// [`Error::InvalidBase`], [`Error::InvalidFreqScale`], [`Error::InvalidRefGrid`].
    /// `storage` is untouched on error.
    pub fn build(
        storage: &'a mut [[f32; 2]],
        config: &Axial2d,
        head_dim: usize,
        grid: Grid,
    ) -> Result<Self, Error> {
        apply::check_storage(axial_entries(head_dim, grid)?, storage.len())?;
        // In range (the length was just checked); `_checked` keeps it free of a panic path.
        let (rows_out, cols_out) = storage
            .split_at_mut_checked(grid.rows * (head_dim / 4))
            .ok_or(Error::ShapeOverflow)?;
        build_axial(rows_out, cols_out, config, head_dim, grid)?;
        Ok(Self::from_parts(rows_out, cols_out, config, head_dim, grid))
    }

    fn from_parts(
        rows_table: &'a [[f32; 2]],
        cols_table: &'a [[f32; 2]],
        config: &Axial2d,
        head_dim: usize,
        grid: Grid,
    ) -> Self {
        Self {
            rows_table,
            cols_table,
            head_dim,
            grid,
            axis_order: config.axis_order,
            plan: Plan {
                head_dim,
                layout: config.layout,
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
        self.head_dim
    }

    /// The grid the table covers.
    pub fn grid(&self) -> Grid {
        self.grid
    }

    /// The pair layout.
    pub fn layout(&self) -> Layout {
        self.plan.layout
    }

    /// Which axis rotates the first section.
    pub fn axis_order(&self) -> AxisOrder {
        self.axis_order
    }

    /// The backend rotations run on.
    pub fn backend(&self) -> Backend {
        self.plan.backend
    }

    /// `[cos, sin]` of row `row`'s angles, `d/4` entries (`None` outside the grid).
    pub fn row_entries(&self, row: usize) -> Option<&'a [[f32; 2]]> {
        entries(self.rows_table, row, self.head_dim / 4)
    }

    /// `[cos, sin]` of column `col`'s angles, `d/4` entries (`None` outside the grid).
    pub fn col_entries(&self, col: usize) -> Option<&'a [[f32; 2]]> {
        entries(self.cols_table, col, self.head_dim / 4)
    }

    fn list_angles<'t>(&self, positions: &'t [GridPos]) -> AxialList<'t>
    where
        'a: 't,
    {
        AxialList {
            rows: self.rows_table,
            cols: self.cols_table,
            col_first: self.axis_order == AxisOrder::ColFirst,
            positions,
        }
    }

    fn grid_angles(&self) -> AxialGrid<'a> {
        AxialGrid {
            rows: self.rows_table,
            cols: self.cols_table,
            col_first: self.axis_order == AxisOrder::ColFirst,
            grid_cols: self.grid.cols,
        }
    }

    /// Rotates one head vector (`head_dim` values) of the token at `pos`.
    ///
    /// Errors: [`Error::HeadLength`], [`Error::GridPositionOutOfRange`].
    pub fn rotate_head(&self, head: &mut [f32], pos: GridPos, dir: Direction) -> Result<(), Error> {
        let positions = core::slice::from_ref(&pos);
        apply::check_grid_positions(positions, self.grid.rows, self.grid.cols)?;
        let job = self.plan.head_job(head, dir, self.list_angles(positions))?;
        self.plan.run([job]);
        Ok(())
    }

    /// Rotates a `[tokens][heads][d]` buffer whose tokens after `shape.prefix` are the grid
    /// in row-major order (`t = row · cols + col`).
    ///
    /// Errors: [`Error::ZeroHeads`], [`Error::BufferLength`], [`Error::TokenCount`]
    /// (the buffer must hold exactly `prefix + rows · cols` tokens).
    pub fn rotate(&self, x: &mut [f32], shape: Shape, dir: Direction) -> Result<(), Error> {
        let job = self
            .plan
            .job(x, shape, self.grid_tokens(), dir, self.grid_angles())?;
        self.plan.run([job]);
        Ok(())
    }

    /// [`rotate`](Self::rotate) for queries and keys of the same shape in one call; neither is
    /// touched unless both are valid.
    pub fn rotate_qk(
        &self,
        q: &mut [f32],
        k: &mut [f32],
        shape: Shape,
        dir: Direction,
    ) -> Result<(), Error> {
        let q = self
            .plan
            .job(q, shape, self.grid_tokens(), dir, self.grid_angles())?;
        let k = self
            .plan
            .job(k, shape, self.grid_tokens(), dir, self.grid_angles())?;
        self.plan.run([q, k]);
        Ok(())
    }

    /// Rotates a buffer whose tokens after `shape.prefix` sit at `positions`, one each
    /// (for example the patches kept after patch dropping, in any order).
    ///
    /// Errors: those of [`rotate`](Self::rotate) with `positions.len()` in place of
    /// `rows · cols`, and [`Error::GridPositionOutOfRange`].
    pub fn rotate_at(
        &self,
        x: &mut [f32],
        shape: Shape,
        positions: &[GridPos],
        dir: Direction,
    ) -> Result<(), Error> {
        apply::check_grid_positions(positions, self.grid.rows, self.grid.cols)?;
        let job = self
            .plan
            .job(x, shape, positions.len(), dir, self.list_angles(positions))?;
        self.plan.run([job]);
        Ok(())
    }

    fn grid_tokens(&self) -> usize {
        self.grid.rows * self.grid.cols
    }
}

/// Entries `index · width .. (index + 1) · width` of an axis table, if in range.
fn entries(table: &[[f32; 2]], index: usize, width: usize) -> Option<&[[f32; 2]]> {
    table.get(index.checked_mul(width)?..)?.get(..width)
}

/// An axial 2-D table with head dimension `D` and a `ROWS × COLS` grid fixed at compile time,
/// to keep on the stack or in a `static`.
///
/// `D` must be a multiple of 4 (from 4 to 512) and the grid non-empty, or the type does not
/// compile. Size: [`AxialTable::BYTES`] `= (ROWS + COLS) · D/4 · 8` (3 584 B for
/// `AxialTable<64, 14, 14>`).
///
/// ```
/// use rope2d::{AxialTable, Axial2d, Direction, Shape};
///
/// let table = AxialTable::<64, 14, 14>::new(&Axial2d::ROPE_VIT)?;
/// let mut q = [0.5f32; (1 + 14 * 14) * 6 * 64]; // CLS + 196 patches, 6 heads
/// table.rotate(&mut q, Shape::heads(6).with_prefix(1), Direction::Forward)?;
/// # Ok::<(), rope2d::Error>(())
/// ```
///
/// A zero-sized grid is rejected when the constructor is instantiated:
///
/// ```compile_fail
/// let _ = rope2d::AxialTable::<64, 0, 14>::new(&rope2d::Axial2d::ROPE_VIT);
/// ```
///
/// and so is a head dimension that is not a multiple of 4:
///
/// ```compile_fail
/// let _ = rope2d::AxialTable::<66, 14, 14>::new(&rope2d::Axial2d::ROPE_VIT);
/// ```
#[derive(Clone)]
pub struct AxialTable<const D: usize, const ROWS: usize, const COLS: usize>
where
    Dim<D>: HeadDim,
{
    rows: [<Dim<D> as HeadDim>::Quarter; ROWS],
    cols: [<Dim<D> as HeadDim>::Quarter; COLS],
    config: Axial2d,
    backend: Backend,
}

impl<const D: usize, const ROWS: usize, const COLS: usize> fmt::Debug for AxialTable<D, ROWS, COLS>
where
    Dim<D>: HeadDim,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.view().fmt(f)
    }
}

impl<const D: usize, const ROWS: usize, const COLS: usize> AxialTable<D, ROWS, COLS>
where
    Dim<D>: HeadDim,
{
    /// `[cos, sin]` entries held: `(ROWS + COLS) · D / 4`.
    pub const ENTRIES: usize = (ROWS + COLS) * (D / 4);
    /// Bytes of table data: `ENTRIES · 8`.
    pub const BYTES: usize = Self::ENTRIES * 8;

    /// Builds the table for `config`.
    ///
    /// Errors: [`Error::InvalidBase`], [`Error::InvalidFreqScale`], [`Error::InvalidRefGrid`].
    pub fn new(config: &Axial2d) -> Result<Self, Error> {
        const {
            assert!(
                ROWS > 0 && COLS > 0,
                "an axial table needs at least one row and one column"
            )
        };
        let mut table = Self {
            rows: [<Dim<D> as HeadDim>::QUARTER_ZERO; ROWS],
            cols: [<Dim<D> as HeadDim>::QUARTER_ZERO; COLS],
            config: *config,
            backend: Backend::auto(),
        };
        build_axial(
            <Dim<D> as HeadDim>::quarters_mut(&mut table.rows),
            <Dim<D> as HeadDim>::quarters_mut(&mut table.cols),
            config,
            D,
            Grid::new(ROWS, COLS),
        )?;
        Ok(table)
    }

    /// The same table, rotating with `backend`. Error: [`Error::BackendUnavailable`].
    pub fn with_backend(self, backend: Backend) -> Result<Self, Error> {
        let backend = apply::check_backend(backend)?;
        Ok(Self { backend, ..self })
    }

    /// The table as an [`AxialTableRef`], which has every rotation method.
    pub fn view(&self) -> AxialTableRef<'_> {
        let mut view = AxialTableRef::from_parts(
            <Dim<D> as HeadDim>::quarters(&self.rows),
            <Dim<D> as HeadDim>::quarters(&self.cols),
            &self.config,
            D,
            Grid::new(ROWS, COLS),
        );
        view.plan.backend = self.backend;
        view
    }

    /// See [`AxialTableRef::rotate_head`].
    pub fn rotate_head(&self, head: &mut [f32], pos: GridPos, dir: Direction) -> Result<(), Error> {
        self.view().rotate_head(head, pos, dir)
    }

    /// See [`AxialTableRef::rotate`].
    pub fn rotate(&self, x: &mut [f32], shape: Shape, dir: Direction) -> Result<(), Error> {
        self.view().rotate(x, shape, dir)
    }

    /// See [`AxialTableRef::rotate_qk`].
    pub fn rotate_qk(
        &self,
        q: &mut [f32],
        k: &mut [f32],
        shape: Shape,
        dir: Direction,
    ) -> Result<(), Error> {
        self.view().rotate_qk(q, k, shape, dir)
    }

    /// See [`AxialTableRef::rotate_at`].
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
