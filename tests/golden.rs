//! The golden vectors (tests/golden/, a token subset of ../shared/golden/ with every value
//! unchanged) under the tolerances of their README: ≤ 1e-5 against the reference code's
//! float32 output (2-D; 1-D below position 512), ≤ 4e-6 against float64 everywhere.

#[path = "../examples/golden.rs"]
#[allow(dead_code)]
mod runner;

use std::path::{Path, PathBuf};

use rope2d::{
    AnglePrecision, Axial2d, AxialTable, AxialTableRef, Direction, GridPos, LearnedFreqs, Mixed2d,
    MixedTable, Rope1d, Rope1dDirect, Rope1dTableRef, Shape,
};
use runner::{Case, Kind};

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

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[test]
fn every_golden_file_meets_both_tolerances() {
    let files = golden_files();
    assert!(
        files.len() >= 10,
        "expected the 10 golden cases, found {}",
        files.len()
    );
    for file in files {
        let report = runner::run_file(&file).unwrap();
        println!("{report}");
        assert!(report.passed(), "{report}");
    }
}

/// The grid-order entry point gives the same bits as explicit positions, for every 2-D file:
/// the subset tokens are scattered into a full grid buffer, rotated with `rotate`, and read back.
#[test]
fn grid_order_matches_explicit_positions() {
    for file in golden_files() {
        let name = file.file_name().unwrap().to_str().unwrap().to_string();
        let case = load(&name);
        let Some(grid) = case.grid else { continue };
        let token_len = case.heads * case.head_dim;
        let explicit = runner::rotate(&case, AnglePrecision::Exact).unwrap();
        let mut full = vec![0.0f32; grid.rows * grid.cols * token_len];
        for (t, p) in case.positions.iter().enumerate() {
            let at = (p[0] as usize * grid.cols + p[1] as usize) * token_len;
            full[at..at + token_len].copy_from_slice(&case.input[t * token_len..][..token_len]);
        }
        let shape = Shape::heads(case.heads);
        match case.kind {
            Kind::Axial2d(config) => {
                let mut storage =
                    vec![[0.0; 2]; AxialTableRef::storage_len(case.head_dim, grid).unwrap()];
                let table =
                    AxialTableRef::build(&mut storage, &config, case.head_dim, grid).unwrap();
                table.rotate(&mut full, shape, Direction::Forward).unwrap();
            }
            Kind::Mixed2d(config) => {
                let freqs = LearnedFreqs {
                    heads: case.heads,
                    x: &case.freqs_x,
                    y: &case.freqs_y,
                };
                let len =
                    rope2d::MixedTableRef::storage_len(case.head_dim, case.heads, grid).unwrap();
                let mut storage = vec![[0.0; 2]; len];
                let table =
                    rope2d::MixedTableRef::build(&mut storage, &config, case.head_dim, grid, freqs)
                        .unwrap();
                table.rotate(&mut full, shape, Direction::Forward).unwrap();
            }
            Kind::Rope1d(_) => unreachable!(),
        }
        for (t, p) in case.positions.iter().enumerate() {
            let at = (p[0] as usize * grid.cols + p[1] as usize) * token_len;
            assert_eq!(
                &full[at..at + token_len],
                &explicit[t * token_len..][..token_len],
                "{name} token {t}"
            );
        }
    }
}

/// The const-generic tables hold the same entries and give the same bits as the runtime ones.
#[test]
fn const_generic_tables_match_runtime_tables() {
    let case = load("seed_axial_d64_14x14_b100.json");
    let positions: Vec<GridPos> = case
        .positions
        .iter()
        .map(|p| GridPos::new(p[0] as u32, p[1] as u32))
        .collect();
    let table = AxialTable::<64, 14, 14>::new(&Axial2d::ROPE_VIT).unwrap();
    assert_eq!(AxialTable::<64, 14, 14>::BYTES, 3_584);
    let mut ours = case.input.clone();
    table
        .rotate_at(&mut ours, Shape::heads(2), &positions, Direction::Forward)
        .unwrap();
    assert_eq!(ours, runner::rotate(&case, AnglePrecision::Exact).unwrap());

    let case = load("ropevit_mixed_d64_14x14_t10.json");
    let positions: Vec<GridPos> = case
        .positions
        .iter()
        .map(|p| GridPos::new(p[0] as u32, p[1] as u32))
        .collect();
    let freqs = LearnedFreqs {
        heads: 2,
        x: &case.freqs_x,
        y: &case.freqs_y,
    };
    let table = MixedTable::<64, 2, 14, 14>::new(&Mixed2d::ROPE_VIT, freqs).unwrap();
    let mut ours = case.input.clone();
    table
        .rotate_at(&mut ours, Shape::heads(2), &positions, Direction::Forward)
        .unwrap();
    assert_eq!(ours, runner::rotate(&case, AnglePrecision::Exact).unwrap());
}

