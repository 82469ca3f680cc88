//! The token loops, written once for every kernel: where each token's angles come from.
//!
//! - [`Tables`]: per-axis tables. Plans of [`Sections`](crate::Sections) stream: every
//!   token of a grid line (all coordinates fixed but the last) shares the entries of the
//!   other axes' sections, read once per line (by the kernel's grid loop from the tables when
//!   every section falls on whole register vectors, else staged in a row), and adds its own
//!   last-axis section.
//!   Tokens off a grid take their sections one by one. Other plans (interleaved M-RoPE,
//!   explicit per-pair axes) gather each token's entries pair by pair. RoPE-Mixed sums two
//!   axes' angles per head.
//! - [`Computed`]: no table; each token's entries computed from its coordinates.
//!
//! Row kernels (the SIMD ones, [`Kernel::ROWS`]) receive a token's angles as one row in
//! their own form and rotate every head of the token in one address-order pass. The scalar
//! and portable kernels rotate section by section straight from the tables, so firmware
//! links no row code. Each source is generic over the plan and the positions, so the loops a
//! program does not use are not linked: optimised builds inline the loops ([`from_tables`],
//! [`computed`]) into each source, where the plan's variant is a constant; debug builds share
//! one copy of them between plan types.

#![forbid(unsafe_code)]

use core::mem::MaybeUninit;

use super::{Kernel, Pairing, RowBuffer, Tokens};
use crate::config::{AnglePrecision, Direction};
use crate::freq::{Freq, PairFreqs, TableEntry, scaled};
use crate::math;
use crate::positions::{Order, Piece, Positions};
use crate::spec::{Assign, Plan, Run};

/// A source of per-token angles as entries of type `T`, with the loop over a buffer's tokens
/// that applies them.
pub(crate) trait AngleSource<T = [f32; 2]>: Copy {
    /// Rotates every token of `x` (whole tokens of `token_len` values, heads of `head_dim`,
    /// both non-zero), token `t` by this source's `t`-th angles, with `kernel`.
    fn rotate_tokens<K: Kernel<Entry = T>>(
        self,
        kernel: K,
        x: &mut [K::Value],
        token_len: usize,
        head_dim: usize,
        pairing: Pairing,
        dir: Direction,
    );

    /// The sections plan's runs, when the entries come from per-axis tables (none otherwise):
    /// for a backend that picks its vector width by the runs' bounds (`avx512`).
    #[cfg(all(target_arch = "x86_64", feature = "avx2", feature = "avx512"))]
    #[inline(always)]
    fn runs(&self) -> &[Run] {
        &[]
    }
}

/// One kernel call. Inlined into the token loops on hosted targets, so that an arch kernel
/// inherits its caller's `#[target_feature]`s; out of line on bare-metal targets, where one
/// copy per kernel instead of one per call site keeps flash small (the call costs a few
/// instructions per token and section, against tens of pairs rotated) — unless the kernel
/// asks to be inlined ([`Kernel::INLINE`]: the Cortex-M0 and M4 Q15 loops, a few
/// instructions per pair, whose call would cost a tenth of their work). Out of line wherever
/// debug assertions are on (unoptimised builds, and cargo fuzz's optimised ones), where
/// speed matters little and a copy at each call site was an eighth of every inlined driver
/// (the fuzz, Miri and debug test builds).
#[inline(always)]
pub(super) fn rotate_pairs<K: Kernel>(
    kernel: K,
    x: &mut [K::Value],
    head_dim: usize,
    pairing: Pairing,
    first_pair: usize,
    angles: &[K::Entry],
    dir: Direction,
) {
    if cfg!(not(debug_assertions)) && (K::INLINE || cfg!(not(target_os = "none"))) {
        kernel.rotate_pairs(x, head_dim, pairing, first_pair, angles, dir);
    } else {
        rotate_pairs_out_of_line(kernel, x, head_dim, pairing, first_pair, angles, dir);
    }
}

