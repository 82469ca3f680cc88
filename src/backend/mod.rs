//! The backend seam: token loops written once ([`engine`]), generic over a [`Kernel`]; the
//! SIMD kernels written once too (`simd.rs`, on targets with a SIMD backend), over a vector
//! trait.
//!
//! Public entry points validate their whole input, then describe the work as a [`Job`] and
//! hand it to the selected [`Backend`]. A backend is one file that exposes `run(job)`
//! (wrapping [`drive`] in its `#[target_feature]` where it has one) and `is_available()`: a
//! SIMD backend implements `simd::Vector` for its registers, the others [`Kernel`]; adding
//! one is that file plus one line in `registry!` below. [`drive`] takes the kernel as a
//! value: a SIMD backend's `run` makes it, unsafely, once it knows the CPU has the
//! instruction set, and everything the value reaches is safe code.

mod engine;
#[cfg(any(
    all(feature = "avx2", target_arch = "x86_64"),
    all(feature = "avx512", target_arch = "x86_64"),
    rope2d_neon
))]
#[allow(unsafe_code)]
mod simd;
#[cfg(all(target_arch = "x86_64", any(feature = "avx2", feature = "avx512")))]
#[allow(unsafe_code)]
mod x86;

pub(crate) use engine::{AngleSource, Computed, ComputedFreqs, IntegerCoords, RealCoords, Tables};

use core::mem::MaybeUninit;

use crate::config::{Direction, Layout};
use crate::element::{Element, sealed::Format};

/// Which elements pair up: `layout`, within the first `2 · pairs` elements of each head
/// (the rotary dimension). The half layout pairs `(v[k], v[k + pairs])`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pairing {
    pub layout: Layout,
    pub pairs: usize,
}

/// Rotation of whole head vectors by per-pair angles given as `[cos, sin]`.
///
/// A kernel is a value, and the value is the proof that its instruction set is available:
/// the SIMD kernels are made only by their arch file's `unsafe` constructor, after the CPU
/// check, so the methods that run instructions (those taking `self`) are safe to call. The
/// others only answer questions about shapes.
pub(crate) trait Kernel: Copy {
    /// The stored values it rotates (`f32` for every float kernel).
    type Value: Copy;
    /// A table entry, `[cos, sin]` in the kernel's number format.
    type Entry: Copy;
    /// Whether the kernel takes a token's angles as one [`Kernel::Row`]
    /// ([`prepare`](Kernel::prepare), then [`rotate_row`](Kernel::rotate_row)) when the
    /// rotary dimension is within [`Kernel::row_pairs`]; otherwise the loops call
    /// [`rotate_pairs`](Kernel::rotate_pairs) section by section.
    const ROWS: bool = false;
    /// Pairs of `pairing` a row holds (its layout decides how many floats a pair takes).
    #[inline(always)]
    fn row_pairs(_pairing: Pairing) -> usize {
        0
    }
    /// A token's angles in the kernel's own form.
    type Row: RowBuffer;
    /// Whether the token loops call [`rotate_pairs`](Kernel::rotate_pairs) inline on
    /// bare-metal targets too (where it is otherwise one out-of-line copy).
    const INLINE: bool = false;
    /// Whether the driver also makes the direction a constant of the token loops (hosted
    /// optimised builds, as for the layout): the plain-Rust pair loops vectorise only with
    /// it (`prefill_1d` on the scalar backend took 2.4× as long without); the SIMD loops
    /// take the direction's sign once per staged row instead, and a copy of their loops per
    /// direction made a release build of the demo take 2.6× as long (118 s against 46 s).
    const CONSTANT_DIRECTION: bool = false;

    /// Stages the angles of pairs `first_pair .. first_pair + entries.len()` in `row`, in the
    /// form [`rotate_row`](Kernel::rotate_row) consumes, for direction `dir`.
    #[inline(always)]
    fn prepare(
        self,
        _row: &mut Self::Row,
        _pairing: Pairing,
        _dir: Direction,
        _first_pair: usize,
        _entries: &[Self::Entry],
    ) {
    }

    /// Rotates pairs `0 .. pairing.pairs` of every head in `x` (whole heads) by `row`.
    #[inline(always)]
    fn rotate_row(
        self,
        _x: &mut [Self::Value],
        _head_dim: usize,
        _pairing: Pairing,
        _row: &Self::Row,
    ) {
    }

