//! Every backend against the scalar reference, through every public entry point and every
//! angle source: section tables over grids (2-D axial in both axis orders, 3-D sections of
//! unequal sizes, FLUX-like pieces), 1-D runs and lists, partial rotary, gathered plans
//! (interleaved M-RoPE, explicit per-pair axes), RoPE-Mixed, tableless integer and real
//! coordinates; one head, whole buffers, q and k together, an unrotated prefix, explicit
//! positions, the inverse; both layouts; head dims 4 to 256; odd token counts; sub-slices
//! starting 0, 1 and 3 floats into an allocation (so data is not vector-aligned) with guard
//! values around them; NaN, infinities and subnormals.
//!
//! Allowed difference, per output (the bounds stated in each backend's module docs):
//! - `portable`: none — same bits as scalar (NaN: NaN at the same place);
//! - `avx2`, `avx512`, `neon` (one fused product per output):
//!   `|out − scalar| ≤ 2⁻²²·(|a| + |b|) + 2⁻¹⁴⁸`, `(a, b)` the input pair of the output;
//!   NaN exactly where scalar has NaN, the same infinities where scalar has infinities.
//!   Elements outside the rotary dimension are untouched, bit for bit.
//!
//! Also: `avx512` gives bit for bit the results of `avx2` (when the CPU has both); that
//! `neon` gives `avx2`'s bits is `tests/suite/simd_bits.rs`.
//!
//! Under Miri (`.ci/hardening.sh`) every loop shrinks — fewer head dims, smaller grids, one
//! sub-slice offset — while every assertion stays, and only the backends with `unsafe` code
//! (the arch backends, where the build has any) are compared.

use rope2d::{
    Backend, Coords, Direct, Direction, Error, FreqIndex, Freqs, Grid, Layout, LearnedFreqs,
    PerPair, Piece, Plan, Positions, Run, Section, Sections, Shape, Spec, Table,
    preset::{self, AxisOrder},
};

mod common;
use common::{Rng, special_values};

const LAYOUTS: [Layout; 2] = [Layout::Interleaved, Layout::Half];
const DIRS: [Direction; 2] = [Direction::Forward, Direction::Inverse];

/// The directions a loop runs for `layout`: both, or under Miri one per layout.
fn dirs(layout: Layout) -> &'static [Direction] {
    match layout {
        _ if !cfg!(miri) => &DIRS,
        Layout::Interleaved => &DIRS[..1],
        Layout::Half => &DIRS[1..],
    }
}

/// Starting offsets of the tested sub-slices, in floats.
const OFFSETS: &[usize] = if cfg!(miri) { &[3] } else { &[0, 1, 3] };
const GUARD: f32 = 12345.678;

/// The backends compared against scalar: every one compiled in and available on this CPU.
/// Under Miri, which is there to check `unsafe` code, the arch backends alone where there are
/// any: `portable` has none (it forbids `unsafe`), and the native runs compare it.
fn backends() -> Vec<Backend> {
    let mut list: Vec<Backend> = Backend::ALL
        .iter()
        .copied()
        .filter(|b| *b != Backend::Scalar && b.is_available())
        .collect();
    assert!(list.iter().any(|b| b.name() == "portable"));
    if cfg!(miri) && list.len() > 1 {
        list.retain(|b| b.name() != "portable");
    }
    list
}

/// The pairing of a rotation: head dim `d`, `pairs` rotated pairs.
#[derive(Clone, Copy, Debug)]
struct Pairing {
    layout: Layout,
    d: usize,
    pairs: usize,
}

impl Pairing {
    /// Index of the other element of `i`'s pair (itself outside the rotary dimension).
    fn partner(self, i: usize) -> usize {
        let j = i % self.d;
        match self.layout {
            _ if j >= 2 * self.pairs => i,
            // Within the head: an odd head dim starts every other head at an odd index.
            Layout::Interleaved => i - j + (j ^ 1),
            Layout::Half if j < self.pairs => i + self.pairs,
            Layout::Half => i - self.pairs,
        }
    }
}

/// Asserts `got` is within the backend's bound of `want`; `input` is what both rotated.
fn check(backend: Backend, p: Pairing, input: &[f32], want: &[f32], got: &[f32], what: &str) {
    assert_eq!(want.len(), got.len());
    let bit_exact = backend.name() == "portable";
    for (i, (&w, &g)) in want.iter().zip(got).enumerate() {
        if w.to_bits() == g.to_bits() {
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
        } else if bit_exact || p.partner(i) == i {
            panic!("{}: bits differ", context());
        } else if w.is_infinite() || g.is_infinite() {
            assert_eq!(w, g, "{}", context());
        } else {
            let (a, b) = (input[i], input[p.partner(i)]);
            let bound =
                (f64::from(a.abs()) + f64::from(b.abs())) * 2f64.powi(-22) + 2f64.powi(-148);
            let diff = (f64::from(w) - f64::from(g)).abs();
            assert!(diff <= bound, "{}: |diff| {diff:e} > {bound:e}", context());
        }
    }
}

/// Runs `op` on a copy of `input` with scalar, then with every other backend on sub-slices at
/// each offset of [`OFFSETS`], and checks the results and the guards around them.
fn compare(p: Pairing, input: &[f32], what: &str, op: impl Fn(Backend, &mut [f32])) {
    let mut want = input.to_vec();
    op(Backend::Scalar, &mut want);
    for backend in backends() {
        for &offset in OFFSETS {
            let mut buf = vec![GUARD; input.len() + offset + 5];
            let data = &mut buf[offset..offset + input.len()];
            data.copy_from_slice(input);
            op(backend, data);
            check(backend, p, input, &want, data, what);
            assert!(buf[..offset].iter().all(|&v| v == GUARD), "{what}: guard");
            assert!(
                buf[offset + input.len()..].iter().all(|&v| v == GUARD),
                "{what}: guard after"
            );
        }
    }
}

/// Head dims divisible by 4 from 4 to 256 (every tail length of every kernel); under Miri
/// three whose sections still reach every kernel's main loop and each of its tails.
fn dims4() -> Vec<usize> {
    if cfg!(miri) {
        vec![12, 16, 36]
    } else {
        (4..=256).step_by(4).collect()
    }
}

/// Even head dims from 4 to 256.
fn dims2() -> Vec<usize> {
    if cfg!(miri) {
        vec![8, 14, 18]
    } else {
        (4..=256).step_by(2).collect()
    }
}

fn miri_or<T>(native: T, miri: T) -> T {
    if cfg!(miri) { miri } else { native }
}

/// Under Miri, one of two shapes per layout (each still reaches a kernel's tails).
fn miri_pick(layout: Layout, interleaved: usize, half: usize) -> usize {
    match layout {
        Layout::Interleaved => interleaved,
        Layout::Half => half,
    }
}

/// A table of `spec` over `extents` in fresh storage.
fn storage<const A: usize, P: Plan<A>>(
    spec: &Spec<'_, A, P>,
    extents: [usize; A],
) -> Vec<[f32; 2]> {
    vec![[0f32; 2]; Table::storage_len(spec, extents).unwrap()]
}

