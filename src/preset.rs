//! Model families as [`Spec`] values, each built from the parameters that family's own config
//! carries, and the token orders those families use. Data, not code: every preset is a
//! [`Spec`] any [`Table`](crate::Table) or [`Direct`](crate::Direct) runs, and each is
//! checked against the family's reference code by a golden file (see the README's table).
//!
//! Axes are in the order each family lists a token's coordinates: `[pos]` for text,
//! `[row, col]` for images, `[frame, row, col]` for video, `[t, h, w]` for M-RoPE,
//! `[id0, row, col]` for FLUX.
//!
//! ```
//! use rope2d::{Direction, Grid, Shape, Table, preset};
//!
//! // Wan 2.1: head dim 128, a 4-frame 16 × 24 latent video, 12 heads.
//! let spec = preset::wan(128, 10_000.0);
//! let extents = [4, 16, 24];
//! let mut storage = vec![[0.0f32; 2]; Table::storage_len(&spec, extents)?];
//! let table = Table::build(&mut storage, &spec, extents)?;
//! let mut q = vec![0.5f32; 4 * 16 * 24 * 12 * 128];
//! table.rotate(&mut q, Shape::heads(12), Grid::new(extents), Direction::Forward)?;
//! # Ok::<(), rope2d::Error>(())
//! ```

#![forbid(unsafe_code)]

use crate::config::{Coords, Layout};
use crate::error::Error;
use crate::math;
use crate::positions::{Grid, Piece, Run};
use crate::spec::{
    FreqIndex, Freqs, InterleavedAxes, LearnedFreqs, Section, Sections, Spec, Summed,
};

/// Which grid axis rotates the first half of the pairs of an axial 2-D convention (the other
/// rotates the second half). Swapping them is the most common porting bug.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum AxisOrder {
    /// Column (x) first: the seed documents, rope-vit, timm `grid_indexing='xy'`, SAM 2.
    ColFirst,
    /// Row (y) first: timm `grid_indexing='ij'`, EVA-02, DINOv3, Qwen2-VL vision.
    RowFirst,
}

/// Axis 0 of a 2-D position: the row (y).
pub const ROW: usize = 0;
/// Axis 1 of a 2-D position: the column (x).
pub const COL: usize = 1;

const fn base(base: f64) -> Freqs<'static> {
    Freqs::Base {
        base,
        freq_scale: 1.0,
    }
}

/// Axial 2-D RoPE over `[row, col]` positions: the first `d/4` pairs rotate by the first
/// axis' coordinate times `f_j = base^(−4j/d)`, the next `d/4` by the other axis' (index
/// reset per section). `head_dim` should be a multiple of 4 (the last 2 elements of a
/// `4k + 2` head are left unrotated).
pub const fn axial(
    head_dim: usize,
    layout: Layout,
    order: AxisOrder,
    base_: f64,
) -> Spec<'static, 2> {
    let quarter = head_dim / 4;
    let (first, second) = match order {
        AxisOrder::ColFirst => (COL, ROW),
        AxisOrder::RowFirst => (ROW, COL),
    };
    Spec::new(
        head_dim,
        layout,
        Sections {
            sections: [Section::new(first, quarter), Section::new(second, quarter)],
            index: FreqIndex::PerSection,
        },
        base(base_),
    )
}

/// The seed documents and rope-vit's RoPE-Axial (also timm `'xy'`, Paddle's `rope_2d`):
/// interleaved, column first, base 100.
pub const fn rope_vit(head_dim: usize) -> Spec<'static, 2> {
    axial(head_dim, Layout::Interleaved, AxisOrder::ColFirst, 100.0)
}

/// EVA-02 (timm `RotaryEmbeddingCat`, `'ij'`): interleaved, row first, base 10 000. At
/// another resolution than the model's `ref_feat_shape`, add
/// `.with_coords([Coords::Rescale { reference: ref_rows }, Coords::Rescale { reference: ref_cols }])`.
pub const fn eva02(head_dim: usize) -> Spec<'static, 2> {
    axial(head_dim, Layout::Interleaved, AxisOrder::RowFirst, 10_000.0)
}

