//! Token positions: the orders models put their tokens in, generated without storage, and
//! explicit lists.
//!
//! A buffer's tokens after its unrotated prefix are at the positions a [`Positions`] value
//! describes, one `[u32; A]` per token (coordinates in the spec's axis order):
//!
//! - [`Grid`]: every position of a grid, row-major (the last axis fastest) — a 2-D patch
//!   grid, a video frame-major then row-major, 1-D positions `0 .. n`;
//! - [`Run`]: `start, start + step, start + 2·step, …` — 1-D text from any position, text
//!   tokens of M-RoPE (every axis steps by 1), or repeats of one position (`step` 0);
//! - `&[[u32; A]]`: one explicit position per token (patch dropping, any order);
//! - `&[Piece<A>]`: pieces of these one after the other (FLUX's text then image tokens,
//!   M-RoPE's text + image + text), and [`Piece::Windows`], Qwen2-VL's 2×2 merge-window order.
//!
//! [`preset`](crate::preset) builds the pieces of the families that need them.

#![forbid(unsafe_code)]

use crate::error::Error;

/// Every position of a grid of `extents` from `origin`, row-major: the last axis fastest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Grid<const A: usize> {
    /// The first position.
    pub origin: [u32; A],
    /// Cells per axis.
    pub extents: [usize; A],
}

impl<const A: usize> Grid<A> {
    /// The grid of `extents` from the origin (every coordinate 0).
    pub const fn new(extents: [usize; A]) -> Self {
        Self {
            origin: [0; A],
            extents,
        }
    }

    /// The same grid starting at `origin`.
    pub const fn at(self, origin: [u32; A]) -> Self {
        Self { origin, ..self }
    }

    /// `Π extents`, or `None` on overflow.
    pub const fn tokens(&self) -> Option<usize> {
        let mut n = 1usize;
        let mut a = 0;
        while a < A {
            n = match n.checked_mul(self.extents[a]) {
                Some(n) => n,
                None => return None,
            };
            a += 1;
        }
        Some(n)
    }
}

/// Positions `start + t · step` for tokens `t = 0, 1, …`, as many as the buffer holds (or
/// `count` in a [`Piece`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Run<const A: usize> {
    /// The first position.
    pub start: [u32; A],
    /// The step per token on each axis.
    pub step: [u32; A],
}

impl<const A: usize> Run<A> {
    /// `start, start + 1, …` on every axis: 1-D text from position `start[0]`, or text
    /// tokens of M-RoPE (all axes equal).
    pub const fn from(start: [u32; A]) -> Self {
        Self {
            start,
            step: [1; A],
        }
    }

    /// Every token at `position` (FLUX's text tokens at `(0, 0, 0)`).
    pub const fn repeat(position: [u32; A]) -> Self {
        Self {
            start: position,
            step: [0; A],
        }
    }
}

/// One piece of a sequence of tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Piece<const A: usize> {
    /// `count` tokens of a [`Run`].
    Run {
        /// The run.
        run: Run<A>,
        /// Tokens.
        count: usize,
    },
    /// A [`Grid`], walked `repeat` times (SAM 2's memory keys repeat one frame's grid).
    Grid {
        /// The grid.
        grid: Grid<A>,
        /// How many times; 1 for once.
        repeat: usize,
    },
    /// A grid whose last two axes are walked in `window × window` blocks (Qwen2-VL's
    /// vision tower, window 2): blocks row-major, cells row-major within each block (blocks
    /// at the far edges are clipped when the extents are not multiples of the window), the
    /// other axes outermost; the whole walk `repeat` times (once per video frame when the
    /// spec has only the two spatial axes).
    Windows {
        /// The grid.
        grid: Grid<A>,
        /// The block side; at least 1.
        window: usize,
        /// How many times; 1 for once.
        repeat: usize,
    },
}

/// Where a buffer's tokens are: [`Grid`], [`Run`], `&[[u32; A]]` or `&[Piece<A>]`. Sealed.
pub trait Positions<const A: usize>: sealed::PositionsImpl<A> {}