    /// Rotates each token of `x` (`token_len` values) at the position `positions` yields,
    /// every pair read straight from the tables' entries (`tables`: per axis, the entries and
    /// the row width), no row staged per token: when the `runs` (a sections plan's) fall on
    /// whole vectors of the kernel's register form and together cover every pair once.
    /// Returns `false`, touching nothing, when the kernel cannot.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn rotate_tokens_from_tables<const A: usize, I: Iterator<Item = [u32; A]>>(
        self,
        _x: &mut [Self::Value],
        _token_len: usize,
        _head_dim: usize,
        _pairing: Pairing,
        _dir: Direction,
        _runs: &[crate::spec::Run],
        _tables: ([&[Self::Entry]; A], [usize; A]),
        _positions: I,
    ) -> bool {
        false
    }

    /// Rotates the tokens of a grid of `extents` from `origin`, row-major (`token_len` values
    /// each), every pair read straight from the tables' entries like
    /// [`rotate_tokens_from_tables`](Kernel::rotate_tokens_from_tables): the vectors of the
    /// axes before the last once per line, the last axis' per token, nothing prepared. It
    /// rotates when the `runs` fall on whole vectors of the kernel's register form and
    /// together cover every pair once, the grid lies inside the tables and `x` holds at most
    /// the grid's tokens; otherwise it returns `false`, touching nothing.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn rotate_grid_from_tables<const A: usize>(
        self,
        _x: &mut [Self::Value],
        _token_len: usize,
        _head_dim: usize,
        _pairing: Pairing,
        _dir: Direction,
        _runs: &[crate::spec::Run],
        _tables: ([&[Self::Entry]; A], [usize; A]),
        _grid: ([u32; A], [usize; A]),
    ) -> bool {
        false
    }

    /// Whether [`rotate_line_split`](Kernel::rotate_line_split) takes the varying section
    /// `first .. first + len` of heads of `head_dim` values, and how many pairs its table
    /// leaves before the first token's: 0 for a section on whole vectors; a vector's pairs
    /// for one whose first or last vector it shares with other sections (the register form
    /// loads that vector whole from the table and takes the section's lanes of it). `None`
    /// when it cannot.
    #[inline(always)]
    fn line_table_lead(
        _head_dim: usize,
        _pairing: Pairing,
        _first: usize,
        _len: usize,
    ) -> Option<usize> {
        None
    }

    /// Rotates the tokens of a grid line (`token_len` values each): token `t` by `row`,
    /// except that its pairs `first .. first + len` take `table`'s pairs
    /// `lead + t·len .. lead + (t + 1)·len` (`lead` from
    /// [`line_table_lead`](Kernel::line_table_lead)) — the line's tokens share `row` and read
    /// their own section from a table of the varying axis prepared once for the grid.
    /// Returns `false`, touching nothing, when the kernel cannot (the caller then rotates
    /// token by token).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn rotate_line_split(
        self,
        _line: &mut [Self::Value],
        _token_len: usize,
        _head_dim: usize,
        _pairing: Pairing,
        _row: &Self::Row,
        _section: (usize, usize),
        _table: &Self::Row,
    ) -> bool {
        false
    }

    /// Where [`rotate_tokens_split`](Kernel::rotate_tokens_split) reads pairs
    /// `first .. first + len` of each coordinate from its table, `(lead, stride)`: coordinate
    /// `c`'s at pairs `c·stride + lead ..`. `None` when it cannot, for heads of `head_dim`
    /// values.
    #[inline(always)]
    fn token_table(
        _head_dim: usize,
        _pairing: Pairing,
        _first: usize,
        _len: usize,
    ) -> Option<(usize, usize)> {
        None
    }

    /// Rotates each token of `x` (`token_len` values) at the position `positions` yields,
    /// when two sections make up every pair: for a section `(first, len)` of `tables[k].1`,
    /// pairs `first .. first + len` from `tables[k].0` at the token's coordinate `c` on axis
    /// `axes[k]` ([`token_table`](Kernel::token_table)'s pairs of `c`; both tables prepared
    /// once per call, no row staged per token). Returns `false`, touching nothing, when the
    /// kernel cannot.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn rotate_tokens_split<const A: usize, I: Iterator<Item = [u32; A]>>(
        self,
        _x: &mut [Self::Value],
        _token_len: usize,
        _head_dim: usize,
        _pairing: Pairing,
        _tables: [(&Self::Row, (usize, usize)); 2],
        _axes: [usize; 2],
        _positions: I,
    ) -> bool {
        false
    }

    /// Rotates, for each token `t` of `line` (`token_len` values each), pairs
    /// `first .. first + len` of every head (`section`) by `table[t · width ..][..len]` — a
    /// grid line's own section, from the table of the line's axis. Returns `false`, touching
    /// nothing, when the kernel has no loop for it (the caller goes token by token).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn rotate_line_pairs(
        self,
        _line: &mut [Self::Value],
        _token_len: usize,
        _head_dim: usize,
        _pairing: Pairing,
        _section: (usize, usize),
        _table: &[Self::Entry],
        _width: usize,
        _dir: Direction,
    ) -> bool {
        false
    }

    /// Rotates pairs `first_pair .. first_pair + angles.len()` of every head in `x` (a whole
    /// number of `head_dim`-value heads) by `angles`, reversed for [`Direction::Inverse`].
    /// Pairs at or past `pairing.pairs` are left alone.
    fn rotate_pairs(
        self,
        x: &mut [Self::Value],
        head_dim: usize,
        pairing: Pairing,
        first_pair: usize,
        angles: &[Self::Entry],
        dir: Direction,
    );

    /// Rotates every pair `k < P` (`P = pairing.pairs`) of every head `h` in `x` by the sum
    /// of the angles `a[h·P + k]` and `b[h·P + k]` (RoPE-Mixed: `cos(α+β) = cαcβ − sαsβ`, …).
    fn rotate_pairs_summed(
        self,
        x: &mut [Self::Value],
        head_dim: usize,
        pairing: Pairing,
        a: &[Self::Entry],
        b: &[Self::Entry],
        dir: Direction,
    );
}