/// DINOv3 (timm `RotaryEmbeddingDinoV3`): half layout, row first, coordinates centred in
/// (−1, 1), base 100, frequency scale 2π.
pub const fn dinov3(head_dim: usize) -> Spec<'static, 2> {
    let mut spec = axial(head_dim, Layout::Half, AxisOrder::RowFirst, 100.0);
    spec.freqs = Freqs::Base {
        base: 100.0,
        freq_scale: core::f64::consts::TAU,
    };
    spec.with_coords([Coords::Centered; 2])
}

/// SAM 2's memory attention (Hugging Face `Sam2VideoVisionRotaryEmbedding`): axial,
/// interleaved, column first, `rope_theta` (10 000). Keys: [`sam2_key_positions`].
pub const fn sam2(head_dim: usize, rope_theta: f64) -> Spec<'static, 2> {
    axial(
        head_dim,
        Layout::Interleaved,
        AxisOrder::ColFirst,
        rope_theta,
    )
}

/// SAM 2's key positions: the `[rows, cols]` frame grid once per memory frame, then
/// `object_pointers` tokens at `(0, 0)` (not rotated: `num_k_exclude_rope`).
pub const fn sam2_key_positions(
    frame: [usize; 2],
    memory_frames: usize,
    object_pointers: usize,
) -> [Piece<2>; 2] {
    [
        Piece::Grid {
            grid: Grid::new(frame),
            repeat: memory_frames,
        },
        Piece::Run {
            run: Run::repeat([0, 0]),
            count: object_pointers,
        },
    ]
}

/// The Qwen2-VL / Qwen2.5-VL vision tower (`VisionRotaryEmbedding`): half layout, row first,
/// `f_j = theta^(−2j/(d/2))` per axis (theta 10 000). Tokens: [`qwen2_vl_vision_positions`].
pub const fn qwen2_vl_vision(head_dim: usize, theta: f64) -> Spec<'static, 2> {
    axial(head_dim, Layout::Half, AxisOrder::RowFirst, theta)
}

/// The Qwen2-VL vision tower's token order for an image or video of `grid_thw` patches:
/// `spatial_merge_size × spatial_merge_size` windows, once per frame. Not Qwen2.5-VL's, which
/// groups these windows again into windows of 8×8 patches (`window_index`): for it, pass the
/// positions in that order as an explicit `&[[u32; 2]]` list. A `spatial_merge_size` of 0 is
/// refused by the rotation ([`Error::EmptyTable`]).
pub const fn qwen2_vl_vision_positions(
    grid_thw: [usize; 3],
    spatial_merge_size: usize,
) -> [Piece<2>; 1] {
    [Piece::Windows {
        grid: Grid::new([grid_thw[1], grid_thw[2]]),
        window: spatial_merge_size,
        repeat: grid_thw[0],
    }]
}

/// Pixtral's vision encoder (`PixtralRotaryEmbedding`): half layout; with
/// `f_k = theta^(−2k/d)`, the row rotates pairs `0 .. d/4` with the even frequencies
/// `f_0, f_2, …`, the column pairs `d/4 .. d/2` with the odd ones.
pub const fn pixtral(head_dim: usize, theta: f64) -> Spec<'static, 2> {
    let quarter = head_dim / 4;
    Spec::new(
        head_dim,
        Layout::Half,
        Sections {
            sections: [Section::new(ROW, quarter), Section::new(COL, quarter)],
            index: FreqIndex::Strided,
        },
        base(theta),
    )
}

/// rope-vit's RoPE-Mixed: learned per-head frequencies over `[row, col]` (`freqs.y` for the
/// row, `freqs.x` for the column, each `[heads][head_dim / 2]`), interleaved.
pub const fn rope_mixed(
    head_dim: usize,
    heads: usize,
    freqs: LearnedFreqs<'_>,
) -> Spec<'_, 2, Summed> {
    Spec::new(
        head_dim,
        Layout::Interleaved,
        Summed {
            heads,
            pairs: head_dim / 2,
        },
        Freqs::Learned(freqs),
    )
}

/// 1-D RoPE: pair `k` rotates by `position · base^(−2k/d)`.
pub const fn rope_1d(head_dim: usize, layout: Layout, base_: f64) -> Spec<'static, 1> {
    partial_1d(head_dim, head_dim, layout, base_)
}

