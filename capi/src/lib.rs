//! The C interface of [rope2d](https://docs.rs/rope2d): rotary position embeddings for C and
//! C++ programs and firmware, as a static library (`librope2d_capi.a`, every target) or a
//! shared one (hosted targets), with the header `include/rope2d.h` (generated from this file
//! by cbindgen; CI checks that it is current).
//!
//! The interface follows the Rust API one to one, with two handles kept in caller memory
//! (no allocation anywhere):
//!
//! - `rope2d_spec`: a convention, filled by a preset function (`rope2d_spec_rope_vit`,
//!   `rope2d_spec_llama`, `rope2d_spec_wan`, …) and optionally adjusted
//!   (`rope2d_spec_set_mscale`, `rope2d_spec_set_precision`);
//! - `rope2d_rope`: a rotation, either tables built into caller storage
//!   (`rope2d_table_storage_len`, `rope2d_table_build`) or tableless (`rope2d_direct`).
//!
//! Rotations take the buffer with its length, a `rope2d_shape` (heads, unrotated prefix
//! tokens), positions (a grid with an optional origin, or one position per token) with the
//! number of axes they have, and a direction. Every function returns a `rope2d_status`: zero
//! on success, else a code naming the problem (`rope2d_status_message`); on error nothing has
//! been written, neither buffers nor handles. No function panics or unwinds into C.
//!
//! Buffers are `float`, or, through the `_elem` calls, any element type the crate rotates
//! (`ROPE2D_F32`, `ROPE2D_F16`, `ROPE2D_BF16`, `ROPE2D_I16`, `ROPE2D_I8`).
//!
//! `unsafe` here is the FFI boundary itself: turning the caller's pointers and lengths into
//! slices after checking them for null, alignment, size and overlap. The rotation code is the
//! safe crate.
#![cfg_attr(target_os = "none", no_std)]
#![allow(non_camel_case_types)]
#![deny(missing_docs, clippy::undocumented_unsafe_blocks)]

use core::ffi::c_char;
use core::mem::{align_of, size_of};

use rope2d::half::{bf16, f16};
use rope2d::preset::{self, AxisOrder};
use rope2d::{
    AnglePrecision, Backend, Direct, Direction, Element, Error, Grid, Layout, Positions, Q15Table,
    Rope, Scales, Sections, Shape, Source, Spec, Table, TableAngles, TableEntry,
};

/// The result of every fallible call: `ROPE2D_OK` (0) or one of the `ROPE2D_ERROR_*` codes.
pub type rope2d_status = i32;

/// Success.
pub const ROPE2D_OK: rope2d_status = 0;
/// A required pointer is `NULL` (a buffer pointer may be `NULL` only with length 0).
pub const ROPE2D_ERROR_NULL_POINTER: rope2d_status = 1;
/// An enumeration argument (layout, direction, axis order, precision, backend) is not one
/// of its constants.
pub const ROPE2D_ERROR_INVALID_ENUM: rope2d_status = 2;
/// The number of axes passed does not match the spec or rotation (1, 2 or 3).
pub const ROPE2D_ERROR_AXES: rope2d_status = 3;
/// Two buffers that must be distinct overlap (q and k; a buffer and the table storage, its
/// positions list, its position or its per-head scales).
pub const ROPE2D_ERROR_OVERLAP: rope2d_status = 4;
/// A handle was not filled by a rope2d function, or a pointer is misaligned for its type.
pub const ROPE2D_ERROR_BAD_HANDLE: rope2d_status = 5;
/// The RoPE base must be finite and greater than 1.
pub const ROPE2D_ERROR_INVALID_BASE: rope2d_status = 10;
/// The frequency scale must be finite, positive and below 2^32.
pub const ROPE2D_ERROR_INVALID_FREQ_SCALE: rope2d_status = 11;
/// A frequency must be finite and below 2^32 in magnitude.
pub const ROPE2D_ERROR_INVALID_FREQUENCY: rope2d_status = 12;
/// The rotated pairs do not fit the head (need 1 to head_dim / 2).
pub const ROPE2D_ERROR_ROTARY_DIM: rope2d_status = 13;
/// A section names an axis the spec does not have.
pub const ROPE2D_ERROR_INVALID_AXIS: rope2d_status = 14;
/// Learned frequencies go with the summed plan, and only with it.
pub const ROPE2D_ERROR_PLAN_MISMATCH: rope2d_status = 15;
/// mscale must be finite and positive.
pub const ROPE2D_ERROR_INVALID_MSCALE: rope2d_status = 16;
/// A table extent is zero.
pub const ROPE2D_ERROR_EMPTY_TABLE: rope2d_status = 17;
/// Reference extents (rescaled coordinates) must be non-zero.
pub const ROPE2D_ERROR_INVALID_REF_GRID: rope2d_status = 18;
/// The table storage does not hold exactly `rope2d_table_storage_len` entries.
pub const ROPE2D_ERROR_STORAGE_LENGTH: rope2d_status = 19;
/// A frequency array has the wrong length.
pub const ROPE2D_ERROR_FREQUENCY_LENGTH: rope2d_status = 20;
/// The shape has zero heads.
pub const ROPE2D_ERROR_ZERO_HEADS: rope2d_status = 21;
/// A head vector's length is not the spec's head dimension.
pub const ROPE2D_ERROR_HEAD_LENGTH: rope2d_status = 22;
/// The buffer is not a whole number of tokens (heads · head_dim values each).
pub const ROPE2D_ERROR_BUFFER_LENGTH: rope2d_status = 23;
/// The buffer holds another number of tokens than prefix + positions.
pub const ROPE2D_ERROR_TOKEN_COUNT: rope2d_status = 24;
/// A position lies outside the table (or past `UINT32_MAX`).
pub const ROPE2D_ERROR_POSITION_OUT_OF_RANGE: rope2d_status = 25;
/// The number of heads differs from the spec's (RoPE-Mixed).
pub const ROPE2D_ERROR_HEAD_COUNT: rope2d_status = 26;
/// A coordinate is not finite (with float32 angles: or of magnitude 2^96 or more).
pub const ROPE2D_ERROR_NON_FINITE_COORDINATE: rope2d_status = 27;
/// A size computation overflows (or a buffer exceeds the address space).
pub const ROPE2D_ERROR_SHAPE_OVERFLOW: rope2d_status = 28;
/// The backend is not compiled in or not supported by this CPU.
pub const ROPE2D_ERROR_BACKEND_UNAVAILABLE: rope2d_status = 29;
/// Tableless rotation needs index coordinates on every axis.
pub const ROPE2D_ERROR_TABLE_COORDS: rope2d_status = 30;
/// `rope2d_shape`'s scales: finite and positive with a ratio in [2^-64, 2^64], integer
/// buffers only.
pub const ROPE2D_ERROR_INVALID_SCALES: rope2d_status = 31;
/// A Q15 table (`rope2d_table_build_q15`) rotates only `ROPE2D_I16` and `ROPE2D_I8` buffers at
/// their own scale (no `rope2d_shape` scales), and is built only for `mscale` 1.
pub const ROPE2D_ERROR_FIXED_POINT: rope2d_status = 32;
/// An error this version of the C interface has no code for (a newer crate).
pub const ROPE2D_ERROR_UNKNOWN: rope2d_status = 99;

/// Which elements of a head pair up.
pub type rope2d_layout = u32;
/// `(v[2k], v[2k+1])`: rope-vit, LLaMA, EVA-02, FLUX, Wan.
pub const ROPE2D_LAYOUT_INTERLEAVED: rope2d_layout = 0;
/// `(v[k], v[k + r/2])` ("rotate_half"): GPT-NeoX, DINOv3, Qwen2-VL.
pub const ROPE2D_LAYOUT_HALF: rope2d_layout = 1;

/// Which axis of a 2-D grid rotates the first half of the pairs.
pub type rope2d_axis_order = u32;
/// Column (x) first: rope-vit, timm `'xy'`, SAM 2.
pub const ROPE2D_COL_FIRST: rope2d_axis_order = 0;
/// Row (y) first: timm `'ij'`, EVA-02, DINOv3.
pub const ROPE2D_ROW_FIRST: rope2d_axis_order = 1;

/// Rotation direction.
pub type rope2d_direction = u32;
/// Rotate by +angle.
pub const ROPE2D_FORWARD: rope2d_direction = 0;
/// Rotate by −angle: undoes `ROPE2D_FORWARD` up to rounding.
pub const ROPE2D_INVERSE: rope2d_direction = 1;

/// How angles are formed.
pub type rope2d_precision = u32;
/// Exact phase reduction: every table entry within 1.2e-7 of float64 at every position for
/// sections of up to 256 pairs (2^24 for 4 096 pairs, 2^20 for 65 535).
pub const ROPE2D_ANGLES_EXACT: rope2d_precision = 0;
/// Angles rounded like float32 reference code: reproduces its outputs, including their drift
/// from the exact rotation, to within a few ulp.
pub const ROPE2D_ANGLES_FLOAT32: rope2d_precision = 1;

/// The element type of a buffer (`rope2d_rotate_elem`, `rope2d_rotate_at_elem`).
pub type rope2d_elem = u32;
/// `float`.
pub const ROPE2D_F32: rope2d_elem = 0;
/// IEEE binary16 (`_Float16`, `__fp16`), as `uint16_t` bits.
pub const ROPE2D_F16: rope2d_elem = 1;
/// bfloat16, as `uint16_t` bits.
pub const ROPE2D_BF16: rope2d_elem = 2;
/// `int16_t`, quantised (`rope2d_shape`'s scales; Q15 without them).
pub const ROPE2D_I16: rope2d_elem = 3;
/// `int8_t`, quantised (Q7 without scales).
pub const ROPE2D_I8: rope2d_elem = 4;

/// A kernel implementation (`rope2d_backend_name`).
pub type rope2d_backend = u32;
/// The reference: plain arithmetic, the same bits on every target.
pub const ROPE2D_BACKEND_SCALAR: rope2d_backend = 0;
/// Compile-time SIMD (hosted targets), bit-identical to scalar.
pub const ROPE2D_BACKEND_PORTABLE: rope2d_backend = 1;
/// x86_64 AVX2 + FMA (detected at run time).
pub const ROPE2D_BACKEND_AVX2: rope2d_backend = 2;
/// x86_64 AVX-512F (detected at run time).
pub const ROPE2D_BACKEND_AVX512: rope2d_backend = 3;
/// aarch64 NEON.
pub const ROPE2D_BACKEND_NEON: rope2d_backend = 4;

/// The buffer shape: `[tokens][heads][head_dim]` floats, the first `prefix` tokens (CLS,
/// registers, text) left unrotated.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct rope2d_shape {
    /// Heads per token (at least 1).
    pub heads: usize,
    /// Leading tokens that are not rotated.
    pub prefix: usize,
    /// `int16_t` / `int8_t` buffers (`rope2d_rotate_elem`): a stored `q` means
    /// `q · input_scale`; outputs are stored as `round(v / output_scale)`, saturated. Both 0
    /// (a zeroed struct) or both 1: the same scale in and out (Q15, Q7), the only scales of
    /// float buffers. (A `rope2d_scales` entry has no such 0: `{1, 1}` there.)
    pub input_scale: f32,
    /// See `input_scale`.
    pub output_scale: f32,
}

/// One head's scales (`rope2d_rotate_with_head_scales`): a stored `q` means `q · input`; outputs
/// are stored as `round(v / output)`, saturated. `{1, 1}`: the same scale in and out (as is
/// any equal pair on an integer buffer); unlike `rope2d_shape`'s, `{0, 0}` is invalid.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct rope2d_scales {
    /// The scale of the stored inputs.
    pub input: f32,
    /// The scale of the stored outputs.
    pub output: f32,
}

// `rope2d_scales` arrays are read as `Scales` (both `repr(C)` over two `f32`).
const _: () = assert!(
    size_of::<rope2d_scales>() == size_of::<Scales>()
        && align_of::<rope2d_scales>() == align_of::<Scales>()
);

