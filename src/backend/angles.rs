//! Angle sources: where each token's angles come from, and the token loop for each.
//!
//! Each source is its own type, so [`drive`](super::drive) is instantiated only for the sources a
//! program uses — firmware that rotates axial grids links the axial loops and nothing else.

#![forbid(unsafe_code)]

use super::Kernel;
use crate::config::{Coord, Direction, GridPos, Layout};
use crate::freq::{Schedule, Schedule1d};
use crate::math;

/// A source of per-token angles, with the loop over a buffer's tokens that applies them.
pub(crate) trait AngleSource: Copy {
    /// Rotates every token of `x` (whole tokens of `token_len` values, heads of `head_dim`,
    /// both non-zero), token `t` by this source's `t`-th angles.
    fn rotate_tokens<K: Kernel>(
        self,
        x: &mut [f32],
        token_len: usize,
        head_dim: usize,
        layout: Layout,
        dir: Direction,
    );
}

/// One kernel call. Inlined into the token loops on hosted targets, so that an arch kernel
/// inherits its caller's `#[target_feature]`s; out of line on bare-metal targets, where one
/// copy per kernel instead of one per call site keeps flash small (the call costs a few
/// instructions per token and section, against tens of pairs rotated).
#[cfg_attr(target_os = "none", inline(never))]
#[cfg_attr(not(target_os = "none"), inline(always))]
pub(super) fn rotate_pairs<K: Kernel>(
    x: &mut [f32],
    head_dim: usize,
    layout: Layout,
    first_pair: usize,
    angles: &[[f32; 2]],
    dir: Direction,
) {
    K::rotate_pairs(x, head_dim, layout, first_pair, angles, dir);
}

/// [`rotate_pairs`] for [`Kernel::rotate_pairs_summed`].
#[cfg_attr(target_os = "none", inline(never))]
#[cfg_attr(not(target_os = "none"), inline(always))]
fn rotate_pairs_summed<K: Kernel>(
    x: &mut [f32],
    head_dim: usize,
    layout: Layout,
    a: &[[f32; 2]],
    b: &[[f32; 2]],
    dir: Direction,
) {
    K::rotate_pairs_summed(x, head_dim, layout, a, b, dir);
}

/// Axial grid rows are processed in blocks of at most this many bytes (whole tokens, at
/// least one): small enough for L1, large enough to load the row entries once for many heads.
const AXIAL_BLOCK_BYTES: usize = 8 * 1024;

/// Angles computed on the fly are staged in chunks of this many pairs (512 B of stack).
const DIRECT_CHUNK: usize = 64;

/// Positions of consecutive 1-D tokens.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Positions1d<'t> {
    /// `start, start + 1, …`
    From(u32),
    /// One position per token.
    List(&'t [u32]),
}

/// Positions of consecutive 2-D tokens.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Positions2d<'t> {
    /// Row-major over a grid of `cols` columns.
    Grid { cols: usize },
    /// One position per token.
    List(&'t [GridPos]),
}

/// 1-D table: row `p` (width `d/2`) for position `p`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Table1d<'t> {
    pub table: &'t [[f32; 2]],
    pub positions: Positions1d<'t>,
}

impl AngleSource for Table1d<'_> {
    #[inline(always)]
    fn rotate_tokens<K: Kernel>(
        self,
        x: &mut [f32],
        token_len: usize,
        head_dim: usize,
        layout: Layout,
        dir: Direction,
    ) {
        let width = head_dim / 2;
        if width == 0 {
            return;
        }
        let rows = self.table.chunks_exact(width);
        for (token, p) in x
            .chunks_exact_mut(token_len)
            .zip(Positions1dIter::new(self.positions))
        {
            if let Some(row) = rows.clone().nth(p as usize) {
                rotate_pairs::<K>(token, head_dim, layout, 0, row, dir);
            }
        }
    }
}

/// Axial tables of width `d/4`, tokens in row-major order over a grid of `grid_cols`
/// columns (and as many rows as `rows` has).
#[derive(Clone, Copy, Debug)]
pub(crate) struct AxialGrid<'t> {
    pub rows: &'t [[f32; 2]],
    pub cols: &'t [[f32; 2]],
    pub col_first: bool,
    pub grid_cols: usize,
}