impl<const A: usize> Positions<A> for Grid<A> {}
impl<const A: usize> Positions<A> for Run<A> {}
impl<const A: usize> Positions<A> for &[[u32; A]] {}
impl<const A: usize> Positions<A> for &[Piece<A>] {}

/// The positions as data the crate's loops match on (the match folds away per type).
#[derive(Clone, Copy, Debug)]
pub enum Order<'p, const A: usize> {
    Grid(Grid<A>),
    Run(Run<A>),
    List(&'p [[u32; A]]),
    Pieces(&'p [Piece<A>]),
}

pub(crate) mod sealed {
    use super::*;

    /// The positions' description for the crate's loops.
    pub trait PositionsImpl<const A: usize>: Copy {
        /// The positions as data.
        fn order(&self) -> Order<'_, A>;
    }

    impl<const A: usize> PositionsImpl<A> for Grid<A> {
        #[inline(always)]
        fn order(&self) -> Order<'_, A> {
            Order::Grid(*self)
        }
    }
    impl<const A: usize> PositionsImpl<A> for Run<A> {
        #[inline(always)]
        fn order(&self) -> Order<'_, A> {
            Order::Run(*self)
        }
    }
    impl<const A: usize> PositionsImpl<A> for &[[u32; A]] {
        #[inline(always)]
        fn order(&self) -> Order<'_, A> {
            Order::List(self)
        }
    }
    impl<const A: usize> PositionsImpl<A> for &[Piece<A>] {
        #[inline(always)]
        fn order(&self) -> Order<'_, A> {
            Order::Pieces(self)
        }
    }
}

/// The largest coordinate on each axis of `count > 0` tokens of `run`, or the first axis
/// where it passes `u32::MAX`.
fn run_max<const A: usize>(run: &Run<A>, count: usize) -> Result<[u64; A], usize> {
    let mut max = [0u64; A];
    let last = count.saturating_sub(1) as u64;
    for (a, m) in max.iter_mut().enumerate() {
        let value = u64::from(run.step[a])
            .checked_mul(last)
            .and_then(|span| span.checked_add(u64::from(run.start[a])))
            .filter(|&value| value <= u64::from(u32::MAX));
        let Some(value) = value else {
            return Err(a);
        };
        *m = value;
    }
    Ok(max)
}

/// The largest coordinate on each axis of a non-empty grid, or the first axis past `u32::MAX`.
fn grid_max<const A: usize>(grid: &Grid<A>) -> Result<[u64; A], usize> {
    let mut max = [0u64; A];
    for (a, m) in max.iter_mut().enumerate() {
        let value = u64::from(grid.origin[a]) + grid.extents[a].saturating_sub(1) as u64;
        if value > u64::from(u32::MAX) {
            return Err(a);
        }
        *m = value;
    }
    Ok(max)
}

impl<'p, const A: usize> Order<'p, A> {
    /// Tokens the positions describe; `None` for a bare [`Run`] (as many as the buffer has).
    #[inline(always)]
    pub(crate) fn tokens(self) -> Result<Option<usize>, Error> {
        let grid_tokens = |grid: &Grid<A>, repeat: usize| {
            grid.tokens()
                .and_then(|n| n.checked_mul(repeat))
                .ok_or(Error::ShapeOverflow)
        };
        Ok(match self {
            Order::Grid(grid) => Some(grid_tokens(&grid, 1)?),
            Order::Run(_) => None,
            Order::List(list) => Some(list.len()),
            Order::Pieces(pieces) => {
                let mut total = 0usize;
                for piece in pieces {
                    let n = match piece {
                        Piece::Run { count, .. } => *count,
                        Piece::Grid { grid, repeat } | Piece::Windows { grid, repeat, .. } => {
                            grid_tokens(grid, *repeat)?
                        }
                    };
                    total = total.checked_add(n).ok_or(Error::ShapeOverflow)?;
                }
                Some(total)
            }
        })
    }