/// 1-D RoPE on the first `rotary_dim` elements only (`f_k = base^(−2k/r)`); the rest pass.
const fn partial_1d(
    head_dim: usize,
    rotary_dim: usize,
    layout: Layout,
    base_: f64,
) -> Spec<'static, 1> {
    Spec::new(
        head_dim,
        layout,
        Sections {
            sections: [Section::new(0, rotary_dim / 2)],
            index: FreqIndex::PerSection,
        },
        base(base_),
    )
}

/// Meta's LLaMA `apply_rotary_emb`: 1-D, interleaved, base 10 000.
pub const fn llama(head_dim: usize) -> Spec<'static, 1> {
    rope_1d(head_dim, Layout::Interleaved, 10_000.0)
}

/// GPT-NeoX / Hugging Face `rotate_half` without scaling: 1-D, half layout, base 10 000.
pub const fn neox(head_dim: usize) -> Spec<'static, 1> {
    rope_1d(head_dim, Layout::Half, 10_000.0)
}

/// `int(head_dim · factor)` as Hugging Face computes the rotary dimension, made even.
fn rotary_dim(head_dim: usize, factor: f64) -> usize {
    let r = (head_dim as f64 * factor) as usize;
    r.min(head_dim) & !1
}

/// GPT-NeoX (Hugging Face `GPTNeoXRotaryEmbedding`): half layout over the first
/// `int(head_dim · rotary_pct)` elements (`partial_rotary_factor`, 0.25), `rope_theta`.
pub fn gpt_neox(head_dim: usize, partial_rotary_factor: f64, rope_theta: f64) -> Spec<'static, 1> {
    partial_1d(
        head_dim,
        rotary_dim(head_dim, partial_rotary_factor),
        Layout::Half,
        rope_theta,
    )
}

/// GLM (Hugging Face `GlmRotaryEmbedding`): interleaved over the first
/// `int(head_dim · partial_rotary_factor)` elements (0.5), `rope_theta`.
pub fn glm(head_dim: usize, partial_rotary_factor: f64, rope_theta: f64) -> Spec<'static, 1> {
    partial_1d(
        head_dim,
        rotary_dim(head_dim, partial_rotary_factor),
        Layout::Interleaved,
        rope_theta,
    )
}

/// Sections of `elems[a] / 2` interleaved pairs for axes `0, 1, 2`, index reset per section.
const fn sections_3d(elems: [usize; 3], theta: f64) -> Spec<'static, 3> {
    Spec::new(
        // Saturating (a `const fn` cannot return an error): an overflowing sum is a head
        // dimension no table accepts.
        elems[0].saturating_add(elems[1]).saturating_add(elems[2]),
        Layout::Interleaved,
        Sections {
            sections: [
                Section::new(0, elems[0] / 2),
                Section::new(1, elems[1] / 2),
                Section::new(2, elems[2] / 2),
            ],
            index: FreqIndex::PerSection,
        },
        base(theta),
    )
}

/// FLUX's `EmbedND` (diffusers `FluxPosEmbed`): positions `[id0, row, col]`, sections of
/// `axes_dim` elements (`[16, 56, 56]`), interleaved, `theta` (10 000). Tokens:
/// [`flux_positions`].
pub const fn flux(axes_dim: [usize; 3], theta: f64) -> Spec<'static, 3> {
    sections_3d(axes_dim, theta)
}

/// FLUX's token order: `text` tokens at `(0, 0, 0)`, then the `[rows, cols]` image at
/// `(0, row, col)`, then, for FLUX.1 Kontext, a reference image at `(1, row, col)` (an empty
/// grid `[0, 0]` for none).
pub const fn flux_positions(
    text: usize,
    image: [usize; 2],
    reference: [usize; 2],
) -> [Piece<3>; 3] {
    [
        Piece::Run {
            run: Run::repeat([0, 0, 0]),
            count: text,
        },
        Piece::Grid {
            grid: Grid::new([1, image[0], image[1]]),
            repeat: 1,
        },
        Piece::Grid {
            grid: Grid::new([1, reference[0], reference[1]]).at([1, 0, 0]),
            repeat: 1,
        },
    ]
}

