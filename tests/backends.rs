//! Every backend against the scalar reference, through every public entry point: axial, 1-D
//! and RoPE-Mixed tables, direct (table-free) axial and 1-D, one head, whole buffers, q and k
//! together, an unrotated prefix, explicit positions, the inverse; both layouts; head dims 8 to
//! 256; odd token counts; sub-slices starting 0, 1 and 3 floats into an allocation (so data
//! is not vector-aligned) with guard values around them; NaN, infinities and subnormals.
//!
//! Allowed difference, per output (the bounds stated in each backend's module docs):
//! - `portable`: none — same bits as scalar (NaN: NaN at the same place);
//! - `avx2`, `avx512`, `neon` (one fused product per output):
//!   `|out − scalar| ≤ 2⁻²²·(|a| + |b|) + 2⁻¹⁴⁸`, `(a, b)` the input pair of the output;
//!   NaN exactly where scalar has NaN, the same infinities where scalar has infinities.
//!
//! Also: `avx512` gives bit for bit the results of `avx2` (when the CPU has both), through
//! every kind of rotation and every tail length.
//!
//! Under Miri (`.ci/hardening.sh`; about 1000× slower than native, floating point the
//! slowest) every loop shrinks — fewer head dims, smaller grids, fewer tokens, one sub-slice
//! offset — while every assertion stays. The shapes kept still reach every kernel's main
//! loop and each of its tails, both layouts, both directions and both axis orders, so each
//! `unsafe` access pattern of the arch backends runs at least once.

use rope2d::{
    Axial2d, AxialDirect, AxialTableRef, AxisOrder, Backend, Coord, Coords, Direction, Grid,
    GridPos, Layout, LearnedFreqs, Mixed2d, MixedTableRef, Rope1d, Rope1dDirect, Rope1dTableRef,
    Shape,
};

const LAYOUTS: [Layout; 2] = [Layout::Interleaved, Layout::Half];
const DIRS: [Direction; 2] = [Direction::Forward, Direction::Inverse];

/// The directions a loop runs for `layout`: both, or under Miri one per layout (forward for
/// interleaved, inverse for half; the tests' other calls cover the other direction).
fn dirs(layout: Layout) -> &'static [Direction] {
    match layout {
        _ if !cfg!(miri) => &DIRS,
        Layout::Interleaved => &DIRS[..1],
        Layout::Half => &DIRS[1..],
    }
}
/// Starting offsets of the tested sub-slices, in floats (under Miri one misaligned offset:
/// unaligned SIMD loads are as valid there as aligned ones).
const OFFSETS: &[usize] = if cfg!(miri) { &[3] } else { &[0, 1, 3] };
const GUARD: f32 = 12345.678;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in [−4, 4).
    fn value(&mut self) -> f32 {
        ((self.next() >> 40) as f32 / (1u64 << 24) as f32) * 8.0 - 4.0
    }

    fn values(&mut self, len: usize) -> Vec<f32> {
        (0..len).map(|_| self.value()).collect()
    }
}

/// The backends compared against scalar: every one compiled in and available on this CPU.
fn backends() -> Vec<Backend> {
    let list: Vec<Backend> = Backend::ALL
        .iter()
        .copied()
        .filter(|b| *b != Backend::Scalar && b.is_available())
        .collect();
    assert!(list.iter().any(|b| b.name() == "portable"));
    list
}

/// Index of the other element of `i`'s pair (`d` = head dim).
fn partner(i: usize, d: usize, layout: Layout) -> usize {
    let j = i % d;
    match layout {
        Layout::Interleaved => i ^ 1,
        Layout::Half if j < d / 2 => i + d / 2,
        Layout::Half => i - d / 2,
    }
}

