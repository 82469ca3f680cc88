//! The definition the firmwares hold rope2d's Q15 rotation of a 2-D grid to, bit for bit:
//! evaluated in plain Rust with the table's own entries (`cortex_m4.rs` and
//! `q15_firmware.rs`, that is every firmware with a Q15 loop of its own).
use rope2d::Direction;

/// A row-major grid of `side × side` tokens, each `heads` heads of `d` interleaved values,
/// rotated by a 2-D table whose first `d / 4` pairs take the column's angle (column first).
#[derive(Clone, Copy)]
pub struct Q15Grid {
    pub side: usize,
    pub heads: usize,
    pub d: usize,
}

/// Values of `got` that differ from the Q15 rotation of `input` by the definition:
/// `round((a·c − b·s) / 2¹⁵)`, ties up, saturated (inverse: `s → −s`), with the column's
/// entries for pairs `0 .. d/4` and the row's for the rest. `input` and `got` hold whole
/// tokens from the grid's first; `entries(axis, index)` reads a table row (through the
/// example's `calls`, where every rope2d call sits). `u32::MAX` when a row cannot be read.
pub fn mismatches<'t>(
    entries: impl Fn(usize, usize) -> Option<&'t [[i16; 2]]>,
    grid: Q15Grid,
    input: &[i16],
    got: &[i16],
    dir: Direction,
) -> u32 {
    let Q15Grid { side, heads, d } = grid;
    let mut mismatches = 0u32;
    for (t, (x, y)) in input
        .chunks(heads * d)
        .zip(got.chunks(heads * d))
        .enumerate()
    {
        let (Some(row), Some(col)) = (entries(0, t / side), entries(1, t % side)) else {
            return u32::MAX;
        };
        for (x, y) in x.chunks(d).zip(y.chunks(d)) {
            for pair in 0..d / 2 {
                let entry = if pair < d / 4 {
                    col.get(pair)
                } else {
                    row.get(pair - d / 4)
                };
                let Some(&[c, s]) = entry else {
                    return u32::MAX;
                };
                let (c, s) = (i32::from(c), i32::from(s));
                let s = if dir == Direction::Forward { s } else { -s };
                let (a, b) = (i32::from(x[2 * pair]), i32::from(x[2 * pair + 1]));
                let round = |v: i32| ((v + (1 << 14)) >> 15).clamp(-32_768, 32_767);
                let want = [round(a * c - b * s), round(a * s + b * c)];
                for (k, want) in want.into_iter().enumerate() {
                    if i32::from(y[2 * pair + k]) != want {
                        mismatches += 1;
                    }
                }
            }
        }
    }
    mismatches
}