/// 64-bit words of a `rope2d_spec`.
pub const ROPE2D_SPEC_WORDS: usize = 32;
/// 64-bit words of a `rope2d_rope`.
pub const ROPE2D_ROPE_WORDS: usize = 64;

/// A convention (a rope2d `Spec` of 1, 2 or 3 axes), filled by a `rope2d_spec_*` preset.
/// Opaque: keep it anywhere (stack, static), copy it freely.
#[repr(C)]
pub struct rope2d_spec {
    opaque: [u64; ROPE2D_SPEC_WORDS],
}

/// A rotation: tables in caller storage (`rope2d_table_build`) or tableless
/// (`rope2d_direct`). Opaque: keep it anywhere, copy it freely; a table rotation refers to
/// its storage, which must stay alive and unchanged while the handle is used.
#[repr(C)]
pub struct rope2d_rope {
    opaque: [u64; ROPE2D_ROPE_WORDS],
}

// --- handles --------------------------------------------------------------------------------

const SPEC_MAGIC: u64 = u64::from_le_bytes(*b"r2dspec1");
const ROPE_MAGIC: u64 = u64::from_le_bytes(*b"r2drope1");

#[derive(Clone, Copy)]
enum AnySpec {
    One(Spec<'static, 1>),
    Two(Spec<'static, 2>),
    Three(Spec<'static, 3>),
}

/// `repr(C)`: the magic word comes first, where `spec_of` reads it as a plain `u64`.
#[derive(Clone, Copy)]
#[repr(C)]
struct SpecHandle {
    #[allow(dead_code, reason = "read through a `u64` pointer by `spec_of`")]
    magic: u64,
    spec: AnySpec,
}

#[derive(Clone, Copy)]
enum AnyRope {
    Table1(Table<'static, 1>),
    Table2(Table<'static, 2>),
    Table3(Table<'static, 3>),
    Direct1(Direct<'static, 1>),
    Direct2(Direct<'static, 2>),
    Direct3(Direct<'static, 3>),
    Q15_1(Q15Table<'static, 1>),
    Q15_2(Q15Table<'static, 2>),
    Q15_3(Q15Table<'static, 3>),
}

/// `repr(C)`: the magic word comes first, where `rope_of` reads it as a plain `u64`.
#[derive(Clone, Copy)]
#[repr(C)]
struct RopeHandle {
    #[allow(dead_code, reason = "read through a `u64` pointer by `rope_of`")]
    magic: u64,
    /// The table storage's byte range (empty for tableless rotation): buffers must not
    /// overlap it.
    storage: (usize, usize),
    rope: AnyRope,
}

// Handles are read and written unaligned (as copies): a C struct of `uint64_t` is 8-aligned,
// a rotation holds `u128`s (16-aligned on x86_64).
const _: () = {
    assert!(size_of::<SpecHandle>() <= size_of::<rope2d_spec>());
    assert!(size_of::<RopeHandle>() <= size_of::<rope2d_rope>());
};

/// Runs `$body` with `$r` bound to the handle's rotation, whatever its axes and source.
macro_rules! with_rope {
    ($handle:expr, $r:ident => $body:expr) => {
        match $handle.rope {
            AnyRope::Table1(ref $r) => $body,
            AnyRope::Table2(ref $r) => $body,
            AnyRope::Table3(ref $r) => $body,
            AnyRope::Direct1(ref $r) => $body,
            AnyRope::Direct2(ref $r) => $body,
            AnyRope::Direct3(ref $r) => $body,
            AnyRope::Q15_1(ref $r) => $body,
            AnyRope::Q15_2(ref $r) => $body,
            AnyRope::Q15_3(ref $r) => $body,
        }
    };
}

/// Runs `$body` with `$s` bound to the handle's spec, whatever its axes.
macro_rules! with_spec {
    ($spec:expr, $s:ident => $body:expr) => {
        match $spec {
            AnySpec::One(ref $s) => $body,
            AnySpec::Two(ref $s) => $body,
            AnySpec::Three(ref $s) => $body,
        }
    };
}

fn status(error: Error) -> rope2d_status {
    match error {
        Error::InvalidBase => ROPE2D_ERROR_INVALID_BASE,
        Error::InvalidFreqScale => ROPE2D_ERROR_INVALID_FREQ_SCALE,
        Error::InvalidFrequency => ROPE2D_ERROR_INVALID_FREQUENCY,
        Error::RotaryDim { .. } => ROPE2D_ERROR_ROTARY_DIM,
        Error::InvalidAxis { .. } => ROPE2D_ERROR_INVALID_AXIS,
        Error::PlanMismatch => ROPE2D_ERROR_PLAN_MISMATCH,
        Error::InvalidMscale => ROPE2D_ERROR_INVALID_MSCALE,
        Error::EmptyTable => ROPE2D_ERROR_EMPTY_TABLE,
        Error::InvalidRefGrid => ROPE2D_ERROR_INVALID_REF_GRID,
        Error::StorageLength { .. } => ROPE2D_ERROR_STORAGE_LENGTH,
        Error::FrequencyLength { .. } => ROPE2D_ERROR_FREQUENCY_LENGTH,
        Error::ZeroHeads => ROPE2D_ERROR_ZERO_HEADS,
        Error::HeadLength { .. } => ROPE2D_ERROR_HEAD_LENGTH,
        Error::BufferLength { .. } => ROPE2D_ERROR_BUFFER_LENGTH,
        Error::TokenCount { .. } => ROPE2D_ERROR_TOKEN_COUNT,
        Error::PositionOutOfRange { .. } => ROPE2D_ERROR_POSITION_OUT_OF_RANGE,
        Error::HeadCount { .. } => ROPE2D_ERROR_HEAD_COUNT,
        Error::NonFiniteCoordinate => ROPE2D_ERROR_NON_FINITE_COORDINATE,
        Error::ShapeOverflow => ROPE2D_ERROR_SHAPE_OVERFLOW,
        Error::BackendUnavailable => ROPE2D_ERROR_BACKEND_UNAVAILABLE,
        Error::TableCoords => ROPE2D_ERROR_TABLE_COORDS,
        Error::InvalidScales => ROPE2D_ERROR_INVALID_SCALES,
        Error::FixedPoint => ROPE2D_ERROR_FIXED_POINT,
        _ => ROPE2D_ERROR_UNKNOWN,
    }
}

/// `Ok` → `ROPE2D_OK`, `Err(code)` → the code.
fn code(result: Result<(), rope2d_status>) -> rope2d_status {
    result.err().unwrap_or(ROPE2D_OK)
}

fn layout(value: rope2d_layout) -> Result<Layout, rope2d_status> {
    match value {
        ROPE2D_LAYOUT_INTERLEAVED => Ok(Layout::Interleaved),
        ROPE2D_LAYOUT_HALF => Ok(Layout::Half),
        _ => Err(ROPE2D_ERROR_INVALID_ENUM),
    }
}

fn direction(value: rope2d_direction) -> Result<Direction, rope2d_status> {
    match value {
        ROPE2D_FORWARD => Ok(Direction::Forward),
        ROPE2D_INVERSE => Ok(Direction::Inverse),
        _ => Err(ROPE2D_ERROR_INVALID_ENUM),
    }
}

fn backend(value: rope2d_backend) -> Option<Backend> {
    let name = match value {
        ROPE2D_BACKEND_SCALAR => "scalar",
        ROPE2D_BACKEND_PORTABLE => "portable",
        ROPE2D_BACKEND_AVX2 => "avx2",
        ROPE2D_BACKEND_AVX512 => "avx512",
        ROPE2D_BACKEND_NEON => "neon",
        _ => return None,
    };
    Backend::ALL.iter().copied().find(|b| b.name() == name)
}

fn backend_code(backend: Backend) -> rope2d_backend {
    match backend.name() {
        "portable" => ROPE2D_BACKEND_PORTABLE,
        "avx2" => ROPE2D_BACKEND_AVX2,
        "avx512" => ROPE2D_BACKEND_AVX512,
        "neon" => ROPE2D_BACKEND_NEON,
        _ => ROPE2D_BACKEND_SCALAR,
    }
}

/// The spec in `handle`, if a preset filled it.
///
/// # Safety
/// `handle` is null or points to a readable `rope2d_spec`.
unsafe fn spec_of(handle: *const rope2d_spec) -> Result<SpecHandle, rope2d_status> {
    if handle.is_null() {
        return Err(ROPE2D_ERROR_NULL_POINTER);
    }
    // SAFETY: non-null and readable (caller), 8-aligned (`rope2d_spec` is `uint64_t`s). The
    // magic word is read as a plain `u64` before the handle is read as a `SpecHandle`: every
    // bit pattern is a valid `u64`.
    let magic = unsafe { handle.cast::<u64>().read() };
    if magic != SPEC_MAGIC {
        return Err(ROPE2D_ERROR_BAD_HANDLE);
    }
    // SAFETY: the magic word says a preset wrote a `SpecHandle` here (or the caller copied
    // one), so the bytes are a valid `SpecHandle`; `rope2d_spec` is large enough (const
    // assertion above) and the read is unaligned.
    Ok(unsafe { handle.cast::<SpecHandle>().read_unaligned() })
}

/// The rotation in `handle`, if `rope2d_table_build` or `rope2d_direct` filled it.
///
/// # Safety
/// `handle` is null or points to a readable `rope2d_rope`.
unsafe fn rope_of(handle: *const rope2d_rope) -> Result<RopeHandle, rope2d_status> {
    if handle.is_null() {
        return Err(ROPE2D_ERROR_NULL_POINTER);
    }
    // SAFETY: as in `spec_of`.
    let magic = unsafe { handle.cast::<u64>().read() };
    if magic != ROPE_MAGIC {
        return Err(ROPE2D_ERROR_BAD_HANDLE);
    }
    // SAFETY: as in `spec_of`: a `RopeHandle` was written here.
    Ok(unsafe { handle.cast::<RopeHandle>().read_unaligned() })
}

/// Writes a spec into `out` after checking it (nothing is written on error).
///
/// # Safety
/// `out` is null or points to a writable `rope2d_spec`.
unsafe fn put_spec(out: *mut rope2d_spec, spec: AnySpec) -> rope2d_status {
    if out.is_null() {
        return ROPE2D_ERROR_NULL_POINTER;
    }
    if let Err(e) = with_spec!(spec, s => s.check()) {
        return status(e);
    }
    // SAFETY: `out` is non-null and writable (caller) and large enough for a `SpecHandle`
    // (const assertion above); the write is unaligned.
    unsafe {
        out.cast::<SpecHandle>().write_unaligned(SpecHandle {
            magic: SPEC_MAGIC,
            spec,
        })
    };
    ROPE2D_OK
}

/// Writes a rotation into `out`.
///
/// # Safety
/// `out` is non-null and points to a writable `rope2d_rope`.
unsafe fn put_rope(out: *mut rope2d_rope, storage: (usize, usize), rope: AnyRope) {
    // SAFETY: `out` is non-null and writable (caller) and large enough for a `RopeHandle`
    // (const assertion above); the write is unaligned.
    unsafe {
        out.cast::<RopeHandle>().write_unaligned(RopeHandle {
            magic: ROPE_MAGIC,
            storage,
            rope,
        })
    }
}

/// `len` values at `ptr` as a slice (empty when `len` is 0, whatever `ptr`).
///
/// # Safety
/// Unless null, `ptr` points to `len` readable `T`s that stay valid for `'a`.
unsafe fn slice<'a, T>(ptr: *const T, len: usize) -> Result<&'a [T], rope2d_status> {
    if len == 0 {
        return Ok(&[]);
    }
    check_pointer(ptr, len)?;
    // SAFETY: non-null, aligned, at most `isize::MAX` bytes (checked above) and readable for
    // `len` elements (caller).
    Ok(unsafe { core::slice::from_raw_parts(ptr, len) })
}

/// `len` floats at `ptr` as a mutable slice (empty when `len` is 0).
///
/// # Safety
/// Unless null, `ptr` points to `len` writable floats that nothing else accesses during `'a`.
unsafe fn slice_mut<'a, T>(ptr: *mut T, len: usize) -> Result<&'a mut [T], rope2d_status> {
    if len == 0 {
        return Ok(&mut []);
    }
    check_pointer(ptr, len)?;
    // SAFETY: non-null, aligned, at most `isize::MAX` bytes (checked above), writable for `len`
    // floats and not aliased (caller; overlaps between the arguments of one call are
    // checked by the callers of this function).
    Ok(unsafe { core::slice::from_raw_parts_mut(ptr, len) })
}

fn check_pointer<T>(ptr: *const T, len: usize) -> Result<(), rope2d_status> {
    if ptr.is_null() {
        return Err(ROPE2D_ERROR_NULL_POINTER);
    }
    if !(ptr as usize).is_multiple_of(align_of::<T>()) {
        return Err(ROPE2D_ERROR_BAD_HANDLE);
    }
    match len.checked_mul(size_of::<T>()) {
        Some(bytes) if bytes <= isize::MAX as usize => Ok(()),
        _ => Err(ROPE2D_ERROR_SHAPE_OVERFLOW),
    }
}

/// The byte range of `len` values of `T` at `ptr`.
fn range<T>(ptr: *const T, len: usize) -> (usize, usize) {
    let start = ptr as usize;
    (start, start.wrapping_add(len.wrapping_mul(size_of::<T>())))
}

fn overlaps(a: (usize, usize), b: (usize, usize)) -> bool {
    a.0 < a.1 && b.0 < b.1 && a.0 < b.1 && b.0 < a.1
}

/// `axes` values at `ptr` as an array of exactly `A`.
///
/// # Safety
/// Unless null, `ptr` points to `axes` readable `T`s.
unsafe fn array<const A: usize, T: Copy + Default>(
    ptr: *const T,
    axes: usize,
) -> Result<[T; A], rope2d_status> {
    if axes != A {
        return Err(ROPE2D_ERROR_AXES);
    }
    // SAFETY: forwarded from the caller.
    let values = unsafe { slice(ptr, axes) }?;
    let mut out = [T::default(); A];
    out.copy_from_slice(values);
    Ok(out)
}

// --- information ----------------------------------------------------------------------------

/// The crate version, `"0.1.0"` (a static NUL-terminated string).
#[unsafe(no_mangle)]
pub extern "C" fn rope2d_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// A static NUL-terminated English description of `status` (never `NULL`).
#[unsafe(no_mangle)]
pub extern "C" fn rope2d_status_message(status: rope2d_status) -> *const c_char {
    let message: &'static str = match status {
        ROPE2D_OK => "ok\0",
        ROPE2D_ERROR_NULL_POINTER => "a required pointer is NULL\0",
        ROPE2D_ERROR_INVALID_ENUM => "an enumeration argument is not one of its constants\0",
        ROPE2D_ERROR_AXES => "the number of axes does not match the spec or rotation\0",
        ROPE2D_ERROR_OVERLAP => "buffers that must be distinct overlap\0",
        ROPE2D_ERROR_BAD_HANDLE => {
            "handle not filled by rope2d, or pointer misaligned for its type\0"
        }
        ROPE2D_ERROR_INVALID_BASE => "RoPE base must be finite and greater than 1\0",
        ROPE2D_ERROR_INVALID_FREQ_SCALE => {
            "frequency scale must be finite, positive and below 2^32\0"
        }
        ROPE2D_ERROR_INVALID_FREQUENCY => "frequency must be finite and below 2^32\0",
        ROPE2D_ERROR_ROTARY_DIM => "rotation pairs do not fit the head (1 to head_dim / 2)\0",
        ROPE2D_ERROR_INVALID_AXIS => "a section names an axis the spec does not have\0",
        ROPE2D_ERROR_PLAN_MISMATCH => "learned frequencies go with the summed plan only\0",
        ROPE2D_ERROR_INVALID_MSCALE => "mscale must be finite and positive\0",
        ROPE2D_ERROR_EMPTY_TABLE => "table must have a non-zero extent on every axis\0",
        ROPE2D_ERROR_INVALID_REF_GRID => "reference extents must be non-zero\0",
        ROPE2D_ERROR_STORAGE_LENGTH => "table storage has the wrong number of entries\0",
        ROPE2D_ERROR_FREQUENCY_LENGTH => "frequency array has the wrong length\0",
        ROPE2D_ERROR_ZERO_HEADS => "buffer must have at least one head\0",
        ROPE2D_ERROR_HEAD_LENGTH => "head vector length is not the head dimension\0",
        ROPE2D_ERROR_BUFFER_LENGTH => "buffer is not a whole number of tokens\0",
        ROPE2D_ERROR_TOKEN_COUNT => "buffer holds another number of tokens than described\0",
        ROPE2D_ERROR_POSITION_OUT_OF_RANGE => "a position lies outside the table\0",
        ROPE2D_ERROR_HEAD_COUNT => "the number of heads differs from the spec's\0",
        ROPE2D_ERROR_NON_FINITE_COORDINATE => "a coordinate is not finite\0",
        ROPE2D_ERROR_SHAPE_OVERFLOW => "a size computation overflows\0",
        ROPE2D_ERROR_BACKEND_UNAVAILABLE => "backend not compiled in or not supported here\0",
        ROPE2D_ERROR_TABLE_COORDS => "tableless rotation needs index coordinates\0",
        ROPE2D_ERROR_INVALID_SCALES => {
            "scales: finite, positive, ratio in [2^-64, 2^64], integer buffers only\0"
        }
        ROPE2D_ERROR_FIXED_POINT => {
            "Q15 table: int16/int8 buffers at their own scale only, mscale 1\0"
        }
        _ => "unknown rope2d status\0",
    };
    message.as_ptr().cast()
}

/// The fastest backend this build and CPU can run (CPU features detected once, cached).
#[unsafe(no_mangle)]
pub extern "C" fn rope2d_backend_auto() -> rope2d_backend {
    backend_code(Backend::auto())
}

/// Whether `backend` is compiled in and supported by this CPU.
#[unsafe(no_mangle)]
pub extern "C" fn rope2d_backend_available(backend_: rope2d_backend) -> bool {
    backend(backend_).is_some_and(Backend::is_available)
}

/// The backend's short name (`"scalar"`, `"avx2"`, …) as a static NUL-terminated string,
/// `NULL` for a value that is not a `ROPE2D_BACKEND_*` constant.
#[unsafe(no_mangle)]
pub extern "C" fn rope2d_backend_name(backend_: rope2d_backend) -> *const c_char {
    let name: &'static str = match backend_ {
        ROPE2D_BACKEND_SCALAR => "scalar\0",
        ROPE2D_BACKEND_PORTABLE => "portable\0",
        ROPE2D_BACKEND_AVX2 => "avx2\0",
        ROPE2D_BACKEND_AVX512 => "avx512\0",
        ROPE2D_BACKEND_NEON => "neon\0",
        _ => return core::ptr::null(),
    };
    name.as_ptr().cast()
}

/// Writes what `backend` runs on this CPU, in one line (backend, whether the CPU can run it,
/// loop form, element conversions, CPU vendor/family/model/stepping on x86_64; the Rust
/// API's `Backend::describe`), into `buf`: at most `len - 1` bytes and a NUL, cut short when
/// it does not fit. Returns the whole line's length without the NUL, as `snprintf` does (so
/// a second call with a larger buffer gets all of it); 0 for a value that is not a
/// compiled-in `ROPE2D_BACKEND_*` constant (then an empty string). Nothing is written when
/// `len` is 0 or `buf` is NULL.
///
/// # Safety
/// `buf` null or `len` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_backend_describe(
    backend_: rope2d_backend,
    buf: *mut c_char,
    len: usize,
) -> usize {
    // SAFETY: forwarded from the caller (`buf` null, or `len` writable bytes).
    let out = unsafe { slice_mut(buf.cast::<u8>(), len) }.unwrap_or(&mut []);
    let Some(backend) = backend(backend_) else {
        if let Some(first) = out.first_mut() {
            *first = 0;
        }
        return 0;
    };
    describe_into(backend, out)
}

/// [`rope2d_backend_describe`]'s body: the description cut to `out.len() - 1` bytes (on a
/// character boundary) and NUL-terminated; returns its full length.
fn describe_into(backend: Backend, out: &mut [u8]) -> usize {
    /// Counts every byte, keeps those that fit before the NUL.
    struct Cut<'o> {
        out: &'o mut [u8],
        kept: usize,
        total: usize,
        cut: bool,
    }
    impl core::fmt::Write for Cut<'_> {
        fn write_str(&mut self, s: &str) -> core::fmt::Result {
            self.total += s.len();
            if self.cut {
                return Ok(());
            }
            let room = self.out.len().saturating_sub(1 + self.kept);
            // Whole characters only, so the C side always holds valid UTF-8.
            let mut take = s.len().min(room);
            while !s.is_char_boundary(take) {
                take -= 1;
            }
            if let Some(dst) = self.out.get_mut(self.kept..self.kept + take) {
                dst.copy_from_slice(&s.as_bytes()[..take]);
                self.kept += take;
            }
            self.cut = take < s.len();
            Ok(())
        }
    }
    let mut cut = Cut {
        out,
        kept: 0,
        total: 0,
        cut: false,
    };
    // `Display` of a `Description` cannot fail; a writer that never fails keeps it so.
    let _ = core::fmt::write(&mut cut, format_args!("{}", backend.describe()));
    let (kept, total) = (cut.kept, cut.total);
    if let Some(nul) = cut.out.get_mut(kept) {
        *nul = 0;
    }
    total
}

// --- specs ----------------------------------------------------------------------------------

/// Axial 2-D RoPE: the first `head_dim/4` pairs rotate by one axis' coordinate, the next
/// `head_dim/4` by the other's, frequencies `base^(−4j/d)`.
///
/// # Safety
/// `out` is null or points to a writable `rope2d_spec`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_spec_axial(
    head_dim: usize,
    layout_: rope2d_layout,
    order: rope2d_axis_order,
    base: f64,
    out: *mut rope2d_spec,
) -> rope2d_status {
    let layout = match layout(layout_) {
        Ok(l) => l,
        Err(e) => return e,
    };
    let order = match order {
        ROPE2D_COL_FIRST => AxisOrder::ColFirst,
        ROPE2D_ROW_FIRST => AxisOrder::RowFirst,
        _ => return ROPE2D_ERROR_INVALID_ENUM,
    };
    // SAFETY: forwarded from the caller.
    unsafe {
        put_spec(
            out,
            AnySpec::Two(preset::axial(head_dim, layout, order, base)),
        )
    }
}

/// `a + b + c`, or `None` on overflow (the section presets add their widths).
fn sum3(dims: [usize; 3]) -> Option<usize> {
    dims[0].checked_add(dims[1])?.checked_add(dims[2])
}

/// Reads a `size_t[3]` argument.
///
/// # Safety
/// Unless null, `ptr` points to 3 readable `size_t`s.
unsafe fn dims3(ptr: *const usize) -> Result<[usize; 3], rope2d_status> {
    // SAFETY: forwarded from the caller.
    let dims = unsafe { array::<3, usize>(ptr, 3) }?;
    sum3(dims).map(|_| dims).ok_or(ROPE2D_ERROR_SHAPE_OVERFLOW)
}

/// rope-vit / the seed documents (also timm `'xy'`): axial 2-D, interleaved, column
/// first, base 100.
///
/// # Safety
/// `out` is null or points to a writable `rope2d_spec`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_spec_rope_vit(
    head_dim: usize,
    out: *mut rope2d_spec,
) -> rope2d_status {
    // SAFETY: forwarded from the caller.
    unsafe { put_spec(out, AnySpec::Two(preset::rope_vit(head_dim))) }
}

/// EVA-02 (timm `'ij'`): axial 2-D, interleaved, row first, base 10 000.
///
/// # Safety
/// `out` is null or points to a writable `rope2d_spec`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_spec_eva02(
    head_dim: usize,
    out: *mut rope2d_spec,
) -> rope2d_status {
    // SAFETY: forwarded from the caller.
    unsafe { put_spec(out, AnySpec::Two(preset::eva02(head_dim))) }
}

/// DINOv3: axial 2-D, half layout, row first, coordinates centred in (−1, 1), base 100,
/// frequency scale 2π.
///
/// # Safety
/// `out` is null or points to a writable `rope2d_spec`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_spec_dinov3(
    head_dim: usize,
    out: *mut rope2d_spec,
) -> rope2d_status {
    // SAFETY: forwarded from the caller.
    unsafe { put_spec(out, AnySpec::Two(preset::dinov3(head_dim))) }
}

/// SAM 2: axial 2-D, interleaved, column first, `rope_theta` (10 000).
///
/// # Safety
/// `out` is null or points to a writable `rope2d_spec`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_spec_sam2(
    head_dim: usize,
    rope_theta: f64,
    out: *mut rope2d_spec,
) -> rope2d_status {
    // SAFETY: forwarded from the caller.
    unsafe { put_spec(out, AnySpec::Two(preset::sam2(head_dim, rope_theta))) }
}

/// Qwen2-VL's vision tower: axial 2-D, half layout, row first, `theta` (10 000).
///
/// # Safety
/// `out` is null or points to a writable `rope2d_spec`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_spec_qwen2_vl_vision(
    head_dim: usize,
    theta: f64,
    out: *mut rope2d_spec,
) -> rope2d_status {
    // SAFETY: forwarded from the caller.
    unsafe { put_spec(out, AnySpec::Two(preset::qwen2_vl_vision(head_dim, theta))) }
}

/// Pixtral: 2-D with the odd/even frequency split, half layout, `theta` (10 000).
///
/// # Safety
/// `out` is null or points to a writable `rope2d_spec`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_spec_pixtral(
    head_dim: usize,
    theta: f64,
    out: *mut rope2d_spec,
) -> rope2d_status {
    // SAFETY: forwarded from the caller.
    unsafe { put_spec(out, AnySpec::Two(preset::pixtral(head_dim, theta))) }
}