/// Asserts `got` is within the backend's bound of `want`; `input` is what both rotated.
fn check(
    backend: Backend,
    layout: Layout,
    d: usize,
    input: &[f32],
    want: &[f32],
    got: &[f32],
    what: &str,
) {
    assert_eq!(want.len(), got.len());
    let bit_exact = backend.name() == "portable";
    for (i, (&w, &g)) in want.iter().zip(got).enumerate() {
        // Identical bits pass every assertion below; under Miri, where float arithmetic is
        // expensive, skip straight past them.
        if cfg!(miri) && w.to_bits() == g.to_bits() {
            continue;
        }
        let context = || {
            format!(
                "{} {what}: element {i}: scalar {w:e}, got {g:e}",
                backend.name()
            )
        };
        if w.is_nan() || g.is_nan() {
            assert!(w.is_nan() && g.is_nan(), "{}", context());
        } else if bit_exact {
            assert_eq!(w.to_bits(), g.to_bits(), "{}", context());
        } else if w.is_infinite() || g.is_infinite() {
            assert_eq!(w, g, "{}", context());
        } else {
            let (a, b) = (input[i], input[partner(i, d, layout)]);
            let bound =
                (f64::from(a.abs()) + f64::from(b.abs())) * 2f64.powi(-22) + 2f64.powi(-148);
            let diff = (f64::from(w) - f64::from(g)).abs();
            assert!(
                diff <= bound,
                "{}: |diff| {diff:e} > bound {bound:e}",
                context()
            );
        }
    }
}

/// Runs `op` on a copy of `input` with scalar, then with every other backend on sub-slices at
/// each offset of [`OFFSETS`], and checks the results and the guards around them.
fn compare(layout: Layout, d: usize, input: &[f32], what: &str, op: impl Fn(Backend, &mut [f32])) {
    let mut want = input.to_vec();
    op(Backend::Scalar, &mut want);
    for backend in backends() {
        for &offset in OFFSETS {
            let mut buf = vec![GUARD; input.len() + offset + 5];
            let data = &mut buf[offset..offset + input.len()];
            data.copy_from_slice(input);
            op(backend, data);
            check(backend, layout, d, input, &want, data, what);
            assert!(
                buf[..offset].iter().all(|&v| v == GUARD),
                "{what}: guard before"
            );
            assert!(
                buf[offset + input.len()..].iter().all(|&v| v == GUARD),
                "{what}: guard after"
            );
        }
    }
}

/// Head dims divisible by 4 from 8 to 256 (every tail length of every kernel).
///
/// Under Miri three dims whose sections (`d/4` = 3, 4 and 9 pairs) still reach every
/// kernel's main loop and each of its tails: interleaved 4-pair steps, 2-pair and 1-pair
/// tails; half-layout 8-pair and 4-pair steps and 1-pair tails; 1 and 2 heads.
fn dims4() -> impl Iterator<Item = usize> {
    if cfg!(miri) {
        vec![12, 16, 36].into_iter()
    } else {
        (8..=256).step_by(4).collect::<Vec<_>>().into_iter()
    }
}

/// Even head dims from 8 to 256.
///
/// Under Miri three dims (`d/2` = 4, 7 and 9 pairs: interleaved 4-pair steps, 2-pair and
/// 1-pair tails; half-layout 8-pair and 4-pair steps and 1-pair tails; RoPE-Mixed 4- and
/// 8-pair steps and their tails).
fn dims2() -> impl Iterator<Item = usize> {
    if cfg!(miri) {
        vec![8, 14, 18].into_iter()
    } else {
        (8..=256).step_by(2).collect::<Vec<_>>().into_iter()
    }
}

/// `grid`, or under Miri a 2×3 grid.
fn miri_grid(grid: Grid) -> Grid {
    if cfg!(miri) { Grid::new(2, 3) } else { grid }
}

/// `(row, col)` as a position on `grid`, wrapped into it (the identity on the full-size
/// grids; under Miri it folds positions onto the smaller grid).
fn pos_on(grid: Grid, (row, col): (u32, u32)) -> GridPos {
    GridPos::new(row % grid.rows as u32, col % grid.cols as u32)
}

/// `native`, or `miri` under Miri.
fn miri_or(native: usize, miri: usize) -> usize {
    if cfg!(miri) { miri } else { native }
}

fn axial_config(layout: Layout, d: usize) -> Axial2d {
    let order = if d.is_multiple_of(8) {
        AxisOrder::ColFirst
    } else {
        AxisOrder::RowFirst
    };
    let config = Axial2d::new(layout, order, 100.0);
    if d.is_multiple_of(3) {
        config.with_coords(Coords::Centered)
    } else {
        config
    }
}

