//! The backend seam: one driver loop written once, generic over a per-token [`Kernel`].
//!
//! Public entry points validate their whole input, then describe the work as a [`Job`] and
//! hand it to the selected [`Backend`]. A backend is one file that implements [`Kernel`]
//! and exposes `run(job)` (wrapping [`drive`] in its `#[target_feature]` where it has one)
//! and `is_available()`; adding one is that file plus one line in `registry!` below.

use crate::config::{Coord, Direction, GridPos, Layout};
use crate::freq::Schedule;
use crate::math;

/// Rotation of whole head vectors by per-pair angles given as `[cos, sin]`.
pub(crate) trait Kernel {
    /// Rotates pairs `first_pair .. first_pair + angles.len()` of every head in `x` (a whole
    /// number of `head_dim`-value heads) by `angles`, reversed for [`Direction::Inverse`].
    fn rotate_pairs(
        x: &mut [f32],
        head_dim: usize,
        layout: Layout,
        first_pair: usize,
        angles: &[[f32; 2]],
        dir: Direction,
    );

    /// Rotates every pair `k` of every head `h` in `x` by the sum of the angles
    /// `a[h·d/2 + k]` and `b[h·d/2 + k]` (RoPE-Mixed: `cos(α+β) = cαcβ − sαsβ`, …).
    fn rotate_pairs_summed(
        x: &mut [f32],
        head_dim: usize,
        layout: Layout,
        a: &[[f32; 2]],
        b: &[[f32; 2]],
        dir: Direction,
    );
}

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

/// Where each token's angles come from.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Angles<'t> {
    /// 1-D table: row `p` (width `d/2`) for position `p`.
    Table1d {
        table: &'t [[f32; 2]],
        positions: Positions1d<'t>,
    },
    /// Axial tables of width `d/4`: `first` indexed by the first axis, `second` by the other.
    Axial {
        rows: &'t [[f32; 2]],
        cols: &'t [[f32; 2]],
        col_first: bool,
        positions: Positions2d<'t>,
    },
    /// RoPE-Mixed tables, per row and per column: index `i`'s entries start at `i · stride`;
    /// a token reads `token_len / 2` of them.
    Mixed {
        rows: &'t [[f32; 2]],
        cols: &'t [[f32; 2]],
        stride: usize,
        positions: Positions2d<'t>,
    },
    /// 1-D without a table: angles computed per token.
    Direct1d {
        freqs: Schedule,
        positions: Positions1d<'t>,
    },
    /// Axial 2-D without a table, at real-valued coordinates.
    DirectAxial {
        freqs: Schedule,
        col_first: bool,
        coords: &'t [Coord],
    },
}

/// Validated work: `x` holds whole tokens of `token_len` values, one angle source entry each.
pub(crate) struct Job<'x, 't> {
    pub x: &'x mut [f32],
    pub token_len: usize,
    pub head_dim: usize,
    pub layout: Layout,
    pub dir: Direction,
    pub angles: Angles<'t>,
}

/// Angles computed on the fly are staged in chunks of this many pairs (512 B of stack).
const DIRECT_CHUNK: usize = 64;

/// The one loop over tokens every backend runs.
#[inline(always)]
pub(crate) fn drive<'t, K: Kernel>(job: Job<'_, 't>) {
    let Job {
        x,
        token_len,
        head_dim,
        layout,
        dir,
        angles,
    } = job;
    if token_len == 0 || head_dim == 0 {
        return;
    }
    let tokens = x.chunks_exact_mut(token_len);
    match angles {
        Angles::Table1d { table, positions } => {
            let width = head_dim / 2;
            let rows = table.chunks_exact(width);
            for_each_1d(tokens, positions, |token, p| {
                if let Some(row) = rows.clone().nth(p as usize) {
                    K::rotate_pairs(token, head_dim, layout, 0, row, dir);
                }
            });
        }
        Angles::Axial {
            rows,
            cols,
            col_first,
            positions,
        } => {
            let width = head_dim / 4;
            for_each_2d(tokens, positions, |token, pos| {
                let row = rows.chunks_exact(width).nth(pos.row as usize);
                let col = cols.chunks_exact(width).nth(pos.col as usize);
                if let (Some(row), Some(col)) = (row, col) {
                    let (first, second) = if col_first { (col, row) } else { (row, col) };
                    K::rotate_pairs(token, head_dim, layout, 0, first, dir);
                    K::rotate_pairs(token, head_dim, layout, width, second, dir);
                }
            });
        }
        Angles::Mixed {
            rows,
            cols,
            stride,
            positions,
        } => {
            let width = token_len / 2;
            let entries = |table: &'t [[f32; 2]], index: u32| {
                let start = (index as usize).checked_mul(stride)?;
                table.get(start..)?.get(..width)
            };
            for_each_2d(tokens, positions, |token, pos| {
                let row = entries(rows, pos.row);
                let col = entries(cols, pos.col);
                if let (Some(row), Some(col)) = (row, col) {
                    K::rotate_pairs_summed(token, head_dim, layout, col, row, dir);
                }
            });
        }
        Angles::Direct1d { freqs, positions } => {
            let mut chunk = [[0f32; 2]; DIRECT_CHUNK];
            for_each_1d(tokens, positions, |token, p| {
                let mut first_pair = 0;
                let mut filled = 0;
                for f in freqs.iter() {
                    chunk[filled] = math::cos_sin_turns(f.phase_of_integer(i64::from(p)));
                    filled += 1;
                    if filled == DIRECT_CHUNK {
                        K::rotate_pairs(token, head_dim, layout, first_pair, &chunk, dir);
                        first_pair += filled;
                        filled = 0;
                    }
                }
                K::rotate_pairs(token, head_dim, layout, first_pair, &chunk[..filled], dir);
            });
        }
        Angles::DirectAxial {
            freqs,
            col_first,
            coords,
        } => {
            let section = head_dim / 4;
            let mut first_chunk = [[0f32; 2]; DIRECT_CHUNK];
            let mut second_chunk = [[0f32; 2]; DIRECT_CHUNK];
            for (token, coord) in tokens.zip(coords) {
                // Validated finite by the caller; a NaN here would only give NaN angles.
                let (first, second) = if col_first {
                    (coord.col, coord.row)
                } else {
                    (coord.row, coord.col)
                };
                let (Some(first_decoded), Some(second_decoded)) =
                    (math::decode_f32(first), math::decode_f32(second))
                else {
                    continue;
                };
                let mut first_pair = 0;
                let mut filled = 0;
                for f in freqs.iter() {
                    first_chunk[filled] =
                        math::cos_sin_turns(f.phase_of_coordinate(first_decoded, first));
                    second_chunk[filled] =
                        math::cos_sin_turns(f.phase_of_coordinate(second_decoded, second));
                    filled += 1;
                    if filled == DIRECT_CHUNK || first_pair + filled == section {
                        K::rotate_pairs(
                            token,
                            head_dim,
                            layout,
                            first_pair,
                            &first_chunk[..filled],
                            dir,
                        );
                        K::rotate_pairs(
                            token,
                            head_dim,
                            layout,
                            section + first_pair,
                            &second_chunk[..filled],
                            dir,
                        );
                        first_pair += filled;
                        filled = 0;
                    }
                }
            }
        }
    }
}

