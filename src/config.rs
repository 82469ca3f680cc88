//! The conventions, each an explicit type: which elements pair up, which axis comes first,
//! how grid indices become coordinates, and the frequency schedule.

#![forbid(unsafe_code)]

/// Which elements of a head vector `v` (length `d`) form rotation pair `k`, `k < d/2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Layout {
    /// `(v[2k], v[2k+1])`: the seed documents, rope-vit, LLaMA (Meta), EVA-02 / timm "cat",
    /// FLUX, Paddle's `use_neox_rotary_style=True`.
    Interleaved,
    /// `(v[k], v[k + d/2])` ("rotate_half"): GPT-NeoX, Hugging Face LLaMA, DINOv3,
    /// Qwen2-VL vision, Pixtral.
    Half,
}

/// Which grid axis rotates the first section of a head vector (pairs `0 .. d/4`); the other
/// axis rotates pairs `d/4 .. d/2`. Swapping them is the most common porting bug.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum AxisOrder {
    /// Column (x) first: the seed documents, rope-vit, timm `grid_indexing='xy'`.
    ColFirst,
    /// Row (y) first: timm `grid_indexing='ij'`, EVA-02, DINOv3.
    RowFirst,
}

/// How an integer grid index `i` on an axis of `n` cells becomes the coordinate that
/// multiplies the frequencies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Coords {
    /// The index itself: `i`.
    Index,
    /// Rescaled to a reference grid the model was trained on (EVA-02 / timm `ref_feat_shape`):
    /// `row · ref_rows / rows`, `col · ref_cols / cols`.
    Rescale {
        /// Rows of the reference grid.
        ref_rows: u32,
        /// Columns of the reference grid.
        ref_cols: u32,
    },
    /// Centred in (−1, 1) per axis (DINOv3): `2 · (i + 0.5) / n − 1`.
    Centered,
}

/// Apply the rotation, or undo it (`R(p)ᵀ`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Direction {
    /// Rotate by `+φ`: what a model does to its queries and keys.
    Forward,
    /// Rotate by `−φ`: undoes [`Direction::Forward`].
    Inverse,
}

/// A token's integer position on the patch grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct GridPos {
    /// Row index (y), `0 .. rows`.
    pub row: u32,
    /// Column index (x), `0 .. cols`.
    pub col: u32,
}

impl GridPos {
    /// The position at `row`, `col`.
    pub const fn new(row: u32, col: u32) -> Self {
        Self { row, col }
    }
}

/// A token's real-valued 2-D coordinate, used as is (no [`Coords`] mapping): for jittered,
/// cropped or otherwise non-grid positions.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Coord {
    /// Row coordinate (y).
    pub row: f32,
    /// Column coordinate (x).
    pub col: f32,
}

/// How a `[tokens][heads][head_dim]` buffer is packed: heads per token, and how many leading
/// tokens (CLS, registers) are left unrotated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Shape {
    /// Heads per token.
    pub heads: usize,
    /// Leading tokens that are not rotated.
    pub prefix: usize,
}

impl Shape {
    /// `heads` heads per token, no unrotated prefix.
    pub const fn heads(heads: usize) -> Self {
        Self { heads, prefix: 0 }
    }

    /// The same shape with `prefix` leading tokens left unrotated.
    pub const fn with_prefix(self, prefix: usize) -> Self {
        Self { prefix, ..self }
    }
}

/// Axial 2-D RoPE: pairs `0 .. d/4` rotate by the first axis' coordinate times
/// `f_j = freq_scale · base^(−4j/d)`, pairs `d/4 .. d/2` by the other axis' coordinate
/// times `f_(k − d/4)`. The head dimension must be a multiple of 4.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Axial2d {
    /// Which elements pair up.
    pub layout: Layout,
    /// Which axis rotates the first section.
    pub axis_order: AxisOrder,
    /// How grid indices become coordinates.
    pub coords: Coords,
    /// Frequency base ("theta", "temperature"); must be finite and > 1.
    pub base: f64,
    /// Multiplies every frequency (2π for DINOv3, 1 otherwise); finite, > 0, < 2³².
    pub freq_scale: f64,
}