/// Every entry point of a table of `spec` over `extents` against scalar: `rotate` with
/// `positions` (`count` tokens) and a prefix, `rotate_qk`, `rotate_at` with the positions
/// reversed, `rotate_head`, both directions; and the tableless form where `direct`.
fn every_entry_point<const A: usize, P: Plan<A>, Po: Positions<A> + Copy>(
    rng: &mut Rng,
    spec: &Spec<'_, A, P>,
    extents: [usize; A],
    positions: Po,
    listed: &[[u32; A]],
    heads: usize,
    what: &str,
) {
    let mut store = storage(spec, extents);
    let table = Table::build(&mut store, spec, extents).unwrap();
    // Tableless rotation takes index coordinates only.
    let direct = match Direct::new(spec) {
        Err(Error::TableCoords) => None,
        direct => Some(direct.unwrap()),
    };
    let p = Pairing {
        layout: spec.layout,
        d: spec.head_dim,
        pairs: spec.pairs(),
    };
    let token = heads * spec.head_dim;
    let count = listed.len();
    let reversed: Vec<[u32; A]> = listed.iter().rev().copied().collect();
    for &dir in dirs(spec.layout) {
        let shape = Shape::heads(heads).with_prefix(1);
        let x = rng.values((count + 1) * token);
        compare(p, &x, &format!("{what} rotate {dir:?}"), |b, buf| {
            table
                .with_backend(b)
                .unwrap()
                .rotate(buf, shape, positions, dir)
                .unwrap()
        });
        let x = rng.values(count * token);
        compare(p, &x, &format!("{what} rotate_at {dir:?}"), |b, buf| {
            table
                .with_backend(b)
                .unwrap()
                .rotate_at(buf, Shape::heads(heads), &reversed, dir)
                .unwrap()
        });
        // Not under Miri, which is there for the arch backends' `unsafe` code: `rotate_qk`
        // runs `rotate`'s code on each buffer, which the calls beside it reach. (With the
        // scalar-only comparison below, 41 % of the Miri time of the tests calling this
        // function: 156 → 93 s, AVX-512 flags.)
        if !cfg!(miri) {
            let qk = rng.values(2 * count * token);
            compare(p, &qk, &format!("{what} rotate_qk {dir:?}"), |b, buf| {
                let (q, k) = buf.split_at_mut(count * token);
                table
                    .with_backend(b)
                    .unwrap()
                    .rotate_qk(q, k, Shape::heads(heads), positions, dir)
                    .unwrap()
            });
        }
        let h = rng.values(spec.head_dim);
        let at = listed[count / 2];
        // RoPE-Mixed refuses one head of several (its heads have their own frequencies).
        if matches!(spec.freqs, Freqs::Learned(_)) && heads > 1 {
            assert_eq!(
                table.rotate_head(&mut h.clone(), at, dir),
                Err(Error::HeadCount {
                    expected: heads,
                    actual: 1
                }),
                "{what}"
            );
        } else {
            compare(p, &h, &format!("{what} rotate_head {dir:?}"), |b, buf| {
                table
                    .with_backend(b)
                    .unwrap()
                    .rotate_head(buf, at, dir)
                    .unwrap()
            });
        }
        if let Some(direct) = direct {
            let x = rng.values(count * token);
            compare(p, &x, &format!("{what} direct {dir:?}"), |b, buf| {
                direct
                    .with_backend(b)
                    .unwrap()
                    .rotate(buf, Shape::heads(heads), positions, dir)
                    .unwrap()
            });
            // Tables and tableless rotation agree on scalar, bit for bit (safe code only:
            // not under Miri).
            if !cfg!(miri) {
                let mut tableless = x.clone();
                direct
                    .with_backend(Backend::Scalar)
                    .unwrap()
                    .rotate(&mut tableless, Shape::heads(heads), positions, dir)
                    .unwrap();
                let mut scalar_table = x.clone();
                table
                    .with_backend(Backend::Scalar)
                    .unwrap()
                    .rotate(&mut scalar_table, Shape::heads(heads), positions, dir)
                    .unwrap();
                if matches!(spec.freqs, Freqs::Learned(_)) {
                    // RoPE-Mixed: the table sums two entries' angles in f32, tableless rotation
                    // reduces the exact sum: a few ulps apart.
                    for (t, s) in tableless.iter().zip(&scalar_table) {
                        assert!(
                            (t - s).abs() <= 2e-6 * (1.0 + s.abs()),
                            "{what}: direct {t} table {s}"
                        );
                    }
                } else {
                    assert_eq!(
                        tableless.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                        scalar_table.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                        "{what}: direct != table"
                    );
                }
            }
        }
    }
}

fn grid_list<const A: usize>(grid: Grid<A>) -> Vec<[u32; A]> {
    let n = grid.tokens().unwrap();
    (0..n)
        .map(|mut i| {
            let mut p = grid.origin;
            for a in (0..A).rev() {
                p[a] += (i % grid.extents[a]) as u32;
                i /= grid.extents[a];
            }
            p
        })
        .collect()
}

#[test]
fn axial_2d_every_entry_point() {
    let mut rng = Rng(1);
    let grid = Grid::new(miri_or([3, 5], [2, 3]));
    for layout in LAYOUTS {
        for d in dims4() {
            let heads = 1 + d % 3;
            for order in [AxisOrder::ColFirst, AxisOrder::RowFirst] {
                let mut spec = preset::axial(d, layout, order, 100.0);
                if d % 3 == 0 {
                    spec = spec.with_coords([Coords::Centered; 2]);
                }
                let what = format!("axial d={d} {layout:?} {order:?}");
                every_entry_point(
                    &mut rng,
                    &spec,
                    grid.extents,
                    grid,
                    &grid_list(grid),
                    heads,
                    &what,
                );
            }
        }
    }
}