    /// Checks that `count` tokens of these positions have every coordinate on each axis `a`
    /// below `limits[a]` (a table's extents; `u32::MAX + 1` without a table).
    #[inline(always)]
    pub(crate) fn check(self, count: usize, limits: [u64; A]) -> Result<(), Error> {
        let out_of_range = |axis: usize, value: u64| Error::PositionOutOfRange {
            axis,
            value,
            extent: usize::try_from(limits[axis]).unwrap_or(usize::MAX),
        };
        let check_max = |max: Result<[u64; A], usize>| match max {
            Err(axis) => Err(out_of_range(axis, u64::from(u32::MAX) + 1)),
            Ok(max) => match (0..A).find(|&a| max[a] >= limits[a]) {
                Some(a) => Err(out_of_range(a, max[a])),
                None => Ok(()),
            },
        };
        let windows_ok = |window: usize| {
            if window == 0 {
                Err(Error::EmptyTable)
            } else {
                Ok(())
            }
        };
        match self {
            Order::Grid(grid) if count > 0 => check_max(grid_max(&grid)),
            Order::Run(run) if count > 0 => check_max(run_max(&run, count)),
            Order::List(list) => {
                for position in list {
                    if let Some(a) = (0..A).find(|&a| u64::from(position[a]) >= limits[a]) {
                        return Err(out_of_range(a, u64::from(position[a])));
                    }
                }
                Ok(())
            }
            Order::Pieces(pieces) => {
                for piece in pieces {
                    match piece {
                        Piece::Run { run, count } if *count > 0 => check_max(run_max(run, *count))?,
                        Piece::Grid { grid, repeat } if *repeat > 0 && grid.tokens() != Some(0) => {
                            check_max(grid_max(grid))?
                        }
                        Piece::Windows {
                            grid,
                            window,
                            repeat,
                        } => {
                            windows_ok(*window)?;
                            if *repeat > 0 && grid.tokens() != Some(0) {
                                check_max(grid_max(grid))?
                            }
                        }
                        _ => {}
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Tokens a staged chunk should hold a whole number of, and the most tokens a chunk may
    /// span (whole grid lines within one plane keep a chunk a grid); `(1, usize::MAX)` when
    /// any split will do.
    pub(crate) fn chunking(self) -> (usize, usize) {
        match self {
            Order::Grid(grid) if A >= 2 => {
                let line = grid.extents[A - 1];
                (line, line.saturating_mul(grid.extents[A - 2]))
            }
            _ => (1, usize::MAX),
        }
    }

    /// Tokens `first .. first + n` as positions of their own: a sub-grid (whole lines of one
    /// plane, or any run of a 1-D grid), a sub-run or a sub-list; `None` otherwise (pieces, or
    /// a grid split elsewhere).
    pub(crate) fn sub(self, first: usize, n: usize) -> Option<Order<'p, A>> {
        match self {
            Order::Grid(grid) => {
                let line = *grid.extents.last()?;
                if A == 1 {
                    let start = u32::try_from(first).ok()?.checked_add(grid.origin[0])?;
                    let mut sub = grid;
                    sub.extents[0] = n;
                    sub.origin[0] = start;
                    return Some(Order::Grid(sub));
                }
                if line == 0 || !first.is_multiple_of(line) || !n.is_multiple_of(line) {
                    return None;
                }
                let (mut index, lines) = (first / line, n / line);
                let mut sub = Grid {
                    origin: grid.origin,
                    extents: [1; A],
                };
                sub.extents[A - 1] = line;
                sub.extents[A - 2] = lines;
                for a in (0..A - 1).rev() {
                    let extent = grid.extents[a].max(1);
                    let i = index % extent;
                    if a == A - 2 && i + lines > extent {
                        return None;
                    }
                    sub.origin[a] = grid.origin[a].checked_add(u32::try_from(i).ok()?)?;
                    index /= extent;
                }
                Some(Order::Grid(sub))
            }
            Order::Run(run) => {
                let mut sub = run;
                // In `u64`: a run of step 0 may hold more than 2³² tokens.
                for (s, &step) in sub.start.iter_mut().zip(&run.step) {
                    let offset = u64::try_from(first).ok()?.checked_mul(u64::from(step))?;
                    *s = u32::try_from(u64::from(*s).checked_add(offset)?).ok()?;
                }
                Some(Order::Run(sub))
            }
            Order::List(list) => Some(Order::List(list.get(first..first.checked_add(n)?)?)),
            Order::Pieces(_) => None,
        }
    }

    /// The positions of the tokens, in order (`Run` without end).
    ///
    /// The first piece is set up here, from the order still in registers: set up in the
    /// first `next`, it was read back from the iterator's stack copy with one 8-byte load
    /// over two narrower stores, a store-forwarding stall. With the run's state as fields
    /// (see [`PositionIter`]) a one-token decode step went 183 → 170 ns on an Intel Xeon
    /// (family 6, model 207).
    #[inline(always)]
    pub(crate) fn iter(self) -> PositionIter<'p, A> {
        let mut iter = PositionIter {
            order: self,
            piece: 0,
            state: State::Start,
            next: [0; A],
            step: [0; A],
            left: 0,
        };
        iter.start();
        iter
    }
}

/// The positions of consecutive tokens. A state machine rather than closures or nested
/// iterators: a closure would be a separate function without the caller's
/// `#[target_feature]`s, and an arch kernel's intrinsics would not inline into it.
pub(crate) struct PositionIter<'p, const A: usize> {
    order: Order<'p, A>,
    piece: usize,
    state: State<A>,
    /// A run's next position and step, outside [`State`]: as fields of the iterator LLVM
    /// keeps them in registers, while a variant's payload went through the stack (a
    /// store-forwarding stall in every one-token call).
    next: [u32; A],
    step: [u32; A],
    /// Tokens left in the current run, or in all repeats of the current grid.
    left: usize,
}

#[derive(Clone, Copy)]
enum State<const A: usize> {
    /// Before the current piece.
    Start,
    /// At entry `index` of a list.
    List {
        index: usize,
    },
    /// In a run (its state in the iterator's `next`, `step` and `left`).
    Run,
    /// Walking a grid ([`GridWalk`]), the iterator's `left` tokens to go in all repeats.
    Grid {
        walk: GridWalk<A>,
    },
    Done,
}

impl<const A: usize> PositionIter<'_, A> {
    /// Sets up piece `self.piece` (or the whole order); `Done` past the end.
    #[inline(always)]
    fn start(&mut self) {
        let piece = match self.order {
            Order::List(_) if self.piece == 0 => {
                self.piece = 1;
                self.state = State::List { index: 0 };
                return;
            }
            Order::Grid(grid) if self.piece == 0 => Piece::Grid { grid, repeat: 1 },
            Order::Run(run) if self.piece == 0 => Piece::Run {
                run,
                count: usize::MAX,
            },
            Order::Pieces(pieces) => match pieces.get(self.piece) {
                Some(&piece) => piece,
                None => {
                    self.state = State::Done;
                    return;
                }
            },
            _ => {
                self.state = State::Done;
                return;
            }
        };
        self.piece += 1;
        let (grid, window, repeat) = match piece {
            Piece::Run { run, count } => {
                self.next = run.start;
                self.step = run.step;
                self.left = count;
                self.state = State::Run;
                return;
            }
            Piece::Grid { grid, repeat } => (grid, 1, repeat),
            Piece::Windows {
                grid,
                window,
                repeat,
            } => (grid, window.max(1), repeat),
        };
        self.left = grid.tokens().unwrap_or(0).saturating_mul(repeat);
        self.state = State::Grid {
            walk: GridWalk::new(grid, window),
        };
    }
}

/// A walk over a grid's cells, a step per token with no division (a token's few ns): in
/// row-major order, or in `window × window` blocks over the last two axes (Qwen2-VL's merge
/// windows: the blocks row-major, the cells of a block row-major, blocks clipped at the
/// grid's edges). After the last cell it starts again (a piece's repeats).
#[derive(Clone, Copy)]
pub(crate) struct GridWalk<const A: usize> {
    grid: Grid<A>,
    /// Block side: 1 is row-major.
    window: usize,
    /// Offsets from the origin. With windows, the last two hold the current block's first
    /// row and column, and `inner` the cell within the block.
    at: [usize; A],
    inner: [usize; 2],
    /// The current block's rows and columns (clipped at the grid's edges).
    block: [usize; 2],
}

impl<const A: usize> GridWalk<A> {
    fn new(grid: Grid<A>, window: usize) -> Self {
        let mut walk = Self {
            grid,
            window: window.max(1),
            at: [0; A],
            inner: [0; 2],
            block: [1; 2],
        };
        walk.clip();
        walk
    }

