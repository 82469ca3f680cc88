//! Input checks shared by every public entry point. Each runs to completion before a job
//! is handed to a backend, so an `Err` never leaves a buffer half rotated.

#![forbid(unsafe_code)]

use crate::backend::Backend;
use crate::config::Shape;
use crate::error::Error;

/// A checked buffer: `prefix_len` unrotated values, then `tokens` tokens of `token_len`.
/// (`pub` in a private module: it appears in the sealed source trait.)
#[derive(Clone, Copy, Debug)]
pub struct Tokens {
    pub(crate) prefix_len: usize,
    pub(crate) token_len: usize,
    pub(crate) tokens: usize,
}

/// Checks that a buffer of `len` values is whole tokens of `shape.heads · head_dim` values,
/// `shape.prefix` of them unrotated and the rest `count` tokens (any number for `None`).
pub(crate) fn split_tokens(
    len: usize,
    shape: Shape,
    head_dim: usize,
    count: Option<usize>,
) -> Result<Tokens, Error> {
    if shape.heads == 0 {
        return Err(Error::ZeroHeads);
    }
    let token_len = shape
        .heads
        .checked_mul(head_dim)
        .ok_or(Error::ShapeOverflow)?;
    if !len.is_multiple_of(token_len) {
        return Err(Error::BufferLength {
            actual: len,
            token_len,
        });
    }
    // `token_len > 0` for every valid spec; `checked_div` keeps this free of a panic path.
    let tokens = len.checked_div(token_len).unwrap_or(0);
    let expected = match count {
        Some(count) => shape
            .prefix
            .checked_add(count)
            .ok_or(Error::ShapeOverflow)?,
        None => tokens.max(shape.prefix),
    };
    if tokens != expected {
        return Err(Error::TokenCount {
            expected,
            actual: tokens,
        });
    }
    Ok(Tokens {
        prefix_len: shape.prefix * token_len,
        token_len,
        tokens: tokens - shape.prefix,
    })
}

/// Checks a caller storage length.
pub(crate) fn check_storage(expected: usize, actual: usize) -> Result<(), Error> {
    if expected == actual {
        Ok(())
    } else {
        Err(Error::StorageLength { expected, actual })
    }
}

/// Checks a backend can run here.
pub(crate) fn check_backend(backend: Backend) -> Result<Backend, Error> {
    if backend.is_available() {
        Ok(backend)
    } else {
        Err(Error::BackendUnavailable)
    }
}
