//! Property tests of the claims in the seed documents and of the crate's accuracy statements,
//! over many seeded random cases (no timing, no external generator).

use rope2d::{
    AnglePrecision, Axial2d, AxialDirect, AxialTableRef, AxisOrder, Coord, Coords, Direction, Grid,
    GridPos, Layout, Rope1d, Rope1dDirect, Shape,
};

/// xorshift64*: deterministic, dependency-free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn vector(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.unit() * 2.0).collect()
    }
}

fn dot(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum()
}

fn configs() -> Vec<Axial2d> {
    let mut out = vec![Axial2d::ROPE_VIT, Axial2d::EVA02, Axial2d::DINOV3];
    for layout in [Layout::Interleaved, Layout::Half] {
        for order in [AxisOrder::ColFirst, AxisOrder::RowFirst] {
            out.push(Axial2d::new(layout, order, 1_000.0).with_freq_scale(0.5));
        }
    }
    out
}

/// <R(p)q, R(p')k> = <q, R(p'−p)k>: attention sees only the 2-D offset.
#[test]
fn relativity_in_two_dimensions() {
    let mut rng = Rng(1);
    for config in configs() {
        for head_dim in [4, 16, 64, 128] {
            let rotor = AxialDirect::new(&config, head_dim).unwrap();
            for _ in 0..50 {
                let q = rng.vector(head_dim);
                let k = rng.vector(head_dim);
                let p = Coord {
                    row: rng.below(40) as f32,
                    col: rng.below(40) as f32,
                };
                let p2 = Coord {
                    row: rng.below(40) as f32,
                    col: rng.below(40) as f32,
                };
                let (mut rq, mut rk) = (q.clone(), k.clone());
                rotor.rotate_head(&mut rq, p, Direction::Forward).unwrap();
                rotor.rotate_head(&mut rk, p2, Direction::Forward).unwrap();
                let mut relative = k.clone();
                let offset = Coord {
                    row: p2.row - p.row,
                    col: p2.col - p.col,
                };
                rotor
                    .rotate_head(&mut relative, offset, Direction::Forward)
                    .unwrap();
                let (lhs, rhs) = (dot(&rq, &rk), dot(&q, &relative));
                assert!(
                    (lhs - rhs).abs() <= 2e-5 * head_dim as f64,
                    "{config:?} d={head_dim}: {lhs} vs {rhs}"
                );
            }
        }
    }
}

/// Rotation preserves every pair's norm, hence the vector's.
#[test]
fn norm_is_preserved() {
    let mut rng = Rng(2);
    for config in configs() {
        let grid = Grid::new(9, 7);
        let mut storage = vec![[0.0; 2]; AxialTableRef::storage_len(32, grid).unwrap()];
        let table = AxialTableRef::build(&mut storage, &config, 32, grid).unwrap();
        let x = rng.vector(63 * 3 * 32);
        let mut y = x.clone();
        table
            .rotate(&mut y, Shape::heads(3), Direction::Forward)
            .unwrap();
        for (a, b) in x.chunks(32).zip(y.chunks(32)) {
            let (na, nb) = (dot(a, a).sqrt(), dot(b, b).sqrt());
            assert!((na - nb).abs() <= 1e-6 * na.max(1.0), "{na} vs {nb}");
        }
    }
}