/// Storage for a kernel's row, initialised in place (a row is kilobytes: never moved).
pub(crate) trait RowBuffer: Sized {
    /// An empty row in `slot`: nothing staged.
    fn init(slot: &mut MaybeUninit<Self>) -> &mut Self;
}

/// The row of kernels without rows.
pub(crate) struct NoRow;

impl RowBuffer for NoRow {
    #[inline(always)]
    fn init(slot: &mut MaybeUninit<Self>) -> &mut Self {
        slot.write(NoRow)
    }
}

/// The whole tokens (or heads) of a buffer, one by one. Unlike `chunks_exact_mut` zipped with
/// a position iterator, it has no division (and no panic path for a zero length: it yields
/// nothing).
pub(crate) struct Tokens<'x, T = f32> {
    rest: &'x mut [T],
    len: usize,
}

impl<'x, T> Tokens<'x, T> {
    #[inline(always)]
    pub(crate) fn new(x: &'x mut [T], len: usize) -> Self {
        Self { rest: x, len }
    }
}

impl<'x, T> Iterator for Tokens<'x, T> {
    type Item = &'x mut [T];

    #[inline(always)]
    fn next(&mut self) -> Option<&'x mut [T]> {
        if self.len == 0 {
            return None;
        }
        let rest = core::mem::take(&mut self.rest);
        let (token, rest) = rest.split_at_mut_checked(self.len)?;
        self.rest = rest;
        Some(token)
    }
}

/// Validated work: `x` holds whole tokens of `token_len` values, one angle source entry each.
pub struct Job<'x, A, V = f32> {
    pub(crate) x: &'x mut [V],
    pub(crate) token_len: usize,
    pub(crate) head_dim: usize,
    pub(crate) pairing: Pairing,
    pub(crate) dir: Direction,
    pub(crate) angles: A,
}

impl<'x, A, E: Element> Job<'x, A, E> {
    /// The job on values of `T` when `E` is `T` (`itself` returns such a buffer as itself:
    /// `Element::as_f32`, …); otherwise this job, unchanged. How a backend gives one element
    /// type its own loop: called under a constant test of `E::FORMAT` (an inline `const`
    /// block), so that the loop is not instantiated for the other types, even unoptimised.
    #[cfg(not(target_os = "none"))]
    #[inline(always)]
    pub(crate) fn retype<T: Element>(
        self,
        itself: fn(&'x mut [E]) -> Option<&'x mut [T]>,
    ) -> Result<Job<'x, A, T>, Self> {
        if E::FORMAT != T::FORMAT {
            return Err(self);
        }
        Ok(Job {
            // `E` is `T` (the same format): always `Some`.
            x: itself(self.x).unwrap_or_default(),
            token_len: self.token_len,
            head_dim: self.head_dim,
            pairing: self.pairing,
            dir: self.dir,
            angles: self.angles,
        })
    }
}

impl<'x, V> Job<'x, (), V> {
    /// The job with its angle source.
    #[inline(always)]
    pub(crate) fn with<A>(self, angles: A) -> Job<'x, A, V> {
        Job {
            x: self.x,
            token_len: self.token_len,
            head_dim: self.head_dim,
            pairing: self.pairing,
            dir: self.dir,
            angles,
        }
    }
}