impl AngleSource for AxialGrid<'_> {
    #[inline(always)]
    fn rotate_tokens<K: Kernel>(
        self,
        x: &mut [f32],
        token_len: usize,
        head_dim: usize,
        layout: Layout,
        dir: Direction,
    ) {
        let width = head_dim / 4;
        if width == 0 || self.grid_cols == 0 {
            return;
        }
        // Every token of a grid row shares its row entries, so the row section is rotated
        // for a block of tokens at once (one kernel call, the entries loaded once for all of
        // the block's heads), then each token's column section ([`Kernel::rotate_axial_block`],
        // which a kernel may do in one pass). Blocks stay within `AXIAL_BLOCK_BYTES` so a
        // second pass hits L1. Each pair is still rotated once by the same angle: results
        // are those of a token-by-token loop.
        let (row_pair, col_pair) = if self.col_first {
            (width, 0)
        } else {
            (0, width)
        };
        let Some(row_len) = self.grid_cols.checked_mul(token_len).filter(|&n| n != 0) else {
            return;
        };
        // Hosted targets: a kernel may rotate the whole grid in one call instead (every grid
        // row has the same column entries, which it can then prepare once per call).
        if !cfg!(target_os = "none")
            && K::rotate_axial_grid(
                x,
                token_len,
                head_dim,
                layout,
                (row_pair, self.rows),
                (col_pair, self.cols),
                width,
                self.grid_cols,
                dir,
            )
        {
            return;
        }
        let grid_rows = x
            .chunks_exact_mut(row_len)
            .zip(self.rows.chunks_exact(width));
        if cfg!(target_os = "none") {
            // Bare metal (no data cache to block for, and flash is scarce): the row section
            // of a whole grid row in one call, then each token's column section.
            for (grid_row, row) in grid_rows {
                rotate_pairs::<K>(grid_row, head_dim, layout, row_pair, row, dir);
                let tokens = grid_row.chunks_exact_mut(token_len);
                for (token, col) in tokens.zip(self.cols.chunks_exact(width)) {
                    rotate_pairs::<K>(token, head_dim, layout, col_pair, col, dir);
                }
            }
            return;
        }
        let block_tokens = (AXIAL_BLOCK_BYTES / 4 / token_len).clamp(1, self.grid_cols);
        let Some(block_len) = block_tokens.checked_mul(token_len).filter(|&n| n != 0) else {
            return;
        };
        for (grid_row, row) in grid_rows {
            let mut cols = self.cols;
            for block in grid_row.chunks_mut(block_len) {
                let (row, col) = ((row_pair, row), (col_pair, cols));
                K::rotate_axial_block(block, token_len, head_dim, layout, row, col, width, dir);
                // Every block but a grid row's last has `block_tokens` tokens.
                cols = cols
                    .get(block_tokens.saturating_mul(width)..)
                    .unwrap_or(&[]);
            }
        }
    }
}

/// Axial tables of width `d/4`, one grid position per token.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AxialList<'t> {
    pub rows: &'t [[f32; 2]],
    pub cols: &'t [[f32; 2]],
    pub col_first: bool,
    pub positions: &'t [GridPos],
}

impl AngleSource for AxialList<'_> {
    #[inline(always)]
    fn rotate_tokens<K: Kernel>(
        self,
        x: &mut [f32],
        token_len: usize,
        head_dim: usize,
        layout: Layout,
        dir: Direction,
    ) {
        let width = head_dim / 4;
        if width == 0 {
            return;
        }
        for (token, pos) in x.chunks_exact_mut(token_len).zip(self.positions) {
            let row = self.rows.chunks_exact(width).nth(pos.row as usize);
            let col = self.cols.chunks_exact(width).nth(pos.col as usize);
            if let (Some(row), Some(col)) = (row, col) {
                let (first, second) = if self.col_first {
                    (col, row)
                } else {
                    (row, col)
                };
                rotate_pairs::<K>(token, head_dim, layout, 0, first, dir);
                rotate_pairs::<K>(token, head_dim, layout, width, second, dir);
            }
        }
    }
}

/// RoPE-Mixed tables, per row and per column: index `i`'s entries start at `i · stride`;
/// a token reads `token_len / 2` of them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mixed<'t> {
    pub rows: &'t [[f32; 2]],
    pub cols: &'t [[f32; 2]],
    pub stride: usize,
    pub positions: Positions2d<'t>,
}

impl AngleSource for Mixed<'_> {
    #[inline(always)]
    fn rotate_tokens<K: Kernel>(
        self,
        x: &mut [f32],
        token_len: usize,
        head_dim: usize,
        layout: Layout,
        dir: Direction,
    ) {
        let width = token_len / 2;
        let tokens = x.chunks_exact_mut(token_len);
        for (token, pos) in tokens.zip(Positions2dIter::new(self.positions)) {
            let row = mixed_entries(self.rows, pos.row, self.stride, width);
            let col = mixed_entries(self.cols, pos.col, self.stride, width);
            if let (Some(row), Some(col)) = (row, col) {
                rotate_pairs_summed::<K>(token, head_dim, layout, col, row, dir);
            }
        }
    }
}

/// `count` entries of a RoPE-Mixed table starting at `index · stride`, if in range.
#[inline(always)]
fn mixed_entries(
    table: &[[f32; 2]],
    index: u32,
    stride: usize,
    count: usize,
) -> Option<&[[f32; 2]]> {
    let start = (index as usize).checked_mul(stride)?;
    table.get(start..)?.get(..count)
}

/// 1-D without a table: angles computed per token.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Direct1d<'t> {
    pub freqs: Schedule1d,
    pub positions: Positions1d<'t>,
}