    /// Whether blocks are walked (else row-major over every axis).
    #[inline(always)]
    fn windowed(&self) -> bool {
        self.window > 1 && A >= 2
    }

    /// The current block's extent, clipped at the grid's edges.
    #[inline(always)]
    fn clip(&mut self) {
        if self.windowed() {
            for i in 0..2 {
                let a = A - 2 + i;
                self.block[i] = self
                    .window
                    .min(self.grid.extents[a].saturating_sub(self.at[a]));
            }
        }
    }

    /// The current cell's position.
    #[inline(always)]
    fn position(&self) -> [u32; A] {
        let mut position = self.grid.origin;
        for (p, &offset) in position.iter_mut().zip(&self.at) {
            *p = p.wrapping_add(offset as u32);
        }
        if self.windowed() {
            position[A - 2] = position[A - 2].wrapping_add(self.inner[0] as u32);
            position[A - 1] = position[A - 1].wrapping_add(self.inner[1] as u32);
        }
        position
    }

    /// Moves to the next cell (after the last: the first).
    #[inline(always)]
    fn advance(&mut self) {
        let mut odometer = A;
        if self.windowed() {
            self.inner[1] += 1;
            if self.inner[1] < self.block[1] {
                return;
            }
            self.inner[1] = 0;
            self.inner[0] += 1;
            if self.inner[0] < self.block[0] {
                return;
            }
            self.inner[0] = 0;
            // The next block along the row of blocks, else the next band's first.
            let (rows, cols) = (self.grid.extents[A - 2], self.grid.extents[A - 1]);
            self.at[A - 1] = self.at[A - 1].saturating_add(self.window);
            if self.at[A - 1] >= cols {
                self.at[A - 1] = 0;
                self.at[A - 2] = self.at[A - 2].saturating_add(self.window);
                if self.at[A - 2] >= rows {
                    self.at[A - 2] = 0;
                    odometer = A - 2;
                }
            }
            if odometer == A {
                self.clip();
                return;
            }
        }
        // Row-major over axes `0 .. odometer`: the last fastest.
        let mut a = odometer;
        while let Some(below) = a.checked_sub(1) {
            a = below;
            self.at[a] += 1;
            if self.at[a] < self.grid.extents[a] {
                break;
            }
            self.at[a] = 0;
        }
        self.clip();
    }
}

/// Position of cell `index` of `grid` in row-major order, or in `window × window` blocks over
/// the last two axes, computed by division: the reference [`GridWalk`] is tested against.
/// (Divisions are checked: an empty extent yields its origin, never a panic.)
#[cfg(test)]
fn grid_cell<const A: usize>(grid: &Grid<A>, window: usize, mut index: usize) -> [u32; A] {
    let div = |a: usize, b: usize| a.checked_div(b).unwrap_or(0);
    let rem = |a: usize, b: usize| a.checked_rem(b).unwrap_or(0);
    let mut position = grid.origin;
    let mut spatial = 0;
    if window > 1 && A >= 2 {
        let (rows, cols) = (grid.extents[A - 2], grid.extents[A - 1]);
        let plane = rows * cols;
        let (outer, mut within) = (div(index, plane), rem(index, plane));
        // Bands of `window` rows: whole bands hold `window · cols` cells. A window too large
        // for the grid saturates: one band (block) then holds the whole plane (band), and
        // the products below stay within `index`.
        let band = window.saturating_mul(cols);
        let band_row = div(within, band) * window;
        within = rem(within, band);
        let band_rows = window.min(rows.saturating_sub(band_row));
        let block_cells = window.saturating_mul(band_rows);
        let block_col = div(within, block_cells) * window;
        let in_block = rem(within, block_cells);
        let block_cols = window.min(cols.saturating_sub(block_col));
        position[A - 2] += (band_row + div(in_block, block_cols)) as u32;
        position[A - 1] += (block_col + rem(in_block, block_cols)) as u32;
        index = outer;
        spatial = 2;
    }
    for a in (0..A - spatial).rev() {
        let n = grid.extents[a];
        position[a] += rem(index, n) as u32;
        index = div(index, n);
    }
    position
}

impl<const A: usize> Iterator for PositionIter<'_, A> {
    type Item = [u32; A];

