//! Input checks shared by every public entry point. Each runs to completion before a job
//! is handed to a backend, so an `Err` never leaves a buffer half rotated.

#![forbid(unsafe_code)]

use crate::backend::{AngleSource, Backend, Job};
use crate::config::{Direction, GridPos, Layout, Shape};
use crate::error::Error;

/// Everything about a rotation except the buffer and the angles.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plan {
    pub head_dim: usize,
    pub layout: Layout,
    pub backend: Backend,
}

impl Plan {
    /// Checks that `x` is `shape.prefix + count` whole tokens and returns the job for the
    /// rotated part.
    pub(crate) fn job<'x, A: AngleSource>(
        self,
        x: &'x mut [f32],
        shape: Shape,
        count: usize,
        dir: Direction,
        angles: A,
    ) -> Result<Job<'x, A>, Error> {
        if shape.heads == 0 {
            return Err(Error::ZeroHeads);
        }
        let token_len = shape
            .heads
            .checked_mul(self.head_dim)
            .ok_or(Error::ShapeOverflow)?;
        if !x.len().is_multiple_of(token_len) {
            return Err(Error::BufferLength {
                actual: x.len(),
                token_len,
            });
        }
        // `token_len > 0` for every valid plan; `checked_div` keeps this free of a panic path.
        let tokens = x.len().checked_div(token_len).unwrap_or(0);
        let expected = shape
            .prefix
            .checked_add(count)
            .ok_or(Error::ShapeOverflow)?;
        if tokens != expected {
            return Err(Error::TokenCount {
                expected,
                actual: tokens,
            });
        }
        let (_, rotated) = x
            .split_at_mut_checked(shape.prefix * token_len)
            .ok_or(Error::ShapeOverflow)?;
        Ok(Job {
            x: rotated,
            token_len,
            head_dim: self.head_dim,
            layout: self.layout,
            dir,
            angles,
        })
    }

    /// Checks that `head` is one head vector and returns its job.
    pub(crate) fn head_job<'x, A: AngleSource>(
        self,
        head: &'x mut [f32],
        dir: Direction,
        angles: A,
    ) -> Result<Job<'x, A>, Error> {
        if head.len() != self.head_dim {
            return Err(Error::HeadLength {
                expected: self.head_dim,
                actual: head.len(),
            });
        }
        Ok(Job {
            x: head,
            token_len: self.head_dim,
            head_dim: self.head_dim,
            layout: self.layout,
            dir,
            angles,
        })
    }

    /// Runs jobs that were all checked.
    pub(crate) fn run<A: AngleSource, const N: usize>(self, jobs: [Job<'_, A>; N]) {
        for job in jobs {
            self.backend.run(job);
        }
    }
}

/// `Ok` when every position lies in a `rows × cols` grid.
pub(crate) fn check_grid_positions(
    positions: &[GridPos],
    rows: usize,
    cols: usize,
) -> Result<(), Error> {
    match positions
        .iter()
        .find(|p| p.row as usize >= rows || p.col as usize >= cols)
    {
        Some(p) => Err(Error::GridPositionOutOfRange {
            row: p.row,
            col: p.col,
            rows,
            cols,
        }),
        None => Ok(()),
    }
}

/// `Ok` when every position is below `len`.
pub(crate) fn check_positions(positions: &[u32], len: u64) -> Result<(), Error> {
    match positions.iter().find(|&&p| u64::from(p) >= len) {
        Some(&p) => Err(Error::PositionOutOfRange {
            position: u64::from(p),
            len,
        }),
        None => Ok(()),
    }
}

/// `Ok` when `count` consecutive positions from `start` are all below `len`.
pub(crate) fn check_run(start: u32, count: usize, len: u64) -> Result<(), Error> {
    match count.checked_sub(1) {
        None => Ok(()),
        Some(last) => {
            let last = u64::from(start) + last as u64;
            if last >= len {
                Err(Error::PositionOutOfRange {
                    position: last,
                    len,
                })
            } else {
                Ok(())
            }
        }
    }
}

/// Number of `[cos, sin]` entries of `axes` rows of `width` entries, with overflow checked.
pub(crate) fn entries(axes: usize, width: usize) -> Result<usize, Error> {
    axes.checked_mul(width).ok_or(Error::ShapeOverflow)
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