impl AngleSource for Direct1d<'_> {
    #[inline(always)]
    fn rotate_tokens<K: Kernel>(
        self,
        x: &mut [f32],
        token_len: usize,
        head_dim: usize,
        layout: Layout,
        dir: Direction,
    ) {
        let mut chunk = [[0f32; 2]; DIRECT_CHUNK];
        let tokens = x.chunks_exact_mut(token_len);
        for (token, p) in tokens.zip(Positions1dIter::new(self.positions)) {
            let mut first_pair = 0;
            let mut filled = 0;
            for f in self.freqs.iter() {
                if let Some(entry) = chunk.get_mut(filled) {
                    *entry = math::cos_sin_turns(f.phase_of_integer(i64::from(p)));
                }
                filled += 1;
                if filled == DIRECT_CHUNK {
                    rotate_pairs::<K>(token, head_dim, layout, first_pair, &chunk, dir);
                    first_pair += filled;
                    filled = 0;
                }
            }
            let rest = chunk.get(..filled).unwrap_or(&[]);
            rotate_pairs::<K>(token, head_dim, layout, first_pair, rest, dir);
        }
    }
}

/// Axial 2-D without a table, at real-valued coordinates.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DirectAxial<'t> {
    pub freqs: Schedule,
    pub col_first: bool,
    pub coords: &'t [Coord],
}

impl AngleSource for DirectAxial<'_> {
    #[inline(always)]
    fn rotate_tokens<K: Kernel>(
        self,
        x: &mut [f32],
        token_len: usize,
        head_dim: usize,
        layout: Layout,
        dir: Direction,
    ) {
        let section = head_dim / 4;
        let mut first_chunk = [[0f32; 2]; DIRECT_CHUNK];
        let mut second_chunk = [[0f32; 2]; DIRECT_CHUNK];
        for (token, coord) in x.chunks_exact_mut(token_len).zip(self.coords) {
            let (first, second) = if self.col_first {
                (coord.col, coord.row)
            } else {
                (coord.row, coord.col)
            };
            // Checked finite by the caller.
            let (Some(first_decoded), Some(second_decoded)) =
                (math::decode_f32(first), math::decode_f32(second))
            else {
                continue;
            };
            let mut first_pair = 0;
            let mut filled = 0;
            for f in self.freqs.turns() {
                if let (Some(a), Some(b)) =
                    (first_chunk.get_mut(filled), second_chunk.get_mut(filled))
                {
                    *a = math::cos_sin_turns(math::phase_of_coordinate(first_decoded, f));
                    *b = math::cos_sin_turns(math::phase_of_coordinate(second_decoded, f));
                }
                filled += 1;
                if filled == DIRECT_CHUNK || first_pair + filled == section {
                    let a = first_chunk.get(..filled).unwrap_or(&[]);
                    let b = second_chunk.get(..filled).unwrap_or(&[]);
                    rotate_pairs::<K>(token, head_dim, layout, first_pair, a, dir);
                    rotate_pairs::<K>(token, head_dim, layout, section + first_pair, b, dir);
                    first_pair += filled;
                    filled = 0;
                }
            }
        }
    }
}

// The token loops iterate positions with these iterators rather than calling closures: a
// closure is a separate function without the caller's `#[target_feature]`s, and the
// intrinsics of an arch backend's kernel would not inline into it.

/// The positions of consecutive 1-D tokens.
enum Positions1dIter<'t> {
    From(u32),
    List(core::slice::Iter<'t, u32>),
}

impl<'t> Positions1dIter<'t> {
    #[inline(always)]
    fn new(positions: Positions1d<'t>) -> Self {
        match positions {
            Positions1d::From(start) => Self::From(start),
            Positions1d::List(list) => Self::List(list.iter()),
        }
    }
}

impl Iterator for Positions1dIter<'_> {
    type Item = u32;

    #[inline(always)]
    fn next(&mut self) -> Option<u32> {
        match self {
            Self::From(p) => {
                let current = *p;
                *p = p.wrapping_add(1);
                Some(current)
            }
            Self::List(list) => list.next().copied(),
        }
    }
}

/// The positions of consecutive 2-D tokens.
enum Positions2dIter<'t> {
    Grid { row: u32, col: usize, cols: usize },
    List(core::slice::Iter<'t, GridPos>),
}

impl<'t> Positions2dIter<'t> {
    #[inline(always)]
    fn new(positions: Positions2d<'t>) -> Self {
        match positions {
            Positions2d::Grid { cols } => Self::Grid {
                row: 0,
                col: 0,
                cols,
            },
            Positions2d::List(list) => Self::List(list.iter()),
        }
    }
}

impl Iterator for Positions2dIter<'_> {
    type Item = GridPos;

    #[inline(always)]
    fn next(&mut self) -> Option<GridPos> {
        match self {
            Self::Grid { row, col, cols } => {
                let pos = GridPos {
                    row: *row,
                    col: *col as u32,
                };
                *col += 1;
                if *col == *cols {
                    *col = 0;
                    *row += 1;
                }
                Some(pos)
            }
            Self::List(list) => list.next().copied(),
        }
    }
}