/// Forward then inverse is the identity (up to rounding), for every kind of table.
#[test]
fn inverse_undoes_forward() {
    let mut rng = Rng(3);
    for config in configs() {
        let grid = Grid::new(5, 11);
        let mut storage = vec![[0.0; 2]; AxialTableRef::storage_len(48, grid).unwrap()];
        let table = AxialTableRef::build(&mut storage, &config, 48, grid).unwrap();
        let x = rng.vector((2 + 55) * 4 * 48);
        let mut y = x.clone();
        let shape = Shape::heads(4).with_prefix(2);
        table.rotate(&mut y, shape, Direction::Forward).unwrap();
        assert_eq!(
            x[..2 * 4 * 48],
            y[..2 * 4 * 48],
            "the prefix is never touched"
        );
        assert_ne!(x, y);
        table.rotate(&mut y, shape, Direction::Inverse).unwrap();
        for (a, b) in x.iter().zip(&y) {
            assert!((a - b).abs() <= 1e-6, "{a} vs {b}");
        }
    }
    for precision in [AnglePrecision::Exact, AnglePrecision::Float32] {
        let config = Rope1d::NEOX.with_precision(precision);
        let rotor = Rope1dDirect::new(&config, 128).unwrap();
        let x = rng.vector(17 * 2 * 128);
        let mut y = x.clone();
        rotor
            .rotate(&mut y, Shape::heads(2), 4_000_000_000, Direction::Forward)
            .unwrap();
        rotor
            .rotate(&mut y, Shape::heads(2), 4_000_000_000, Direction::Inverse)
            .unwrap();
        for (a, b) in x.iter().zip(&y) {
            assert!((a - b).abs() <= 1e-6, "{a} vs {b}");
        }
    }
}

/// Flattening the grid to 1-D is not 2-D RoPE: in 1-D, (0, W−1)→(1, 0) is one step, like
/// (0, 0)→(0, 1); in 2-D it is a different offset and scores differ.
#[test]
fn two_d_differs_from_flattened_one_d() {
    let mut rng = Rng(4);
    let cols = 14u32;
    let q = rng.vector(64);
    let k = rng.vector(64);
    let score_2d = |a: GridPos, b: GridPos| {
        let rotor = AxialDirect::new(&Axial2d::ROPE_VIT, 64).unwrap();
        let (mut rq, mut rk) = (q.clone(), k.clone());
        let coord = |p: GridPos| Coord {
            row: p.row as f32,
            col: p.col as f32,
        };
        rotor
            .rotate_head(&mut rq, coord(a), Direction::Forward)
            .unwrap();
        rotor
            .rotate_head(&mut rk, coord(b), Direction::Forward)
            .unwrap();
        dot(&rq, &rk)
    };
    let score_1d = |a: GridPos, b: GridPos| {
        let rotor = Rope1dDirect::new(&Rope1d::new(Layout::Interleaved, 100.0), 64).unwrap();
        let (mut rq, mut rk) = (q.clone(), k.clone());
        rotor
            .rotate_head(&mut rq, a.row * cols + a.col, Direction::Forward)
            .unwrap();
        rotor
            .rotate_head(&mut rk, b.row * cols + b.col, Direction::Forward)
            .unwrap();
        dot(&rq, &rk)
    };
    let (a, b) = (GridPos::new(0, 0), GridPos::new(0, 1));
    let (c, d) = (GridPos::new(0, cols - 1), GridPos::new(1, 0));
    assert!(
        (score_1d(a, b) - score_1d(c, d)).abs() < 1e-5,
        "1-D sees both as one step"
    );
    assert!(
        (score_2d(a, b) - score_2d(c, d)).abs() > 1e-2,
        "2-D tells them apart"
    );
    // and 2-D is translation invariant along both axes
    let (e, f) = (GridPos::new(6, 3), GridPos::new(6, 4));
    assert!((score_2d(a, b) - score_2d(e, f)).abs() < 1e-5);
}

/// Tables and tableless rotation agree bit for bit at integer positions.
#[test]
fn tables_equal_direct_rotation() {
    let mut rng = Rng(5);
    for config in configs() {
        let config = config.with_coords(Coords::Index);
        let grid = Grid::new(6, 9);
        let mut storage = vec![[0.0; 2]; AxialTableRef::storage_len(24, grid).unwrap()];
        let table = AxialTableRef::build(&mut storage, &config, 24, grid).unwrap();
        let rotor = AxialDirect::new(&config, 24).unwrap();
        let x = rng.vector(54 * 2 * 24);
        let (mut a, mut b) = (x.clone(), x.clone());
        table
            .rotate(&mut a, Shape::heads(2), Direction::Forward)
            .unwrap();
        let coords: Vec<Coord> = (0..54)
            .map(|t| Coord {
                row: (t / 9) as f32,
                col: (t % 9) as f32,
            })
            .collect();
        rotor
            .rotate(&mut b, Shape::heads(2), &coords, Direction::Forward)
            .unwrap();
        assert_eq!(a, b);
    }
}