/// Wan 2.1 (diffusers `WanRotaryPosEmbed`): `[frame, row, col]`, `h = w = 2·(d/6)`
/// elements and `t` the rest, interleaved, `theta` (10 000).
pub const fn wan(head_dim: usize, theta: f64) -> Spec<'static, 3> {
    let hw = 2 * (head_dim / 6);
    sections_3d([head_dim - 2 * hw, hw, hw], theta)
}

/// HunyuanVideo (diffusers `HunyuanVideoRotaryPosEmbed`): `[frame, row, col]`, sections of
/// `rope_dim` elements (`[16, 56, 56]`), interleaved, `theta` (256).
pub const fn hunyuan_video(rope_dim: [usize; 3], theta: f64) -> Spec<'static, 3> {
    sections_3d(rope_dim, theta)
}

/// CogVideoX (diffusers `get_3d_rotary_pos_embed`, `grid_type='linspace'`): `[frame, row,
/// col]`, sections of `d/4`, `3d/8`, `3d/8` elements (`head_dim` a multiple of 8, as diffusers'
/// `d // 8 * 3` sections need to fill the head), interleaved, `theta` (10 000); rows and
/// columns of a `grid` (`[frames, rows, cols]`) at torch's `linspace(crop_start,
/// crop_stop·(n − 1)/n, n)` in `f32` with `crops = [[top, left], [bottom, right]]`
/// ([`cogvideox_crops`] computes them as the pipeline does). Tables over extents `grid`.
pub fn cogvideox(
    head_dim: usize,
    theta: f64,
    grid: [usize; 3],
    crops: [[f64; 2]; 2],
) -> Spec<'static, 3> {
    let quarter = head_dim / 4;
    let rest = (head_dim - quarter) / 2;
    let mut spec = sections_3d([quarter, rest, rest], theta);
    spec.head_dim = head_dim;
    let axis = |start: f64, stop: f64, n: usize| Coords::Linspace {
        start: start as f32,
        stop: (stop * n.saturating_sub(1) as f64 / n.max(1) as f64) as f32,
    };
    spec.with_coords([
        Coords::Index,
        axis(crops[0][0], crops[1][0], grid[1]),
        axis(crops[0][1], crops[1][1], grid[2]),
    ])
}

/// CogVideoX's crop of a `[rows, cols]` grid onto its base grid (`[30, 45]` for 480 × 720 at
/// patch 2 and VAE scale 8): `get_resize_crop_region_for_grid`, as `[[top, left], [bottom,
/// right]]`.
pub fn cogvideox_crops(grid: [usize; 2], base_grid: [usize; 2]) -> [[f64; 2]; 2] {
    let (h, w) = (grid[0] as f64, grid[1] as f64);
    let (th, tw) = (base_grid[0] as f64, base_grid[1] as f64);
    let (height, width) = if h / w > th / tw {
        (th, round_half_even(th / h * w))
    } else {
        (round_half_even(tw / w * h), tw)
    };
    let top = round_half_even((th - height) / 2.0);
    let left = round_half_even((tw - width) / 2.0);
    [[top, left], [top + height, left + width]]
}

/// Python's `round` for values of moderate size.
fn round_half_even(x: f64) -> f64 {
    let floor = {
        let t = x as i64 as f64;
        if t > x { t - 1.0 } else { t }
    };
    let diff = x - floor;
    if diff > 0.5 || (diff == 0.5 && (floor as i64) % 2 != 0) {
        floor + 1.0
    } else {
        floor
    }
}

/// Qwen2-VL / Qwen2.5-VL text M-RoPE (`Qwen2VLRotaryEmbedding`): `[t, h, w]`, half layout,
/// `inv_freq_k = theta^(−2k/d)` with one index over all pairs, `mrope_section` pairs per axis
/// (`[16, 24, 24]`), `rope_theta` (1 000 000). Tokens: [`mrope_positions`].
pub const fn qwen2_vl_mrope(
    head_dim: usize,
    rope_theta: f64,
    mrope_section: [usize; 3],
) -> Spec<'static, 3> {
    Spec::new(
        head_dim,
        Layout::Half,
        Sections {
            sections: [
                Section::new(0, mrope_section[0]),
                Section::new(1, mrope_section[1]),
                Section::new(2, mrope_section[2]),
            ],
            index: FreqIndex::Global,
        },
        base(rope_theta),
    )
}

