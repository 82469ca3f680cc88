//! The hand-written Q15 loops' view of a buffer ([`Words`]): checked here, and made only here
//! (its fields are private to this file), so that a [`WordLoop`], whose assembly trusts it,
//! is safe to call.

use core::marker::PhantomData;

use super::{Pairing, Tokens};
use crate::config::{Direction, Layout};

/// A hand-written Q15 loop of one core (`cortex_m0.rs`, `armv7em.rs`): interleaved `i16`
/// pairs by Q15 entries in word loads and stores, so it takes only word-aligned sections of a
/// multiple of its step. The two entry points check that ([`Words`]) and return `false`,
/// touching nothing, for the cases the plain-Rust loop is left to; the loop itself is safe to
/// call because it only ever sees checked [`Words`], which only this file can make.
#[cfg_attr(not(any(rope2d_armv6m, rope2d_arm_dsp)), allow(dead_code))]
pub(crate) trait WordLoop: Sized {
    /// Pairs per loop step, a power of two: a section's pairs must be a multiple.
    const STEP: usize;

    /// Rotates every head's section of `words` by its entries.
    fn rotate(words: Words<'_, Self>, dir: Direction);

    /// [`Kernel::rotate_pairs`](super::Kernel::rotate_pairs): pairs
    /// `first_pair .. first_pair + angles.len()` of every whole head of `x` rotated by
    /// `angles`; `false`, touching nothing, when [`Words::of`] finds the case unsupported.
    #[inline(always)]
    fn rotate_pairs(
        x: &mut [i16],
        head_dim: usize,
        pairing: Pairing,
        first_pair: usize,
        angles: &[[i16; 2]],
        dir: Direction,
    ) -> bool {
        match Words::<Self>::of(x, head_dim, pairing, first_pair, angles) {
            WordSections::Unsupported => false,
            WordSections::Empty => true,
            WordSections::Words(words) => {
                Self::rotate(words, dir);
                true
            }
        }
    }

    /// [`Kernel::rotate_line_pairs`](super::Kernel::rotate_line_pairs): each token of `line`
    /// rotated as [`rotate_pairs`](Self::rotate_pairs) rotates one, its entries `width` apart
    /// in `table`; `false`, touching nothing, when [`Words::line`] declines.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn rotate_line(
        line: &mut [i16],
        token_len: usize,
        head_dim: usize,
        pairing: Pairing,
        section: (usize, usize),
        table: &[[i16; 2]],
        width: usize,
        dir: Direction,
    ) -> bool {
        let tokens = Words::<Self>::line(line, token_len, head_dim, pairing, section, table, width);
        let Some(tokens) = tokens else {
            return false;
        };
        for words in tokens {
            Self::rotate(words, dir);
        }
        true
    }
}

/// What [`Words::of`] finds.
#[cfg_attr(not(any(rope2d_armv6m, rope2d_arm_dsp)), allow(dead_code))]
pub(crate) enum WordSections<'x, L> {
    /// Not a case the loop takes (the half layout, a buffer or table not word-aligned, an
    /// odd `head_dim`, a section not a multiple of the step): the plain-Rust loop runs.
    Unsupported,
    /// Nothing to rotate.
    Empty,
    /// The sections to rotate.
    Words(Words<'x, L>),
}

/// What a [`WordLoop`] `L` rotates, checked: interleaved pairs `first_pair .. first_pair + n`
/// of every whole head, `n` a nonzero multiple of `L::STEP`, each head's section inside the
/// head and word-aligned; the first head's section at `first`, the next ones `head_dim`
/// values (`2 · head_dim` bytes) apart, each that starts at or before `last` (the last whole
/// head's when the buffer is whole heads; the section of a partial head at the end would not
/// fit, and starts after it); `n` word-aligned entries at `entries`. Only [`Words::of`] and
/// the iterator of [`Words::line`] make one (the loops' accesses are inside the buffer and
/// the table by this invariant); it borrows both.
#[cfg_attr(not(any(rope2d_armv6m, rope2d_arm_dsp)), allow(dead_code))]
pub(crate) struct Words<'x, L> {
    first: *mut i16,
    last: *mut i16,
    entries: *const [i16; 2],
    n: usize,
    head_dim: usize,
    /// The buffer's and the table's borrows.
    borrows: PhantomData<(&'x mut [i16], &'x [[i16; 2]])>,
    looped: PhantomData<L>,
}

