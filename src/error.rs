//! The one error type of the crate.

#![forbid(unsafe_code)]

use core::fmt;

/// Everything a caller can get wrong. Every fallible function checks its whole input before it
/// writes anything, so an `Err` means the buffers are untouched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Error {
    /// `base` is NaN, infinite or not above 1.
    InvalidBase,
    /// `freq_scale` is NaN, infinite, not positive, or ≥ 2³² radians per unit.
    InvalidFreqScale,
    /// A learned RoPE-Mixed frequency is NaN, infinite or ≥ 2³² radians per unit.
    InvalidFrequency,
    /// The head dimension is zero or not a multiple of `multiple_of`
    /// (2 for 1-D, 4 for axial 2-D, 2 for RoPE-Mixed).
    InvalidHeadDim {
        /// The head dimension given.
        head_dim: usize,
        /// What it must be a multiple of.
        multiple_of: usize,
    },
    /// A table with zero rows, columns, positions or heads.
    EmptyTable,
    /// [`Coords::Rescale`](crate::Coords::Rescale) with a zero reference grid side.
    InvalidRefGrid,
    /// Caller-provided table storage has the wrong number of `[cos, sin]` entries.
    StorageLength {
        /// Entries the table needs.
        expected: usize,
        /// Entries given.
        actual: usize,
    },
    /// RoPE-Mixed frequency arrays have the wrong number of values (`heads · head_dim / 2` each).
    FrequencyLength {
        /// Values needed.
        expected: usize,
        /// Values given.
        actual: usize,
    },
    /// A buffer was described with zero heads.
    ZeroHeads,
    /// A single head vector's length differs from the table's head dimension.
    HeadLength {
        /// The table's head dimension.
        expected: usize,
        /// The slice length given.
        actual: usize,
    },
    /// A buffer's length is not a whole number of tokens (`heads · head_dim` values each).
    BufferLength {
        /// The buffer length given.
        actual: usize,
        /// The length of one token.
        token_len: usize,
    },
    /// A buffer holds a different number of tokens than its positions describe
    /// (the grid's `rows · cols` plus the prefix, or the length of a position list plus the prefix).
    TokenCount {
        /// Tokens the positions describe.
        expected: usize,
        /// Tokens the buffer holds.
        actual: usize,
    },
    /// A 1-D position outside the table (`position ≥ len`), or past `u32::MAX`.
    PositionOutOfRange {
        /// The position asked for.
        position: u64,
        /// Positions available (`2^32` for tableless rotation).
        len: u64,
    },
    /// A grid position outside the table's grid.
    GridPositionOutOfRange {
        /// Row asked for.
        row: u32,
        /// Column asked for.
        col: u32,
        /// Rows of the table.
        rows: usize,
        /// Columns of the table.
        cols: usize,
    },
    /// A head index outside a RoPE-Mixed table, or a buffer with another head count than the table.
    HeadCount {
        /// Heads of the table.
        expected: usize,
        /// Head index or head count given.
        actual: usize,
    },
    /// A coordinate is NaN or infinite.
    NonFiniteCoordinate,
    /// A shape whose size overflows `usize`, or that is past the limits of the fixed-point
    /// table construction (whose divisions use 16-bit digits, so that a 32-bit core needs no
    /// 64-bit division routine): more than 65 535 frequencies per axis — a head dimension
    /// above 131 070 for 1-D RoPE or above 262 140 for axial 2-D — or, with
    /// [`Coords::Rescale`](crate::Coords::Rescale) or [`Coords::Centered`](crate::Coords::Centered),
    /// a grid side above 65 535.
    ShapeOverflow,
    /// The chosen [`Backend`](crate::Backend) cannot run on this CPU.
    BackendUnavailable,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::InvalidBase => f.write_str("RoPE base must be finite and greater than 1"),
            Self::InvalidFreqScale => {
                f.write_str("frequency scale must be finite, positive and below 2^32")
            }
            Self::InvalidFrequency => {
                f.write_str("learned frequency must be finite and below 2^32 in magnitude")
            }
            Self::InvalidHeadDim {
                head_dim,
                multiple_of,
            } => {
                write!(
                    f,
                    "head dim {head_dim} must be a non-zero multiple of {multiple_of}"
                )
            }
            Self::EmptyTable => {
                f.write_str("table must have at least one row, column, position and head")
            }
            Self::InvalidRefGrid => f.write_str("reference grid sides must be non-zero"),
            Self::StorageLength { expected, actual } => {
                write!(f, "table storage holds {actual} entries, needs {expected}")
            }
            Self::FrequencyLength { expected, actual } => {
                write!(f, "frequency array holds {actual} values, needs {expected}")
            }
            Self::ZeroHeads => f.write_str("buffer must have at least one head"),
            Self::HeadLength { expected, actual } => {
                write!(
                    f,
                    "head vector has {actual} values, table head dim is {expected}"
                )
            }
            Self::BufferLength { actual, token_len } => {
                write!(
                    f,
                    "buffer of {actual} values is not a whole number of {token_len}-value tokens"
                )
            }
            Self::TokenCount { expected, actual } => {
                write!(
                    f,
                    "buffer holds {actual} tokens, positions describe {expected}"
                )
            }
            Self::PositionOutOfRange { position, len } => {
                write!(f, "position {position} outside a table of {len} positions")
            }
            Self::GridPositionOutOfRange {
                row,
                col,
                rows,
                cols,
            } => {
                write!(
                    f,
                    "grid position (row {row}, col {col}) outside a {rows}x{cols} table"
                )
            }
            Self::HeadCount { expected, actual } => {
                write!(f, "head {actual} does not fit a table of {expected} heads")
            }
            Self::NonFiniteCoordinate => f.write_str("coordinate is NaN or infinite"),
            Self::ShapeOverflow => f.write_str("shape too large"),
            Self::BackendUnavailable => f.write_str("backend cannot run on this CPU"),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for Error {}