#[inline(never)]
fn rotate_pairs_out_of_line<K: Kernel>(
    kernel: K,
    x: &mut [K::Value],
    head_dim: usize,
    pairing: Pairing,
    first_pair: usize,
    angles: &[K::Entry],
    dir: Direction,
) {
    kernel.rotate_pairs(x, head_dim, pairing, first_pair, angles, dir);
}

/// How a loop hands a token's angles to `kernel`: into `row` (row kernels, rotary dimension
/// within a row's reach), else straight to [`Kernel::rotate_pairs`].
struct Sink<'r, K: Kernel> {
    kernel: K,
    row: &'r mut K::Row,
    rows: bool,
    head_dim: usize,
    pairing: Pairing,
    dir: Direction,
}

impl<'r, K: Kernel> Sink<'r, K> {
    #[inline(always)]
    fn new(
        kernel: K,
        row: &'r mut K::Row,
        head_dim: usize,
        pairing: Pairing,
        dir: Direction,
    ) -> Self {
        Self {
            kernel,
            row,
            rows: K::ROWS && pairing.pairs <= K::row_pairs(pairing),
            head_dim,
            pairing,
            dir,
        }
    }

    /// Pairs `first_pair ..` of `x`'s heads take `entries`: staged in the row, or rotated now.
    #[inline(always)]
    fn put(&mut self, x: &mut [K::Value], first_pair: usize, entries: &[K::Entry]) {
        if self.rows {
            self.kernel
                .prepare(self.row, self.pairing, self.dir, first_pair, entries);
        } else {
            rotate_pairs(
                self.kernel,
                x,
                self.head_dim,
                self.pairing,
                first_pair,
                entries,
                self.dir,
            );
        }
    }

    /// Every pair of `x`'s heads staged: rotates them (row kernels; the others are done).
    #[inline(always)]
    fn finish(&self, x: &mut [K::Value]) {
        if self.rows {
            self.kernel
                .rotate_row(x, self.head_dim, self.pairing, self.row);
        }
    }
}

/// Gathered or computed entries are staged in chunks of this many pairs (512 B of stack).
const CHUNK: usize = 64;

/// Slots for the rows the grid and token loops prepare once per call (the sink's row aside).
type Spare<K> = [MaybeUninit<<K as Kernel>::Row>; 2];

/// Per-axis tables: `tables[a]` holds one row of `widths[a]` entries per coordinate
/// `0 .. extents[a]`; `runs` are a sections plan's runs (computed when the table was built,
/// the last axis' run last).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tables<'t, const A: usize, P, Po, T = [f32; 2]> {
    pub tables: [&'t [T]; A],
    pub widths: [usize; A],
    pub runs: &'t [Run],
    pub plan: P,
    pub positions: Po,
}

/// `count` entries of row `index` of a table of `width`-entry rows, from `column`.
#[inline(always)]
fn row_entries<T>(table: &[T], width: usize, index: u32, column: usize, count: usize) -> &[T] {
    (index as usize)
        .checked_mul(width)
        .and_then(|start| table.get(start + column..))
        .and_then(|row| row.get(..count))
        .unwrap_or(&[])
}

impl<const A: usize, P: Plan<A>, Po: Positions<A>, T: TableEntry> AngleSource<T>
    for Tables<'_, A, P, Po, T>
{
    #[cfg(all(target_arch = "x86_64", feature = "avx2", feature = "avx512"))]
    #[inline(always)]
    fn runs(&self) -> &[Run] {
        self.runs
    }

    #[inline(always)]
    fn rotate_tokens<K: Kernel<Entry = T>>(
        self,
        kernel: K,
        x: &mut [K::Value],
        token_len: usize,
        head_dim: usize,
        pairing: Pairing,
        dir: Direction,
    ) {
        let (tables, widths, runs) = (self.tables, self.widths, self.runs);
        let assign = self.plan.assign();
        from_tables::<A, Po, T, K>(
            kernel,
            x,
            token_len,
            head_dim,
            pairing,
            dir,
            tables,
            widths,
            runs,
            assign,
            self.positions,
        );
    }
}