#[cfg_attr(not(any(rope2d_armv6m, rope2d_arm_dsp)), allow(dead_code))]
impl<'x, L: WordLoop> Words<'x, L> {
    /// The sections of `x` that `angles` rotate from pair `first_pair` (checked: each lies
    /// inside its head, `2 · (first_pair + n) ≤ head_dim`).
    #[inline(always)]
    fn of(
        x: &'x mut [i16],
        head_dim: usize,
        pairing: Pairing,
        first_pair: usize,
        angles: &'x [[i16; 2]],
    ) -> WordSections<'x, L> {
        let rotary = pairing.pairs.min(head_dim / 2);
        let n = angles.len().min(rotary.saturating_sub(first_pair));
        let words = (x.as_ptr() as usize | angles.as_ptr() as usize) & 3 == 0;
        if pairing.layout != Layout::Interleaved || !words || head_dim & 1 != 0 {
            return WordSections::Unsupported;
        }
        if n == 0 || x.len() < head_dim {
            return WordSections::Empty;
        }
        if n & (L::STEP - 1) != 0 {
            return WordSections::Unsupported;
        }
        WordSections::Words(Self {
            first: x.as_mut_ptr().wrapping_add(2 * first_pair),
            last: x
                .as_mut_ptr()
                .wrapping_add(x.len() - head_dim + 2 * first_pair),
            entries: angles.as_ptr(),
            n,
            head_dim,
            borrows: PhantomData,
            looped: PhantomData,
        })
    }

    /// [`Kernel::rotate_line_pairs`](super::Kernel::rotate_line_pairs)'s sections: those of
    /// each token of `line` (`token_len` values each) for its section `(first_pair, len)`, with
    /// its entries `width` apart in `table`. `None` when the first token's sections are
    /// [`Unsupported`](WordSections::Unsupported), a token is not word-aligned (odd
    /// `token_len`) or the table does not hold every token's entries; no tokens when there is
    /// nothing to rotate. The first token's checks hold for every token: the same shape, and
    /// word-aligned entry rows as the table is.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn line(
        line: &'x mut [i16],
        token_len: usize,
        head_dim: usize,
        pairing: Pairing,
        (first_pair, len): (usize, usize),
        table: &'x [[i16; 2]],
        width: usize,
    ) -> Option<LineWords<'x, L>> {
        let (row, token) = (table.get(..len)?, line.get_mut(..token_len)?);
        let n = match Words::<L>::of(token, head_dim, pairing, first_pair, row) {
            WordSections::Unsupported => return None,
            WordSections::Empty => 0,
            WordSections::Words(words) => words.n,
        };
        // One division per line.
        let tokens = if n == 0 { 0 } else { line.len() / token_len };
        let needed = tokens
            .saturating_sub(1)
            .checked_mul(width)
            .and_then(|e| e.checked_add(n));
        let skip = token_len.checked_sub(head_dim)?;
        if token_len & 1 != 0 || needed.is_none_or(|e| e > table.len()) {
            return None;
        }
        Some(LineWords {
            tokens: Tokens::new(line.get_mut(..tokens * token_len)?, token_len),
            table,
            row: 0,
            width,
            first_pair,
            skip,
            n,
            head_dim,
            looped: PhantomData,
        })
    }
}

#[cfg_attr(not(any(rope2d_armv6m, rope2d_arm_dsp)), allow(dead_code))]
impl<L> Words<'_, L> {
    /// The first head's section.
    pub(super) fn first(&self) -> *mut i16 {
        self.first
    }

    /// The start of the last head's section (the loops run while a section starts at or
    /// before it).
    pub(super) fn last(&self) -> *mut i16 {
        self.last
    }

    /// The `n` entries every section is rotated by.
    pub(super) fn entries(&self) -> *const [i16; 2] {
        self.entries
    }

    /// Pairs per section: a nonzero multiple of `L::STEP`.
    pub(super) fn n(&self) -> usize {
        self.n
    }

    /// Values from one head's section to the next one's.
    pub(super) fn head_dim(&self) -> usize {
        self.head_dim
    }
}

/// The sections of a grid line's tokens ([`Words::line`]), token by token.
#[cfg_attr(not(any(rope2d_armv6m, rope2d_arm_dsp)), allow(dead_code))]
pub(crate) struct LineWords<'x, L> {
    tokens: Tokens<'x, i16>,
    table: &'x [[i16; 2]],
    row: usize,
    width: usize,
    first_pair: usize,
    /// From a token's first head to its last.
    skip: usize,
    /// Pairs per section.
    n: usize,
    head_dim: usize,
    looped: PhantomData<L>,
}

impl<'x, L> Iterator for LineWords<'x, L> {
    type Item = Words<'x, L>;

    #[inline(always)]
    fn next(&mut self) -> Option<Words<'x, L>> {
        let token = self.tokens.next()?;
        let entries = self.table.get(self.row..self.row + self.n)?;
        self.row += self.width;
        let first = token.as_mut_ptr().wrapping_add(2 * self.first_pair);
        Some(Words {
            first,
            last: first.wrapping_add(self.skip),
            entries: entries.as_ptr(),
            n: self.n,
            head_dim: self.head_dim,
            borrows: PhantomData,
            looped: PhantomData,
        })
    }
}