/// Single-head rotation gives the same bits as the buffer paths, head by head.
#[test]
fn rotate_head_matches_buffer_rotation() {
    let case = load("ropevit_mixed_d64_14x14_t10.json");
    let expected = runner::rotate(&case, AnglePrecision::Exact).unwrap();
    let freqs = LearnedFreqs {
        heads: 2,
        x: &case.freqs_x,
        y: &case.freqs_y,
    };
    let table = MixedTable::<64, 2, 14, 14>::new(&Mixed2d::ROPE_VIT, freqs).unwrap();
    for (t, p) in case.positions.iter().enumerate() {
        for h in 0..2 {
            let at = (t * 2 + h) * 64;
            let mut head = case.input[at..at + 64].to_vec();
            table
                .rotate_head(
                    &mut head,
                    h,
                    GridPos::new(p[0] as u32, p[1] as u32),
                    Direction::Forward,
                )
                .unwrap();
            assert_eq!(head, expected[at..at + 64]);
        }
    }
    let case = load("timm_dinov3_d64_14x14_t100.json");
    let expected = runner::rotate(&case, AnglePrecision::Exact).unwrap();
    let table = AxialTable::<64, 14, 14>::new(&Axial2d::DINOV3).unwrap();
    for (t, p) in case.positions.iter().enumerate() {
        let at = t * 2 * 64;
        for head in case.input[at..at + 128]
            .chunks(64)
            .zip(expected[at..at + 128].chunks(64))
        {
            let mut v = head.0.to_vec();
            table
                .rotate_head(
                    &mut v,
                    GridPos::new(p[0] as u32, p[1] as u32),
                    Direction::Forward,
                )
                .unwrap();
            assert_eq!(v, head.1);
        }
    }
}

/// 1-D: the table path equals the tableless path bit for bit (positions up to 65 535), and
/// the float32-angle mode tracks the reference code at every position, 65 535 included.
#[test]
fn rope1d_table_direct_and_float32_mode() {
    for name in [
        "llama_interleaved_1d_d64_t10000.json",
        "neox_rotate_half_1d_d64_t10000.json",
    ] {
        let case = load(name);
        let Kind::Rope1d(config) = case.kind else {
            panic!()
        };
        let positions: Vec<u32> = case.positions.iter().map(|p| p[0] as u32).collect();
        let mut storage = vec![[0.0; 2]; Rope1dTableRef::storage_len(64, 65_536).unwrap()];
        let table = Rope1dTableRef::build(&mut storage, &config, 64, 65_536).unwrap();
        let mut from_table = case.input.clone();
        table
            .rotate_at(
                &mut from_table,
                Shape::heads(2),
                &positions,
                Direction::Forward,
            )
            .unwrap();
        assert_eq!(
            from_table,
            runner::rotate(&case, AnglePrecision::Exact).unwrap(),
            "{name}"
        );

        let float32 =
            Rope1dDirect::new(&config.with_precision(AnglePrecision::Float32), 64).unwrap();
        let mut compatible = case.input.clone();
        float32
            .rotate_at(
                &mut compatible,
                Shape::heads(2),
                &positions,
                Direction::Forward,
            )
            .unwrap();
        let reference: Vec<f32> = case.expected_ref.iter().map(|&x| x as f32).collect();
        let diff = max_abs_diff(&compatible, &reference);
        assert!(
            diff <= 1e-5,
            "{name}: float32 mode vs reference {diff:e} at some position"
        );
    }
}

/// The presets are the conventions of the golden files they name.
#[test]
fn presets_match_golden_specs() {
    let eva = load("timm_cat_eva02_d64_14x14_t10000.json");
    let Kind::Axial2d(config) = eva.kind else {
        panic!()
    };
    assert_eq!(config, Axial2d::EVA02);
    let dino = load("timm_dinov3_d64_14x14_t100.json");
    let Kind::Axial2d(config) = dino.kind else {
        panic!()
    };
    assert_eq!(config, Axial2d::DINOV3);
    let seed = load("seed_axial_d64_14x14_b100.json");
    let Kind::Axial2d(config) = seed.kind else {
        panic!()
    };
    assert_eq!(config, Axial2d::ROPE_VIT);
    let llama = load("llama_interleaved_1d_d64_t10000.json");
    let Kind::Rope1d(config) = llama.kind else {
        panic!()
    };
    assert_eq!(config, Rope1d::LLAMA);
    let neox = load("neox_rotate_half_1d_d64_t10000.json");
    let Kind::Rope1d(config) = neox.kind else {
        panic!()
    };
    assert_eq!(config, Rope1d::NEOX);
    let mixed = load("ropevit_mixed_d64_14x14_t10.json");
    let Kind::Mixed2d(config) = mixed.kind else {
        panic!()
    };
    assert_eq!(config, Mixed2d::ROPE_VIT);
}