/// [`Tables`]' token loop over the plan as data ([`Assign`]): instantiated per axis count,
/// positions, entry type and kernel, not per plan type as well, where it is not inlined
/// (debug builds, whose test and fuzz binaries held a copy of it per plan type). Optimised
/// builds inline it, where the plan's variant is a constant: only its arm is kept.
#[allow(clippy::too_many_arguments)]
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn from_tables<const A: usize, Po: Positions<A>, T: TableEntry, K: Kernel<Entry = T>>(
    kernel: K,
    x: &mut [K::Value],
    token_len: usize,
    head_dim: usize,
    pairing: Pairing,
    dir: Direction,
    tables: [&[T]; A],
    widths: [usize; A],
    runs: &[Run],
    assign: Assign<'_, A>,
    positions: Po,
) {
    let order = positions.order();
    let mut slot = MaybeUninit::uninit();
    let row = K::Row::init(&mut slot);
    let mut sink = Sink::new(kernel, row, head_dim, pairing, dir);
    // The tables the grid and token loops prepare per call: one frame's slots for all of
    // them (two more rows each in their own slots grew the frame by 8 KiB, to a loop of
    // page probes).
    let mut spare = [const { MaybeUninit::uninit() }; 2];
    match assign {
        Assign::Sections(_) => {
            let sections = SectionTables {
                tables,
                widths,
                runs,
            };
            let pieces = match order {
                // The caller checked that `x` holds exactly the grid's tokens: no piece
                // bookkeeping (token counts, chunking) to redo per call. Each `Positions`
                // type reaches one of these arms, so `grid` is inlined once per type.
                Order::Grid(grid) => {
                    return sections.grid(
                        x,
                        grid.origin,
                        grid.extents,
                        token_len,
                        &mut sink,
                        &mut spare,
                    );
                }
                Order::Pieces(pieces) => pieces,
                _ => return sections.each_token(x, order, token_len, &mut sink, &mut spare),
            };
            let mut rest = x;
            for piece in pieces {
                let one = core::slice::from_ref(piece);
                let Ok(Some(tokens)) = Order::Pieces(one).tokens() else {
                    return;
                };
                let Some((here, next)) =
                    rest.split_at_mut_checked(tokens.saturating_mul(token_len))
                else {
                    return;
                };
                rest = next;
                let Piece::Grid { grid, repeat } = *piece else {
                    sections.each_token(here, Order::Pieces(one), token_len, &mut sink, &mut spare);
                    continue;
                };
                let cells = grid.tokens().unwrap_or(0).saturating_mul(token_len);
                if cells == 0 {
                    continue;
                }
                for walk in here.chunks_exact_mut(cells).take(repeat) {
                    sections.grid(
                        walk,
                        grid.origin,
                        grid.extents,
                        token_len,
                        &mut sink,
                        &mut spare,
                    );
                }
            }
        }
        Assign::InterleavedAxes(_) | Assign::PerPair(_) => {
            // Gather each token's entries pair by pair, in chunks.
            let mut chunk = [T::IDENTITY; CHUNK];
            for (token, position) in Tokens::new(x, token_len).zip(order.iter()) {
                let mut first_pair = 0;
                let mut filled = 0;
                for (axis, column) in assign.pair_axes() {
                    let entry = match (tables.get(axis), widths.get(axis), position.get(axis)) {
                        (Some(table), Some(&width), Some(&index)) => {
                            row_entries(table, width, index, column, 1)
                                .first()
                                .copied()
                                .unwrap_or(T::IDENTITY)
                        }
                        _ => T::IDENTITY,
                    };
                    if let Some(slot) = chunk.get_mut(filled) {
                        *slot = entry;
                    }
                    filled += 1;
                    if filled == CHUNK {
                        sink.put(token, first_pair, &chunk);
                        first_pair += filled;
                        filled = 0;
                    }
                }
                sink.put(token, first_pair, chunk.get(..filled).unwrap_or(&[]));
                sink.finish(token);
            }
        }
        Assign::Summed(_) => {
            // Axis 0 is the row (`y`), axis 1 the column (`x`); each row holds every head.
            let (Some(&rows), Some(&cols)) = (tables.first(), tables.get(1)) else {
                return;
            };
            let (Some(&row_width), Some(&col_width)) = (widths.first(), widths.get(1)) else {
                return;
            };
            for (token, position) in Tokens::new(x, token_len).zip(order.iter()) {
                let (Some(&row), Some(&col)) = (position.first(), position.get(1)) else {
                    continue;
                };
                let row = row_entries(rows, row_width, row, 0, row_width);
                let col = row_entries(cols, col_width, col, 0, col_width);
                kernel.rotate_pairs_summed(token, head_dim, pairing, col, row, dir);
            }
        }
    }
}

