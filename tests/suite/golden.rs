//! The golden vectors (tests/golden/, a token subset of ../shared/golden/ with every value
//! unchanged) under the tolerances of their README, each file from its own description and
//! from the crate's preset for its family; and the entry points against each other on them.

#[path = "../../examples/golden.rs"]
#[allow(dead_code)]
mod runner;

use std::path::{Path, PathBuf};

use rope2d::{
    Backend, Direction, FixedTable, Grid, Layout, Shape, Spec, Table,
    preset::{self, AxisOrder},
};
use runner::Case;

fn golden_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("tests/golden exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
}

fn load(name: &str) -> Case {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    runner::parse(name, &std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn every_golden_file_meets_both_tolerances() {
    let files = golden_files();
    assert!(
        files.len() >= 29,
        "expected the 29 golden cases, found {}",
        files.len()
    );
    let mut presets = 0;
    for file in files {
        let report = runner::run_file(&file).unwrap();
        println!("{report}");
        assert!(report.passed(), "{report}");
        presets += usize::from(report.scores.len() > 1);
    }
    // Every `pairs` file is also checked through its family's preset, and so is every older
    // file run with a preset's parameters: rope_vit (four), eva02, dinov3, llama, neox.
    assert_eq!(presets, 19 + 8);
}

/// The rows of an axial case's positions as `[row, col]`.
fn positions_2d(case: &Case) -> Vec<[u32; 2]> {
    case.positions
        .iter()
        .map(|p| [p[0] as u32, p[1] as u32])
        .collect()
}

/// The legacy 2-D files' specs are the named presets.
fn axial_preset(name: &str, d: usize) -> Option<Spec<'static, 2>> {
    Some(match name {
        n if n.starts_with("seed_axial") && n.ends_with("b100") => preset::rope_vit(d),
        n if n.starts_with("seed_axial") => {
            preset::axial(d, Layout::Interleaved, AxisOrder::ColFirst, 10_000.0)
        }
        "paddle_fused_rope2d_floor_neoxTrue" => preset::rope_vit(d),
        "timm_cat_eva02_d64_14x14_t10000" => preset::eva02(d),
        "timm_dinov3_d64_14x14_t100" => preset::dinov3(d),
        _ => return None,
    })
}

/// Grid order, explicit positions, one head at a time and the fixed-size table give the
/// same bits, for every 2-D axial file through its named preset: the subset tokens are
/// scattered into a whole-grid buffer, rotated with `rotate` over the grid, and read back.
#[test]
fn entry_points_agree_on_axial_files() {
    let mut checked = 0;
    for file in golden_files() {
        let name = file.file_stem().unwrap().to_str().unwrap().to_string();
        let case = load(&format!("{name}.json"));
        let Some(spec) = axial_preset(&name, case.head_dim) else {
            continue;
        };
        let grid = [
            case.root["grid"][0].as_u64().unwrap() as usize,
            case.root["grid"][1].as_u64().unwrap() as usize,
        ];
        let mut storage = vec![[0f32; 2]; Table::storage_len(&spec, grid).unwrap()];
        let token = case.heads * case.head_dim;
        let positions = positions_2d(&case);
        for backend in Backend::ALL.iter().copied().filter(|b| b.is_available()) {
            let table = Table::build(&mut storage, &spec, grid)
                .unwrap()
                .with_backend(backend)
                .unwrap();
            let mut listed = case.input.clone();
            table
                .rotate_at(
                    &mut listed,
                    Shape::heads(case.heads),
                    &positions,
                    Direction::Forward,
                )
                .unwrap();
            // The grid order.
            let mut whole = vec![0f32; grid[0] * grid[1] * token];
            for (t, p) in positions.iter().enumerate() {
                let at = (p[0] as usize * grid[1] + p[1] as usize) * token;
                whole[at..at + token].copy_from_slice(&case.input[t * token..(t + 1) * token]);
            }
            table
                .rotate(
                    &mut whole,
                    Shape::heads(case.heads),
                    Grid::new(grid),
                    Direction::Forward,
                )
                .unwrap();
            // One head at a time.
            let mut heads = case.input.clone();
            for (t, p) in positions.iter().enumerate() {
                for h in heads[t * token..(t + 1) * token].chunks_mut(case.head_dim) {
                    table.rotate_head(h, *p, Direction::Forward).unwrap();
                }
            }
            for (t, p) in positions.iter().enumerate() {
                let at = (p[0] as usize * grid[1] + p[1] as usize) * token;
                let listed = &listed[t * token..(t + 1) * token];
                assert_eq!(
                    bits(listed),
                    bits(&whole[at..at + token]),
                    "{name} {} token {t}: grid",
                    backend.name()
                );
                assert_eq!(
                    bits(listed),
                    bits(&heads[t * token..(t + 1) * token]),
                    "{name} {} token {t}: heads",
                    backend.name()
                );
            }
        }
        checked += 1;
    }
    assert_eq!(checked, 7);
}

fn bits(x: &[f32]) -> Vec<u32> {
    x.iter().map(|v| v.to_bits()).collect()
}

/// `FixedTable` and `Table` hold the same entries and rotate alike.
#[test]
fn fixed_tables_match_runtime_tables() {
    let case = load("seed_axial_d64_14x14_b100.json");
    let spec = preset::rope_vit(64);
    const N: usize = preset::rope_vit(64).plan.table_len([14, 14]);
    let fixed = FixedTable::<N, 2>::new(&spec, [14, 14]).unwrap();
    assert_eq!(FixedTable::<N, 2>::BYTES, 3584);
    let mut storage = vec![[0f32; 2]; N];
    let table = Table::build(&mut storage, &spec, [14, 14]).unwrap();
    for axis in 0..2 {
        for i in 0..14 {
            assert_eq!(fixed.view().entries(axis, i), table.entries(axis, i));
        }
    }
    assert!(table.entries(0, 14).is_none() && table.entries(2, 0).is_none());
    let positions = positions_2d(&case);
    let (mut a, mut b) = (case.input.clone(), case.input.clone());
    fixed
        .view()
        .rotate_at(&mut a, Shape::heads(2), &positions, Direction::Forward)
        .unwrap();
    table
        .rotate_at(&mut b, Shape::heads(2), &positions, Direction::Forward)
        .unwrap();
    assert_eq!(bits(&a), bits(&b));
}

/// 1-D files: tables, tableless rotation and runs of positions agree bit for bit.
#[test]
fn one_d_tables_and_tableless_agree() {
    for (name, spec) in [
        ("llama_interleaved_1d_d64_t10000.json", preset::llama(64)),
        ("neox_rotate_half_1d_d64_t10000.json", preset::neox(64)),
    ] {
        let case = load(name);
        let positions: Vec<[u32; 1]> = case.positions.iter().map(|p| [p[0] as u32]).collect();
        let len = positions.iter().map(|p| p[0] as usize + 1).max().unwrap();
        let mut storage = vec![[0f32; 2]; Table::storage_len(&spec, [len]).unwrap()];
        let table = Table::build(&mut storage, &spec, [len]).unwrap();
        let direct = rope2d::Direct::new(&spec).unwrap();
        let (mut a, mut b) = (case.input.clone(), case.input.clone());
        table
            .rotate_at(&mut a, Shape::heads(2), &positions, Direction::Forward)
            .unwrap();
        direct
            .rotate_at(&mut b, Shape::heads(2), &positions, Direction::Forward)
            .unwrap();
        assert_eq!(bits(&a), bits(&b), "{name}");
        // Consecutive positions: a run equals the list.
        let run: Vec<[u32; 1]> = (100..140).map(|p| [p]).collect();
        let x: Vec<f32> = (0..40 * 128).map(|i| (i as f32).sin()).collect();
        let (mut c, mut e) = (x.clone(), x.clone());
        table
            .rotate(
                &mut c,
                Shape::heads(2),
                rope2d::Run::from([100]),
                Direction::Forward,
            )
            .unwrap();
        table
            .rotate_at(&mut e, Shape::heads(2), &run, Direction::Forward)
            .unwrap();
        assert_eq!(bits(&c), bits(&e), "{name} run");
    }
}