/// Meta's LLaMA: 1-D, interleaved, base 10 000.
///
/// # Safety
/// `out` is null or points to a writable `rope2d_spec`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_spec_llama(
    head_dim: usize,
    out: *mut rope2d_spec,
) -> rope2d_status {
    // SAFETY: forwarded from the caller.
    unsafe { put_spec(out, AnySpec::One(preset::llama(head_dim))) }
}

/// GPT-NeoX / Hugging Face `rotate_half`: 1-D, half layout, base 10 000.
///
/// # Safety
/// `out` is null or points to a writable `rope2d_spec`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_spec_neox(head_dim: usize, out: *mut rope2d_spec) -> rope2d_status {
    // SAFETY: forwarded from the caller.
    unsafe { put_spec(out, AnySpec::One(preset::neox(head_dim))) }
}

/// GPT-NeoX partial rotary: half layout over `int(head_dim · partial_rotary_factor)`
/// elements, `rope_theta`.
///
/// # Safety
/// `out` is null or points to a writable `rope2d_spec`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_spec_gpt_neox(
    head_dim: usize,
    partial_rotary_factor: f64,
    rope_theta: f64,
    out: *mut rope2d_spec,
) -> rope2d_status {
    // SAFETY: forwarded from the caller.
    unsafe {
        put_spec(
            out,
            AnySpec::One(preset::gpt_neox(
                head_dim,
                partial_rotary_factor,
                rope_theta,
            )),
        )
    }
}