/// The tables of a [`Sections`](crate::Sections) plan with its runs (one per non-empty
/// section).
#[derive(Clone, Copy)]
struct SectionTables<'t, 'r, const A: usize, T> {
    tables: [&'t [T]; A],
    widths: [usize; A],
    runs: &'r [Run],
}

impl<'t, const A: usize, T> SectionTables<'t, '_, A, T> {
    /// The entries of `run` at `position`.
    #[inline(always)]
    fn run_entries(&self, run: &Run, position: &[u32; A]) -> &'t [T] {
        match (
            self.tables.get(run.axis),
            self.widths.get(run.axis),
            position.get(run.axis),
        ) {
            (Some(table), Some(&width), Some(&index)) => {
                row_entries(table, width, index, run.column, run.len)
            }
            _ => &[],
        }
    }

    /// Tokens at arbitrary positions: section by section.
    #[inline(always)]
    fn each_token<K: Kernel<Entry = T>>(
        &self,
        x: &mut [K::Value],
        order: Order<'_, A>,
        token_len: usize,
        sink: &mut Sink<'_, K>,
        spare: &mut Spare<K>,
    ) {
        // Not `zip`: `Zip::next` is not inlined into the arch kernel's loop and costs a call
        // per token (a tenth of a one-token decode step); `PositionIter::next` is.
        let mut positions = order.iter();
        // A row kernel's row keeps a run's entries until the run is put again: a run whose
        // axis has the previous token's coordinate is already staged (Qwen2-VL's merge
        // windows repeat every other row coordinate, M-RoPE's image tokens their frame and
        // row).
        let mut previous: Option<[u32; A]> = None;
        // Row kernels whose register form takes these runs read each token's entries from
        // the tables, no row staged. Not for one token (a decode step), where the check costs
        // what it saves (Zen 4: `decode_1d` 197 → 206 ns).
        if sink.rows
            && x.len() > token_len
            && sink.kernel.rotate_tokens_from_tables(
                x,
                token_len,
                sink.head_dim,
                sink.pairing,
                sink.dir,
                self.runs,
                (self.tables, self.widths),
                order.iter(),
            )
        {
            return;
        }
        // 2-D tables only (Qwen2-VL's vision tower; two sections over other axis counts are
        // rare): a copy of the loop per axis count took a benchmark harness's code from
        // +6 % to +21 %.
        if A == 2
            && sink.rows
            && x.len() > token_len
            && let [first, second] = self.runs
            && self.each_token_split(x, order, token_len, sink, spare, [first, second])
        {
            return;
        }
        for token in Tokens::new(x, token_len) {
            let Some(position) = positions.next() else {
                return;
            };
            for run in self.runs {
                let staged = sink.rows
                    && previous.is_some_and(|p| p.get(run.axis) == position.get(run.axis));
                if !staged {
                    sink.put(token, run.first, self.run_entries(run, &position));
                }
            }
            previous = Some(position);
            sink.finish(token);
        }
    }

    /// Tokens at arbitrary positions whose two sections share a vector (Qwen2-VL's vision
    /// heads, 20/20 pairs in vectors of 8; Qwen2.5-VL's window order): each section's entries
    /// for every coordinate of its axis prepared once in a table of their own, whole vectors
    /// per coordinate, and each token's vectors read from both
    /// ([`Kernel::rotate_tokens_split`]) — instead of staging the sections whose coordinate
    /// changed in a row and reloading it, per token. Only when both tables fit a row and the
    /// tokens are at least as many as the coordinates prepared (preparing one costs about
    /// what staging one token's section does). Returns `false`, touching nothing, otherwise.
    #[inline(always)]
    fn each_token_split<K: Kernel<Entry = T>>(
        &self,
        x: &mut [K::Value],
        order: Order<'_, A>,
        token_len: usize,
        sink: &Sink<'_, K>,
        spare: &mut Spare<K>,
        runs: [&Run; 2],
    ) -> bool {
        let (head_dim, pairing) = (sink.head_dim, sink.pairing);
        // Each section's table: its lead and stride in pairs, the coordinates of its axis, and
        // that axis' entries (rows of `width`).
        let plan = |run: &Run| {
            let (lead, stride) = K::token_table(head_dim, pairing, run.first, run.len)?;
            let (&entries, &width) = (self.tables.get(run.axis)?, self.widths.get(run.axis)?);
            let coordinates = entries.len().checked_div(width)?;
            let fits = coordinates.saturating_mul(stride) <= K::row_pairs(pairing);
            fits.then_some((lead, stride, coordinates, entries, width))
        };
        let (Some(first), Some(second)) = (plan(runs[0]), plan(runs[1])) else {
            return false;
        };
        if x.len().checked_div(token_len).unwrap_or(0) < first.2 + second.2 {
            return false;
        }
        let [slot0, slot1] = spare;
        let (t0, t1) = (K::Row::init(slot0), K::Row::init(slot1));
        // An array, not `zip`s, whose `next` LLVM left out of line.
        for (table, run, (lead, stride, coordinates, entries, width)) in
            [(&mut *t0, runs[0], first), (&mut *t1, runs[1], second)]
        {
            let pairing = Pairing {
                pairs: coordinates * stride,
                ..pairing
            };
            for c in 0..coordinates {
                let row = row_entries(entries, width, c as u32, run.column, run.len);
                sink.kernel
                    .prepare(table, pairing, sink.dir, c * stride + lead, row);
            }
        }
        sink.kernel.rotate_tokens_split(
            x,
            token_len,
            head_dim,
            pairing,
            [
                (t0, (runs[0].first, runs[0].len)),
                (t1, (runs[1].first, runs[1].len)),
            ],
            [runs[0].axis, runs[1].axis],
            order.iter(),
        )
    }

    /// Every position of a grid of `extents` from `origin`, row-major, by lines.
    #[inline(always)]
    fn grid<K: Kernel<Entry = T>>(
        &self,
        x: &mut [K::Value],
        origin: [u32; A],
        extents: [usize; A],
        token_len: usize,
        sink: &mut Sink<'_, K>,
        spare: &mut Spare<K>,
    ) {
        let last = A - 1;
        let line_tokens = extents[last];
        let Some(line_len) = line_tokens.checked_mul(token_len).filter(|&n| n != 0) else {
            return;
        };
        if self.runs.is_empty() {
            return;
        }
        // Row kernels whose register form takes every section on whole vectors: the kernel's
        // grid loop, straight from the tables (no table prepared; any number of axes).
        if sink.rows
            && sink.kernel.rotate_grid_from_tables(
                x,
                token_len,
                sink.head_dim,
                sink.pairing,
                sink.dir,
                self.runs,
                (self.tables, self.widths),
                (origin, extents),
            )
        {
            return;
        }
        // The last axis' runs vary along a line (the table put them last); the others are
        // shared by all the line's tokens.
        let split = self
            .runs
            .iter()
            .position(|run| run.axis == last)
            .unwrap_or(self.runs.len());
        let (shared, varying) = self.runs.split_at(split);
        debug_assert!(varying.iter().all(|run| run.axis == last));
        let width = self.widths.get(last).copied().unwrap_or(0);
        // The varying runs' entries for the tokens of a line: consecutive rows of `width`
        // entries from the line's first token, each run from its column.
        let varying_table = self
            .tables
            .get(last)
            .and_then(|table| table.get((origin[last] as usize).checked_mul(width)?..))
            .unwrap_or(&[]);
        // Row kernels: when the varying run of every token of a line fits one more row (after
        // the kernel's `lead`), it is prepared once for the whole grid (every line has the
        // same), and each token reads its part from there. Lines that do not fit go token by
        // token: preparing them in parts of as many tokens as fit measured slower on the Zen 4
        // (Wan 2×30×52, d = 128, 12 heads: 1.08× the time; FLUX 32×64, 24 heads: 1.02×;
        // `large`: 1.04×) — such grids are past L2, where the staging costs little.
        if let [run] = varying
            && sink.rows
            && width != 0
            && let Some(lead) = K::line_table_lead(sink.head_dim, sink.pairing, run.first, run.len)
            && line_tokens.saturating_mul(run.len).saturating_add(lead)
                <= K::row_pairs(sink.pairing)
        {
            let [slot, _] = spare;
            let cols = varying_table.get(run.column..).unwrap_or(&[]);
            let pairing = Pairing {
                pairs: lead + line_tokens * run.len,
                ..sink.pairing
            };
            let table = K::Row::init(slot);
            if width == run.len && run.column == 0 {
                // The run is the axis' whole row: the line's entries are contiguous, and
                // prepared in one call (a small grid's setup is a tenth of its time).
                sink.kernel.prepare(table, pairing, sink.dir, lead, cols);
            } else {
                for (t, col) in cols.chunks(width).take(line_tokens).enumerate() {
                    let col = col.get(..run.len).unwrap_or(col);
                    sink.kernel
                        .prepare(table, pairing, sink.dir, lead + t * run.len, col);
                }
            }
            // The row's floats of the varying run initialised once (the line loop reads the row
            // for the vectors a section shares with it, and checks that it holds every pair),
            // so that the first line takes the line loop too.
            sink.put(x, run.first, cols.get(..run.len).unwrap_or(cols));
            let mut position = origin;
            for line in x.chunks_exact_mut(line_len) {
                for run in shared {
                    sink.put(line, run.first, self.run_entries(run, &position));
                }
                let (head_dim, pairing) = (sink.head_dim, sink.pairing);
                let section = (run.first, run.len);
                if !sink
                    .kernel
                    .rotate_line_split(line, token_len, head_dim, pairing, sink.row, section, table)
                {
                    // Not for this kernel after all: the line token by token.
                    let cols = varying_table.get(run.column..).unwrap_or(&[]);
                    for (token, col) in Tokens::new(line, token_len).zip(cols.chunks(width)) {
                        sink.put(token, run.first, col.get(..run.len).unwrap_or(col));
                        sink.finish(token);
                    }
                }
                next_line(&mut position, origin, extents);
            }
            return;
        }
        let mut position = origin;
        // Counted (the same division as `chunks_exact_mut`'s): LLVM deletes the versions of
        // this loop it unswitches into doing nothing only when it can bound their trips.
        let lines = x.len() / line_len;
        for line in x.chunks_exact_mut(line_len).take(lines) {
            // The shared runs over the whole line (staged once for all its tokens).
            for run in shared {
                sink.put(line, run.first, self.run_entries(run, &position));
            }
            if varying.is_empty() || width == 0 {
                sink.finish(line);
            } else if !sink.rows {
                // Rotated as they come: run by run, each over the line's tokens (the same
                // inner loop as one run alone).
                for run in varying {
                    let cols = varying_table.get(run.column..).unwrap_or(&[]);
                    let (head_dim, pairing, dir) = (sink.head_dim, sink.pairing, sink.dir);
                    let section = (run.first, run.len);
                    if sink.kernel.rotate_line_pairs(
                        line, token_len, head_dim, pairing, section, cols, width, dir,
                    ) {
                        continue;
                    }
                    for (token, col) in Tokens::new(line, token_len).zip(cols.chunks(width)) {
                        sink.put(token, run.first, col.get(..run.len).unwrap_or(col));
                    }
                }
            } else {
                // Staged: every run of a token in its row, then the token.
                for (token, row) in Tokens::new(line, token_len).zip(varying_table.chunks(width)) {
                    for run in varying {
                        let entries = row.get(run.column..).unwrap_or(&[]);
                        sink.put(token, run.first, entries.get(..run.len).unwrap_or(entries));
                    }
                    sink.finish(token);
                }
            }
            next_line(&mut position, origin, extents);
        }
    }
}