/// Qwen3-VL's interleaved M-RoPE (`Qwen3VLTextRotaryEmbedding`): `[t, h, w]`, half layout,
/// `inv_freq_k = theta^(−2k/d)`; frequency `k` uses h when `k ≡ 1 (mod 3)` and
/// `k < 3·mrope_section[1]`, w likewise for `k ≡ 2`, t otherwise (`[24, 20, 20]`,
/// `rope_theta` 5 000 000). Tokens: [`mrope_positions`].
pub const fn qwen3_vl_mrope(
    head_dim: usize,
    rope_theta: f64,
    mrope_section: [usize; 3],
) -> Spec<'static, 3, InterleavedAxes<3>> {
    Spec::new(
        head_dim,
        Layout::Half,
        InterleavedAxes {
            pairs: mrope_section,
        },
        base(rope_theta),
    )
}

/// `count` M-RoPE text tokens from position `start` (`t = h = w`), and the position after them
/// (saturated at `u32::MAX`).
pub const fn mrope_text(start: u32, count: usize) -> (Piece<3>, u32) {
    (
        Piece::Run {
            run: Run::from([start; 3]),
            count,
        },
        after(start, count),
    )
}

/// `start + n`, saturated at `u32::MAX` (positions are `u32`): a following piece starts there
/// and is refused by the rotation if any of its positions passes `u32::MAX` or the table —
/// never wrapped to small positions that overlap earlier tokens.
const fn after(start: u32, n: usize) -> u32 {
    if n > u32::MAX as usize {
        u32::MAX
    } else {
        start.saturating_add(n as u32)
    }
}

/// An M-RoPE image or video of `grid_thw` patches merged by `spatial_merge_size`, its tokens
/// at `start + (t, row, col)` over the merged grid, and the position after it
/// (`start + max(t, rows, cols)`, saturated at `u32::MAX`): `get_rope_index`'s rule. A
/// `spatial_merge_size` of 0 gives a piece every rotation refuses ([`Error::EmptyTable`], as
/// a zero window of [`qwen2_vl_vision_positions`] is).
pub const fn mrope_image(
    start: u32,
    grid_thw: [usize; 3],
    spatial_merge_size: usize,
) -> (Piece<3>, u32) {
    let Some(extents) = merged(grid_thw, spatial_merge_size) else {
        let refused = Piece::Windows {
            grid: Grid::new(grid_thw).at([start; 3]),
            window: 0,
            repeat: 1,
        };
        return (refused, start);
    };
    let mut span = extents[0];
    if extents[1] > span {
        span = extents[1];
    }
    if extents[2] > span {
        span = extents[2];
    }
    (
        Piece::Grid {
            grid: Grid::new(extents).at([start; 3]),
            repeat: 1,
        },
        after(start, span),
    )
}

/// `grid_thw`'s patches merged by `m × m` (the last two axes divided by `m`), if `m` is not 0.
const fn merged(grid_thw: [usize; 3], m: usize) -> Option<[usize; 3]> {
    match (grid_thw[1].checked_div(m), grid_thw[2].checked_div(m)) {
        (Some(rows), Some(cols)) => Some([grid_thw[0], rows, cols]),
        _ => None,
    }
}

/// The M-RoPE positions of `text_before` text tokens, one image (`grid_thw`, merged by
/// `spatial_merge_size`) and `text_after` text tokens, as Qwen2-VL's and Qwen3-VL's
/// `get_rope_index` assigns them. Longer sequences chain [`mrope_text`] and [`mrope_image`].
pub const fn mrope_positions(
    text_before: usize,
    grid_thw: [usize; 3],
    spatial_merge_size: usize,
    text_after: usize,
) -> [Piece<3>; 3] {
    let (before, next) = mrope_text(0, text_before);
    let (image, next) = mrope_image(next, grid_thw, spatial_merge_size);
    let (after, _) = mrope_text(next, text_after);
    [before, image, after]
}