/// GLM partial rotary: interleaved over `int(head_dim · partial_rotary_factor)`
/// elements, `rope_theta`.
///
/// # Safety
/// `out` is null or points to a writable `rope2d_spec`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_spec_glm(
    head_dim: usize,
    partial_rotary_factor: f64,
    rope_theta: f64,
    out: *mut rope2d_spec,
) -> rope2d_status {
    // SAFETY: forwarded from the caller.
    unsafe {
        put_spec(
            out,
            AnySpec::One(preset::glm(head_dim, partial_rotary_factor, rope_theta)),
        )
    }
}

/// Wan 2.1: 3-D `[frame, row, col]`, interleaved, `theta` (10 000).
///
/// # Safety
/// `out` is null or points to a writable `rope2d_spec`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_spec_wan(
    head_dim: usize,
    theta: f64,
    out: *mut rope2d_spec,
) -> rope2d_status {
    // SAFETY: forwarded from the caller.
    unsafe { put_spec(out, AnySpec::Three(preset::wan(head_dim, theta))) }
}

/// 1-D RoPE: pair `k` rotates by `position · base^(−2k/d)`.
///
/// # Safety
/// `out` is null or points to a writable `rope2d_spec`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_spec_rope_1d(
    head_dim: usize,
    layout_: rope2d_layout,
    base: f64,
    out: *mut rope2d_spec,
) -> rope2d_status {
    match layout(layout_) {
        // SAFETY: forwarded from the caller.
        Ok(l) => unsafe { put_spec(out, AnySpec::One(preset::rope_1d(head_dim, l, base))) },
        Err(e) => e,
    }
}

/// A 3-D preset from a `size_t[3]` argument.
///
/// # Safety
/// `dims` is null or points to 3 readable `size_t`s; `out` is null or a writable
/// `rope2d_spec`.
unsafe fn put_spec_3d(
    dims: *const usize,
    out: *mut rope2d_spec,
    build: impl FnOnce([usize; 3]) -> Spec<'static, 3>,
) -> rope2d_status {
    // SAFETY: forwarded from the caller.
    match unsafe { dims3(dims) } {
        // SAFETY: forwarded from the caller.
        Ok(d) => unsafe { put_spec(out, AnySpec::Three(build(d))) },
        Err(e) => e,
    }
}

/// HunyuanVideo: 3-D `[frame, row, col]` sections of `rope_dim[3]` elements
/// (`{16, 56, 56}`), interleaved, `theta` (256).
///
/// # Safety
/// `rope_dim` is null or 3 readable `size_t`s; `out` is null or a writable `rope2d_spec`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_spec_hunyuan_video(
    rope_dim: *const usize,
    theta: f64,
    out: *mut rope2d_spec,
) -> rope2d_status {
    // SAFETY: forwarded from the caller.
    unsafe { put_spec_3d(rope_dim, out, |d| preset::hunyuan_video(d, theta)) }
}

/// FLUX (`EmbedND`): 3-D sections of `axes_dim[3]` elements (`{16, 56, 56}`), interleaved,
/// `theta` (10 000).
///
/// # Safety
/// `axes_dim` is null or 3 readable `size_t`s; `out` is null or a writable `rope2d_spec`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_spec_flux(
    axes_dim: *const usize,
    theta: f64,
    out: *mut rope2d_spec,
) -> rope2d_status {
    // SAFETY: forwarded from the caller.
    unsafe { put_spec_3d(axes_dim, out, |d| preset::flux(d, theta)) }
}

/// Qwen2-VL's text M-RoPE: `[temporal, height, width]` sections of `mrope_section[3]` pairs
/// (`{16, 24, 24}`), half layout, `rope_theta` (1 000 000).
///
/// # Safety
/// `mrope_section` is null or 3 readable `size_t`s; `out` is null or a writable
/// `rope2d_spec`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_spec_qwen2_vl_mrope(
    head_dim: usize,
    rope_theta: f64,
    mrope_section: *const usize,
    out: *mut rope2d_spec,
) -> rope2d_status {
    // SAFETY: forwarded from the caller.
    unsafe {
        put_spec_3d(mrope_section, out, |d| {
            preset::qwen2_vl_mrope(head_dim, rope_theta, d)
        })
    }
}

/// Sets the spec's magnitude (YaRN / LongRoPE attention factor): finite and positive.
///
/// # Safety
/// `spec` is null or points to a writable `rope2d_spec`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_spec_set_mscale(
    spec: *mut rope2d_spec,
    mscale: f32,
) -> rope2d_status {
    // SAFETY: forwarded from the caller.
    let mut handle = match unsafe { spec_of(spec) } {
        Ok(h) => h,
        Err(e) => return e,
    };
    match &mut handle.spec {
        AnySpec::One(s) => s.mscale = mscale,
        AnySpec::Two(s) => s.mscale = mscale,
        AnySpec::Three(s) => s.mscale = mscale,
    }
    // SAFETY: forwarded from the caller.
    unsafe { put_spec(spec, handle.spec) }
}

/// Sets how the spec's angles are formed (`ROPE2D_ANGLES_*`).
///
/// # Safety
/// `spec` is null or points to a writable `rope2d_spec`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_spec_set_precision(
    spec: *mut rope2d_spec,
    precision: rope2d_precision,
) -> rope2d_status {
    let precision = match precision {
        ROPE2D_ANGLES_EXACT => AnglePrecision::Exact,
        ROPE2D_ANGLES_FLOAT32 => AnglePrecision::Float32,
        _ => return ROPE2D_ERROR_INVALID_ENUM,
    };
    // SAFETY: forwarded from the caller.
    let mut handle = match unsafe { spec_of(spec) } {
        Ok(h) => h,
        Err(e) => return e,
    };
    match &mut handle.spec {
        AnySpec::One(s) => s.precision = precision,
        AnySpec::Two(s) => s.precision = precision,
        AnySpec::Three(s) => s.precision = precision,
    }
    // SAFETY: forwarded from the caller.
    unsafe { put_spec(spec, handle.spec) }
}

/// The spec's number of axes (1, 2 or 3) and head dimension.
///
/// # Safety
/// `spec` is null or points to a readable `rope2d_spec`; `axes` and `head_dim` are null or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_spec_info(
    spec: *const rope2d_spec,
    axes: *mut usize,
    head_dim: *mut usize,
) -> rope2d_status {
    // SAFETY: forwarded from the caller.
    let handle = match unsafe { spec_of(spec) } {
        Ok(h) => h,
        Err(e) => return e,
    };
    let (n, d) = match handle.spec {
        AnySpec::One(s) => (1, s.head_dim),
        AnySpec::Two(s) => (2, s.head_dim),
        AnySpec::Three(s) => (3, s.head_dim),
    };
    if axes.is_null() || head_dim.is_null() {
        return ROPE2D_ERROR_NULL_POINTER;
    }
    // SAFETY: both non-null and writable (caller).
    unsafe {
        axes.write(n);
        head_dim.write(d);
    }
    ROPE2D_OK
}

// --- rotations ------------------------------------------------------------------------------

/// Entries (`[cos, sin]` pairs, 2 floats each) the tables of `spec` over `extents[axes]` need.
///
/// # Safety
/// `spec` is null or readable; `extents` is null or points to `axes` readable `size_t`s;
/// `entries` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_table_storage_len(
    spec: *const rope2d_spec,
    extents: *const usize,
    axes: usize,
    entries: *mut usize,
) -> rope2d_status {
    // SAFETY: forwarded from the caller.
    let result = unsafe { spec_of(spec) }.and_then(|handle| {
        with_spec!(handle.spec, s => {
            // SAFETY: forwarded from the caller.
            let extents = unsafe { array(extents, axes) }?;
            Table::storage_len(s, extents).map_err(status)
        })
    });
    match result {
        Ok(_) if entries.is_null() => ROPE2D_ERROR_NULL_POINTER,
        Ok(n) => {
            // SAFETY: non-null and writable (caller).
            unsafe { entries.write(n) };
            ROPE2D_OK
        }
        Err(e) => e,
    }
}