#[test]
fn axial_table_every_entry_point() {
    let mut rng = Rng(1);
    let grid = miri_grid(Grid::new(3, 5)); // 15 tokens
    let n = grid.tokens().unwrap();
    for layout in LAYOUTS {
        for d in dims4() {
            let heads = 1 + d % 3;
            let config = axial_config(layout, d);
            let mut storage = vec![[0f32; 2]; AxialTableRef::storage_len(d, grid).unwrap()];
            let table = AxialTableRef::build(&mut storage, &config, d, grid).unwrap();
            let on = |b: Backend| table.with_backend(b).unwrap();
            let token = heads * d;
            for &dir in dirs(layout) {
                let shape = Shape::heads(heads).with_prefix(1);
                let x = rng.values((n + 1) * token);
                compare(
                    layout,
                    d,
                    &x,
                    &format!("axial rotate d={d} {dir:?}"),
                    |b, buf| on(b).rotate(buf, shape, dir).unwrap(),
                );
            }
            let shape = Shape::heads(heads);
            let qk = rng.values(2 * n * token);
            compare(layout, d, &qk, &format!("axial qk d={d}"), |b, buf| {
                let (q, k) = buf.split_at_mut(n * token);
                on(b).rotate_qk(q, k, shape, Direction::Forward).unwrap()
            });
            let positions =
                [(2, 4), (0, 0), (1, 3), (2, 0), (0, 4), (1, 1), (2, 2)].map(|p| pos_on(grid, p));
            let x = rng.values(7 * token);
            compare(
                layout,
                d,
                &x,
                &format!("axial rotate_at d={d}"),
                |b, buf| {
                    on(b)
                        .rotate_at(buf, shape, &positions, Direction::Inverse)
                        .unwrap()
                },
            );
            let head = rng.values(d);
            compare(layout, d, &head, &format!("axial head d={d}"), |b, buf| {
                on(b)
                    .rotate_head(buf, pos_on(grid, (2, 3)), Direction::Forward)
                    .unwrap()
            });
        }
    }
}

/// Axial grids with small head dims (whose row and column sections a backend may rotate in
/// one pass) in both axis orders, and grid rows long enough to be split into several blocks.
///
/// `Avx512` rotates interleaved sections of d/4 = 8, 16 and 32 pairs and half-layout ones of
/// 16 and 32 in one pass: in its whole-grid path when a grid row's column entries fit in the
/// 4 KiB it keeps on the stack (interleaved `cols·d/4 ≤ 256`, half `≤ 512`), else in its
/// block path. Every one of those shapes takes each path here at least once (natively; under
/// Miri those of d = 32 and 64).
#[test]
fn axial_grid_small_dims_both_orders() {
    let mut rng = Rng(7);
    // Under Miri: d/4 = 4 (no one-pass path), 8 and 16; a grid whose rows take the whole-grid
    // path and one of 33 columns whose rows do not (d = 32, 64: more than the 4 KiB), so each
    // layout reaches both paths (grid rows split into blocks there only at d = 64).
    let (grids, dims): (&[(Grid, usize)], &[usize]) = if cfg!(miri) {
        (
            &[(Grid::new(2, 3), 2), (Grid::new(1, 33), 1)],
            &[16, 32, 64],
        )
    } else {
        (
            &[
                // Whole-grid path for every one-pass shape.
                (Grid::new(3, 5), 3),
                // Block path for every one-pass shape.
                (Grid::new(2, 70), 1),
                (Grid::new(2, 37), 2),
                // Interleaved d = 32 and half d = 64: exactly the 4 KiB (whole-grid path);
                // interleaved d = 64 and both layouts at d = 128: more (block path).
                (Grid::new(2, 32), 2),
            ],
            &[8, 12, 16, 20, 24, 32, 48, 64, 128],
        )
    };
    for &(grid, heads) in grids {
        for layout in LAYOUTS {
            for &d in dims {
                for order in [AxisOrder::RowFirst, AxisOrder::ColFirst] {
                    let config = Axial2d::new(layout, order, 100.0);
                    let mut storage = vec![[0f32; 2]; AxialTableRef::storage_len(d, grid).unwrap()];
                    let table = AxialTableRef::build(&mut storage, &config, d, grid).unwrap();
                    let tokens = grid.tokens().unwrap();
                    for &dir in dirs(layout) {
                        let shape = Shape::heads(heads).with_prefix(1);
                        let x = rng.values((tokens + 1) * heads * d);
                        let what = format!("axial grid {grid:?} d={d} {order:?} {dir:?}");
                        compare(layout, d, &x, &what, |b, buf| {
                            table
                                .with_backend(b)
                                .unwrap()
                                .rotate(buf, shape, dir)
                                .unwrap()
                        });
                    }
                }
            }
        }
    }
}