/// The position of a grid's next line: the coordinates before the last incremented,
/// row-major.
#[inline(always)]
pub(super) fn next_line<const A: usize>(
    position: &mut [u32; A],
    origin: [u32; A],
    extents: [usize; A],
) {
    let mut a = A - 1;
    while let Some(below) = a.checked_sub(1) {
        a = below;
        // Wrapping: after the grid's last line the first axis steps one past its end, which
        // is `u32::MAX + 1` for a grid ending there (the value is never used).
        position[a] = position[a].wrapping_add(1);
        if position[a].wrapping_sub(origin[a]) as usize != extents[a] {
            break;
        }
        position[a] = origin[a];
    }
}

/// No table: every token's entries computed from its coordinates (any plan).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Computed<'t, const A: usize, P, C> {
    pub plan: P,
    pub freqs: ComputedFreqs<'t, A>,
    pub mscale: f32,
    pub coords: C,
}

/// The frequencies of a tableless rotation.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ComputedFreqs<'t, const A: usize> {
    /// Every pair's frequency, in pair order.
    Pairs(PairFreqs<'t, A>),
    /// RoPE-Mixed: learned `[heads][pairs]` per axis (axis 0 the row, `y`; axis 1 `x`).
    Learned {
        y: &'t [f32],
        x: &'t [f32],
        precision: AnglePrecision,
    },
}