    #[inline(always)]
    fn next(&mut self) -> Option<[u32; A]> {
        loop {
            match &mut self.state {
                State::Start => self.start(),
                State::Done => return None,
                State::List { index } => {
                    let Order::List(list) = self.order else {
                        return None;
                    };
                    let position = list.get(*index).copied();
                    *index += 1;
                    return position;
                }
                State::Run => {
                    if self.left == 0 {
                        self.state = State::Start;
                        continue;
                    }
                    self.left -= 1;
                    let position = self.next;
                    for a in 0..A {
                        self.next[a] = self.next[a].wrapping_add(self.step[a]);
                    }
                    return Some(position);
                }
                State::Grid { walk } => {
                    if self.left == 0 {
                        self.state = State::Start;
                        continue;
                    }
                    self.left -= 1;
                    let position = walk.position();
                    walk.advance();
                    return Some(position);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    fn collect<const A: usize>(order: Order<'_, A>, n: usize) -> Vec<[u32; A]> {
        order.iter().take(n).collect()
    }

    #[test]
    fn run_max_refuses_what_passes_u32() {
        let run = Run {
            start: [7, 0],
            step: [1, u32::MAX],
        };
        assert_eq!(run_max(&run, 1), Ok([7, 0]));
        assert_eq!(run_max(&run, 2), Ok([8, u64::from(u32::MAX)]));
        assert_eq!(run_max(&run, 3), Err(1));
        // `step · (count − 1)` past `u64::MAX` (more than 2³² tokens on a 64-bit target).
        let steep = Run {
            start: [0],
            step: [u32::MAX],
        };
        assert_eq!(run_max(&steep, usize::MAX), Err(0));
        assert_eq!(
            run_max(&Run::repeat([u32::MAX]), usize::MAX),
            Ok([u64::from(u32::MAX)])
        );
    }

    /// A checked run's tokens as a run of their own, past 2³² tokens when its step is 0 (a
    /// staged call splits it into chunks that way; `None` would leave a chunk unrotated).
    #[test]
    fn sub_runs_of_many_tokens() {
        let run = Order::Run(Run {
            start: [7, 3],
            step: [0, 2],
        });
        let sub = |order: Order<'_, 2>, first| match order.sub(first, 64) {
            Some(Order::Run(r)) => Some(r.start),
            _ => None,
        };
        assert_eq!(sub(run, 10), Some([7, 23]));
        assert_eq!(
            sub(run, usize::try_from(u32::MAX / 2 - 1).unwrap()),
            Some([7, u32::MAX])
        );
        assert_eq!(sub(run, usize::try_from(u32::MAX / 2).unwrap()), None);
        if let Ok(far) = usize::try_from(1u64 << 33) {
            let flat = Order::Run(Run::repeat([5, 9]));
            assert_eq!(sub(flat, far), Some([5, 9]));
        }
    }

    #[test]
    fn grid_is_row_major() {
        let got = collect(Order::Grid(Grid::new([2, 3])), 10);
        assert_eq!(got, [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]);
        let video = collect(Order::Grid(Grid::new([2, 1, 2]).at([5, 0, 1])), 10);
        assert_eq!(video, [[5, 0, 1], [5, 0, 2], [6, 0, 1], [6, 0, 2]]);
    }

    #[test]
    fn grid_walk_matches_cell_arithmetic() {
        fn check<const A: usize>(extents: [usize; A], origin: [u32; A]) {
            let grid = Grid::new(extents).at(origin);
            let cells = grid.tokens().unwrap();
            for window in [1, 2, 3, 4, 7, usize::MAX] {
                let mut walk = GridWalk::new(grid, window);
                // Two rounds: the walk starts again after the last cell (repeats).
                for index in 0..2 * cells {
                    let want = grid_cell(&grid, window, index % cells);
                    assert_eq!(walk.position(), want, "{extents:?} w{window} #{index}");
                    walk.advance();
                }
            }
        }
        check([5], [3]);
        check([3, 5], [0, 0]);
        check([4, 6], [2, 9]);
        check([5, 5], [0, 0]);
        check([1, 7], [0, 0]);
        check([7, 1], [0, 0]);
        check([2, 3, 5], [1, 0, 4]);
        check([3, 4, 4], [0, 0, 0]);
        check([2, 2, 3, 3], [0, 1, 2, 3]);
    }

    #[test]
    fn windows_follow_qwen2_vl_order() {
        // hpos.reshape(h/2, 2, w/2, 2).permute(0, 2, 1, 3).flatten(), for h = 4, w = 6.
        let (h, w, m) = (4usize, 6usize, 2usize);
        let mut want = Vec::new();
        for bh in 0..h / m {
            for bw in 0..w / m {
                for ih in 0..m {
                    for iw in 0..m {
                        want.push([(bh * m + ih) as u32, (bw * m + iw) as u32]);
                    }
                }
            }
        }
        want.extend(want.clone());
        let pieces = [Piece::Windows {
            grid: Grid::new([h, w]),
            window: m,
            repeat: 2,
        }];
        assert_eq!(collect(Order::Pieces(&pieces), 100), want);
        // Clipped windows visit every cell once.
        let odd = [Piece::Windows {
            grid: Grid::new([3, 5]),
            window: 2,
            repeat: 1,
        }];
        let mut cells = collect(Order::Pieces(&odd), 100);
        assert_eq!(cells.len(), 15);
        cells.sort();
        cells.dedup();
        assert_eq!(cells.len(), 15);
        // A window larger than the grid (however large) is row-major order, with no overflow.
        for window in [7, usize::MAX / 2, usize::MAX] {
            let huge = [Piece::Windows {
                grid: Grid::new([3, 5]),
                window,
                repeat: 1,
            }];
            let row_major = collect(Order::Grid(Grid::new([3, 5])), 100);
            assert_eq!(
                collect(Order::Pieces(&huge), 100),
                row_major,
                "window {window}"
            );
        }
    }

    #[test]
    fn pieces_counts_and_checks() {
        let pieces = [
            Piece::Run {
                run: Run::repeat([0, 0, 0]),
                count: 2,
            },
            Piece::Grid {
                grid: Grid::new([1, 2, 2]),
                repeat: 1,
            },
        ];
        let order = Order::Pieces(&pieces);
        assert_eq!(order.tokens().unwrap(), Some(6));
        assert_eq!(
            collect(order, 10),
            [
                [0, 0, 0],
                [0, 0, 0],
                [0, 0, 0],
                [0, 0, 1],
                [0, 1, 0],
                [0, 1, 1]
            ]
        );
        assert!(order.check(6, [1, 2, 2]).is_ok());
        assert_eq!(
            order.check(6, [1, 1, 2]),
            Err(Error::PositionOutOfRange {
                axis: 1,
                value: 1,
                extent: 1
            })
        );
        let run = Order::Run(Run::from([u32::MAX - 1]));
        assert!(run.check(2, [1 << 32]).is_ok());
        assert!(run.check(3, [1 << 32]).is_err());
    }
}