/// f64 model of axial 2-D RoPE at real coordinates (row, col).
fn axial_f64(config: &Axial2d, v: &[f32], row: f64, col: f64) -> Vec<f64> {
    let d = v.len();
    let quarter = d / 4;
    let (first, second) = match config.axis_order {
        AxisOrder::ColFirst => (col, row),
        AxisOrder::RowFirst => (row, col),
    };
    let mut out: Vec<f64> = v.iter().map(|&x| f64::from(x)).collect();
    for k in 0..d / 2 {
        let j = k % quarter;
        let f = config.freq_scale * config.base.powf(-(4.0 * j as f64) / d as f64);
        let angle = if k < quarter { first } else { second } * f;
        let (i0, i1) = match config.layout {
            Layout::Interleaved => (2 * k, 2 * k + 1),
            Layout::Half => (k, k + d / 2),
        };
        let (a, b) = (out[i0], out[i1]);
        out[i0] = a * angle.cos() - b * angle.sin();
        out[i1] = a * angle.sin() + b * angle.cos();
    }
    out
}

/// Rescaled and centred coordinates (no golden file covers rescaling) against an f64 model.
#[test]
fn coordinate_modes_match_f64_model() {
    let mut rng = Rng(6);
    let grid = Grid::new(14, 10);
    let modes = [
        Coords::Index,
        Coords::Rescale {
            ref_rows: 16,
            ref_cols: 24,
        },
        Coords::Centered,
    ];
    for coords in modes {
        for base in [Axial2d::EVA02, Axial2d::DINOV3, Axial2d::ROPE_VIT] {
            let config = base.with_coords(coords);
            let mut storage = vec![[0.0; 2]; AxialTableRef::storage_len(64, grid).unwrap()];
            let table = AxialTableRef::build(&mut storage, &config, 64, grid).unwrap();
            for t in 0..140 {
                let (r, c) = (t / 10, t % 10);
                let v = rng.vector(64);
                let mut ours = v.clone();
                table
                    .rotate_head(
                        &mut ours,
                        GridPos::new(r as u32, c as u32),
                        Direction::Forward,
                    )
                    .unwrap();
                let (row, col) = match coords {
                    Coords::Index => (r as f64, c as f64),
                    Coords::Rescale { ref_rows, ref_cols } => (
                        r as f64 * f64::from(ref_rows) / 14.0,
                        c as f64 * f64::from(ref_cols) / 10.0,
                    ),
                    Coords::Centered => (
                        2.0 * (r as f64 + 0.5) / 14.0 - 1.0,
                        2.0 * (c as f64 + 0.5) / 10.0 - 1.0,
                    ),
                };
                let want = axial_f64(&config, &v, row, col);
                for (o, w) in ours.iter().zip(&want) {
                    assert!(
                        (f64::from(*o) - w).abs() <= 4e-6,
                        "{coords:?} t={t}: {o} vs {w}"
                    );
                }
            }
        }
    }
}

/// Accuracy is position independent: at 2^24 + 1, 2^31 and u32::MAX the rotation is as close
/// to an exact evaluation as at position 1.
#[test]
fn large_positions_stay_accurate() {
    let mut rng = Rng(7);
    // base 4 and head dim 4: frequencies 1 and 1/2 rad per position, exactly representable,
    // so the f64 angle `pos · f` is exact and f64 `sin`/`cos` reduce it correctly.
    let config = Rope1d::new(Layout::Interleaved, 4.0);
    let rotor = Rope1dDirect::new(&config, 4).unwrap();
    for pos in [1u32, 65_535, (1 << 24) + 1, 1 << 31, u32::MAX] {
        let v = rng.vector(4);
        let mut ours = v.clone();
        rotor
            .rotate_head(&mut ours, pos, Direction::Forward)
            .unwrap();
        for k in 0..2 {
            let angle = f64::from(pos) * [1.0, 0.5][k];
            let (a, b) = (f64::from(v[2 * k]), f64::from(v[2 * k + 1]));
            let want = [
                a * angle.cos() - b * angle.sin(),
                a * angle.sin() + b * angle.cos(),
            ];
            for (o, w) in ours[2 * k..2 * k + 2].iter().zip(want) {
                assert!((f64::from(*o) - w).abs() <= 1e-6, "pos {pos}: {o} vs {w}");
            }
        }
    }
}