/// Whether [`drive`] instantiates its loop once per layout (and, for kernels that ask,
/// [`Kernel::CONSTANT_DIRECTION`], per direction). On hosted targets it does, so these are
/// constants inside the loop and each kernel's dispatch on them folds away instead of running
/// per token; on bare-metal targets one copy keeps flash small. Unoptimised (debug) builds do
/// not specialise either: nothing folds there, and copies of every loop would only grow the
/// driver's stack frame.
const SPECIALISE: bool = !cfg!(target_os = "none") && !cfg!(debug_assertions);

/// The loop over a job's tokens, by `kernel`.
#[inline(always)]
pub(crate) fn drive<K: Kernel, A: AngleSource<K::Entry>>(kernel: K, job: Job<'_, A, K::Value>) {
    use {Direction::*, Layout::*};
    let Job {
        x,
        token_len,
        head_dim,
        pairing,
        dir,
        angles,
    } = job;
    if token_len == 0 || head_dim == 0 {
        return;
    }
    if !SPECIALISE {
        return angles.rotate_tokens(kernel, x, token_len, head_dim, pairing, dir);
    }
    let pairs = pairing.pairs;
    let (interleaved, half) = (
        Pairing {
            layout: Interleaved,
            pairs,
        },
        Pairing {
            layout: Half,
            pairs,
        },
    );
    match (pairing.layout, K::CONSTANT_DIRECTION, dir) {
        (Interleaved, true, Forward) => {
            angles.rotate_tokens(kernel, x, token_len, head_dim, interleaved, Forward)
        }
        (Interleaved, true, Inverse) => {
            angles.rotate_tokens(kernel, x, token_len, head_dim, interleaved, Inverse)
        }
        (Half, true, Forward) => {
            angles.rotate_tokens(kernel, x, token_len, head_dim, half, Forward)
        }
        (Half, true, Inverse) => {
            angles.rotate_tokens(kernel, x, token_len, head_dim, half, Inverse)
        }
        (Interleaved, false, dir) => {
            angles.rotate_tokens(kernel, x, token_len, head_dim, interleaved, dir)
        }
        (Half, false, dir) => angles.rotate_tokens(kernel, x, token_len, head_dim, half, dir),
    }
}

/// The scalar kernel of Arm M-profile hard-float targets (`build.rs` names them by target;
/// their FPUs, FPv4-SP and FPv5, all have the chained `vmla`).
#[cfg(rope2d_mprofile_fpu)]
#[allow(unsafe_code)]
mod cortex_m;

mod words;
#[cfg_attr(not(any(rope2d_armv6m, rope2d_arm_dsp, test)), allow(unused_imports))]
pub(crate) use words::{WordLoop, Words};

/// The Q15 kernel of ARMv6-M (Cortex-M0/M0+; `build.rs` sets the cfg).
#[cfg(rope2d_armv6m)]
#[allow(unsafe_code)]
mod cortex_m0;

/// The Q15 kernel of the Arm DSP extension: ARMv7E-M (Cortex-M4/M7), and Armv8-M Mainline
/// with the `dsp` feature (`build.rs` sets the cfg).
#[cfg(rope2d_arm_dsp)]
#[allow(unsafe_code)]
mod armv7em;

