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
    /// A frequency is NaN, infinite or ≥ 2³² radians per unit — a learned RoPE-Mixed one, one
    /// of [`Freqs::Explicit`](crate::Freqs::Explicit), or one [`HfRope`](crate::preset::HfRope)
    /// computes — or an `HfRope` parameter is invalid (a `factor` or original context length
    /// that is not positive and finite, for example).
    InvalidFrequency,
    /// The plan rotates no pairs, or more pairs than fit a head (`2 · pairs > head_dim`).
    RotaryDim {
        /// Pairs the plan rotates.
        pairs: usize,
        /// The head dimension.
        head_dim: usize,
    },
    /// A plan names a coordinate axis the spec does not have.
    InvalidAxis {
        /// The axis named.
        axis: usize,
        /// Axes of the spec.
        axes: usize,
    },
    /// Learned frequencies with a plan other than [`Summed`](crate::Summed), or the other way
    /// round.
    PlanMismatch,
    /// `mscale` is NaN, infinite or not positive.
    InvalidMscale,
    /// A table with a zero extent on an axis, or a [`Piece::Windows`](crate::Piece::Windows)
    /// with a zero window.
    EmptyTable,
    /// [`Coords::Rescale`](crate::Coords::Rescale) with a zero reference extent.
    InvalidRefGrid,
    /// Caller-provided table storage has the wrong number of `[cos, sin]` entries.
    StorageLength {
        /// Entries the table needs.
        expected: usize,
        /// Entries given.
        actual: usize,
    },
    /// A frequency array has the wrong number of values (one per pair; RoPE-Mixed:
    /// `heads · pairs` each).
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
    /// A buffer holds a different number of tokens than its positions describe (the
    /// grid's `rows · cols` plus the prefix, or the length of a position list plus the
    /// prefix).
    TokenCount {
        /// Tokens the positions describe.
        expected: usize,
        /// Tokens the buffer holds.
        actual: usize,
    },
    /// A position outside the table: its coordinate on `axis` is not below the table's
    /// extent there (tableless rotation: every `u32` position is in range, but a run or grid
    /// that would step past `u32::MAX` is not).
    PositionOutOfRange {
        /// The axis.
        axis: usize,
        /// The coordinate asked for.
        value: u64,
        /// The table's extent on that axis (tableless: 2³², saturated to `usize::MAX` on
        /// 32-bit targets).
        extent: usize,
    },
    /// A buffer with another head count than a RoPE-Mixed table's learned frequencies.
    HeadCount {
        /// Heads of the table.
        expected: usize,
        /// Head index or head count given.
        actual: usize,
    },
    /// A coordinate is NaN or infinite (a [`Coords::Linspace`](crate::Coords::Linspace) whose
    /// ends are that far apart included), or, with
    /// [`AnglePrecision::Float32`](crate::AnglePrecision::Float32), of magnitude 2⁹⁶ or more:
    /// its `f32` angle could overflow (every frequency is below 2³² radians).
    NonFiniteCoordinate,
    /// A shape whose size overflows `usize`, or that is past the limits of the fixed-point
    /// table construction (whose divisions use 16-bit digits, so that a 32-bit core needs no
    /// 64-bit division routine): a frequency denominator (the pairs of a section, or of the
    /// whole plan, see [`FreqIndex`](crate::FreqIndex)) above 65 535 — for 1-D RoPE a head
    /// dimension above 131 071 — or, with [`Coords::Rescale`](crate::Coords::Rescale) or
    /// [`Coords::Centered`](crate::Coords::Centered), an extent above 65 535.
    ShapeOverflow,
    /// The chosen [`Backend`](crate::Backend) cannot run on this CPU.
    BackendUnavailable,
    /// Tableless rotation ([`Direct`](crate::Direct)) of a spec whose coordinates are not
    /// [`Coords::Index`](crate::Coords::Index) on every axis (rescaled, centred and linspace
    /// coordinates depend on a table's extents: build a table, or pass the coordinates to
    /// [`Direct::rotate_coords`](crate::Direct::rotate_coords)).
    TableCoords,
    /// Integer scales must be finite and positive with a ratio in [2⁻⁶⁴, 2⁶⁴], and float
    /// buffers take no scales ([`Scales`](crate::Scales)).
    InvalidScales,
    /// What a Q15 table ([`Q15Table`](crate::Q15Table)) does not do in fixed point: a buffer
    /// other than `i16` or `i8`, [`Scales`](crate::Scales) whose input and output differ (or
    /// are not finite and positive), or a spec whose `mscale` is not 1.
    FixedPoint,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::InvalidBase => f.write_str("RoPE base must be finite and greater than 1"),
            Self::InvalidFreqScale => {
                f.write_str("frequency scale must be finite, positive and below 2^32")
            }
            Self::InvalidFrequency => {
                f.write_str("frequency (or RoPE scaling parameter) must be finite and below 2^32 in magnitude")
            }
            Self::RotaryDim { pairs, head_dim } => {
                write!(
                    f,
                    "{pairs} rotation pairs do not fit a head of {head_dim} (need 1 to head_dim / 2)"
                )
            }
            Self::InvalidAxis { axis, axes } => {
                write!(f, "axis {axis} does not exist in a {axes}-axis spec")
            }
            Self::PlanMismatch => {
                f.write_str("learned frequencies go with the summed plan, and only with it")
            }
            Self::InvalidMscale => f.write_str("mscale must be finite and positive"),
            Self::EmptyTable => {
                f.write_str("table must have a non-zero extent on every axis (and windows a non-zero size)")
            }
            Self::InvalidRefGrid => f.write_str("reference extents must be non-zero"),
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
            Self::PositionOutOfRange {
                axis,
                value,
                extent,
            } => {
                write!(
                    f,
                    "coordinate {value} on axis {axis} outside a table of extent {extent}"
                )
            }
            Self::HeadCount { expected, actual } => {
                write!(
                    f,
                    "buffer has {actual} heads, the learned frequencies are for {expected}"
                )
            }
            Self::NonFiniteCoordinate => f.write_str("coordinate or its angle is NaN or infinite"),
            Self::ShapeOverflow => f.write_str("shape too large"),
            Self::BackendUnavailable => f.write_str("backend cannot run on this CPU"),
            Self::InvalidScales => f.write_str(
                "scales must be finite and positive with a ratio in [2^-64, 2^64], on integer buffers only",
            ),
            Self::FixedPoint => f.write_str(
                "a Q15 table rotates i16 and i8 buffers at one scale in and out, mscale 1",
            ),
            Self::TableCoords => {
                f.write_str("tableless rotation takes coordinates as they are: use Coords::Index")
            }
        }
    }
}

/// `core::error::Error` (the trait `std::error::Error` re-exports): no feature needed.
impl core::error::Error for Error {}