/// A Hugging Face 1-D rotary embedding from the fields of a `config.json`: `rope_theta`,
/// `head_dim`, `partial_rotary_factor`, `max_position_embeddings` and the
/// `rope_parameters` / `rope_scaling` of one `rope_type`, with the arithmetic of
/// `transformers.modeling_rope_utils` (in `f64`, as the golden files' `pair_freq`). The
/// frequencies go into caller storage ([`HfRope::spec`]); the attention factor becomes the
/// spec's `mscale`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HfRope<'f> {
    /// `rope_theta`.
    pub rope_theta: f64,
    /// `head_dim` (or `hidden_size / num_attention_heads`).
    pub head_dim: usize,
    /// `partial_rotary_factor` (1.0 when absent).
    pub partial_rotary_factor: f64,
    /// `max_position_embeddings`.
    pub max_position_embeddings: usize,
    /// The pairing: Hugging Face models use [`Layout::Half`].
    pub layout: Layout,
    /// The `rope_type` and its parameters.
    pub scaling: HfScaling<'f>,
}

/// A Hugging Face `rope_type` with its parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum HfScaling<'f> {
    /// `default`: `inv_freq_k = theta^(−2k/dim)`.
    Default,
    /// `linear`: `inv_freq / factor`.
    Linear {
        /// `factor`.
        factor: f64,
    },
    /// `dynamic` (NTK): `theta · (factor · seq_len / max_position_embeddings − (factor − 1))^(dim / (dim − 2))`
    /// as the base, with `seq_len` at least `max_position_embeddings`.
    Dynamic {
        /// `factor`.
        factor: f64,
    },
    /// `yarn`: a per-frequency blend of interpolation and extrapolation between the
    /// correction dims of `beta_fast` and `beta_slow`; attention factor `attention_factor`
    /// when given, else `get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim)`
    /// when both are given and non-zero, else `get_mscale(factor, 1)` (`mscale` alone is not
    /// read, as in transformers), with `get_mscale(s, m) = 0.1 · m · ln(s) + 1` (1 for
    /// `s ≤ 1`).
    Yarn {
        /// `factor`.
        factor: f64,
        /// `original_max_position_embeddings` (`max_position_embeddings` when absent).
        original_max_position_embeddings: Option<usize>,
        /// `beta_fast` (32).
        beta_fast: f64,
        /// `beta_slow` (1).
        beta_slow: f64,
        /// `attention_factor`, if given.
        attention_factor: Option<f64>,
        /// `mscale`, if given.
        mscale: Option<f64>,
        /// `mscale_all_dim`, if given.
        mscale_all_dim: Option<f64>,
        /// `truncate` (true): round the correction range outward to whole dims.
        truncate: bool,
    },
    /// `llama3`: frequencies with wavelengths above `original / low_freq_factor` divided by
    /// `factor`, below `original / high_freq_factor` kept, smoothly blended between.
    Llama3 {
        /// `factor`.
        factor: f64,
        /// `low_freq_factor`.
        low_freq_factor: f64,
        /// `high_freq_factor`.
        high_freq_factor: f64,
        /// `original_max_position_embeddings`; positive ([`Error::InvalidFrequency`] for 0).
        original_max_position_embeddings: usize,
    },
    /// `longrope`: `inv_freq_k / ext_factor_k` with the long factors when the sequence is
    /// longer than `original_max_position_embeddings`, else the short ones; attention
    /// factor `attention_factor` when given, else 1 for `s ≤ 1` and
    /// `sqrt(1 + ln(s) / ln(original))` above, with `s = factor` when given, else
    /// `max_position_embeddings / original` (Phi-3's configs) — transformers' rule since
    /// `rope_parameters` (earlier releases took the ratio even when `factor` was given).
    LongRope {
        /// `short_factor`, one per pair.
        short_factor: &'f [f64],
        /// `long_factor`, one per pair.
        long_factor: &'f [f64],
        /// `factor`, if given.
        factor: Option<f64>,
        /// `original_max_position_embeddings` (`max_position_embeddings` when absent).
        original_max_position_embeddings: Option<usize>,
        /// `attention_factor`, if given.
        attention_factor: Option<f64>,
    },
}