/// Non-integer real coordinates reduce exactly too.
#[test]
fn real_coordinates_match_f64_model() {
    let mut rng = Rng(8);
    for config in configs() {
        let rotor = AxialDirect::new(&config, 32).unwrap();
        for _ in 0..200 {
            let coord = Coord {
                row: rng.unit() * 300.0,
                col: rng.unit() * 0.01,
            };
            let v = rng.vector(32);
            let mut ours = v.clone();
            rotor
                .rotate_head(&mut ours, coord, Direction::Forward)
                .unwrap();
            let want = axial_f64(&config, &v, f64::from(coord.row), f64::from(coord.col));
            for (o, w) in ours.iter().zip(&want) {
                assert!((f64::from(*o) - w).abs() <= 4e-6, "{coord:?}: {o} vs {w}");
            }
        }
    }
}

/// NaN and infinities in the data propagate to their own pair only.
#[test]
fn non_finite_data_stays_in_its_pair() {
    let grid = Grid::new(2, 2);
    let mut storage = vec![[0.0; 2]; AxialTableRef::storage_len(8, grid).unwrap()];
    let table = AxialTableRef::build(&mut storage, &Axial2d::ROPE_VIT, 8, grid).unwrap();
    let mut x = vec![1.0f32; 4 * 8];
    x[8 + 2] = f32::NAN;
    x[16 + 5] = f32::INFINITY;
    table
        .rotate(&mut x, Shape::heads(1), Direction::Forward)
        .unwrap();
    for (i, v) in x.iter().enumerate() {
        let poisoned = i == 10 || i == 11 || i == 20 || i == 21;
        assert_eq!(!v.is_finite(), poisoned, "index {i}: {v}");
    }
}

/// The per-output bound stated in the crate docs: within (|a| + |b|) · 2.5e-7 of the exact
/// rotation, for every layout and axis order, at large and small coordinates.
#[test]
fn scalar_outputs_meet_the_documented_bound() {
    let mut rng = Rng(9);
    for config in configs() {
        let grid = Grid::new(300, 7);
        let mut storage = vec![[0.0; 2]; AxialTableRef::storage_len(16, grid).unwrap()];
        let table =
            AxialTableRef::build(&mut storage, &config.with_coords(Coords::Index), 16, grid)
                .unwrap()
                .with_backend(rope2d::Backend::Scalar)
                .unwrap();
        for _ in 0..300 {
            let (r, c) = (rng.below(300), rng.below(7));
            let v = rng.vector(16);
            let mut ours = v.clone();
            table
                .rotate_head(
                    &mut ours,
                    GridPos::new(r as u32, c as u32),
                    Direction::Forward,
                )
                .unwrap();
            let want = axial_f64(&config, &v, r as f64, c as f64);
            for k in 0..8 {
                let (i0, i1) = match config.layout {
                    Layout::Interleaved => (2 * k, 2 * k + 1),
                    Layout::Half => (k, k + 8),
                };
                let bound = (f64::from(v[i0].abs()) + f64::from(v[i1].abs())) * 2.5e-7;
                for i in [i0, i1] {
                    let error = (f64::from(ours[i]) - want[i]).abs();
                    assert!(
                        error <= bound,
                        "{config:?} ({r}, {c}) pair {k}: {error:e} > {bound:e}"
                    );
                }
            }
        }
    }
}