/// Coordinates of consecutive tokens, integer or real.
pub(crate) trait CoordSource<const A: usize>: Copy {
    /// Iterator over the tokens' coordinates.
    type Iter<'s>: Iterator<Item = Coordinate<A>>
    where
        Self: 's;
    /// The coordinates, token by token.
    fn coordinates(&self) -> Self::Iter<'_>;
}

/// One token's coordinates.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Coordinate<const A: usize> {
    Integer([u32; A]),
    Real([f32; A]),
}

impl<const A: usize> Coordinate<A> {
    /// The exact phase of the coordinate on `axis` times `f`.
    #[inline(always)]
    fn phase(&self, axis: usize, f: Freq) -> u64 {
        match self {
            Coordinate::Integer(p) => {
                f.phase_of_integer(i64::from(p.get(axis).copied().unwrap_or(0)))
            }
            Coordinate::Real(c) => f.phase_of_coordinate(c.get(axis).copied().unwrap_or(0.0)),
        }
    }
}

/// Integer positions for [`Computed`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct IntegerCoords<Po>(pub Po);

impl<const A: usize, Po: Positions<A>> CoordSource<A> for IntegerCoords<Po> {
    type Iter<'s>
        = core::iter::Map<crate::positions::PositionIter<'s, A>, fn([u32; A]) -> Coordinate<A>>
    where
        Self: 's;
    #[inline(always)]
    fn coordinates(&self) -> Self::Iter<'_> {
        self.0.order().iter().map(Coordinate::Integer)
    }
}