#[test]
fn rope1d_table_every_entry_point() {
    let mut rng = Rng(2);
    let len = 64;
    for layout in LAYOUTS {
        for d in dims2() {
            let heads = 1 + d % 3;
            let config = Rope1d::new(layout, 10_000.0);
            let mut storage = vec![[0f32; 2]; Rope1dTableRef::storage_len(d, len).unwrap()];
            let table = Rope1dTableRef::build(&mut storage, &config, d, len).unwrap();
            let on = |b: Backend| table.with_backend(b).unwrap();
            let token = heads * d;
            for &dir in dirs(layout) {
                let shape = Shape::heads(heads).with_prefix(2);
                let x = rng.values(miri_or(13, 5) * token);
                compare(
                    layout,
                    d,
                    &x,
                    &format!("1-D rotate d={d} {dir:?}"),
                    |b, buf| on(b).rotate(buf, shape, 50, dir).unwrap(),
                );
            }
            let shape = Shape::heads(heads);
            let n = miri_or(9, 3);
            let qk = rng.values(2 * n * token);
            compare(layout, d, &qk, &format!("1-D qk d={d}"), |b, buf| {
                let (q, k) = buf.split_at_mut(n * token);
                on(b).rotate_qk(q, k, shape, 3, Direction::Forward).unwrap()
            });
            let positions = [63, 0, 17, 5, 40];
            let x = rng.values(5 * token);
            compare(layout, d, &x, &format!("1-D rotate_at d={d}"), |b, buf| {
                on(b)
                    .rotate_at(buf, shape, &positions, Direction::Inverse)
                    .unwrap()
            });
            let head = rng.values(d);
            compare(layout, d, &head, &format!("1-D head d={d}"), |b, buf| {
                on(b).rotate_head(buf, 61, Direction::Forward).unwrap()
            });
        }
    }
}

#[test]
fn mixed_table_every_entry_point() {
    let mut rng = Rng(3);
    let grid = miri_grid(Grid::new(5, 3));
    let n = grid.tokens().unwrap();
    for layout in LAYOUTS {
        for d in dims2() {
            let heads = 1 + d % 3;
            let fx: Vec<f32> = (0..heads * d / 2).map(|_| rng.value()).collect();
            let fy: Vec<f32> = (0..heads * d / 2).map(|_| rng.value()).collect();
            let freqs = LearnedFreqs {
                heads,
                x: &fx,
                y: &fy,
            };
            let config = Mixed2d {
                layout,
                coords: Coords::Index,
            };
            let mut storage = vec![[0f32; 2]; MixedTableRef::storage_len(d, heads, grid).unwrap()];
            let table = MixedTableRef::build(&mut storage, &config, d, grid, freqs).unwrap();
            let on = |b: Backend| table.with_backend(b).unwrap();
            let token = heads * d;
            for &dir in dirs(layout) {
                let shape = Shape::heads(heads).with_prefix(1);
                let x = rng.values((n + 1) * token);
                compare(
                    layout,
                    d,
                    &x,
                    &format!("mixed rotate d={d} {dir:?}"),
                    |b, buf| on(b).rotate(buf, shape, dir).unwrap(),
                );
            }
            let shape = Shape::heads(heads);
            let qk = rng.values(2 * n * token);
            compare(layout, d, &qk, &format!("mixed qk d={d}"), |b, buf| {
                let (q, k) = buf.split_at_mut(n * token);
                on(b).rotate_qk(q, k, shape, Direction::Forward).unwrap()
            });
            let positions = [(4, 2), (0, 0), (3, 1)].map(|p| pos_on(grid, p));
            let x = rng.values(3 * token);
            compare(
                layout,
                d,
                &x,
                &format!("mixed rotate_at d={d}"),
                |b, buf| {
                    on(b)
                        .rotate_at(buf, shape, &positions, Direction::Inverse)
                        .unwrap()
                },
            );
            let head = rng.values(d);
            compare(layout, d, &head, &format!("mixed head d={d}"), |b, buf| {
                on(b)
                    .rotate_head(buf, heads - 1, pos_on(grid, (4, 1)), Direction::Forward)
                    .unwrap()
            });
        }
    }
}