impl HfRope<'_> {
    /// Rotated pairs: `int(head_dim · partial_rotary_factor) / 2`.
    pub fn pairs(&self) -> usize {
        rotary_dim(self.head_dim, self.partial_rotary_factor) / 2
    }

    /// Computes the frequencies for a sequence of `seq_len` tokens (which only `dynamic` and
    /// `longrope` depend on) into `storage` (exactly [`pairs`](Self::pairs) values) and
    /// returns the spec: positions `[pos]`, `mscale` the attention factor.
    ///
    /// Errors: [`Error::FrequencyLength`] for a storage or a factor list (`longrope`: either
    /// one) of another length,
    /// [`Error::InvalidBase`], [`Error::InvalidFrequency`] (a non-finite, non-positive or
    /// out-of-range parameter or result), [`Error::InvalidMscale`] (an attention factor, given
    /// or computed, that is not a positive finite `f32`), [`Error::RotaryDim`]. `storage` is
    /// untouched on error.
    pub fn spec<'s>(&self, seq_len: usize, storage: &'s mut [f64]) -> Result<Spec<'s, 1>, Error> {
        let pairs = self.pairs();
        if pairs == 0 {
            return Err(Error::RotaryDim {
                pairs,
                head_dim: self.head_dim,
            });
        }
        if storage.len() != pairs {
            return Err(Error::FrequencyLength {
                expected: pairs,
                actual: storage.len(),
            });
        }
        let dim = (2 * pairs) as f64;
        let theta = self.rope_theta;
        let log2_theta = math::log2_f64(theta)
            .filter(|l| *l > 0.0)
            .ok_or(Error::InvalidBase)?;
        let positive = |x: f64| {
            if x.is_finite() && x > 0.0 {
                Ok(x)
            } else {
                Err(Error::InvalidFrequency)
            }
        };
        let ln = |x: f64| {
            math::log2_f64(x)
                .map(|l| l * core::f64::consts::LN_2)
                .ok_or(Error::InvalidFrequency)
        };
        // inv_freq_k = theta^(−2k/dim) for a base of log2 `log2_base`.
        let inv_freq = |k: usize, log2_base: f64| math::exp2_f64(-log2_base * (2 * k) as f64 / dim);
        let max_pos = self.max_position_embeddings as f64;
        let mut attention = 1.0;
        // Every value is computed and checked once before any is written.
        let compute = |k: usize| -> Result<f64, Error> {
            let f = inv_freq(k, log2_theta);
            Ok(match self.scaling {
                HfScaling::Default => f,
                HfScaling::Linear { factor } => f / positive(factor)?,
                HfScaling::Dynamic { factor } => {
                    let factor = positive(factor)?;
                    let seq = (seq_len as f64).max(max_pos);
                    let scale = positive(factor * seq / positive(max_pos)? - (factor - 1.0))?;
                    let log2_base = log2_theta
                        + math::log2_f64(scale).ok_or(Error::InvalidFrequency)? * dim / (dim - 2.0);
                    inv_freq(k, log2_base)
                }
                HfScaling::Yarn {
                    factor,
                    original_max_position_embeddings,
                    beta_fast,
                    beta_slow,
                    truncate,
                    ..
                } => {
                    let factor = positive(factor)?;
                    let original = original_max_position_embeddings.map_or(max_pos, |n| n as f64);
                    let ln_theta = log2_theta * core::f64::consts::LN_2;
                    let correction_dim = |rotations: f64| -> Result<f64, Error> {
                        Ok(dim * ln(original / (rotations * core::f64::consts::TAU))?
                            / (2.0 * ln_theta))
                    };
                    let (mut low, mut high) = (
                        correction_dim(positive(beta_fast)?)?,
                        correction_dim(positive(beta_slow)?)?,
                    );
                    if truncate {
                        low = floor(low);
                        high = -floor(-high);
                    }
                    let (low, mut high) = (low.max(0.0), high.min(dim - 1.0));
                    if low == high {
                        high += 0.001;
                    }
                    // In f64 like the golden files' `pair_freq` (the reference ramps in f32).
                    let ramp = ((k as f64 - low) / (high - low)).clamp(0.0, 1.0);
                    let extrapolation = 1.0 - ramp;
                    let interpolation = f / factor;
                    interpolation * (1.0 - extrapolation) + f * extrapolation
                }
                HfScaling::Llama3 {
                    factor,
                    low_freq_factor,
                    high_freq_factor,
                    original_max_position_embeddings,
                } => {
                    let factor = positive(factor)?;
                    let old = positive(original_max_position_embeddings as f64)?;
                    let low_wavelen = old / positive(low_freq_factor)?;
                    let high_wavelen = old / positive(high_freq_factor)?;
                    let wavelen = core::f64::consts::TAU / f;
                    if wavelen < high_wavelen {
                        f
                    } else if wavelen > low_wavelen {
                        f / factor
                    } else {
                        let smooth = (old / wavelen - low_freq_factor)
                            / (high_freq_factor - low_freq_factor);
                        (1.0 - smooth) * f / factor + smooth * f
                    }
                }
                HfScaling::LongRope {
                    short_factor,
                    long_factor,
                    original_max_position_embeddings,
                    ..
                } => {
                    let original =
                        original_max_position_embeddings.unwrap_or(self.max_position_embeddings);
                    // Both lists are checked, as transformers' config validation does, not
                    // only the one this sequence length selects.
                    for factors in [short_factor, long_factor] {
                        if factors.len() != pairs {
                            return Err(Error::FrequencyLength {
                                expected: pairs,
                                actual: factors.len(),
                            });
                        }
                    }
                    let factors = if seq_len > original {
                        long_factor
                    } else {
                        short_factor
                    };
                    f / positive(factors.get(k).copied().unwrap_or(1.0))?
                }
            })
        };
        match self.scaling {
            HfScaling::Yarn {
                factor,
                attention_factor,
                mscale,
                mscale_all_dim,
                ..
            } => {
                let get_mscale = |scale: f64, m: f64| -> Result<f64, Error> {
                    Ok(if scale <= 1.0 {
                        1.0
                    } else {
                        0.1 * m * ln(scale)? + 1.0
                    })
                };
                attention = match (attention_factor, mscale, mscale_all_dim) {
                    (Some(a), _, _) => a,
                    (None, Some(m), Some(all)) if m != 0.0 && all != 0.0 => {
                        get_mscale(factor, m)? / get_mscale(factor, all)?
                    }
                    _ => get_mscale(factor, 1.0)?,
                };
            }
            HfScaling::LongRope {
                factor,
                original_max_position_embeddings,
                attention_factor,
                ..
            } => {
                let original =
                    original_max_position_embeddings.unwrap_or(self.max_position_embeddings) as f64;
                let ratio = max_pos / positive(original)?;
                attention = match attention_factor {
                    Some(a) => a,
                    None => {
                        // A given `factor` must be positive and finite (it is then a log's
                        // argument); it is not read when `attention_factor` is given.
                        let factor = match factor {
                            Some(f) => positive(f)?,
                            None => ratio,
                        };
                        if factor <= 1.0 {
                            1.0
                        } else {
                            sqrt(1.0 + ln(factor)? / ln(original)?)
                        }
                    }
                };
            }
            _ => {}
        }
        // The attention factor becomes the f32 `mscale`: it must be positive and stay finite
        // and non-zero there.
        let mscale = attention as f32;
        if !(attention > 0.0 && mscale.is_finite() && mscale > 0.0) {
            return Err(Error::InvalidMscale);
        }
        for k in 0..pairs {
            let f = compute(k)?;
            if crate::freq::radians_f64(f).is_none() {
                return Err(Error::InvalidFrequency);
            }
        }
        for (k, slot) in storage.iter_mut().enumerate() {
            *slot = compute(k)?;
        }
        let storage: &'s [f64] = storage;
        Ok(Spec::new(
            self.head_dim,
            self.layout,
            Sections {
                sections: [Section::new(0, pairs)],
                index: FreqIndex::PerSection,
            },
            Freqs::Explicit(storage),
        )
        .with_mscale(mscale))
    }
}

/// `floor(x)` for moderate `x`.
fn floor(x: f64) -> f64 {
    let t = x as i64 as f64;
    if t > x { t - 1.0 } else { t }
}

/// `sqrt(x)` for `x > 0` by Newton's method from an `exp2` estimate.
fn sqrt(x: f64) -> f64 {
    let mut y = math::log2_f64(x).map_or(0.0, |l| math::exp2_f64(l / 2.0));
    for _ in 0..3 {
        y = 0.5 * (y + x / y);
    }
    y
}