/// Real-valued coordinates for [`Computed`], one per token.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RealCoords<'c, const A: usize>(pub &'c [[f32; A]]);

impl<const A: usize> CoordSource<A> for RealCoords<'_, A> {
    type Iter<'s>
        = core::iter::Map<core::slice::Iter<'s, [f32; A]>, fn(&[f32; A]) -> Coordinate<A>>
    where
        Self: 's;
    #[inline(always)]
    fn coordinates(&self) -> Self::Iter<'_> {
        self.0.iter().map(|c| Coordinate::Real(*c))
    }
}

impl<const A: usize, P: Plan<A>, C: CoordSource<A>> AngleSource for Computed<'_, A, P, C> {
    #[inline(always)]
    fn rotate_tokens<K: Kernel<Entry = [f32; 2]>>(
        self,
        kernel: K,
        x: &mut [K::Value],
        token_len: usize,
        head_dim: usize,
        pairing: Pairing,
        dir: Direction,
    ) {
        let (assign, freqs, mscale) = (self.plan.assign(), self.freqs, self.mscale);
        computed::<A, C, K>(
            kernel,
            x,
            token_len,
            head_dim,
            pairing,
            dir,
            assign,
            freqs,
            mscale,
            self.coords,
        );
    }
}

/// [`Computed`]'s token loop over the plan as data ([`Assign`]), for the reason given at
/// [`from_tables`].
#[allow(clippy::too_many_arguments)]
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn computed<const A: usize, C: CoordSource<A>, K: Kernel<Entry = [f32; 2]>>(
    kernel: K,
    x: &mut [K::Value],
    token_len: usize,
    head_dim: usize,
    pairing: Pairing,
    dir: Direction,
    assign: Assign<'_, A>,
    freqs: ComputedFreqs<'_, A>,
    mscale: f32,
    coords: C,
) {
    let mut chunk = [[0f32; 2]; CHUNK];
    let mut slot = MaybeUninit::uninit();
    let row = K::Row::init(&mut slot);
    let mut sink = Sink::new(kernel, row, head_dim, pairing, dir);
    let tokens = Tokens::new(x, token_len);
    for (token, coordinate) in tokens.zip(coords.coordinates()) {
        match freqs {
            ComputedFreqs::Pairs(freqs) => {
                let mut first_pair = 0;
                let mut filled = 0;
                for ((axis, _), f) in assign.pair_axes().zip(freqs.iter()) {
                    let phase = coordinate.phase(axis, f);
                    if let Some(slot) = chunk.get_mut(filled) {
                        *slot = scaled(math::cos_sin_turns(phase), mscale);
                    }
                    filled += 1;
                    if filled == CHUNK {
                        sink.put(token, first_pair, &chunk);
                        first_pair += filled;
                        filled = 0;
                    }
                }
                sink.put(token, first_pair, chunk.get(..filled).unwrap_or(&[]));
                sink.finish(token);
            }
            ComputedFreqs::Learned {
                y,
                x: fx,
                precision,
            } => {
                let pairs = pairing.pairs;
                if pairs == 0 {
                    continue;
                }
                // Each head by its own frequencies: the exact phase of the sum.
                let heads = Tokens::new(token, head_dim);
                let freqs = y.chunks_exact(pairs).zip(fx.chunks_exact(pairs));
                for (head, (fy, fx)) in heads.zip(freqs) {
                    let mut first_pair = 0;
                    for (fy, fx) in fy.chunks(CHUNK).zip(fx.chunks(CHUNK)) {
                        for ((slot, &fy), &fx) in chunk.iter_mut().zip(fy).zip(fx) {
                            let (fy, fx) = (learned(fy, precision), learned(fx, precision));
                            let phase = coordinate
                                .phase(0, fy)
                                .wrapping_add(coordinate.phase(1, fx));
                            *slot = scaled(math::cos_sin_turns(phase), mscale);
                        }
                        let entries = chunk.get(..fy.len()).unwrap_or(&[]);
                        sink.put(head, first_pair, entries);
                        first_pair += fy.len();
                    }
                    sink.finish(head);
                }
            }
        }
    }
}

/// A learned frequency (checked finite by the caller).
#[inline(always)]
fn learned(radians: f32, precision: AnglePrecision) -> Freq {
    match precision {
        AnglePrecision::Exact => {
            Freq::Exact(crate::freq::radians_f32(radians).unwrap_or(crate::math::Turns(0)))
        }
        AnglePrecision::Float32 => Freq::Float32(radians),
    }
}
