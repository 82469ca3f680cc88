//! The choices every convention makes, each an explicit type: which elements pair up, how
//! indices become coordinates, how angles are formed, the direction, and the buffer's shape.

#![forbid(unsafe_code)]

use crate::element::Scales;

/// Which elements of a head vector `v` form rotation pair `k`, `k < r/2`, where `r` is the
/// rotary dimension (`r = d` unless only part of the head rotates; elements `r .. d` are then
/// left as they are).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Layout {
    /// `(v[2k], v[2k+1])`: the seed documents, rope-vit, LLaMA (Meta), EVA-02 / timm "cat",
    /// FLUX, Paddle's `use_neox_rotary_style=True`.
    Interleaved,
    /// `(v[k], v[k + r/2])` ("rotate_half"): GPT-NeoX, Hugging Face LLaMA, DINOv3,
    /// Qwen2-VL, Pixtral.
    Half,
}

/// How an integer index `i` on an axis of `n` cells (a table's extent on that axis) becomes
/// the coordinate that multiplies the frequencies. One per axis of a [`Spec`](crate::Spec).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Coords {
    /// The index itself: `i`.
    Index,
    /// Rescaled to the extent the model was trained on (EVA-02 / timm `ref_feat_shape`):
    /// `i · reference / n`, as `i · reference` times a fixed-point `1 / n`: a phase within
    /// `|angle| · 2⁻⁴⁷ + |coordinate| · 2⁻⁴⁵` radians of the exact one (under 1e-8 rad for
    /// angles up to 10⁶ and coordinates up to 10⁵).
    Rescale {
        /// The axis' extent in the reference grid; non-zero.
        reference: u32,
    },
    /// Centred in (−1, 1) (DINOv3): `2 · (i + 0.5) / n − 1`, as
    /// [`Rescale`](Self::Rescale) is evaluated (its phase bound too).
    Centered,
    /// `torch.linspace(start, stop, n)` in `f32` as torch computes it (CogVideoX's crop
    /// grids): `step = fl((stop − start) / (n − 1))`, value `fl(start + fl(i · step))` for
    /// `i < n / 2`, else `fl(stop − fl((n − 1 − i) · step))`; `start` for `n = 1`. Each value
    /// is then reduced exactly. Both ends and their difference must be finite, and with
    /// [`AnglePrecision::Float32`] the ends below 2⁹⁶ in magnitude
    /// ([`Error::NonFiniteCoordinate`](crate::Error::NonFiniteCoordinate)).
    Linspace {
        /// The value at index 0.
        start: f32,
        /// The value at index `n − 1`.
        stop: f32,
    },
}

/// Apply the rotation, or undo it (`R(p)ᵀ`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Direction {
    /// Rotate by `+φ`: what a model does to its queries and keys.
    Forward,
    /// Rotate by `−φ` (the transpose): undoes [`Direction::Forward`] when the spec's `mscale`
    /// is 1; with a magnitude `m` (YaRN, LongRoPE) forward then inverse gives `m²·x`.
    Inverse,
}

/// How a `[tokens][heads][head_dim]` buffer is packed: heads per token, how many leading
/// tokens (CLS, registers) are left unrotated, and for `i16` / `i8` buffers their
/// quantisation.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Shape {
    /// Heads per token.
    pub heads: usize,
    /// Leading tokens that are not rotated.
    pub prefix: usize,
    /// Input and output scales of an integer buffer ([`Scales::SAME`] otherwise).
    pub scales: Scales,
}

impl Shape {
    /// `heads` heads per token, no unrotated prefix, [`Scales::SAME`].
    pub const fn heads(heads: usize) -> Self {
        Self {
            heads,
            prefix: 0,
            scales: Scales::SAME,
        }
    }

    /// The same shape with `prefix` leading tokens left unrotated.
    pub const fn with_prefix(self, prefix: usize) -> Self {
        Self { prefix, ..self }
    }

    /// The same shape for an integer buffer stored at scale `input` and rotated into scale
    /// `output` (requantisation; [`Scales`] says what is supported).
    pub const fn with_scales(self, input: f32, output: f32) -> Self {
        Self {
            scales: Scales { input, output },
            ..self
        }
    }
}

/// How angles are formed from coordinates and frequencies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum AnglePrecision {
    /// The exact angle `position · f_k`, reduced exactly: within 1.2e-7 of `f64` cos/sin at
    /// every position.
    #[default]
    Exact,
    /// The angle as float32 reference code forms it (Meta LLaMA `precompute_freqs_cis`,
    /// Hugging Face `LlamaRotaryEmbedding`): the frequency rounded to `f32` as that code
    /// computes it (for [`Freqs::Base`](crate::Freqs::Base), `1 / f32(base^(e/n))` in `f32`
    /// times `freq_scale` in `f32`; an explicit frequency rounded to `f32`), then
    /// `angle = fl(f32(coordinate) · frequency)`; only cos/sin of that `f32` angle is exact.
    /// Reproduces those models' outputs, including their drift from the exact rotation (about
    /// 5e-5 below position 512, 1e-3 at 65 535), to within a few ulp rather than bit for bit:
    /// here `f32(base^(e/n))` and the cos/sin are correctly rounded, where torch's `powf` and
    /// `cosf` may be an ulp off (the golden files measure 4e-7 at most).
    Float32,
}