#[inline(always)]
fn for_each_1d<'x>(
    tokens: core::slice::ChunksExactMut<'x, f32>,
    positions: Positions1d<'_>,
    mut body: impl FnMut(&mut [f32], u32),
) {
    match positions {
        Positions1d::From(start) => {
            let mut p = start;
            for token in tokens {
                body(token, p);
                p = p.wrapping_add(1);
            }
        }
        Positions1d::List(list) => {
            for (token, &p) in tokens.zip(list) {
                body(token, p);
            }
        }
    }
}

#[inline(always)]
fn for_each_2d<'x>(
    tokens: core::slice::ChunksExactMut<'x, f32>,
    positions: Positions2d<'_>,
    mut body: impl FnMut(&mut [f32], GridPos),
) {
    match positions {
        Positions2d::Grid { cols } => {
            let (mut row, mut col) = (0u32, 0usize);
            for token in tokens {
                body(
                    token,
                    GridPos {
                        row,
                        col: col as u32,
                    },
                );
                col += 1;
                if col == cols {
                    col = 0;
                    row += 1;
                }
            }
        }
        Positions2d::List(list) => {
            for (token, &pos) in tokens.zip(list) {
                body(token, pos);
            }
        }
    }
}

macro_rules! registry {
    ($($(#[doc = $doc:literal])* $variant:ident => $module:ident, $name:literal, cfg($($cfg:tt)*);)*) => {
        $(#[cfg($($cfg)*)] mod $module;)*

        /// A kernel implementation. Every backend gives the same results as [`Backend::Scalar`]
        /// within the bound stated on its variant; [`Backend::auto`] picks the fastest one.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[cfg_attr(feature = "defmt", derive(defmt::Format))]
        #[non_exhaustive]
        pub enum Backend {
            $($(#[doc = $doc])* #[cfg($($cfg)*)] $variant,)*
        }

        impl Backend {
            /// Every backend compiled into this build (available on this CPU or not).
            pub const ALL: &'static [Backend] = &[$(#[cfg($($cfg)*)] Backend::$variant,)*];

            /// A short lowercase name: `"scalar"`, …
            pub const fn name(self) -> &'static str {
                match self {
                    $(#[cfg($($cfg)*)] Backend::$variant => $name,)*
                }
            }

            /// Whether this CPU can run the backend.
            pub fn is_available(self) -> bool {
                match self {
                    $(#[cfg($($cfg)*)] Backend::$variant => $module::is_available(),)*
                }
            }

            pub(crate) fn run(self, job: Job<'_, '_>) {
                match self {
                    $(#[cfg($($cfg)*)] Backend::$variant => $module::run(job),)*
                }
            }
        }
    };
}

registry! {
    /// Plain Rust, one pair at a time, `a·c − b·s` without fused multiply-add: the reference
    /// every other backend is tested against. Always available.
    Scalar => scalar, "scalar", cfg(all());
}

impl Backend {
    /// The fastest backend this build and CPU can run.
    pub fn auto() -> Self {
        Backend::Scalar
    }
}

impl Default for Backend {
    fn default() -> Self {
        Self::auto()
    }
}