impl Axial2d {
    /// The seed documents and rope-vit's RoPE-Axial (also timm `'xy'`, Paddle's rope_2d):
    /// interleaved, column first, index coordinates, base 100.
    pub const ROPE_VIT: Self = Self::new(Layout::Interleaved, AxisOrder::ColFirst, 100.0);
    /// EVA-02 (timm `RotaryEmbeddingCat`, `'ij'`): interleaved, row first, base 10 000.
    /// Set [`Coords::Rescale`] with [`Axial2d::with_coords`] when running at another
    /// resolution than `ref_feat_shape`.
    pub const EVA02: Self = Self::new(Layout::Interleaved, AxisOrder::RowFirst, 10_000.0);
    /// DINOv3 (timm `RotaryEmbeddingDinoV3`): half layout, row first, centred coordinates,
    /// base 100, frequency scale 2π.
    pub const DINOV3: Self = Self::new(Layout::Half, AxisOrder::RowFirst, 100.0)
        .with_coords(Coords::Centered)
        .with_freq_scale(core::f64::consts::TAU);

    /// A convention with index coordinates and frequency scale 1.
    pub const fn new(layout: Layout, axis_order: AxisOrder, base: f64) -> Self {
        Self {
            layout,
            axis_order,
            coords: Coords::Index,
            base,
            freq_scale: 1.0,
        }
    }

    /// The same convention with other coordinates.
    pub const fn with_coords(self, coords: Coords) -> Self {
        Self { coords, ..self }
    }

    /// The same convention with another frequency scale.
    pub const fn with_freq_scale(self, freq_scale: f64) -> Self {
        Self { freq_scale, ..self }
    }
}

/// How 1-D angles are formed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum AnglePrecision {
    /// The exact angle `position · f_k`, reduced exactly: within 1.2e-7 of `f64` cos/sin at
    /// every position.
    #[default]
    Exact,
    /// The angle as float32 reference code forms it (Meta LLaMA `precompute_freqs_cis`,
    /// Hugging Face `LlamaRotaryEmbedding`): `inv_freq = 1 / f32(base^(2k/d))` in `f32`,
    /// times `freq_scale` in `f32`, then `angle = f32(position) · inv_freq` rounded to `f32`;
    /// only cos/sin of that `f32` angle is exact. Reproduces those models' outputs, including
    /// their drift from the exact rotation (about 5e-5 below position 512, 1e-3 at 65 535).
    Float32,
}

/// 1-D RoPE: pair `k` rotates by `position · freq_scale · base^(−2k/d)`.
/// The head dimension must be even.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Rope1d {
    /// Which elements pair up.
    pub layout: Layout,
    /// Frequency base ("theta"); must be finite and > 1.
    pub base: f64,
    /// Multiplies every frequency (linear position interpolation uses `1/factor`).
    pub freq_scale: f64,
    /// Exact angles, or angles rounded like float32 reference code.
    pub precision: AnglePrecision,
}

impl Rope1d {
    /// Meta's LLaMA `apply_rotary_emb`: interleaved, base 10 000.
    pub const LLAMA: Self = Self::new(Layout::Interleaved, 10_000.0);
    /// GPT-NeoX / Hugging Face `rotate_half`: half layout, base 10 000.
    pub const NEOX: Self = Self::new(Layout::Half, 10_000.0);

    /// A convention with frequency scale 1.
    pub const fn new(layout: Layout, base: f64) -> Self {
        Self {
            layout,
            base,
            freq_scale: 1.0,
            precision: AnglePrecision::Exact,
        }
    }

    /// The same convention with angles formed at another precision.
    pub const fn with_precision(self, precision: AnglePrecision) -> Self {
        Self { precision, ..self }
    }

    /// The same convention with another frequency scale.
    pub const fn with_freq_scale(self, freq_scale: f64) -> Self {
        Self { freq_scale, ..self }
    }
}

/// RoPE-Mixed (rope-vit): pair `k` of head `h` rotates by
/// `col · fx[h][k] + row · fy[h][k]` with learned frequencies loaded from the model.
/// The head dimension must be even.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Mixed2d {
    /// Which elements pair up (rope-vit: interleaved).
    pub layout: Layout,
    /// How grid indices become coordinates.
    pub coords: Coords,
}

impl Mixed2d {
    /// rope-vit's `RoPE-Mixed`: interleaved, index coordinates.
    pub const ROPE_VIT: Self = Self {
        layout: Layout::Interleaved,
        coords: Coords::Index,
    };
}