macro_rules! registry {
    ($($(#[doc = $doc:literal])* $variant:ident => $module:ident, $name:literal, cfg($($cfg:tt)*);)*) => {
        // `unsafe` is denied crate-wide; the arch backends allow it, the others forbid it.
        $(#[cfg($($cfg)*)] #[allow(unsafe_code)] mod $module;)*

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

            /// What this backend runs on this CPU, for logs and bug reports: see [`Description`].
            pub fn describe(self) -> Description {
                let (form, conversions) = match self {
                    $(#[cfg($($cfg)*)] Backend::$variant => ($module::FORM, $module::conversions()),)*
                };
                Description {
                    backend: self,
                    available: self.is_available(),
                    form,
                    conversions,
                    cpu: cpu_id(),
                }
            }

            /// Inlined into the sources' one out-of-line `run`, so that a job is passed on by
            /// one call, not three. A buffer of `E` other than `f32` only when
            /// [`fuses`](Self::fuses) says so.
            #[inline(always)]
            pub(crate) fn run<E: Element, A: AngleSource>(self, job: Job<'_, A, E>) {
                match self {
                    $(#[cfg($($cfg)*)] Backend::$variant => $module::run(job),)*
                }
            }

            /// Runs a Q15 table's job on `i16` or `i8` values: the scalar kernel's integer
            /// arithmetic, bit for bit on every backend (its pair loop in integer vectors
            /// where the backend has one).
            #[inline(always)]
            pub(crate) fn run_q15<V: scalar::Fixed, A: AngleSource<[i16; 2]>>(
                self,
                job: Job<'_, A, V>,
            ) {
                match self {
                    $(#[cfg($($cfg)*)] Backend::$variant => $module::run_q15(job),)*
                }
            }

            /// Whether [`run`](Self::run) takes a buffer of `E` at this scale ratio itself,
            /// converting values as its loop loads and stores them (always for `f32`);
            /// otherwise the caller converts blocks into `f32` and back ([`load`](Self::load),
            /// [`store`](Self::store)).
            #[inline(always)]
            pub(crate) fn fuses<E: Element>(self, ratio: f32) -> bool {
                E::FORMAT == Format::F32
                    || match self {
                        $(#[cfg($($cfg)*)] Backend::$variant => $module::fuses::<E>(ratio),)*
                    }
            }

            /// Converts `src` to `f32` into `dst` (same length), times `ratio` for integer
            /// types: exactly as `element::load` does, with the backend's instructions.
            pub(crate) fn load<E: Element>(self, src: &[E], dst: &mut [f32], ratio: f32) {
                match self {
                    $(#[cfg($($cfg)*)] Backend::$variant => $module::load(src, dst, ratio),)*
                }
            }

            /// Rounds `src` into `dst` (same length): exactly as `element::store` does.
            pub(crate) fn store<E: Element>(self, src: &[f32], dst: &mut [E]) {
                match self {
                    $(#[cfg($($cfg)*)] Backend::$variant => $module::store(src, dst),)*
                }
            }
        }
    };
}

registry! {
    /// The reference every other backend is tested against: each output is
    /// `fl(fl(a·c) − fl(b·s))` / `fl(fl(b·c) + fl(a·s))`, no fused multiply-add, the same bits
    /// on every target. Plain Rust, except on Arm M-profile cores with an FPU, where a
    /// hand-scheduled `vmul`/`vmla` loop performs exactly this arithmetic (`cortex_m.rs`).
    /// Always available.
    Scalar => scalar, "scalar", cfg(all());
    /// `wide` SIMD with instructions chosen at compile time (SSE2/AVX, NEON, simd128, plain
    /// arrays elsewhere), no fused multiply-add: bit for bit the same results as `Scalar`.
    /// Always available on hosted targets; not compiled for bare-metal targets
    /// (`target_os = "none"`), where `wide` has no SIMD to offer and flash is scarce.
    Portable => portable, "portable", cfg(not(target_os = "none"));
    /// x86_64 AVX2 + FMA, detected at run time (CPUID and XGETBV, with or without `std`).
    /// One fused product per output: each differs from `Scalar` by at most
    /// `3·2⁻²⁴·(|a·c| + |b·s|)` (+`3·2⁻¹⁵⁰` for subnormals), `≤ 2⁻²²·(|a| + |b|)`.
    Avx2 => avx2, "avx2", cfg(all(feature = "avx2", target_arch = "x86_64"));
    /// x86_64 AVX-512F (+ AVX2, FMA), detected like `Avx2`. The operations of `Avx2` on
    /// 16-lane vectors: bit for bit the results of `Avx2`, with the same bound against `Scalar`.
    Avx512 => avx512, "avx512", cfg(all(feature = "avx512", target_arch = "x86_64"));
    /// aarch64 NEON. Bit for bit the results of `Avx2`, with the same bound against `Scalar`.
    Neon => neon, "neon", cfg(rope2d_neon);
}

impl Backend {
    /// The fastest backend this build and CPU can run, in this order: `Avx512` (x86_64, when
    /// the CPU has AVX-512F, AVX2 and FMA), `Avx2` (x86_64, when the CPU has AVX2 and FMA),
    /// `Neon` (aarch64), else `Scalar` (which on Arm M-profile cores with an FPU is the
    /// hand-scheduled `vmla` loop). `Portable` is never chosen automatically (it measured
    /// slower than `Scalar` on x86_64 with SSE2 only); select it with `with_backend`.
    pub fn auto() -> Self {
        #[cfg(all(feature = "avx512", target_arch = "x86_64"))]
        if avx512::is_available() {
            return Backend::Avx512;
        }
        #[cfg(all(feature = "avx2", target_arch = "x86_64"))]
        if avx2::is_available() {
            return Backend::Avx2;
        }
        #[cfg(rope2d_neon)]
        if neon::is_available() {
            return Backend::Neon;
        }
        // `Portable` is not chosen: with SSE2 only (x86_64 without AVX2) it measured slower
        // than `Scalar`, which LLVM auto-vectorises; on 32-bit Arm `wide` is plain arrays.
        Backend::Scalar
    }
}

/// What a [`Backend`] runs on this CPU ([`Backend::describe`]), printed by `Display` as one
/// line for logs and bug reports: the backend, whether this CPU can run it, its loop form,
/// how element types are converted, and the CPU as CPUID reports it (x86_64; other
/// architectures print `cpu not identified`). For example:
///
/// `avx512 (available): 512-bit FMA up to 1 MiB; the avx2 loop (32 registers with AVX-512VL)
/// beyond, not for interleaved pairs on AMD Zen 4+ and Intel model 207, and at any size for heads
/// or sections only 256-bit registers fit (d = 80 half); angles loaded once per token, heads in
/// address order; f16, i16, i8 by AVX-512F, bf16 by AVX-512 BF16 (in the 512-bit loop at every
/// size), 16 values a step in the rotation loop; Q15 by 512-bit vpmaddwd (AVX-512BW); cpu
/// AuthenticAMD family 25 model 17 stepping 1`
///
/// ```
/// let line = rope2d::Backend::auto().describe();
/// assert!(line.to_string().starts_with(rope2d::Backend::auto().name()));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Description {
    backend: Backend,
    available: bool,
    form: &'static str,
    conversions: &'static str,
    cpu: Option<CpuId>,
}

impl Description {
    /// The backend described.
    pub fn backend(&self) -> Backend {
        self.backend
    }
}

impl core::fmt::Display for Description {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let available = if self.available {
            "available"
        } else {
            "not available on this CPU"
        };
        write!(
            f,
            "{} ({available}): {}; {}; ",
            self.backend.name(),
            self.form,
            self.conversions
        )?;
        match self.cpu {
            Some(cpu) => write!(f, "{cpu}"),
            None => f.write_str("cpu not identified"),
        }
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for Description {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "{=str} (available: {=bool}): {=str}; {=str}; ",
            self.backend.name(),
            self.available,
            self.form,
            self.conversions
        );
        match self.cpu.map(CpuId::fields) {
            Some((vendor, family, model, stepping)) => defmt::write!(
                f,
                "cpu {=str} family {=u32} model {=u32} stepping {=u32}",
                vendor,
                family,
                model,
                stepping
            ),
            None => defmt::write!(f, "cpu not identified"),
        }
    }
}

#[cfg(all(target_arch = "x86_64", any(feature = "avx2", feature = "avx512")))]
use x86::{CpuId, cpu_id};

#[cfg(all(target_arch = "x86_64", any(feature = "avx2", feature = "avx512")))]
impl CpuId {
    /// Vendor, family, model, stepping.
    fn fields(self) -> (&'static str, u32, u32, u32) {
        let vendor = match &self.vendor {
            b"GenuineIntel" => "GenuineIntel",
            b"AuthenticAMD" => "AuthenticAMD",
            b"HygonGenuine" => "HygonGenuine",
            _ => "other vendor",
        };
        (vendor, self.family, self.model, self.stepping)
    }
}

/// No CPU identity outside x86_64 (the Arm MIDR is not readable from user space everywhere).
#[cfg(not(all(target_arch = "x86_64", any(feature = "avx2", feature = "avx512"))))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CpuId {}

#[cfg(not(all(target_arch = "x86_64", any(feature = "avx2", feature = "avx512"))))]
impl CpuId {
    fn fields(self) -> (&'static str, u32, u32, u32) {
        match self {}
    }
}

impl core::fmt::Display for CpuId {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let (vendor, family, model, stepping) = self.fields();
        write!(
            f,
            "cpu {vendor} family {family} model {model} stepping {stepping}"
        )
    }
}

#[cfg(not(all(target_arch = "x86_64", any(feature = "avx2", feature = "avx512"))))]
fn cpu_id() -> Option<CpuId> {
    None
}

impl Default for Backend {
    fn default() -> Self {
        Self::auto()
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::Backend;
    use std::vec::Vec;

    /// Every backend's vector rounding to `i16` and `i8` is `element::store`'s, bit for bit, at
    /// the edges its clamp handles: ties, the types' limits, i32's limits, infinities, NaN.
    #[test]
    fn integer_stores_match_the_reference_at_the_edges() {
        let edges = [
            0.5f32,
            1.5,
            -0.5,
            -2.5,
            -0.0,
            126.5,
            127.5,
            128.0,
            -128.5,
            -129.0,
            32766.5,
            32767.5,
            -32768.5,
            -40000.0,
            2_147_483_520.0,
            2_147_483_648.0,
            -2_147_483_648.0,
            -2_147_483_904.0,
            1e30,
            -1e30,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -f32::NAN,
            f32::MIN_POSITIVE,
        ];
        // Whole vectors of every width (64 values), each edge in every lane position.
        let src: Vec<f32> = (0..edges.len() * 64)
            .map(|i| edges[(i + i / 64) % edges.len()])
            .collect();
        // Miri implements neither AVX-512's compares into a mask nor its conversions.
        let interpreted = |b: &Backend| cfg!(miri) && b.name() == "avx512";
        let available = |b: &Backend| b.is_available() && !interpreted(b);
        for backend in Backend::ALL.iter().copied().filter(available) {
            let (mut want, mut got) = (std::vec![0i16; src.len()], std::vec![0i16; src.len()]);
            crate::element::store(&src, &mut want);
            backend.store(&src, &mut got);
            assert_eq!(got, want, "i16 on {backend:?}");
            let (mut want, mut got) = (std::vec![0i8; src.len()], std::vec![0i8; src.len()]);
            crate::element::store(&src, &mut want);
            backend.store(&src, &mut got);
            assert_eq!(got, want, "i8 on {backend:?}");
        }
    }

    /// The checks in front of the hand-written Q15 loops (`cortex_m0.rs`, `armv7em.rs`),
    /// tested here although those loops only run on their cores: a loop that records the
    /// sections it is handed, as offsets from the buffer and the table, instead of rotating.
    mod word_sections {
        extern crate std;
        use super::super::{Pairing, WordLoop, Words};
        use crate::config::{Direction, Layout};
        use core::cell::{Cell, RefCell};
        use std::vec::Vec;

        /// A section as the loop sees it: `(first, last, entries, n, head_dim)`, `first` and
        /// `last` in values from the buffer's start, `entries` in entries from the table's.
        type Record = (usize, usize, usize, usize, usize);

        std::thread_local! {
            static SEEN: RefCell<Vec<Record>> = const { RefCell::new(Vec::new()) };
            static BASES: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
        }

        struct Recorder<const STEP: usize>;

        impl<const STEP: usize> WordLoop for Recorder<STEP> {
            const STEP: usize = STEP;

            fn rotate(words: Words<'_, Self>, _dir: Direction) {
                let (x, table) = BASES.get();
                let value = |p: *mut i16| (p as usize - x) / 2;
                let record = (
                    value(words.first()),
                    value(words.last()),
                    (words.entries() as usize - table) / 4,
                    words.n(),
                    words.head_dim(),
                );
                SEEN.with(|s| s.borrow_mut().push(record));
            }
        }

        /// `len` values of `storage` from a 4-byte boundary, plus `shift` values.
        fn slice(storage: &mut [i16], len: usize, shift: usize) -> &mut [i16] {
            let start = (storage.as_ptr() as usize % 4) / 2 + shift;
            &mut storage[start..start + len]
        }

        /// `n` entries of `storage` from a 4-byte boundary, plus `shift` values.
        fn entries(storage: &[i16], n: usize, shift: usize) -> &[[i16; 2]] {
            let start = (storage.as_ptr() as usize % 4) / 2 + shift;
            &storage[start..].as_chunks::<2>().0[..n]
        }

        /// Whether the loop took the case, and the sections it was handed.
        fn run(
            x: &mut [i16],
            table: &[[i16; 2]],
            f: impl FnOnce(&mut [i16]) -> bool,
        ) -> (bool, Vec<Record>) {
            BASES.set((x.as_ptr() as usize, table.as_ptr() as usize));
            SEEN.with(|s| s.borrow_mut().clear());
            let taken = f(x);
            (taken, SEEN.with(|s| s.take()))
        }

        const INTERLEAVED: Pairing = Pairing {
            layout: Layout::Interleaved,
            pairs: usize::MAX,
        };

        #[test]
        fn pairs_of_every_whole_head() {
            let (mut xs, ts) = (std::vec![0i16; 64], std::vec![0i16; 32]);
            // Three heads of 16 values and a partial one of 6; pairs 2 .. 6 of each.
            let x = slice(&mut xs, 54, 0);
            let angles = entries(&ts, 4, 0);
            let forward = Direction::Forward;
            let pairs =
                |x: &mut [i16]| Recorder::<2>::rotate_pairs(x, 16, INTERLEAVED, 2, angles, forward);
            // `last` bounds the sections' starts: 54 − 16 + 4, past the third head's (36)
            // and before the partial head's (52).
            assert_eq!(run(x, angles, pairs), (true, std::vec![(4, 42, 0, 4, 16)]));
            // A four-pair step takes the same sections.
            let pairs =
                |x: &mut [i16]| Recorder::<4>::rotate_pairs(x, 16, INTERLEAVED, 2, angles, forward);
            assert_eq!(run(x, angles, pairs), (true, std::vec![(4, 42, 0, 4, 16)]));
            // The rotary dimension (6 pairs) cuts the section to pairs 2 .. 6 of 6: 4.
            let partial = Pairing {
                pairs: 6,
                ..INTERLEAVED
            };
            let angles = entries(&ts, 8, 0);
            let pairs =
                |x: &mut [i16]| Recorder::<2>::rotate_pairs(x, 16, partial, 2, angles, forward);
            assert_eq!(run(x, angles, pairs), (true, std::vec![(4, 42, 0, 4, 16)]));
        }

        #[test]
        fn cases_the_loops_leave_to_plain_rust() {
            let (mut xs, ts) = (std::vec![0i16; 64], std::vec![0i16; 32]);
            let dir = Direction::Inverse;
            let angles = entries(&ts, 4, 0);
            // (pairing, head_dim, first_pair, angles, buffer shift): each declined.
            let half = Pairing {
                layout: Layout::Half,
                ..INTERLEAVED
            };
            let (odd_angles, unaligned_angles) = (entries(&ts, 3, 0), entries(&ts, 4, 1));
            let cases = [
                (half, 16, 0, angles, 0),
                (INTERLEAVED, 16, 0, angles, 1),
                (INTERLEAVED, 15, 0, angles, 0),
                (INTERLEAVED, 16, 0, odd_angles, 0),
                (INTERLEAVED, 16, 0, unaligned_angles, 0),
            ];
            for (i, (pairing, head_dim, first, angles, shift)) in cases.into_iter().enumerate() {
                let x = slice(&mut xs, 48, shift);
                let pairs = |x: &mut [i16]| {
                    Recorder::<2>::rotate_pairs(x, head_dim, pairing, first, angles, dir)
                };
                assert_eq!(run(x, angles, pairs), (false, std::vec![]), "case {i}");
            }
            // Eight entries from pair 2 of a head of 8 pairs: the 6 that fit are not a
            // multiple of a four-pair step.
            let x = slice(&mut xs, 48, 0);
            let angles = entries(&ts, 8, 0);
            let pairs =
                |x: &mut [i16]| Recorder::<4>::rotate_pairs(x, 16, INTERLEAVED, 2, angles, dir);
            assert_eq!(run(x, angles, pairs), (false, std::vec![]));
            // Nothing to rotate (no pairs from 8 on, a buffer shorter than a head): taken.
            let pairs =
                |x: &mut [i16]| Recorder::<2>::rotate_pairs(x, 16, INTERLEAVED, 8, angles, dir);
            assert_eq!(run(x, angles, pairs), (true, std::vec![]));
            let x = slice(&mut xs, 12, 0);
            let pairs =
                |x: &mut [i16]| Recorder::<2>::rotate_pairs(x, 16, INTERLEAVED, 0, angles, dir);
            assert_eq!(run(x, angles, pairs), (true, std::vec![]));
        }

        #[test]
        fn grid_lines_token_by_token() {
            let (mut xs, ts) = (std::vec![0i16; 64], std::vec![0i16; 32]);
            let dir = Direction::Forward;
            // Three tokens of two heads of 8 values; pairs 1 .. 3 of each head, by entries
            // `t·3 ..` of a table of 8 (the last token's are 6 and 7).
            let x = slice(&mut xs, 48, 0);
            let table = entries(&ts, 8, 0);
            let line = |x: &mut [i16]| {
                Recorder::<2>::rotate_line(x, 16, 8, INTERLEAVED, (1, 2), table, 3, dir)
            };
            let want = std::vec![(2, 10, 0, 2, 8), (18, 26, 3, 2, 8), (34, 42, 6, 2, 8)];
            assert_eq!(run(x, table, line), (true, want));
            // A table one entry short, an odd token length, a first token declined: no
            // token is rotated.
            let short = entries(&ts, 7, 0);
            let line = |x: &mut [i16]| {
                Recorder::<2>::rotate_line(x, 16, 8, INTERLEAVED, (1, 2), short, 3, dir)
            };
            assert_eq!(run(x, short, line), (false, std::vec![]));
            // (Tokens of 17 values: every token after the first would start on a halfword.)
            let x = slice(&mut xs, 51, 0);
            let line = |x: &mut [i16]| {
                Recorder::<2>::rotate_line(x, 17, 8, INTERLEAVED, (1, 2), table, 3, dir)
            };
            assert_eq!(run(x, table, line), (false, std::vec![]));
            let x = slice(&mut xs, 48, 0);
            let line = |x: &mut [i16]| {
                Recorder::<4>::rotate_line(x, 16, 8, INTERLEAVED, (1, 2), table, 3, dir)
            };
            assert_eq!(run(x, table, line), (false, std::vec![]));
        }
    }
}