/// Small axial grids of small heads (the kernels' grid loops: from the tables where the
/// sections fall on whole vectors, the line loop where they do not), many tokens.
#[test]
fn axial_grid_small_dims_both_orders() {
    let mut rng = Rng(2);
    for layout in LAYOUTS {
        for d in miri_or(vec![4, 8, 16, 20, 32, 48, 64, 96, 128], vec![4, 20, 64]) {
            for extents in miri_or(vec![[8, 8], [14, 14], [5, 11], [1, 40]], vec![[3, 4]]) {
                for order in [AxisOrder::ColFirst, AxisOrder::RowFirst] {
                    let spec = preset::axial(d, layout, order, 100.0);
                    let mut store = storage(&spec, extents);
                    let table = Table::build(&mut store, &spec, extents).unwrap();
                    let p = Pairing {
                        layout,
                        d,
                        pairs: spec.pairs(),
                    };
                    for heads in miri_or(vec![1, 2, 6], vec![2]) {
                        let x = rng.values(extents[0] * extents[1] * heads * d);
                        for &dir in dirs(layout) {
                            let what = format!(
                                "grid {extents:?} d={d} h={heads} {layout:?} {order:?} {dir:?}"
                            );
                            compare(p, &x, &what, |b, buf| {
                                table
                                    .with_backend(b)
                                    .unwrap()
                                    .rotate(buf, Shape::heads(heads), Grid::new(extents), dir)
                                    .unwrap()
                            });
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn video_sections_every_entry_point() {
    let mut rng = Rng(3);
    let grid = Grid::new(miri_or([2, 3, 4], [2, 2, 2]));
    let spec = |d, layout, sections, index| {
        let freqs = Freqs::Base {
            base: 10_000.0,
            freq_scale: 1.0,
        };
        Spec::new(d, layout, Sections { sections, index }, freqs)
    };
    let mut cases = Vec::new();
    for layout in LAYOUTS {
        for d in miri_or(
            vec![12, 24, 64, 80, 128, 136],
            vec![miri_pick(layout, 12, 20)],
        ) {
            // Wan's split: t the rest, h = w = 2·(d/6) elements; then a permuted order.
            let hw = (d / 6) & !1;
            let t = d / 2 - 2 * (hw / 2);
            let sections = [
                Section::new(0, t),
                Section::new(1, hw / 2),
                Section::new(2, hw / 2),
            ];
            let permuted = [sections[2], sections[0], sections[1]];
            // The line axis' section between the others: it shares a vector with each.
            let middle = [sections[0], sections[2], sections[1]];
            for (plan, index) in [
                (sections, FreqIndex::PerSection),
                (permuted, FreqIndex::Global),
                (sections, FreqIndex::Strided),
                (middle, FreqIndex::PerSection),
            ] {
                let what = format!("video d={d} {layout:?} {index:?}");
                cases.push((spec(d, layout, plan, index), what));
            }
        }
    }
    // Register-form heads (d = 32 interleaved: two 512-bit vectors, four 256-bit ones; under
    // Miri too) whose line section starts and ends inside one vector (floats 6 .. 10): the
    // line loop takes its lanes of that vector from the table, the others from the row.
    let inside = [Section::new(0, 3), Section::new(2, 2), Section::new(1, 11)];
    cases.push((
        spec(32, Layout::Interleaved, inside, FreqIndex::PerSection),
        "video d=32, the line section inside a vector".into(),
    ));
    for (spec, what) in &cases {
        every_entry_point(
            &mut rng,
            spec,
            grid.extents,
            grid,
            &grid_list(grid),
            2,
            what,
        );
    }
}

// One test per layout: the longest case of this file, split so that the test threads share it.
#[test]
fn one_d_runs_lists_and_partial_rotary_interleaved() {
    one_d_runs_lists_and_partial_rotary(Layout::Interleaved, Rng(4));
}

#[test]
fn one_d_runs_lists_and_partial_rotary_half() {
    one_d_runs_lists_and_partial_rotary(Layout::Half, Rng(40));
}

fn one_d_runs_lists_and_partial_rotary(layout: Layout, mut rng: Rng) {
    let tokens = miri_or(37, 5);
    let dims = dims2();
    let mut dims = miri_or(dims.clone(), dims[miri_pick(layout, 0, 1)..][..2].to_vec());
    // Odd head dims (the last element unrotated; every other head starts at an odd index).
    dims.extend(miri_or(&[3, 5, 9, 13, 33, 65, 129][..], &[9][..]));
    for d in dims {
        for rotary in miri_or(vec![d, (d / 4) & !1, (d / 2) & !1], vec![d, (d / 2) & !1]) {
            if rotary == 0 {
                continue;
            }
            let mut spec = preset::rope_1d(d, layout, 10_000.0);
            spec.plan.sections[0].pairs = rotary / 2;
            // Under Miri a short table (its build dominated the run: 1 000 positions).
            let start = miri_or(1000, 20) + d as u32;
            let listed: Vec<[u32; 1]> = (0..tokens as u32).map(|t| [start + t]).collect();
            let what = format!("1-D d={d} r={rotary} {layout:?}");
            every_entry_point(
                &mut rng,
                &spec,
                [start as usize + tokens],
                Run::from([start]),
                &listed,
                1 + d % 3,
                &what,
            );
        }
    }
}

#[test]
fn pieces_and_gathered_plans() {
    let mut rng = Rng(5);
    for layout in LAYOUTS {
        for d in miri_or(
            vec![12, 32, 64, 96, 128, 200],
            vec![miri_pick(layout, 12, 24)],
        ) {
            // FLUX-like: text at (0, 0, 0), an image at (0, r, c), a reference at (1, r, c).
            let spec = preset::flux(
                [(d / 4) & !1, (d / 4) & !1, d - 2 * ((d / 4) & !1)],
                10_000.0,
            );
            let spec = Spec { layout, ..spec };
            let pieces = preset::flux_positions(3, [2, 3], [2, 2]);
            let listed: Vec<[u32; 3]> = (0..3)
                .map(|_| [0, 0, 0])
                .chain(grid_list(Grid::new([1, 2, 3])))
                .chain(grid_list(Grid::new([1, 2, 2]).at([1, 0, 0])))
                .collect();
            let what = format!("flux pieces d={d} {layout:?}");
            every_entry_point(&mut rng, &spec, [2, 2, 3], &pieces[..], &listed, 2, &what);

            // Interleaved M-RoPE and explicit per-pair axes, over M-RoPE text + image + text.
            let third = d / 6;
            let qwen3 = preset::qwen3_vl_mrope(d, 1e6, [d / 2 - 2 * third, third, third]);
            let qwen3 = Spec { layout, ..qwen3 };
            let pieces = preset::mrope_positions(2, [1, 4, 6], 2, 3);
            let (mut listed, next) = (vec![[0, 0, 0], [1, 1, 1]], 2u32);
            listed.extend(grid_list(Grid::new([1, 2, 3]).at([next; 3])));
            listed.extend((0..3).map(|t| [next + 3 + t; 3]));
            let what = format!("qwen3 d={d} {layout:?}");
            every_entry_point(&mut rng, &qwen3, [8, 8, 8], &pieces[..], &listed, 2, &what);
            // Unbalanced: the later axes' slices clamp at d/2, axis 0 takes the rest.
            let unbalanced = preset::qwen3_vl_mrope(d, 1e6, [1, d / 2 - 1 - third / 2, third / 2]);
            let unbalanced = Spec {
                layout,
                ..unbalanced
            }
            .with_mscale(0.75);
            let what = format!("qwen3 unbalanced d={d} {layout:?}");
            every_entry_point(
                &mut rng,
                &unbalanced,
                [8, 8, 8],
                &pieces[..],
                &listed,
                1,
                &what,
            );
            let axes: Vec<u8> = (0..d / 2).map(|k| ((k * 7) % 3) as u8).collect();
            let freqs: Vec<f64> = (0..d / 2).map(|k| 0.9f64.powi(k as i32)).collect();
            let per_pair =
                Spec::<3, _>::new(d, layout, PerPair { axes: &axes }, Freqs::Explicit(&freqs))
                    .with_mscale(1.25);
            let what = format!("per-pair d={d} {layout:?}");
            every_entry_point(
                &mut rng,
                &per_pair,
                [8, 8, 8],
                &pieces[..],
                &listed,
                1,
                &what,
            );
        }
    }
}

#[test]
fn mixed_every_entry_point() {
    let mut rng = Rng(6);
    let grid = Grid::new(miri_or([3, 4], [2, 2]));
    for layout in LAYOUTS {
        for d in dims2() {
            let heads = 1 + d % 3;
            let fx: Vec<f32> = (0..heads * d / 2).map(|_| rng.value()).collect();
            let fy: Vec<f32> = (0..heads * d / 2).map(|_| rng.value()).collect();
            let spec = preset::rope_mixed(d, heads, LearnedFreqs { x: &fx, y: &fy });
            // mscale is applied once, not once per axis.
            let spec = Spec { layout, ..spec }.with_mscale(if d % 4 == 0 { 1.0 } else { 1.5 });
            let what = format!("mixed d={d} {layout:?}");
            every_entry_point(
                &mut rng,
                &spec,
                grid.extents,
                grid,
                &grid_list(grid),
                heads,
                &what,
            );
        }
    }
}

#[test]
fn direct_real_coordinates() {
    let mut rng = Rng(7);
    for layout in LAYOUTS {
        for d in dims4() {
            let spec = Spec {
                layout,
                ..preset::wan(d.max(12), 10_000.0)
            };
            let direct = Direct::new(&spec).unwrap();
            let n = 7;
            let coords: Vec<[f32; 3]> = (0..n)
                .map(|i| [i as f32 * 0.5, 9.25 - i as f32, 1e5 + i as f32 * 0.125])
                .collect();
            let p = Pairing {
                layout,
                d: spec.head_dim,
                pairs: spec.pairs(),
            };
            for &dir in dirs(layout) {
                let x = rng.values(n * 2 * spec.head_dim);
                compare(
                    p,
                    &x,
                    &format!("real coords d={d} {layout:?} {dir:?}"),
                    |b, buf| {
                        direct
                            .with_backend(b)
                            .unwrap()
                            .rotate_coords(buf, Shape::heads(2), &coords, dir)
                            .unwrap()
                    },
                );
            }
        }
    }
}

#[test]
fn special_values_propagate_like_scalar() {
    let mut rng = Rng(8);
    let extents = miri_or([3, 3], [2, 2]);
    let n = extents[0] * extents[1];
    for layout in LAYOUTS {
        for &d in miri_or(&[8, 12, 20, 36, 64, 100, 128][..], &[20][..]) {
            let heads = 3;
            let spec = preset::axial(d, layout, AxisOrder::ColFirst, 100.0);
            let mut store = storage(&spec, extents);
            let table = Table::build(&mut store, &spec, extents).unwrap();
            let fx: Vec<f32> = (0..heads * d / 2).map(|_| rng.value()).collect();
            let mixed_spec = Spec {
                layout,
                ..preset::rope_mixed(d, heads, LearnedFreqs { x: &fx, y: &fx })
            };
            let mut mixed_store = storage(&mixed_spec, extents);
            let mixed = Table::build(&mut mixed_store, &mixed_spec, extents).unwrap();
            let p = Pairing {
                layout,
                d,
                pairs: d / 2,
            };
            for &dir in dirs(layout) {
                let x = special_values(&mut rng, n * heads * d);
                compare(p, &x, &format!("special axial d={d} {dir:?}"), |b, buf| {
                    table
                        .with_backend(b)
                        .unwrap()
                        .rotate(buf, Shape::heads(heads), Grid::new(extents), dir)
                        .unwrap()
                });
                compare(p, &x, &format!("special mixed d={d} {dir:?}"), |b, buf| {
                    mixed
                        .with_backend(b)
                        .unwrap()
                        .rotate(buf, Shape::heads(heads), Grid::new(extents), dir)
                        .unwrap()
                });
            }
        }
    }
}

/// Exact zeros rotate to the zeros scalar gives, sign included, on every backend, layout and
/// loop form (register heads, heads from memory, tails): where both products are exact zeros
/// their difference is +0 whether fused or not (NEON once formed `x·c − y·s` as
/// `−(y·s − x·c)`: −0). `check` allows a zero of the other sign, which a product that
/// underflows can give legitimately.
#[test]
fn exact_zeros_keep_their_sign() {
    for layout in LAYOUTS {
        for &d in miri_or(&[8, 12, 16, 36, 64, 128][..], &[36][..]) {
            let spec = preset::axial(d, layout, AxisOrder::ColFirst, 100.0);
            let mut store = storage(&spec, [2, 3]);
            let table = Table::build(&mut store, &spec, [2, 3]).unwrap();
            for &dir in dirs(layout) {
                for zero in [0.0f32, -0.0] {
                    let rotate = |backend: Backend| {
                        let mut x = vec![zero; 6 * 2 * d];
                        table
                            .with_backend(backend)
                            .unwrap()
                            .rotate(&mut x, Shape::heads(2), Grid::new([2, 3]), dir)
                            .unwrap();
                        x.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
                    };
                    let want = rotate(Backend::Scalar);
                    for backend in backends() {
                        assert_eq!(
                            rotate(backend),
                            want,
                            "{} {layout:?} d={d} {dir:?} zeros {zero:?}",
                            backend.name()
                        );
                    }
                }
            }
        }
    }
}

/// A NaN in one element makes exactly its pair NaN, on every backend (scalar included).
#[test]
fn nan_stays_in_its_pair() {
    for layout in LAYOUTS {
        let d = 16;
        let spec = preset::axial(d, layout, AxisOrder::ColFirst, 100.0);
        let mut store = storage(&spec, [2, 2]);
        let table = Table::build(&mut store, &spec, [2, 2]).unwrap();
        let p = Pairing {
            layout,
            d,
            pairs: d / 2,
        };
        for &backend in Backend::ALL.iter().filter(|b| b.is_available()) {
            for i in [0, 5, 17, 38, 63] {
                let mut x = vec![0.5f32; 4 * d];
                x[i] = f32::NAN;
                table
                    .with_backend(backend)
                    .unwrap()
                    .rotate(
                        &mut x,
                        Shape::heads(1),
                        Grid::new([2, 2]),
                        Direction::Forward,
                    )
                    .unwrap();
                for (j, v) in x.iter().enumerate() {
                    let in_pair = j == i || j == p.partner(i);
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
/// can be chosen explicitly, and a backend this CPU lacks is refused. Also without the `std`
/// feature (`cargo test` with default features runs this): `auto()` is the best backend the
/// CPU has, by std's own detection in this test.
#[test]
fn dispatch() {
    let auto = Backend::auto();
    assert!(auto.is_available());
    let spec = preset::rope_vit(8);
    let mut store = storage(&spec, [1, 1]);
    let table = Table::build(&mut store, &spec, [1, 1]).unwrap();
    assert_eq!(table.backend(), auto);
    for &backend in Backend::ALL {
        match table.with_backend(backend) {
            Ok(t) => {
                assert!(backend.is_available());
                assert_eq!(t.backend(), backend);
            }
            Err(e) => {
                assert!(!backend.is_available());
                assert_eq!(e, Error::BackendUnavailable);
            }
        }
    }
    #[cfg(all(target_arch = "x86_64", feature = "avx512"))]
    if std::is_x86_feature_detected!("avx512f")
        && std::is_x86_feature_detected!("avx2")
        && std::is_x86_feature_detected!("fma")
    {
        assert_eq!(auto.name(), "avx512");
        return;
    }
    #[cfg(all(target_arch = "x86_64", feature = "avx2"))]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        assert_eq!(auto.name(), "avx2");
    }
    // Without AVX2 and FMA (CI emulates such a CPU): `scalar`, not `portable` (see `auto`).
    #[cfg(target_arch = "x86_64")]
    if !(std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")) {
        assert_eq!(auto.name(), "scalar");
    }
    #[cfg(all(target_arch = "aarch64", feature = "neon", target_feature = "neon"))]
    assert_eq!(auto.name(), "neon");
}

/// The fused backends really run their own code (not a silent scalar fallback): on random
/// data some outputs differ from scalar in the last bit, as their bound allows.
#[test]
fn fused_backends_are_not_scalar() {
    let d = 64;
    let spec = preset::rope_vit(d);
    let mut store = storage(&spec, [4, 4]);
    let table = Table::build(&mut store, &spec, [4, 4]).unwrap();
    let x = Rng(7).values(16 * 2 * d);
    let run = |backend: Backend| {
        let mut out = x.clone();
        table
            .with_backend(backend)
            .unwrap()
            .rotate(
                &mut out,
                Shape::heads(2),
                Grid::new([4, 4]),
                Direction::Forward,
            )
            .unwrap();
        out
    };
    let want = run(Backend::Scalar);
    for backend in backends() {
        let got = run(backend);
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

/// The backend named `name`, when this build has it and this CPU runs it.
fn available(name: &str) -> Option<Backend> {
    Backend::ALL
        .iter()
        .copied()
        .find(|b| b.name() == name && b.is_available())
}

/// Asserts that `op` gives the same bits with `avx512` as with `avx2` on `input` (when both
/// are available).
fn assert_avx512_is_avx2(input: &[f32], what: &str, op: &dyn Fn(Backend, &mut [f32])) {
    if let (Some(avx2), Some(avx512)) = (available("avx2"), available("avx512")) {
        let (mut want, mut got) = (input.to_vec(), input.to_vec());
        op(avx2, &mut want);
        op(avx512, &mut got);
        assert!(
            want.iter()
                .zip(&got)
                .all(|(w, g)| w.to_bits() == g.to_bits()),
            "{what}: avx512 differs from avx2"
        );
    }
}

/// Buffers beyond L2 (over 2¹⁸ floats), which `avx512` rotates with its 256-bit form: every
/// backend against scalar, and `avx512` bit for bit equal to `avx2`, on both sides of the
/// threshold, both layouts and directions. Not under Miri (megabytes of data).
#[test]
#[cfg_attr(miri, ignore)]
fn buffers_beyond_l2() {
    let mut rng = Rng(13);
    // d = 128: heads whose angles fill 16 registers in the half layout (the 256-bit form's
    // 32-register compilation); d = 80: 5 vectors a half in the half layout, 10 vectors read
    // from memory interleaved (and not whole 512-bit vectors in either).
    for (layout, d) in LAYOUTS.into_iter().flat_map(|l| [(l, 128), (l, 80)]) {
        let spec = preset::rope_1d(d, layout, 500_000.0);
        let p = Pairing {
            layout,
            d,
            pairs: spec.pairs(),
        };
        let heads = 2;
        // At most 2¹⁸ floats (512-bit form), then one token more (256-bit form; on AMD
        // Zen 4 and later the 512-bit form again for interleaved pairs).
        let below = (1 << 18) / (heads * d);
        for tokens in [below, below + 1] {
            let x = rng.values(tokens * heads * d);
            let mut store = storage(&spec, [tokens]);
            let table = Table::build(&mut store, &spec, [tokens]).unwrap();
            for &dir in dirs(layout) {
                let op = |b: Backend, buf: &mut [f32]| {
                    table
                        .with_backend(b)
                        .unwrap()
                        .rotate(buf, Shape::heads(heads), Run::from([0]), dir)
                        .unwrap()
                };
                let what = format!("{tokens} tokens d {d} {layout:?} {dir:?}");
                compare(p, &x, &what, op);
                assert_avx512_is_avx2(&x, &what, &op);
            }
        }
    }
}

/// Half-layout buffers over 1 MiB, whose heads the SIMD backends' register loops prefetch
/// ahead of, up to the buffer's end (`Prefetch`, src/backend/simd.rs; the 1-D runs of
/// `buffers_beyond_l2` take it too): a 2-D grid (the grid loop; on `avx2`'s 16-register
/// build, heads with a line's half of the angles in memory) and one token of 2 080 heads (a
/// staged row). Every backend against scalar at each sub-slice offset; `avx512` bit for bit
/// `avx2`. Not under Miri (megabytes of data).
#[test]
#[cfg_attr(miri, ignore)]
fn half_layout_buffers_past_the_prefetch_threshold() {
    let mut rng = Rng(29);
    let (d, heads) = (128, 2);
    let p = Pairing {
        layout: Layout::Half,
        d,
        pairs: d / 2,
    };
    let spec = preset::axial(d, Layout::Half, AxisOrder::RowFirst, 10_000.0);
    let extents = [33, 35];
    let x = rng.values(33 * 35 * heads * d);
    let mut store = storage(&spec, extents);
    let table = Table::build(&mut store, &spec, extents).unwrap();
    for dir in DIRS {
        let op = |b: Backend, buf: &mut [f32]| {
            table
                .with_backend(b)
                .unwrap()
                .rotate(buf, Shape::heads(heads), Grid::new(extents), dir)
                .unwrap()
        };
        compare_and_avx512_is_avx2(p, &x, &format!("grid 33x35 {dir:?}"), &op);
    }
    let spec = preset::rope_1d(d, Layout::Half, 10_000.0);
    let heads = 2080;
    let x = rng.values(heads * d);
    let mut store = storage(&spec, [8]);
    let table = Table::build(&mut store, &spec, [8]).unwrap();
    for dir in DIRS {
        let op = |b: Backend, buf: &mut [f32]| {
            table
                .with_backend(b)
                .unwrap()
                .rotate_at(buf, Shape::heads(heads), &[[7]], dir)
                .unwrap()
        };
        compare_and_avx512_is_avx2(p, &x, &format!("one token of {heads} heads {dir:?}"), &op);
    }
}

/// [`compare`], then [`assert_avx512_is_avx2`].
fn compare_and_avx512_is_avx2(p: Pairing, x: &[f32], what: &str, op: &dyn Fn(Backend, &mut [f32])) {
    compare(p, x, what, op);
    assert_avx512_is_avx2(x, what, op);
}

/// Sections on whole 256-bit vectors but not on whole 512-bit ones, which `avx512` rotates with
/// its 256-bit form at every size (one token: its 512-bit form): Qwen2-VL's M-RoPE (16/24/24
/// pairs, half layout) over text + image + text and one token, CogVideoX (16/24/24 floats,
/// interleaved) over a video grid. Every backend against scalar; `avx512` bit for bit `avx2`.
/// Not under Miri, whose `avx512` run reaches the same route through the axial tests (d = 16
/// interleaved).
#[test]
#[cfg_attr(miri, ignore)]
fn sections_on_256_bit_vectors_only() {
    let mut rng = Rng(14);
    let heads = 3;
    let mrope = preset::qwen2_vl_mrope(128, 1e6, [16, 24, 24]);
    let order = preset::mrope_positions(7, [1, 6, 8], 2, 5);
    let extents = [64; 3];
    let mut store = storage(&mrope, extents);
    let table = Table::build(&mut store, &mrope, extents).unwrap();
    let p = Pairing {
        layout: Layout::Half,
        d: 128,
        pairs: mrope.pairs(),
    };
    // Text, the image's merged tokens, text; then one text token (a decode step).
    let tokens = 7 + 12 + 5;
    let one = [[40u32; 3]];
    for (count, pieces) in [(tokens, true), (1, false)] {
        let x = rng.values(count * heads * 128);
        for &dir in dirs(Layout::Half) {
            let what = format!("M-RoPE {count} tokens {dir:?}");
            compare_and_avx512_is_avx2(p, &x, &what, &|b, buf| {
                let table = table.with_backend(b).unwrap();
                let shape = Shape::heads(heads);
                if pieces {
                    table.rotate(buf, shape, &order[..], dir)
                } else {
                    table.rotate(buf, shape, &one[..], dir)
                }
                .unwrap()
            });
        }
    }
    let grid = [2, 4, 6];
    let cog = preset::cogvideox(
        64,
        10_000.0,
        grid,
        preset::cogvideox_crops([4, 6], [30, 45]),
    );
    let mut store = storage(&cog, grid);
    let table = Table::build(&mut store, &cog, grid).unwrap();
    let p = Pairing {
        layout: Layout::Interleaved,
        d: 64,
        pairs: cog.pairs(),
    };
    let x = rng.values(grid.iter().product::<usize>() * heads * 64);
    for &dir in dirs(Layout::Interleaved) {
        compare_and_avx512_is_avx2(p, &x, &format!("CogVideoX {dir:?}"), &|b, buf| {
            table
                .with_backend(b)
                .unwrap()
                .rotate(buf, Shape::heads(heads), Grid::new(grid), dir)
                .unwrap()
        });
    }
}

/// A SIMD kernel's row holds 1 024 floats of each array: 512 interleaved pairs, 1 024 in the
/// half layout. Both sides of each limit, both layouts: one head of 511 … 1 025 pairs (1-D),
/// grid lines at and past it (d = 64, whose sections fall on whole vectors: the grid loop
/// from the tables on x86, the line loop where heads are not the register form; d = 40,
/// whose sections do not: the line loop on every backend), 3-D lines (video sections) past the
/// interleaved limit, and Qwen2-VL M-RoPE's image lines of 24 tokens × 24 pairs (576;
/// `mrope_text`'s). Every backend against scalar; `avx512` bit for bit `avx2`. Under Miri,
/// one half-layout head and one short half-layout grid past the interleaved limit.
#[test]
fn rows_at_and_past_their_capacity() {
    let mut rng = Rng(17);
    // Under Miri the half layout only: its rows now hold what interleaved ones cannot.
    for layout in miri_or(LAYOUTS.to_vec(), vec![Layout::Half]) {
        let dims = miri_or(vec![1022, 1024, 1026, 2040, 2048, 2050], vec![1026]);
        for d in dims {
            let spec = preset::rope_1d(d, layout, 10_000.0);
            let tokens = miri_or(3, 1);
            let mut store = storage(&spec, [tokens]);
            let table = Table::build(&mut store, &spec, [tokens]).unwrap();
            let p = Pairing {
                layout,
                d,
                pairs: spec.pairs(),
            };
            let x = rng.values(tokens * d);
            let direct = Direct::new(&spec).unwrap();
            for &dir in dirs(layout) {
                let what = format!("1-D d={d} {layout:?} {dir:?}");
                compare_and_avx512_is_avx2(p, &x, &what, &|b, buf| {
                    table
                        .with_backend(b)
                        .unwrap()
                        .rotate(buf, Shape::heads(1), Run::from([0]), dir)
                        .unwrap()
                });
                // Tableless: the angles computed in chunks, staged into the row.
                if !cfg!(miri) {
                    compare_and_avx512_is_avx2(p, &x, &format!("{what}, tableless"), &|b, buf| {
                        direct
                            .with_backend(b)
                            .unwrap()
                            .rotate(buf, Shape::heads(1), Run::from([7]), dir)
                            .unwrap()
                    });
                }
            }
        }
        // d = 64, one head: 16-pair sections, whole 512-bit vectors in both layouts. Lines of
        // 32, 33, 64 and 65 tokens (512, 528, 1 024 and 1 040 pairs), as many lines (the
        // rows).
        let whole = miri_or(vec![32, 33, 64, 65], vec![33])
            .into_iter()
            .map(|side| (64, 1, miri_or([side, side], [2, side])));
        // d = 40, two heads: 10-pair sections, which no backend's grid loop from the tables
        // takes (they fall inside its vectors, or NEON's interleaved head is ten vectors, past
        // the eight of the register form), so the line loop takes the lines that fit its row.
        // Lines of 25 and 26 tokens (500 and 520 pairs) around the interleaved limit, 51 and
        // 52 (1 020 and 1 040) around the half layout's.
        let inside = match layout {
            Layout::Interleaved => [25, 26],
            Layout::Half => [51, 52],
        };
        let inside = miri_or(inside.to_vec(), vec![])
            .into_iter()
            .map(|side| (40, 2, [3, side]));
        for (d, heads, extents) in whole.chain(inside) {
            let spec = preset::axial(d, layout, AxisOrder::RowFirst, 100.0);
            let mut store = storage(&spec, extents);
            let table = Table::build(&mut store, &spec, extents).unwrap();
            let p = Pairing {
                layout,
                d,
                pairs: spec.pairs(),
            };
            let x = rng.values(extents[0] * extents[1] * heads * d);
            for &dir in dirs(layout) {
                let what = format!("grid {extents:?} d={d} {layout:?} {dir:?}");
                compare_and_avx512_is_avx2(p, &x, &what, &|b, buf| {
                    table
                        .with_backend(b)
                        .unwrap()
                        .rotate(buf, Shape::heads(heads), Grid::new(extents), dir)
                        .unwrap()
                });
            }
        }
    }
    if cfg!(miri) {
        return;
    }
    // 3-D lines of 40 tokens × 16 pairs (640): past the interleaved limit, within the half
    // layout's. Sections of 32/16/16 pairs: the grid loop from the tables where they fall on
    // whole vectors of the register form (`avx512`; `avx2` in the half layout), else the
    // line loop in the half layout and token by token in the interleaved one.
    for layout in LAYOUTS {
        let spec = Spec::new(
            128,
            layout,
            Sections {
                sections: [
                    Section::new(0, 32),
                    Section::new(1, 16),
                    Section::new(2, 16),
                ],
                index: FreqIndex::PerSection,
            },
            Freqs::Base {
                base: 10_000.0,
                freq_scale: 1.0,
            },
        );
        let extents = [2, 3, 40];
        let mut store = storage(&spec, extents);
        let table = Table::build(&mut store, &spec, extents).unwrap();
        let p = Pairing {
            layout,
            d: 128,
            pairs: spec.pairs(),
        };
        let x = rng.values(extents.iter().product::<usize>() * 2 * 128);
        for &dir in dirs(layout) {
            let what = format!("video {extents:?} {layout:?} {dir:?}");
            compare_and_avx512_is_avx2(p, &x, &what, &|b, buf| {
                table
                    .with_backend(b)
                    .unwrap()
                    .rotate(buf, Shape::heads(2), Grid::new(extents), dir)
                    .unwrap()
            });
        }
    }
    let mrope = preset::qwen2_vl_mrope(128, 1e6, [16, 24, 24]);
    let order = preset::mrope_positions(7, [1, 48, 48], 2, 5);
    let extents = [64; 3];
    let mut store = storage(&mrope, extents);
    let table = Table::build(&mut store, &mrope, extents).unwrap();
    let p = Pairing {
        layout: Layout::Half,
        d: 128,
        pairs: mrope.pairs(),
    };
    let x = rng.values((7 + 24 * 24 + 5) * 2 * 128);
    for &dir in dirs(Layout::Half) {
        let what = format!("M-RoPE, 24-token image lines {dir:?}");
        compare_and_avx512_is_avx2(p, &x, &what, &|b, buf| {
            table
                .with_backend(b)
                .unwrap()
                .rotate(buf, Shape::heads(2), &order[..], dir)
                .unwrap()
        });
    }
}

/// Tokens at explicit positions whose two sections share a vector (Qwen2-VL's vision heads:
/// 20/20 pairs at d = 80, the vector of pairs 16–23 half each) read each coordinate's
/// entries from tables prepared once per call. Merge windows (clipped at odd extents), a
/// shuffled list with repeats and dropped patches; head dims whose sections share a vector
/// in one layout or vector width and not in the other; and the token loop's cases beside
/// it: fewer tokens than coordinates, tables too large for a row. Every backend against
/// scalar, `avx512` bit for bit `avx2`.
#[test]
fn explicit_positions_two_sections_sharing_a_vector() {
    let mut rng = Rng(19);
    for layout in LAYOUTS {
        let dims = miri_or(
            vec![24, 40, 48, 56, 80, 96, 104, 112, 128],
            vec![miri_pick(layout, 24, 48)],
        );
        for d in dims {
            let spec = Spec {
                layout,
                ..preset::qwen2_vl_vision(d, 10_000.0)
            };
            let p = Pairing {
                layout,
                d,
                pairs: spec.pairs(),
            };
            // 48×48 at d = 80: tables of 48 coordinates of 24 pairs, more than a row holds.
            let mut sizes = miri_or(vec![[6, 6], [5, 7]], vec![[3, 5]]);
            if d == 80 && !cfg!(miri) {
                sizes.push([48, 48]);
            }
            for extents in sizes {
                let mut store = storage(&spec, extents);
                let table = Table::build(&mut store, &spec, extents).unwrap();
                let windows = preset::qwen2_vl_vision_positions([1, extents[0], extents[1]], 2);
                let cells = extents[0] * extents[1];
                // Shuffled, some cells twice and some dropped.
                let listed: Vec<[u32; 2]> = (0..cells)
                    .map(|_| {
                        let r = rng.next() as usize;
                        [(r % extents[0]) as u32, ((r >> 20) % extents[1]) as u32]
                    })
                    .collect();
                // Fewer tokens than the tables' coordinates: the token loop.
                let few = &listed[..3];
                let heads = if cells > 100 { 1 } else { 2 };
                for &dir in dirs(layout) {
                    let what = format!("qwen2-vl d={d} {layout:?} {extents:?} {dir:?}");
                    let x = rng.values(cells * heads * d);
                    compare_and_avx512_is_avx2(p, &x, &format!("{what} windows"), &|b, buf| {
                        table
                            .with_backend(b)
                            .unwrap()
                            .rotate(buf, Shape::heads(heads), &windows[..], dir)
                            .unwrap()
                    });
                    compare_and_avx512_is_avx2(p, &x, &format!("{what} list"), &|b, buf| {
                        table
                            .with_backend(b)
                            .unwrap()
                            .rotate_at(buf, Shape::heads(heads), &listed, dir)
                            .unwrap()
                    });
                    let x = rng.values(few.len() * heads * d);
                    compare_and_avx512_is_avx2(p, &x, &format!("{what} few"), &|b, buf| {
                        table
                            .with_backend(b)
                            .unwrap()
                            .rotate_at(buf, Shape::heads(heads), few, dir)
                            .unwrap()
                    });
                }
            }
        }
    }
}

/// `avx512` against `avx2`: the same bits (NaN at the same places), through section tables,
/// 1-D, gathered plans and RoPE-Mixed, both layouts and directions, every head dim from 4 to
/// 256 and special values. Skipped when this build or CPU lacks either backend.
#[test]
fn avx512_is_bit_identical_to_avx2() {
    let (Some(avx2), Some(avx512)) = (available("avx2"), available("avx512")) else {
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
    let extents = miri_or([3, 5], [2, 3]);
    let n = extents[0] * extents[1];
    let dims: Vec<usize> = miri_or((4..=256).step_by(2).collect(), vec![16, 36, 64]);
    for layout in LAYOUTS {
        for &d in &dims {
            let heads = 1 + d % 3;
            for &dir in dirs(layout) {
                let x = if d % 8 == 0 {
                    special_values(&mut rng, n * heads * d)
                } else {
                    rng.values(n * heads * d)
                };
                let shape = Shape::heads(heads);
                if d.is_multiple_of(4) {
                    for order in [AxisOrder::RowFirst, AxisOrder::ColFirst] {
                        let spec = preset::axial(d, layout, order, 100.0);
                        let mut store = storage(&spec, extents);
                        let table = Table::build(&mut store, &spec, extents).unwrap();
                        same(
                            &format!("axial d={d} {layout:?} {order:?} {dir:?}"),
                            &|b, buf| {
                                table
                                    .with_backend(b)
                                    .unwrap()
                                    .rotate(buf, shape, Grid::new(extents), dir)
                                    .unwrap()
                            },
                            &x,
                        );
                    }
                }
                let spec = preset::rope_1d(d, layout, 10_000.0);
                let mut store = storage(&spec, [n]);
                let table = Table::build(&mut store, &spec, [n]).unwrap();
                same(
                    &format!("1-D d={d} {layout:?} {dir:?}"),
                    &|b, buf| {
                        table
                            .with_backend(b)
                            .unwrap()
                            .rotate(buf, shape, Run::from([0]), dir)
                            .unwrap()
                    },
                    &x,
                );
                let fx: Vec<f32> = (0..heads * d / 2).map(|_| rng.value()).collect();
                let fy: Vec<f32> = (0..heads * d / 2).map(|_| rng.value()).collect();
                let spec = Spec {
                    layout,
                    ..preset::rope_mixed(d, heads, LearnedFreqs { x: &fx, y: &fy })
                };
                let mut store = storage(&spec, extents);
                let table = Table::build(&mut store, &spec, extents).unwrap();
                same(
                    &format!("mixed d={d} {layout:?} {dir:?}"),
                    &|b, buf| {
                        table
                            .with_backend(b)
                            .unwrap()
                            .rotate(buf, shape, Grid::new(extents), dir)
                            .unwrap()
                    },
                    &x,
                );
                let pieces = [Piece::Grid {
                    grid: Grid::new([1, extents[0], extents[1]]),
                    repeat: 1,
                }];
                let spec = Spec {
                    layout,
                    ..preset::qwen3_vl_mrope(d, 1e6, [d / 2 - 2 * (d / 6), d / 6, d / 6])
                };
                let mut store = storage(&spec, [1, extents[0], extents[1]]);
                let table = Table::build(&mut store, &spec, [1, extents[0], extents[1]]).unwrap();
                same(
                    &format!("qwen3 d={d} {layout:?} {dir:?}"),
                    &|b, buf| {
                        table
                            .with_backend(b)
                            .unwrap()
                            .rotate(buf, shape, &pieces[..], dir)
                            .unwrap()
                    },
                    &x,
                );
            }
        }
    }
}

/// Plans with more than one section on the axis that varies along a grid line (adjacent, or
/// apart with another axis' section between): the grid path gives bit for bit what one
/// explicit position per token gives, on every backend. (Before the fix the grid path
/// rotated every token of a line by the line's first column for all but one such section.)
#[test]
fn grid_with_repeated_axis_sections() {
    let mut rng = Rng(7);
    let plans: [[Section; 3]; 3] = [
        [Section::new(2, 5), Section::new(2, 6), Section::new(0, 3)],
        [Section::new(2, 4), Section::new(0, 3), Section::new(2, 5)],
        [Section::new(1, 4), Section::new(2, 6), Section::new(1, 2)],
    ];
    // Under Miri (slow): the first plan (two adjacent sections on the line's axis, not last)
    // with one index rule.
    let indices = miri_or(
        &[FreqIndex::PerSection, FreqIndex::Strided][..],
        &[FreqIndex::Strided],
    );
    for sections in plans.into_iter().take(miri_or(3, 1)) {
        for layout in LAYOUTS {
            for &index in indices {
                let spec = Spec::new(
                    32,
                    layout,
                    Sections { sections, index },
                    Freqs::Base {
                        base: 100.0,
                        freq_scale: 1.0,
                    },
                );
                let extents = [2, 3, 5];
                let mut storage = storage(&spec, extents);
                let table = Table::build(&mut storage, &spec, extents).unwrap();
                let grid = Grid::new(extents).at([0, 0, 0]);
                let list = grid_list(grid);
                let input = rng.values(30 * 2 * 32);
                for backend in backends() {
                    let table = table.with_backend(backend).unwrap();
                    let mut by_grid = input.clone();
                    table
                        .rotate(&mut by_grid, Shape::heads(2), grid, Direction::Forward)
                        .unwrap();
                    let mut by_list = input.clone();
                    table
                        .rotate_at(&mut by_list, Shape::heads(2), &list, Direction::Forward)
                        .unwrap();
                    let same = by_grid
                        .iter()
                        .zip(&by_list)
                        .all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(same, "{backend:?} {layout:?} {index:?} {sections:?}");
                }
            }
        }
    }
}

#[test]
fn descriptions_name_the_backend_form_and_cpu() {
    for &backend in Backend::ALL {
        let description = backend.describe();
        assert_eq!(description.backend(), backend);
        let line = description.to_string();
        let available = if backend.is_available() {
            "(available)"
        } else {
            "(not available on this CPU)"
        };
        assert!(
            line.starts_with(&format!("{} {available}: ", backend.name())),
            "{line}"
        );
        assert!(line.contains("; cpu "), "{line}");
        // A log line, not a report: it fits the 512-byte buffer the C checks pass.
        assert!(line.len() < 512, "{} bytes: {line}", line.len());
    }
    // x86_64 builds with an x86 backend read CPUID: the identity must be the kernel's.
    let reads_cpuid = Backend::ALL.iter().any(|b| b.name().starts_with("avx"));
    if cfg!(miri) || !reads_cpuid || !cfg!(target_os = "linux") {
        return;
    }
    let line = Backend::auto().describe().to_string();
    // Under qemu-user (CI runs these tests on emulated CPUs, `QEMU_CPU` naming the model),
    // CPUID is the model's while /proc/cpuinfo is the host's: the identity is the model's.
    if let Ok(model) = std::env::var("QEMU_CPU") {
        let want = match model.split(',').next().unwrap_or_default() {
            "Haswell-v4" => "cpu GenuineIntel family 6 model 60 stepping 1",
            "Nehalem-v2" => "cpu GenuineIntel family 6 model 26 stepping 3",
            // AMD's display family: the base family 15 plus the extended family 10.
            "EPYC-Milan-v1" => "cpu AuthenticAMD family 25 model 1 stepping 1",
            _ => return,
        };
        assert!(line.ends_with(want), "{line} / QEMU_CPU={model}: {want}");
        return;
    }
    let Ok(cpuinfo) = std::fs::read_to_string("/proc/cpuinfo") else {
        return;
    };
    let field = |name: &str| {
        cpuinfo
            .lines()
            .find_map(|l| {
                let (key, value) = l.split_once(':')?;
                (key.trim() == name).then(|| value.trim().to_string())
            })
            .unwrap_or_default()
    };
    let want = format!(
        "cpu {} family {} model {} stepping {}",
        field("vendor_id"),
        field("cpu family"),
        field("model"),
        field("stepping")
    );
    assert!(line.ends_with(&want), "{line} / /proc/cpuinfo: {want}");
}