/// Builds the tables of `spec` for coordinates `0 .. extents[a]` on each axis into
/// `storage` (`entries` `[cos, sin]` pairs: `2 · entries` floats, exactly
/// `rope2d_table_storage_len`), and the rotation that uses them into `out`. The storage must
/// stay alive and unchanged while `out` is used; `out` inside it is `ROPE2D_ERROR_OVERLAP`.
///
/// # Safety
/// Pointers are null or valid for their lengths: `spec` readable, `extents` `axes` readable
/// `size_t`s, `storage` `2 · entries` writable floats, `out` a writable `rope2d_rope`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_table_build(
    spec: *const rope2d_spec,
    extents: *const usize,
    axes: usize,
    storage: *mut f32,
    entries: usize,
    out: *mut rope2d_rope,
) -> rope2d_status {
    let wrap = (
        AnyRope::Table1 as _,
        AnyRope::Table2 as _,
        AnyRope::Table3 as _,
    );
    // SAFETY: forwarded from the caller.
    unsafe { build_table(spec, extents, axes, storage, entries, out, wrap) }
}

/// `rope2d_table_build` in Q15: `[cos, sin]` entries as `int16_t` pairs (32 767 ≈ 1), built
/// with integer arithmetic only (for `ROPE2D_ANGLES_EXACT` and coordinates other than
/// linspace, which form `float` values), into `storage` (`2 · entries` `int16_t`s, exactly
/// `rope2d_table_storage_len` entries). The rotation `out` takes `ROPE2D_I16` and `ROPE2D_I8`
/// buffers through the `_elem` calls and rotates them in fixed point —
/// `round((a·c − b·s) / 2^15)`, saturated — with no floating point at all (a core without
/// an FPU links no float routine for it); anything else is `ROPE2D_ERROR_FIXED_POINT`, as
/// is a spec whose `mscale` is not 1.
///
/// # Safety
/// As `rope2d_table_build`, with `storage` `2 · entries` writable `int16_t`s.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_table_build_q15(
    spec: *const rope2d_spec,
    extents: *const usize,
    axes: usize,
    storage: *mut i16,
    entries: usize,
    out: *mut rope2d_rope,
) -> rope2d_status {
    let wrap = (
        AnyRope::Q15_1 as _,
        AnyRope::Q15_2 as _,
        AnyRope::Q15_3 as _,
    );
    // SAFETY: forwarded from the caller.
    unsafe { build_table(spec, extents, axes, storage, entries, out, wrap) }
}

/// A table of `[S; 2]` entries over `A` axes: [`Table`] (`f32`) or [`Q15Table`] (`i16`).
type TableOf<const A: usize, S> = Rope<A, TableAngles<'static, A, Sections<A>, [S; 2]>>;

/// The rotation handle of each axis count's table of `[S; 2]` entries.
type Wrap<S> = (
    fn(TableOf<1, S>) -> AnyRope,
    fn(TableOf<2, S>) -> AnyRope,
    fn(TableOf<3, S>) -> AnyRope,
);

/// `rope2d_table_build` for entries of `S` (`f32`, or `i16` in Q15).
///
/// # Safety
/// As `rope2d_table_build`, with `storage` `2 · entries` writable values of `S`.
unsafe fn build_table<S: 'static>(
    spec: *const rope2d_spec,
    extents: *const usize,
    axes: usize,
    storage: *mut S,
    entries: usize,
    out: *mut rope2d_rope,
    wrap: Wrap<S>,
) -> rope2d_status
where
    [S; 2]: TableEntry,
{
    fn build<const A: usize, S: 'static>(
        spec: &Spec<'static, A>,
        extents: *const usize,
        axes: usize,
        storage: *mut S,
        entries: usize,
    ) -> Result<TableOf<A, S>, rope2d_status>
    where
        [S; 2]: TableEntry,
    {
        // SAFETY: forwarded from the caller.
        let extents = unsafe { array(extents, axes) }?;
        let values = entries.checked_mul(2).ok_or(ROPE2D_ERROR_SHAPE_OVERFLOW)?;
        // SAFETY: forwarded from the caller, who keeps the storage alive and unaliased while
        // the rotation is used (the documented contract of `rope2d_rope`).
        let storage: &'static mut [S] = unsafe { slice_mut(storage, values) }?;
        let (pairs, _) = storage.as_chunks_mut::<2>();
        TableOf::build(pairs, spec, extents).map_err(status)
    }
    if out.is_null() {
        return ROPE2D_ERROR_NULL_POINTER;
    }
    // The handle is written after the table: inside the storage, it would overwrite entries
    // the table it describes refers to.
    if overlaps(range(out, 1), range(storage, entries.wrapping_mul(2))) {
        return ROPE2D_ERROR_OVERLAP;
    }
    // SAFETY: forwarded from the caller.
    let handle = match unsafe { spec_of(spec) } {
        Ok(h) => h,
        Err(e) => return e,
    };
    let rope = match handle.spec {
        AnySpec::One(ref s) => build(s, extents, axes, storage, entries).map(wrap.0),
        AnySpec::Two(ref s) => build(s, extents, axes, storage, entries).map(wrap.1),
        AnySpec::Three(ref s) => build(s, extents, axes, storage, entries).map(wrap.2),
    };
    match rope {
        Ok(rope) => {
            let values = entries.wrapping_mul(2);
            // SAFETY: `out` is non-null (checked) and writable (caller).
            unsafe { put_rope(out, range(storage, values), rope) };
            ROPE2D_OK
        }
        Err(e) => e,
    }
}

/// A tableless rotation by `spec` into `out`: each token's angles computed from its
/// positions (any integer position, no storage). The spec's coordinates must be plain
/// indices (not DINOv3's centred ones).
///
/// # Safety
/// `spec` is null or readable; `out` is null or a writable `rope2d_rope`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_direct(
    spec: *const rope2d_spec,
    out: *mut rope2d_rope,
) -> rope2d_status {
    // SAFETY: forwarded from the caller.
    let handle = match unsafe { spec_of(spec) } {
        Ok(h) => h,
        Err(e) => return e,
    };
    if out.is_null() {
        return ROPE2D_ERROR_NULL_POINTER;
    }
    let rope = match handle.spec {
        AnySpec::One(ref s) => Direct::new(s).map(AnyRope::Direct1),
        AnySpec::Two(ref s) => Direct::new(s).map(AnyRope::Direct2),
        AnySpec::Three(ref s) => Direct::new(s).map(AnyRope::Direct3),
    };
    match rope {
        Ok(rope) => {
            // SAFETY: `out` is non-null (checked) and writable (caller).
            unsafe { put_rope(out, (0, 0), rope) };
            ROPE2D_OK
        }
        Err(e) => status(e),
    }
}

/// Makes the rotation run on `backend` (`ROPE2D_BACKEND_*`; the default is
/// `rope2d_backend_auto()`).
///
/// # Safety
/// `rope` is null or points to a writable `rope2d_rope`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_rope_set_backend(
    rope: *mut rope2d_rope,
    backend_: rope2d_backend,
) -> rope2d_status {
    // SAFETY: forwarded from the caller.
    let handle = match unsafe { rope_of(rope) } {
        Ok(h) => h,
        Err(e) => return e,
    };
    let Some(backend) = backend(backend_) else {
        return if backend_ <= ROPE2D_BACKEND_NEON {
            ROPE2D_ERROR_BACKEND_UNAVAILABLE
        } else {
            ROPE2D_ERROR_INVALID_ENUM
        };
    };
    let updated = match handle.rope {
        AnyRope::Table1(r) => r.with_backend(backend).map(AnyRope::Table1),
        AnyRope::Table2(r) => r.with_backend(backend).map(AnyRope::Table2),
        AnyRope::Table3(r) => r.with_backend(backend).map(AnyRope::Table3),
        AnyRope::Direct1(r) => r.with_backend(backend).map(AnyRope::Direct1),
        AnyRope::Direct2(r) => r.with_backend(backend).map(AnyRope::Direct2),
        AnyRope::Direct3(r) => r.with_backend(backend).map(AnyRope::Direct3),
        AnyRope::Q15_1(r) => r.with_backend(backend).map(AnyRope::Q15_1),
        AnyRope::Q15_2(r) => r.with_backend(backend).map(AnyRope::Q15_2),
        AnyRope::Q15_3(r) => r.with_backend(backend).map(AnyRope::Q15_3),
    };
    match updated {
        Ok(r) => {
            // SAFETY: `rope` is non-null (`rope_of` checked) and writable (caller).
            unsafe { put_rope(rope, handle.storage, r) };
            ROPE2D_OK
        }
        Err(e) => status(e),
    }
}

/// The backend the rotation runs on.
///
/// # Safety
/// `rope` is null or readable; `backend` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_rope_backend(
    rope: *const rope2d_rope,
    backend: *mut rope2d_backend,
) -> rope2d_status {
    // SAFETY: forwarded from the caller.
    let handle = match unsafe { rope_of(rope) } {
        Ok(h) => h,
        Err(e) => return e,
    };
    if backend.is_null() {
        return ROPE2D_ERROR_NULL_POINTER;
    }
    let value = with_rope!(handle, r => backend_code(r.backend()));
    // SAFETY: non-null and writable (caller).
    unsafe { backend.write(value) };
    ROPE2D_OK
}

/// The buffers of one call as slices, after checking them against each other, the
/// rotation's table storage and the call's read-only `inputs` (byte ranges: positions,
/// scales).
///
/// # Safety
/// Each `(ptr, len)` is null or `len` writable values, not accessed elsewhere during the call
/// except through the ranges checked here.
unsafe fn buffers<'a, T, const N: usize>(
    handle: &RopeHandle,
    bufs: [(*mut T, usize); N],
    inputs: &[(usize, usize)],
) -> Result<[&'a mut [T]; N], rope2d_status> {
    for (i, &(ptr, len)) in bufs.iter().enumerate() {
        if len != 0 {
            check_pointer(ptr, len)?;
        }
        let r = range(ptr, len);
        let mut others = bufs[..i].iter().map(|&(p, l)| range(p, l));
        if overlaps(r, handle.storage)
            || others.any(|o| overlaps(r, o))
            || inputs.iter().any(|&input| overlaps(r, input))
        {
            return Err(ROPE2D_ERROR_OVERLAP);
        }
    }
    // SAFETY: each buffer is valid (checked and caller) and they do not overlap each other,
    // the table storage or the inputs (checked), so the mutable slices are not aliased.
    Ok(bufs.map(|(ptr, len)| unsafe { slice_mut(ptr, len) }.unwrap_or(&mut [])))
}

/// Positions of a call: a grid (`extents`, optional `origin`) or one position per token.
enum Where {
    Grid {
        extents: *const usize,
        origin: *const u32,
    },
    List {
        positions: *const u32,
        tokens: usize,
    },
}