#[test]
fn direct_axial_every_entry_point() {
    let mut rng = Rng(4);
    let coords: Vec<Coord> = (0..miri_or(9, 4))
        .map(|i| Coord {
            row: i as f32 * 1.25 - 3.0,
            col: 100.5 - i as f32 * 7.75,
        })
        .collect();
    for layout in LAYOUTS {
        for d in dims4() {
            let heads = 1 + d % 3;
            let rope = AxialDirect::new(&axial_config(layout, d), d).unwrap();
            let on = |b: Backend| rope.with_backend(b).unwrap();
            let token = heads * d;
            for &dir in dirs(layout) {
                let shape = Shape::heads(heads).with_prefix(1);
                let x = rng.values((coords.len() + 1) * token);
                compare(
                    layout,
                    d,
                    &x,
                    &format!("direct axial d={d} {dir:?}"),
                    |b, buf| on(b).rotate(buf, shape, &coords, dir).unwrap(),
                );
            }
            let qk = rng.values(2 * coords.len() * token);
            compare(
                layout,
                d,
                &qk,
                &format!("direct axial qk d={d}"),
                |b, buf| {
                    let (q, k) = buf.split_at_mut(coords.len() * token);
                    on(b)
                        .rotate_qk(q, k, Shape::heads(heads), &coords, Direction::Forward)
                        .unwrap()
                },
            );
            let head = rng.values(d);
            compare(
                layout,
                d,
                &head,
                &format!("direct axial head d={d}"),
                |b, buf| {
                    on(b)
                        .rotate_head(buf, coords[3], Direction::Inverse)
                        .unwrap()
                },
            );
        }
    }
}

#[test]
fn direct_1d_every_entry_point() {
    let mut rng = Rng(5);
    for layout in LAYOUTS {
        for d in dims2() {
            let heads = 1 + d % 3;
            let rope = Rope1dDirect::new(&Rope1d::new(layout, 10_000.0), d).unwrap();
            let on = |b: Backend| rope.with_backend(b).unwrap();
            let token = heads * d;
            for &dir in dirs(layout) {
                let shape = Shape::heads(heads).with_prefix(1);
                let x = rng.values(miri_or(8, 3) * token);
                compare(
                    layout,
                    d,
                    &x,
                    &format!("direct 1-D d={d} {dir:?}"),
                    |b, buf| on(b).rotate(buf, shape, 1_000_003, dir).unwrap(),
                );
            }
            let shape = Shape::heads(heads);
            // The last `n` positions, up to `u32::MAX`.
            let n = miri_or(5, 2);
            let qk = rng.values(2 * n * token);
            compare(layout, d, &qk, &format!("direct 1-D qk d={d}"), |b, buf| {
                let (q, k) = buf.split_at_mut(n * token);
                on(b)
                    .rotate_qk(q, k, shape, u32::MAX - (n as u32 - 1), Direction::Forward)
                    .unwrap()
            });
            let positions = [7, 0, u32::MAX, 65_535, 1 << 30];
            let x = rng.values(5 * token);
            compare(
                layout,
                d,
                &x,
                &format!("direct 1-D rotate_at d={d}"),
                |b, buf| {
                    on(b)
                        .rotate_at(buf, shape, &positions, Direction::Inverse)
                        .unwrap()
                },
            );
            let head = rng.values(d);
            compare(
                layout,
                d,
                &head,
                &format!("direct 1-D head d={d}"),
                |b, buf| on(b).rotate_head(buf, 12_345, Direction::Forward).unwrap(),
            );
        }
    }
}

