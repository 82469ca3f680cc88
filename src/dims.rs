//! Head dimensions known at compile time.
//!
//! Stable Rust cannot size an array by `D / 4`, so each supported `D` maps to its row types
//! here. A head dimension outside the list (not a multiple of 4, zero, above 512) is a
//! compile error at the table type that names it.

#![forbid(unsafe_code)]

mod sealed {
    pub trait Sealed {}
}

/// A head dimension `D` as a type, for the const-generic tables.
#[derive(Clone, Copy, Debug)]
pub struct Dim<const D: usize>;

/// Implemented for `Dim<D>` with `D` a multiple of 4 from 4 to 512: the head dimensions the
/// const-generic tables ([`AxialTable`](crate::AxialTable), [`Rope1dTable`](crate::Rope1dTable),
/// [`MixedTable`](crate::MixedTable)) accept. Other head dimensions use the runtime-shaped
/// `*Ref` tables. Sealed.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a supported head dimension",
    label = "const-generic tables need a head dimension that is a multiple of 4 from 4 to 512",
    note = "use the runtime-shaped table types (`AxialTableRef`, ...) for other head dimensions"
)]
pub trait HeadDim: sealed::Sealed {
    /// `[[f32; 2]; D / 4]`: one axis row of an axial table.
    type Quarter: Copy;
    /// `[[f32; 2]; D / 2]`: one row of a 1-D table or one head of a RoPE-Mixed row.
    type Half: Copy;
    /// A zeroed [`Self::Quarter`].
    const QUARTER_ZERO: Self::Quarter;
    /// A zeroed [`Self::Half`].
    const HALF_ZERO: Self::Half;
    /// The rows as one slice of `[cos, sin]` entries.
    fn quarters(rows: &[Self::Quarter]) -> &[[f32; 2]];
    /// The rows as one mutable slice of `[cos, sin]` entries.
    fn quarters_mut(rows: &mut [Self::Quarter]) -> &mut [[f32; 2]];
    /// The rows as one slice of `[cos, sin]` entries.
    fn halves(rows: &[Self::Half]) -> &[[f32; 2]];
    /// The rows as one mutable slice of `[cos, sin]` entries.
    fn halves_mut(rows: &mut [Self::Half]) -> &mut [[f32; 2]];
}

macro_rules! head_dims {
    ($($d:literal)*) => {$(
        impl sealed::Sealed for Dim<$d> {}
        impl HeadDim for Dim<$d> {
            type Quarter = [[f32; 2]; $d / 4];
            type Half = [[f32; 2]; $d / 2];
            const QUARTER_ZERO: Self::Quarter = [[0.0; 2]; $d / 4];
            const HALF_ZERO: Self::Half = [[0.0; 2]; $d / 2];
            fn quarters(rows: &[Self::Quarter]) -> &[[f32; 2]] { rows.as_flattened() }
            fn quarters_mut(rows: &mut [Self::Quarter]) -> &mut [[f32; 2]] { rows.as_flattened_mut() }
            fn halves(rows: &[Self::Half]) -> &[[f32; 2]] { rows.as_flattened() }
            fn halves_mut(rows: &mut [Self::Half]) -> &mut [[f32; 2]] { rows.as_flattened_mut() }
        }
    )*};
}

head_dims!(
    4 8 12 16 20 24 28 32 36 40 44 48 52 56 60 64 68 72 76 80 84 88 92 96 100 104 108 112 116
    120 124 128 132 136 140 144 148 152 156 160 164 168 172 176 180 184 188 192 196 200 204 208
    212 216 220 224 228 232 236 240 244 248 252 256 260 264 268 272 276 280 284 288 292 296 300
    304 308 312 316 320 324 328 332 336 340 344 348 352 356 360 364 368 372 376 380 384 388 392
    396 400 404 408 412 416 420 424 428 432 436 440 444 448 452 456 460 464 468 472 476 480 484
    488 492 496 500 504 508 512
);