/// Rotates `bufs` (1 or 2 of the same shape: `rotate` or `rotate_qk`) at `at`.
///
/// # Safety
/// The pointers are null or valid for their lengths (documented on the public functions).
unsafe fn rotate_any<E: Element, const N: usize>(
    rope: *const rope2d_rope,
    bufs: [(*mut E, usize); N],
    shape: rope2d_shape,
    head_scales: Option<&[Scales]>,
    at: Where,
    axes: usize,
    dir: rope2d_direction,
) -> rope2d_status {
    #[allow(clippy::too_many_arguments)]
    fn run<E: Element, const A: usize, S: Source<A>, const N: usize>(
        r: &Rope<A, S>,
        bufs: [&mut [E]; N],
        shape: Shape,
        head_scales: Option<&[Scales]>,
        at: &Where,
        axes: usize,
        dir: Direction,
    ) -> Result<(), rope2d_status> {
        let mut bufs = bufs.into_iter();
        let x = bufs.next().ok_or(ROPE2D_ERROR_NULL_POINTER)?;
        let k = bufs.next();
        // Per-head scales come with one buffer (`rope2d_rotate_with_head_scales`), never with
        // `rope2d_rotate_qk`.
        fn call<E: Element, const A: usize, S: Source<A>, Po: Positions<A>>(
            r: &Rope<A, S>,
            (x, k): (&mut [E], Option<&mut [E]>),
            shape: Shape,
            head_scales: Option<&[Scales]>,
            positions: Po,
            dir: Direction,
        ) -> Result<(), Error> {
            match (k, head_scales) {
                (Some(k), _) => r.rotate_qk(x, k, shape, positions, dir),
                (None, Some(scales)) => r.rotate_with_head_scales(x, shape, positions, scales, dir),
                (None, None) => r.rotate(x, shape, positions, dir),
            }
        }
        match *at {
            Where::Grid { extents, origin } => {
                // SAFETY: forwarded from the caller.
                let extents = unsafe { array(extents, axes) }?;
                let origin = if origin.is_null() {
                    [0; A]
                } else {
                    // SAFETY: forwarded from the caller.
                    unsafe { array(origin, axes) }?
                };
                let grid = Grid::new(extents).at(origin);
                call(r, (x, k), shape, head_scales, grid, dir)
            }
            Where::List { positions, tokens } => {
                if axes != A {
                    return Err(ROPE2D_ERROR_AXES);
                }
                // SAFETY: forwarded from the caller: `tokens · axes` readable u32s, which are
                // `tokens` arrays of `A` (same size, alignment of u32).
                let list: &[[u32; A]] = unsafe { slice(positions.cast::<[u32; A]>(), tokens) }?;
                call(r, (x, k), shape, head_scales, list, dir)
            }
        }
        .map_err(status)
    }
    let result = (|| {
        // SAFETY: forwarded from the caller.
        let handle = unsafe { rope_of(rope) }?;
        let dir = direction(dir)?;
        // The positions (a list, or a grid's extents and origin) and the per-head scales are
        // read while the buffers are borrowed mutably: none may lie inside a buffer.
        let [first, second] = match at {
            Where::List { positions, tokens } => {
                [range(positions, tokens.saturating_mul(axes)), (0, 0)]
            }
            Where::Grid { extents, origin } => [range(extents, axes), range(origin, axes)],
        };
        let inputs = [
            first,
            second,
            head_scales.map_or((0, 0), |s| range(s.as_ptr(), s.len())),
        ];
        // SAFETY: forwarded from the caller.
        let bufs = unsafe { buffers(&handle, bufs, &inputs) }?;
        let mut scaled = Shape::heads(shape.heads).with_prefix(shape.prefix);
        if shape.input_scale != 0.0 || shape.output_scale != 0.0 {
            scaled = scaled.with_scales(shape.input_scale, shape.output_scale);
        }
        let shape = scaled;
        with_rope!(handle, r => run(r, bufs, shape, head_scales, &at, axes, dir))
    })();
    code(result)
}

/// Rotates `x` (`len` floats, `[tokens][heads][head_dim]`) whose tokens after
/// `shape.prefix` lie on a row-major grid of `extents[axes]` (last axis fastest), offset by
/// `origin[axes]` (`NULL`: all zero). 1-D text: `extents = {tokens}`, `origin = {start}`.
///
/// # Safety
/// `rope` readable; `x` null or `len` writable floats not overlapping the table storage;
/// `extents` and `origin` null or `axes` readable values.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_rotate(
    rope: *const rope2d_rope,
    x: *mut f32,
    len: usize,
    shape: rope2d_shape,
    extents: *const usize,
    origin: *const u32,
    axes: usize,
    dir: rope2d_direction,
) -> rope2d_status {
    // SAFETY: forwarded from the caller.
    unsafe {
        rotate_any(
            rope,
            [(x, len)],
            shape,
            None,
            Where::Grid { extents, origin },
            axes,
            dir,
        )
    }
}

/// `rope2d_rotate` of a buffer of `elem` values (`len` of them): f16 and bf16 rotated in
/// float and rounded to nearest-even, integers quantised by `shape`'s scales, rounded and
/// saturated.
///
/// # Safety
/// As `rope2d_rotate`, with `x` null or `len` writable values of `elem`'s size, aligned for
/// it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_rotate_elem(
    rope: *const rope2d_rope,
    elem: rope2d_elem,
    x: *mut core::ffi::c_void,
    len: usize,
    shape: rope2d_shape,
    extents: *const usize,
    origin: *const u32,
    axes: usize,
    dir: rope2d_direction,
) -> rope2d_status {
    let at = Where::Grid { extents, origin };
    // SAFETY: forwarded from the caller; the pointer is cast to the type `elem` names.
    unsafe { rotate_elem(rope, elem, x, len, shape, None, at, axes, dir) }
}

/// `rope2d_rotate_at` of a buffer of `elem` values (see `rope2d_rotate_elem`).
///
/// # Safety
/// As `rope2d_rotate_at` and `rope2d_rotate_elem`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_rotate_at_elem(
    rope: *const rope2d_rope,
    elem: rope2d_elem,
    x: *mut core::ffi::c_void,
    len: usize,
    shape: rope2d_shape,
    positions: *const u32,
    tokens: usize,
    axes: usize,
    dir: rope2d_direction,
) -> rope2d_status {
    let at = Where::List { positions, tokens };
    // SAFETY: forwarded from the caller.
    unsafe { rotate_elem(rope, elem, x, len, shape, None, at, axes, dir) }
}

/// `rope2d_rotate_elem` of an integer buffer quantised per head: head `h` of every token is
/// stored at scale `scales[h].input` and rotated into `scales[h].output` (rounded,
/// saturated; the unrotated prefix requantised likewise). `n_scales` must be `shape.heads`
/// and `shape`'s own scales 0 (or 1), else `ROPE2D_ERROR_INVALID_SCALES`; float buffers take
/// only `{1, 1}` entries; a Q15 rotation only entries of one finite positive scale in and out
/// (else `ROPE2D_ERROR_FIXED_POINT`). Nothing is written on error.
///
/// # Safety
/// As `rope2d_rotate_elem`; `scales` null or `n_scales` readable `rope2d_scales`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_rotate_with_head_scales(
    rope: *const rope2d_rope,
    elem: rope2d_elem,
    x: *mut core::ffi::c_void,
    len: usize,
    shape: rope2d_shape,
    scales: *const rope2d_scales,
    n_scales: usize,
    extents: *const usize,
    origin: *const u32,
    axes: usize,
    dir: rope2d_direction,
) -> rope2d_status {
    // SAFETY: forwarded from the caller; `rope2d_scales` has the layout of `Scales`.
    let scales = match unsafe { slice(scales.cast::<Scales>(), n_scales) } {
        Ok(s) => s,
        Err(e) => return e,
    };
    let at = Where::Grid { extents, origin };
    // SAFETY: forwarded from the caller.
    unsafe { rotate_elem(rope, elem, x, len, shape, Some(scales), at, axes, dir) }
}

/// `rope2d_rotate_at_elem` with per-head scales (see `rope2d_rotate_with_head_scales`).
///
/// # Safety
/// As `rope2d_rotate_at_elem` and `rope2d_rotate_with_head_scales`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_rotate_at_head_scales(
    rope: *const rope2d_rope,
    elem: rope2d_elem,
    x: *mut core::ffi::c_void,
    len: usize,
    shape: rope2d_shape,
    scales: *const rope2d_scales,
    n_scales: usize,
    positions: *const u32,
    tokens: usize,
    axes: usize,
    dir: rope2d_direction,
) -> rope2d_status {
    // SAFETY: forwarded from the caller; `rope2d_scales` has the layout of `Scales`.
    let scales = match unsafe { slice(scales.cast::<Scales>(), n_scales) } {
        Ok(s) => s,
        Err(e) => return e,
    };
    let at = Where::List { positions, tokens };
    // SAFETY: forwarded from the caller.
    unsafe { rotate_elem(rope, elem, x, len, shape, Some(scales), at, axes, dir) }
}

/// One buffer of the element type `elem` names.
///
/// # Safety
/// As `rope2d_rotate_elem`.
#[allow(clippy::too_many_arguments)]
unsafe fn rotate_elem(
    rope: *const rope2d_rope,
    elem: rope2d_elem,
    x: *mut core::ffi::c_void,
    len: usize,
    shape: rope2d_shape,
    scales: Option<&[Scales]>,
    at: Where,
    axes: usize,
    dir: rope2d_direction,
) -> rope2d_status {
    // SAFETY: forwarded from the caller, who passes `len` values of the type `elem` names (each
    // arm casts to that type).
    unsafe {
        match elem {
            ROPE2D_F32 => rotate_any(rope, [(x.cast::<f32>(), len)], shape, scales, at, axes, dir),
            ROPE2D_F16 => rotate_any(rope, [(x.cast::<f16>(), len)], shape, scales, at, axes, dir),
            ROPE2D_BF16 => rotate_any(
                rope,
                [(x.cast::<bf16>(), len)],
                shape,
                scales,
                at,
                axes,
                dir,
            ),
            ROPE2D_I16 => rotate_any(rope, [(x.cast::<i16>(), len)], shape, scales, at, axes, dir),
            ROPE2D_I8 => rotate_any(rope, [(x.cast::<i8>(), len)], shape, scales, at, axes, dir),
            _ => ROPE2D_ERROR_INVALID_ENUM,
        }
    }
}

/// `rope2d_rotate` for queries and keys of the same shape and positions: neither is written
/// unless both are valid.
///
/// # Safety
/// As `rope2d_rotate`, for `q` and `k`, which must not overlap.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_rotate_qk(
    rope: *const rope2d_rope,
    q: *mut f32,
    q_len: usize,
    k: *mut f32,
    k_len: usize,
    shape: rope2d_shape,
    extents: *const usize,
    origin: *const u32,
    axes: usize,
    dir: rope2d_direction,
) -> rope2d_status {
    let at = Where::Grid { extents, origin };
    // SAFETY: forwarded from the caller.
    unsafe { rotate_any(rope, [(q, q_len), (k, k_len)], shape, None, at, axes, dir) }
}

/// Rotates `x` whose tokens after `shape.prefix` are at explicit positions:
/// `positions[t · axes + a]` is token `t`'s coordinate on axis `a` (patch dropping, any
/// order, M-RoPE).
///
/// # Safety
/// As `rope2d_rotate`; `positions` null or `tokens · axes` readable `uint32_t`s.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_rotate_at(
    rope: *const rope2d_rope,
    x: *mut f32,
    len: usize,
    shape: rope2d_shape,
    positions: *const u32,
    tokens: usize,
    axes: usize,
    dir: rope2d_direction,
) -> rope2d_status {
    let at = Where::List { positions, tokens };
    // SAFETY: forwarded from the caller.
    unsafe { rotate_any(rope, [(x, len)], shape, None, at, axes, dir) }
}

/// `rope2d_rotate_at` for queries and keys: neither is written unless both are valid.
///
/// # Safety
/// As `rope2d_rotate_at`, for `q` and `k`, which must not overlap.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_rotate_qk_at(
    rope: *const rope2d_rope,
    q: *mut f32,
    q_len: usize,
    k: *mut f32,
    k_len: usize,
    shape: rope2d_shape,
    positions: *const u32,
    tokens: usize,
    axes: usize,
    dir: rope2d_direction,
) -> rope2d_status {
    let at = Where::List { positions, tokens };
    // SAFETY: forwarded from the caller.
    unsafe { rotate_any(rope, [(q, q_len), (k, k_len)], shape, None, at, axes, dir) }
}