/// NaN, ±∞, ±0, subnormals and large values scattered through the input.
fn special_values(rng: &mut Rng, len: usize) -> Vec<f32> {
    const SPECIAL: [f32; 12] = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        1e-40,
        -3e-39,
        f32::MIN_POSITIVE,
        1.5e-45,
        1e30,
        -2.5e36,
        1e-30,
    ];
    (0..len)
        .map(|_| {
            let r = rng.next();
            if r.is_multiple_of(5) {
                SPECIAL[(r >> 8) as usize % SPECIAL.len()]
            } else if r.is_multiple_of(7) {
                // Subnormal results from normal inputs.
                rng.value() * 1e-38
            } else {
                rng.value()
            }
        })
        .collect()
}

#[test]
fn special_values_propagate_like_scalar() {
    let mut rng = Rng(6);
    let grid = if cfg!(miri) {
        Grid::new(2, 2)
    } else {
        Grid::new(3, 3)
    };
    let n = grid.tokens().unwrap();
    for layout in LAYOUTS {
        // Under Miri: one dim with main loops and tails.
        let dims: &[usize] = if cfg!(miri) {
            &[20]
        } else {
            &[8, 12, 20, 36, 64, 100, 128]
        };
        for &d in dims {
            let heads = 3;
            let token = heads * d;
            let mut storage = vec![[0f32; 2]; AxialTableRef::storage_len(d, grid).unwrap()];
            let config = Axial2d::new(layout, AxisOrder::ColFirst, 100.0);
            let table = AxialTableRef::build(&mut storage, &config, d, grid).unwrap();
            let mut storage1 = vec![[0f32; 2]; Rope1dTableRef::storage_len(d, n).unwrap()];
            let table1 =
                Rope1dTableRef::build(&mut storage1, &Rope1d::new(layout, 10_000.0), d, n).unwrap();
            let f: Vec<f32> = (0..heads * d / 2).map(|_| rng.value()).collect();
            let freqs = LearnedFreqs {
                heads,
                x: &f,
                y: &f,
            };
            let mut storage_m =
                vec![[0f32; 2]; MixedTableRef::storage_len(d, heads, grid).unwrap()];
            let mixed = MixedTableRef::build(
                &mut storage_m,
                &Mixed2d {
                    layout,
                    coords: Coords::Index,
                },
                d,
                grid,
                freqs,
            )
            .unwrap();
            for &dir in dirs(layout) {
                let x = special_values(&mut rng, n * token);
                let what = format!("special axial d={d} {dir:?}");
                compare(layout, d, &x, &what, |b, buf| {
                    table
                        .with_backend(b)
                        .unwrap()
                        .rotate(buf, Shape::heads(heads), dir)
                        .unwrap()
                });
                let what = format!("special 1-D d={d} {dir:?}");
                compare(layout, d, &x, &what, |b, buf| {
                    table1
                        .with_backend(b)
                        .unwrap()
                        .rotate(buf, Shape::heads(heads), 0, dir)
                        .unwrap()
                });
                let what = format!("special mixed d={d} {dir:?}");
                compare(layout, d, &x, &what, |b, buf| {
                    mixed
                        .with_backend(b)
                        .unwrap()
                        .rotate(buf, Shape::heads(heads), dir)
                        .unwrap()
                });
            }
        }
    }
}

/// A NaN in one element makes exactly its pair NaN, on every backend (scalar included).
#[test]
fn nan_stays_in_its_pair() {
    let grid = Grid::new(2, 2);
    for layout in LAYOUTS {
        let d = 16;
        let mut storage = vec![[0f32; 2]; AxialTableRef::storage_len(d, grid).unwrap()];
        let config = Axial2d::new(layout, AxisOrder::ColFirst, 100.0);
        let table = AxialTableRef::build(&mut storage, &config, d, grid).unwrap();
        for &backend in Backend::ALL.iter().filter(|b| b.is_available()) {
            for i in [0, 5, 17, 38, 63] {
                let mut x = vec![0.5f32; 4 * d];
                x[i] = f32::NAN;
                table
                    .with_backend(backend)
                    .unwrap()
                    .rotate(&mut x, Shape::heads(1), Direction::Forward)
                    .unwrap();
                for (j, v) in x.iter().enumerate() {
                    let in_pair = j == i || j == partner(i, d, layout);
                    assert_eq!(
                        v.is_nan(),
                        in_pair,
                        "{} {layout:?}: NaN at {i}, element {j}",
                        backend.name()
                    );
                }
            }
        }
    }
}