/// Rotates one head vector (`len` = head_dim floats) of the token at `position[axes]`.
///
/// # Safety
/// As `rope2d_rotate`; `position` null or `axes` readable `uint32_t`s.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rope2d_rotate_head(
    rope: *const rope2d_rope,
    head: *mut f32,
    len: usize,
    position: *const u32,
    axes: usize,
    dir: rope2d_direction,
) -> rope2d_status {
    let result = (|| {
        // SAFETY: forwarded from the caller.
        let handle = unsafe { rope_of(rope) }?;
        let dir = direction(dir)?;
        // SAFETY: forwarded from the caller.
        let [head] = unsafe { buffers(&handle, [(head, len)], &[range(position, axes)]) }?;
        with_rope!(handle, r => {
            // SAFETY: forwarded from the caller.
            let position = unsafe { array(position, axes) }?;
            r.rotate_head(head, position, dir).map_err(status)
        })
    })();
    code(result)
}

#[cfg(target_os = "none")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    // No rope2d function panics on any input (each checks before it works); this handler
    // exists because a bare-metal static library must name one.
    loop {
        core::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::ffi::CStr;

    fn new_spec() -> rope2d_spec {
        rope2d_spec {
            opaque: [0; ROPE2D_SPEC_WORDS],
        }
    }

    fn new_rope() -> rope2d_rope {
        rope2d_rope {
            opaque: [0; ROPE2D_ROPE_WORDS],
        }
    }

    #[test]
    fn backend_descriptions_are_cut_and_terminated_like_snprintf() {
        /// The call with `len` of `buf`'s bytes offered, and what it left as a string.
        fn call(b: rope2d_backend, buf: &mut [c_char], len: usize) -> (usize, String) {
            assert!(len <= buf.len());
            // SAFETY: `buf` holds at least `len` writable bytes.
            let n = unsafe { rope2d_backend_describe(b, buf.as_mut_ptr(), len) };
            let bytes: Vec<u8> = buf
                .iter()
                .take_while(|&&c| c != 0)
                .map(|&c| c as u8)
                .collect();
            (n, String::from_utf8(bytes).unwrap())
        }
        let auto = rope2d_backend_auto();
        let want = backend(auto).unwrap().describe().to_string();
        let (n, got) = call(auto, &mut [0x55; 1024], 1024);
        assert_eq!((n, got.as_str()), (want.len(), want.as_str()));
        for len in [1, 2, 7, want.len(), want.len() + 1] {
            let mut buf = [0x55 as c_char; 1024];
            let (n, got) = call(auto, &mut buf, len);
            let kept = len.min(want.len() + 1) - 1;
            assert_eq!((n, got.as_str()), (want.len(), &want[..kept]), "len {len}");
            assert!(
                buf[len..].iter().all(|&c| c == 0x55),
                "len {len}: wrote past it"
            );
        }
        let mut untouched = [0x55 as c_char; 4];
        assert_eq!(call(auto, &mut untouched, 0).0, want.len());
        assert_eq!(untouched, [0x55; 4]);
        // SAFETY: a null buffer is allowed (nothing is written).
        let n = unsafe { rope2d_backend_describe(auto, core::ptr::null_mut(), 100) };
        assert_eq!(n, want.len());
        let (n, got) = call(99, &mut untouched, 4);
        assert_eq!((n, got.as_str()), (0, ""));
    }

    #[test]
    fn every_error_has_its_own_code_and_message() {
        let errors = [
            Error::InvalidBase,
            Error::InvalidFreqScale,
            Error::InvalidFrequency,
            Error::RotaryDim {
                pairs: 0,
                head_dim: 0,
            },
            Error::InvalidAxis { axis: 0, axes: 0 },
            Error::PlanMismatch,
            Error::InvalidMscale,
            Error::EmptyTable,
            Error::InvalidRefGrid,
            Error::StorageLength {
                expected: 0,
                actual: 0,
            },
            Error::FrequencyLength {
                expected: 0,
                actual: 0,
            },
            Error::ZeroHeads,
            Error::HeadLength {
                expected: 0,
                actual: 0,
            },
            Error::BufferLength {
                actual: 0,
                token_len: 0,
            },
            Error::TokenCount {
                expected: 0,
                actual: 0,
            },
            Error::PositionOutOfRange {
                axis: 0,
                value: 0,
                extent: 0,
            },
            Error::HeadCount {
                expected: 0,
                actual: 0,
            },
            Error::NonFiniteCoordinate,
            Error::ShapeOverflow,
            Error::BackendUnavailable,
            Error::TableCoords,
            Error::InvalidScales,
            Error::FixedPoint,
        ];
        let codes: Vec<_> = errors.iter().map(|&e| status(e)).collect();
        for (i, &c) in codes.iter().enumerate() {
            assert!((10..ROPE2D_ERROR_UNKNOWN).contains(&c), "{:?}", errors[i]);
            assert!(!codes[..i].contains(&c), "{:?} shares its code", errors[i]);
        }
        let unknown = c"unknown rope2d status";
        for c in codes.iter().copied().chain(0..=5) {
            // SAFETY: the function returns static NUL-terminated strings.
            let message = unsafe { CStr::from_ptr(rope2d_status_message(c)) };
            assert_ne!(message, unknown, "code {c}");
        }
    }

    #[test]
    fn handles_are_checked() {
        let mut rope = new_rope();
        let mut x = [0.0f32; 16];
        let shape = rope2d_shape {
            heads: 1,
            prefix: 0,
            input_scale: 0.0,
            output_scale: 0.0,
        };
        let extents = [1usize, 1];
        // SAFETY: every pointer is valid for the lengths passed.
        unsafe {
            let s = rope2d_rotate(
                &rope,
                x.as_mut_ptr(),
                16,
                shape,
                extents.as_ptr(),
                core::ptr::null(),
                2,
                ROPE2D_FORWARD,
            );
            assert_eq!(s, ROPE2D_ERROR_BAD_HANDLE);
            let s = rope2d_rotate(
                core::ptr::null(),
                x.as_mut_ptr(),
                16,
                shape,
                extents.as_ptr(),
                core::ptr::null(),
                2,
                ROPE2D_FORWARD,
            );
            assert_eq!(s, ROPE2D_ERROR_NULL_POINTER);
            let spec = new_spec();
            assert_eq!(rope2d_direct(&spec, &mut rope), ROPE2D_ERROR_BAD_HANDLE);
            assert_eq!(
                rope.opaque, [0; ROPE2D_ROPE_WORDS],
                "nothing written on error"
            );
        }
    }

    #[test]
    fn spec_adjustments_are_checked_and_atomic() {
        let mut spec = new_spec();
        let (mut axes, mut head_dim) = (0, 0);
        // SAFETY: every pointer is valid.
        unsafe {
            assert_eq!(rope2d_spec_wan(128, 10_000.0, &mut spec), ROPE2D_OK);
            assert_eq!(rope2d_spec_info(&spec, &mut axes, &mut head_dim), ROPE2D_OK);
            assert_eq!((axes, head_dim), (3, 128));
            let magnitude = |spec: &rope2d_spec| match spec_of(spec).map(|h| h.spec) {
                Ok(AnySpec::Three(s)) => (s.mscale, s.precision),
                _ => panic!("not a 3-axis spec"),
            };
            assert_eq!(magnitude(&spec), (1.0, AnglePrecision::Exact));
            assert_eq!(
                rope2d_spec_set_mscale(&mut spec, f32::NAN),
                ROPE2D_ERROR_INVALID_MSCALE
            );
            assert_eq!(
                rope2d_spec_set_precision(&mut spec, 9),
                ROPE2D_ERROR_INVALID_ENUM
            );
            assert_eq!(magnitude(&spec), (1.0, AnglePrecision::Exact));
            assert_eq!(rope2d_spec_set_mscale(&mut spec, 1.5), ROPE2D_OK);
            assert_eq!(
                rope2d_spec_set_precision(&mut spec, ROPE2D_ANGLES_FLOAT32),
                ROPE2D_OK
            );
            assert_eq!(magnitude(&spec), (1.5, AnglePrecision::Float32));
            assert_eq!(
                rope2d_spec_axial(64, 2, ROPE2D_ROW_FIRST, 100.0, &mut spec),
                ROPE2D_ERROR_INVALID_ENUM
            );
            let dims = [usize::MAX, 2, 2];
            assert_eq!(
                rope2d_spec_flux(dims.as_ptr(), 1e4, &mut spec),
                ROPE2D_ERROR_SHAPE_OVERFLOW
            );
            assert_eq!(
                rope2d_spec_flux(core::ptr::null(), 1e4, &mut spec),
                ROPE2D_ERROR_NULL_POINTER
            );
        }
    }

    /// The C interface gives the Rust API's results bit for bit, mscale included.
    #[test]
    fn matches_the_rust_api() {
        let mut spec = new_spec();
        let mut rope = new_rope();
        let mut storage = vec![0.0f32; 2 * (3 + 5) * 16];
        let extents = [3usize, 5];
        let input: Vec<f32> = (0..15 * 2 * 64).map(|i| (i as f32 * 0.37).sin()).collect();
        let mut x = input.clone();
        let shape = rope2d_shape {
            heads: 2,
            prefix: 0,
            input_scale: 0.0,
            output_scale: 0.0,
        };
        // SAFETY: every pointer is valid for the lengths passed; `storage` outlives `rope`.
        unsafe {
            assert_eq!(rope2d_spec_eva02(64, &mut spec), ROPE2D_OK);
            assert_eq!(rope2d_spec_set_mscale(&mut spec, 0.75), ROPE2D_OK);
            let mut entries = 0;
            assert_eq!(
                rope2d_table_storage_len(&spec, extents.as_ptr(), 2, &mut entries),
                ROPE2D_OK
            );
            assert_eq!(entries, storage.len() / 2);
            let s = rope2d_table_build(
                &spec,
                extents.as_ptr(),
                2,
                storage.as_mut_ptr(),
                entries,
                &mut rope,
            );
            assert_eq!(s, ROPE2D_OK);
            assert_eq!(
                rope2d_rope_set_backend(&mut rope, ROPE2D_BACKEND_SCALAR),
                ROPE2D_OK
            );
            let s = rope2d_rotate(
                &rope,
                x.as_mut_ptr(),
                x.len(),
                shape,
                extents.as_ptr(),
                core::ptr::null(),
                2,
                ROPE2D_FORWARD,
            );
            assert_eq!(s, ROPE2D_OK);
        }
        let mut spec = preset::eva02(64);
        spec.mscale = 0.75;
        let mut storage = vec![[0.0f32; 2]; (3 + 5) * 16];
        let table = Table::build(&mut storage, &spec, extents)
            .and_then(|t| t.with_backend(Backend::Scalar))
            .unwrap();
        let mut want = input;
        table
            .rotate(
                &mut want,
                Shape::heads(2),
                Grid::new(extents),
                Direction::Forward,
            )
            .unwrap();
        assert_eq!(x, want);
    }

    #[test]
    fn q15_tables_match_the_rust_api() {
        let mut spec = new_spec();
        let mut rope = new_rope();
        let extents = [3usize, 5];
        let mut storage = vec![0i16; 2 * (3 + 5) * 8];
        let input: Vec<i16> = (0..15 * 2 * 32)
            .map(|i| ((i as f32 * 0.37).sin() * 30_000.0) as i16)
            .collect();
        let mut x = input.clone();
        let mut x8: Vec<i8> = input.iter().map(|&v| (v >> 8) as i8).collect();
        let input8 = x8.clone();
        let shape = rope2d_shape {
            heads: 2,
            prefix: 0,
            input_scale: 0.0,
            output_scale: 0.0,
        };
        // SAFETY: every pointer is valid for the lengths passed; `storage` outlives `rope`.
        unsafe {
            assert_eq!(rope2d_spec_rope_vit(32, &mut spec), ROPE2D_OK);
            let mut entries = 0;
            let e = extents.as_ptr();
            assert_eq!(
                rope2d_table_storage_len(&spec, e, 2, &mut entries),
                ROPE2D_OK
            );
            assert_eq!(entries, storage.len() / 2);
            let s = rope2d_table_build_q15(&spec, e, 2, storage.as_mut_ptr(), entries, &mut rope);
            assert_eq!(s, ROPE2D_OK);
            for (elem, p, n) in [
                (ROPE2D_I16, x.as_mut_ptr().cast(), x.len()),
                (ROPE2D_I8, x8.as_mut_ptr().cast(), x8.len()),
            ] {
                let s = rope2d_rotate_elem(
                    &rope,
                    elem,
                    p,
                    n,
                    shape,
                    e,
                    core::ptr::null(),
                    2,
                    ROPE2D_FORWARD,
                );
                assert_eq!(s, ROPE2D_OK);
            }
            // Not a Q15 table's buffer or scales: refused, nothing written.
            let mut f = vec![0.5f32; x.len()];
            let s = rope2d_rotate(
                &rope,
                f.as_mut_ptr(),
                f.len(),
                shape,
                e,
                core::ptr::null(),
                2,
                0,
            );
            assert_eq!(s, ROPE2D_ERROR_FIXED_POINT);
            assert!(f.iter().all(|&v| v == 0.5));
            let mut y = input.clone();
            let scaled = rope2d_shape {
                input_scale: 0.5,
                output_scale: 0.25,
                ..shape
            };
            let (p, n) = (y.as_mut_ptr().cast(), y.len());
            let s = rope2d_rotate_elem(
                &rope,
                ROPE2D_I16,
                p,
                n,
                scaled,
                e,
                core::ptr::null(),
                2,
                ROPE2D_FORWARD,
            );
            assert_eq!(s, ROPE2D_ERROR_FIXED_POINT);
            assert_eq!(y, input);
            // Q15 cannot hold an mscale above 1.
            assert_eq!(rope2d_spec_set_mscale(&mut spec, 1.5), ROPE2D_OK);
            let mut other = new_rope();
            let s = rope2d_table_build_q15(&spec, e, 2, storage.as_mut_ptr(), entries, &mut other);
            assert_eq!(s, ROPE2D_ERROR_FIXED_POINT);
        }
        let spec = preset::rope_vit(32);
        let mut storage = vec![[0i16; 2]; (3 + 5) * 8];
        let table = Q15Table::build(&mut storage, &spec, extents).unwrap();
        let (mut want, mut want8) = (input, input8);
        let grid = Grid::new(extents);
        let fwd = Direction::Forward;
        table.rotate(&mut want, Shape::heads(2), grid, fwd).unwrap();
        table
            .rotate(&mut want8, Shape::heads(2), grid, fwd)
            .unwrap();
        assert_eq!(x, want);
        assert_eq!(x8, want8);
    }

    #[test]
    fn head_scales_match_the_rust_api() {
        let mut spec = new_spec();
        let mut rope = new_rope();
        let extents = [3usize, 5];
        let mut storage = vec![0f32; 2 * (3 + 5) * 8];
        let input: Vec<i16> = (0..(1 + 15) * 2 * 32)
            .map(|i| ((i as f32 * 0.37).sin() * 30_000.0) as i16)
            .collect();
        let shape = rope2d_shape {
            heads: 2,
            prefix: 1,
            input_scale: 0.0,
            output_scale: 0.0,
        };
        let heads = [
            rope2d_scales {
                input: 0.5,
                output: 0.25,
            },
            rope2d_scales {
                input: 1.0,
                output: 1.0,
            },
        ];
        let positions: Vec<u32> = (0..15u32).flat_map(|t| [t / 5, t % 5]).collect();
        let (mut grid_x, mut list_x) = (input.clone(), input.clone());
        // SAFETY: every pointer is valid for the lengths passed; `storage` outlives `rope`.
        unsafe {
            assert_eq!(rope2d_spec_rope_vit(32, &mut spec), ROPE2D_OK);
            let e = extents.as_ptr();
            let s = rope2d_table_build(
                &spec,
                e,
                2,
                storage.as_mut_ptr(),
                storage.len() / 2,
                &mut rope,
            );
            assert_eq!(s, ROPE2D_OK);
            let (p, n) = (grid_x.as_mut_ptr().cast(), grid_x.len());
            let fwd = ROPE2D_FORWARD;
            let s = rope2d_rotate_with_head_scales(
                &rope,
                ROPE2D_I16,
                p,
                n,
                shape,
                heads.as_ptr(),
                2,
                e,
                core::ptr::null(),
                2,
                fwd,
            );
            assert_eq!(s, ROPE2D_OK);
            let (p, n) = (list_x.as_mut_ptr().cast(), list_x.len());
            let s = rope2d_rotate_at_head_scales(
                &rope,
                ROPE2D_I16,
                p,
                n,
                shape,
                heads.as_ptr(),
                2,
                positions.as_ptr(),
                15,
                2,
                fwd,
            );
            assert_eq!(s, ROPE2D_OK);
            // Errors write nothing: one scale short, none, scales of the shape's own, a Q15
            // rotation at other scales.
            let mut y = input.clone();
            let (p, n) = (y.as_mut_ptr().cast(), y.len());
            let null = core::ptr::null();
            let call = |shape, scales, count| {
                rope2d_rotate_with_head_scales(
                    &rope, ROPE2D_I16, p, n, shape, scales, count, e, null, 2, fwd,
                )
            };
            assert_eq!(call(shape, heads.as_ptr(), 1), ROPE2D_ERROR_INVALID_SCALES);
            assert_eq!(call(shape, null.cast(), 2), ROPE2D_ERROR_NULL_POINTER);
            let scaled = rope2d_shape {
                input_scale: 0.5,
                output_scale: 0.5,
                ..shape
            };
            assert_eq!(call(scaled, heads.as_ptr(), 2), ROPE2D_ERROR_INVALID_SCALES);
            // Scales inside the buffer they quantise (read while it is written).
            let inside = p
                .cast::<u8>()
                .add(p.align_offset(4))
                .cast::<rope2d_scales>();
            assert_eq!(call(shape, inside, 2), ROPE2D_ERROR_OVERLAP);
            let mut q15 = vec![0i16; 2 * (3 + 5) * 8];
            let mut q15_rope = new_rope();
            let s =
                rope2d_table_build_q15(&spec, e, 2, q15.as_mut_ptr(), q15.len() / 2, &mut q15_rope);
            assert_eq!(s, ROPE2D_OK);
            let s = rope2d_rotate_with_head_scales(
                &q15_rope,
                ROPE2D_I16,
                p,
                n,
                shape,
                heads.as_ptr(),
                2,
                e,
                null,
                2,
                fwd,
            );
            assert_eq!(s, ROPE2D_ERROR_FIXED_POINT);
            assert_eq!(y, input);
        }
        let spec = preset::rope_vit(32);
        let mut storage = vec![[0f32; 2]; (3 + 5) * 8];
        let table = Table::build(&mut storage, &spec, extents).unwrap();
        let mut want = input;
        let scales = [
            Scales {
                input: 0.5,
                output: 0.25,
            },
            Scales::SAME,
        ];
        let rust_shape = Shape::heads(2).with_prefix(1);
        table
            .rotate_with_head_scales(
                &mut want,
                rust_shape,
                Grid::new(extents),
                &scales,
                Direction::Forward,
            )
            .unwrap();
        assert_eq!(grid_x, want);
        assert_eq!(list_x, want);
    }

    /// The positions of `rope2d_rotate_at` and `rope2d_rotate_head`, and a grid's extents and
    /// origin, are read while the buffer is borrowed: inside it, they are refused and nothing
    /// is written.
    #[test]
    fn positions_inside_the_buffer_are_refused() {
        let mut spec = new_spec();
        let mut rope = new_rope();
        let mut x = vec![1f32; 4 * 16];
        let shape = rope2d_shape {
            heads: 1,
            prefix: 0,
            input_scale: 0.0,
            output_scale: 0.0,
        };
        // SAFETY: every pointer is valid for the lengths passed (the positions lie in `x`).
        unsafe {
            assert_eq!(rope2d_spec_llama(16, &mut spec), ROPE2D_OK);
            assert_eq!(rope2d_direct(&spec, &mut rope), ROPE2D_OK);
            let (p, n) = (x.as_mut_ptr(), x.len());
            let positions = p.cast::<u32>().add(n - 4);
            let s = rope2d_rotate_at(&rope, p, n, shape, positions, 4, 1, ROPE2D_FORWARD);
            assert_eq!(s, ROPE2D_ERROR_OVERLAP);
            let s = rope2d_rotate_head(&rope, p, 16, p.cast::<u32>().add(3), 1, ROPE2D_FORWARD);
            assert_eq!(s, ROPE2D_ERROR_OVERLAP);
            // A grid's extents, then its origin, in the buffer (the values `x` holds there are
            // never read as extents: the call is refused first).
            let inside = p.cast::<u8>().add(16);
            let extents = inside
                .add(inside.align_offset(align_of::<usize>()))
                .cast::<usize>();
            let origin = [0u32];
            let s = rope2d_rotate(
                &rope,
                p,
                n,
                shape,
                extents,
                origin.as_ptr(),
                1,
                ROPE2D_FORWARD,
            );
            assert_eq!(s, ROPE2D_ERROR_OVERLAP);
            let four = [4usize];
            let origin = p.cast::<u32>().add(5);
            let s = rope2d_rotate(&rope, p, n, shape, four.as_ptr(), origin, 1, ROPE2D_FORWARD);
            assert_eq!(s, ROPE2D_ERROR_OVERLAP);
            // The same extents and origin outside the buffer: the call succeeds.
            let zero = [0u32];
            let s = rope2d_rotate(
                &rope,
                p,
                n,
                shape,
                four.as_ptr(),
                zero.as_ptr(),
                1,
                ROPE2D_FORWARD,
            );
            assert_eq!(s, ROPE2D_OK);
            let s = rope2d_rotate(
                &rope,
                p,
                n,
                shape,
                four.as_ptr(),
                zero.as_ptr(),
                1,
                ROPE2D_INVERSE,
            );
            assert_eq!(s, ROPE2D_OK);
        }
        assert!(x.iter().all(|&v| (v - 1.0).abs() < 1e-6));
    }

    /// A table's handle is written after its entries: a handle inside the storage is refused
    /// before anything is written.
    #[test]
    fn a_handle_inside_its_table_storage_is_refused() {
        let mut spec = new_spec();
        let extents = [4usize];
        // SAFETY: every pointer is valid for the lengths passed; the handle lies in `storage`
        // (8-aligned: `u64` storage), which the call refuses.
        unsafe {
            assert_eq!(rope2d_spec_llama(16, &mut spec), ROPE2D_OK);
            let mut entries = 0;
            assert_eq!(
                rope2d_table_storage_len(&spec, extents.as_ptr(), 1, &mut entries),
                ROPE2D_OK
            );
            let words = (2 * entries * 4).div_ceil(8) + ROPE2D_ROPE_WORDS;
            let mut storage = vec![7u64; words];
            let floats = storage.as_mut_ptr().cast::<f32>();
            let out = storage.as_mut_ptr().add(2).cast::<rope2d_rope>();
            let s = rope2d_table_build(&spec, extents.as_ptr(), 1, floats, entries, out);
            assert_eq!(s, ROPE2D_ERROR_OVERLAP);
            assert!(storage.iter().all(|&w| w == 7));
            let out = storage
                .as_mut_ptr()
                .add(words - ROPE2D_ROPE_WORDS)
                .cast::<rope2d_rope>();
            let s = rope2d_table_build(&spec, extents.as_ptr(), 1, floats, entries, out);
            assert_eq!(s, ROPE2D_OK);
        }
    }

    #[test]
    fn buffer_ranges_count_their_element_size() {
        let bytes = [0i8; 8];
        let words = [0i16; 8];
        let (b, w) = (bytes.as_ptr() as usize, words.as_ptr() as usize);
        assert_eq!(range(bytes.as_ptr(), 3), (b, b + 3));
        assert_eq!(range(words.as_ptr(), 3), (w, w + 6));
    }
}