/// `Backend::auto()` is available and is what tables use by default; every available backend
/// can be chosen explicitly, and a backend this CPU lacks is refused.
#[test]
fn dispatch() {
    let auto = Backend::auto();
    assert!(auto.is_available());
    let mut storage = vec![[0f32; 2]; AxialTableRef::storage_len(8, Grid::new(1, 1)).unwrap()];
    let table = AxialTableRef::build(&mut storage, &Axial2d::ROPE_VIT, 8, Grid::new(1, 1)).unwrap();
    assert_eq!(table.backend(), auto);
    for &backend in Backend::ALL {
        match table.with_backend(backend) {
            Ok(t) => {
                assert!(backend.is_available());
                assert_eq!(t.backend(), backend);
            }
            Err(e) => {
                assert!(!backend.is_available());
                assert_eq!(e, rope2d::Error::BackendUnavailable);
            }
        }
    }
    #[cfg(all(target_arch = "x86_64", feature = "avx512", feature = "std"))]
    if std::is_x86_feature_detected!("avx512f")
        && std::is_x86_feature_detected!("avx2")
        && std::is_x86_feature_detected!("fma")
    {
        assert_eq!(auto.name(), "avx512");
        return;
    }
    #[cfg(all(target_arch = "x86_64", feature = "avx2", feature = "std"))]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        assert_eq!(auto.name(), "avx2");
    }
    #[cfg(all(target_arch = "aarch64", feature = "neon"))]
    assert_eq!(auto.name(), "neon");
}

/// The fused backends really run their own code (not a silent scalar fallback): on random
/// data some outputs differ from scalar in the last bit, as their bound allows.
#[test]
fn fused_backends_are_not_scalar() {
    let grid = Grid::new(4, 4);
    let d = 64;
    let mut storage = vec![[0f32; 2]; AxialTableRef::storage_len(d, grid).unwrap()];
    let table = AxialTableRef::build(&mut storage, &Axial2d::ROPE_VIT, d, grid).unwrap();
    let x = Rng(7).values(16 * 2 * d);
    let mut want = x.clone();
    table
        .with_backend(Backend::Scalar)
        .unwrap()
        .rotate(&mut want, Shape::heads(2), Direction::Forward)
        .unwrap();
    for backend in backends() {
        let mut got = x.clone();
        table
            .with_backend(backend)
            .unwrap()
            .rotate(&mut got, Shape::heads(2), Direction::Forward)
            .unwrap();
        let differ = want
            .iter()
            .zip(&got)
            .filter(|(w, g)| w.to_bits() != g.to_bits())
            .count();
        if backend.name() == "portable" {
            assert_eq!(differ, 0);
        } else {
            assert!(
                differ > 0,
                "{} gave scalar's bits everywhere",
                backend.name()
            );
        }
    }
}

/// `avx512` against `avx2`: the same bits (NaN at the same places), through axial, 1-D and
/// RoPE-Mixed tables and direct axial rotation, both layouts and directions, every head dim
/// from 4 (or 8) to 256 (every tail of every kernel) and special values. Skipped when this
/// build or CPU lacks either backend.
#[test]
fn avx512_is_bit_identical_to_avx2() {
    let by_name = |name: &str| {
        Backend::ALL
            .iter()
            .copied()
            .find(|b| b.name() == name && b.is_available())
    };
    let (Some(avx2), Some(avx512)) = (by_name("avx2"), by_name("avx512")) else {
        eprintln!("avx512 or avx2 not available here: skipped");
        return;
    };
    let same = |what: &str, op: &dyn Fn(Backend, &mut [f32]), input: &[f32]| {
        let mut want = input.to_vec();
        op(avx2, &mut want);
        for &offset in OFFSETS {
            let mut buf = vec![GUARD; input.len() + offset + 5];
            buf[offset..offset + input.len()].copy_from_slice(input);
            op(avx512, &mut buf[offset..offset + input.len()]);
            let got = &buf[offset..offset + input.len()];
            for (i, (w, g)) in want.iter().zip(got).enumerate() {
                assert!(
                    w.to_bits() == g.to_bits() || (w.is_nan() && g.is_nan()),
                    "{what}: element {i}: avx2 {w:e}, avx512 {g:e}"
                );
            }
            assert!(buf[..offset].iter().all(|&v| v == GUARD), "{what}: guard");
            assert!(
                buf[offset + input.len()..].iter().all(|&v| v == GUARD),
                "{what}: guard"
            );
        }
    };
    let mut rng = Rng(11);
    let grid = miri_grid(Grid::new(3, 5));
    let n = grid.tokens().unwrap();
    let dims: Vec<usize> = if cfg!(miri) {
        vec![16, 36, 64]
    } else {
        (4..=256).step_by(2).collect()
    };
    for layout in LAYOUTS {
        for &d in &dims {
            let heads = 1 + d % 3;
            let token = heads * d;
            for &dir in dirs(layout) {
                let x = if d % 8 == 0 {
                    special_values(&mut rng, n * token)
                } else {
                    rng.values(n * token)
                };
                if d.is_multiple_of(4) {
                    for order in [AxisOrder::RowFirst, AxisOrder::ColFirst] {
                        let config = Axial2d::new(layout, order, 100.0);
                        let mut storage =
                            vec![[0f32; 2]; AxialTableRef::storage_len(d, grid).unwrap()];
                        let table = AxialTableRef::build(&mut storage, &config, d, grid).unwrap();
                        let what = format!("axial d={d} {layout:?} {order:?} {dir:?}");
                        same(
                            &what,
                            &|b, buf| {
                                table
                                    .with_backend(b)
                                    .unwrap()
                                    .rotate(buf, Shape::heads(heads), dir)
                                    .unwrap()
                            },
                            &x,
                        );
                    }
                    let rope = AxialDirect::new(&axial_config(layout, d), d).unwrap();
                    let coords: Vec<Coord> = (0..n)
                        .map(|i| Coord {
                            row: i as f32 * 0.75 - 2.0,
                            col: 9.5 - i as f32 * 1.25,
                        })
                        .collect();
                    same(
                        &format!("direct axial d={d} {layout:?} {dir:?}"),
                        &|b, buf| {
                            rope.with_backend(b)
                                .unwrap()
                                .rotate(buf, Shape::heads(heads), &coords, dir)
                                .unwrap()
                        },
                        &x,
                    );
                }
                let config = Rope1d::new(layout, 10_000.0);
                let mut storage = vec![[0f32; 2]; Rope1dTableRef::storage_len(d, n).unwrap()];
                let table = Rope1dTableRef::build(&mut storage, &config, d, n).unwrap();
                same(
                    &format!("1-D d={d} {layout:?} {dir:?}"),
                    &|b, buf| {
                        table
                            .with_backend(b)
                            .unwrap()
                            .rotate(buf, Shape::heads(heads), 0, dir)
                            .unwrap()
                    },
                    &x,
                );
                let fx: Vec<f32> = (0..heads * d / 2).map(|_| rng.value()).collect();
                let fy: Vec<f32> = (0..heads * d / 2).map(|_| rng.value()).collect();
                let freqs = LearnedFreqs {
                    heads,
                    x: &fx,
                    y: &fy,
                };
                let config = Mixed2d {
                    layout,
                    coords: Coords::Index,
                };
                let mut storage =
                    vec![[0f32; 2]; MixedTableRef::storage_len(d, heads, grid).unwrap()];
                let table = MixedTableRef::build(&mut storage, &config, d, grid, freqs).unwrap();
                same(
                    &format!("mixed d={d} {layout:?} {dir:?}"),
                    &|b, buf| {
                        table
                            .with_backend(b)
                            .unwrap()
                            .rotate(buf, Shape::heads(heads), dir)
                            .unwrap()
                    },
                    &x,
                );
            }
        }
    }
}
