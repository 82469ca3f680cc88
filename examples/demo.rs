//! A ViT-S attention input — 14×14 patches plus a CLS token, 6 heads, head dim 64 — with
//! queries and keys rotated by 2-D RoPE (rope-vit convention), the way a model would.
//!
//! ```text
//! cargo run --release --example demo
//! ```
//!
//! Prints the backend, the throughput and a numerical check of the relativity property
//! `<R(p)q, R(p')k> = <q, R(p'−p)k>`.

use std::time::Instant;

use rope2d::{Direct, Direction, FixedTable, Grid, Shape, preset};

const ROWS: usize = 14;
const COLS: usize = 14;
const HEADS: usize = 6;
const HEAD_DIM: usize = 64;
const TOKENS: usize = 1 + ROWS * COLS;

const SPEC: rope2d::Spec<'static, 2> = preset::rope_vit(HEAD_DIM);
const ENTRIES: usize = SPEC.plan.table_len([ROWS, COLS]);

fn main() -> Result<(), rope2d::Error> {
    let fixed = FixedTable::<ENTRIES, 2>::new(&SPEC, [ROWS, COLS])?;
    let table = fixed.view();
    let grid = Grid::new([ROWS, COLS]);
    let shape = Shape::heads(HEADS).with_prefix(1); // CLS is not rotated

    // Deterministic pseudo-random activations in [-1, 1).
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    };
    let q0: Vec<f32> = (0..TOKENS * HEADS * HEAD_DIM).map(|_| next()).collect();
    let k0: Vec<f32> = (0..TOKENS * HEADS * HEAD_DIM).map(|_| next()).collect();

    let (mut q, mut k) = (q0.clone(), k0.clone());
    table.rotate_qk(&mut q, &mut k, shape, grid, Direction::Forward)?;

    println!(
        "rope2d demo: ViT-S attention input, {ROWS}x{COLS} patches + CLS, {HEADS} heads, d = {HEAD_DIM}"
    );
    println!("convention: preset::rope_vit({HEAD_DIM}) = {SPEC:?}");
    println!(
        "table: {} bytes ({ENTRIES} [cos, sin] entries)",
        FixedTable::<ENTRIES, 2>::BYTES
    );
    // One line that names what runs: backend, loop form, conversions, CPU (for bug reports).
    println!("backend: {}", table.backend().describe());

    // Throughput: rotate q and k in place, forward then inverse so values stay bounded.
    let (mut bq, mut bk) = (q0.clone(), k0.clone());
    let calls = 2_000;
    let start = Instant::now();
    for i in 0..calls {
        let dir = if i % 2 == 0 {
            Direction::Forward
        } else {
            Direction::Inverse
        };
        table.rotate_qk(&mut bq, &mut bk, shape, grid, dir)?;
    }
    let seconds = start.elapsed().as_secs_f64() / calls as f64;
    let pairs = 2 * ROWS * COLS * HEADS * HEAD_DIM / 2;
    let bytes = 2 * TOKENS * HEADS * HEAD_DIM * 4;
    println!(
        "throughput: {:.2} us per q+k call, {:.2} ns per rotated pair, {:.1} GB/s of q+k",
        seconds * 1e6,
        seconds * 1e9 / pairs as f64,
        bytes as f64 / seconds / 1e9
    );

    // Relativity: for every head, a query at p and a key at p' score the same as the
    // unrotated query against the key rotated by the offset p' − p.
    let rotor = Direct::new(&SPEC)?;
    let head_at = |x: &[f32], [row, col]: [u32; 2], head: usize| -> Vec<f32> {
        let token = 1 + row as usize * COLS + col as usize;
        x[(token * HEADS + head) * HEAD_DIM..][..HEAD_DIM].to_vec()
    };
    let dot = |a: &[f32], b: &[f32]| {
        a.iter()
            .zip(b)
            .map(|(x, y)| f64::from(*x) * f64::from(*y))
            .sum::<f64>()
    };
    let pairs_checked = [([0, 0], [13, 13]), ([3, 7], [9, 2]), ([6, 6], [6, 7])];
    let mut worst = 0f64;
    for (p, p2) in pairs_checked {
        for head in 0..HEADS {
            let rotated = dot(&head_at(&q, p, head), &head_at(&k, p2, head));
            let mut relative = head_at(&k0, p2, head);
            // The offset may be negative: real coordinates.
            let offset = [p2[0] as f32 - p[0] as f32, p2[1] as f32 - p[1] as f32];
            rotor.rotate_coords(
                &mut relative,
                Shape::heads(1),
                &[offset],
                Direction::Forward,
            )?;
            let reference = dot(&head_at(&q0, p, head), &relative);
            worst = worst.max((rotated - reference).abs());
        }
    }
    println!(
        "relativity <R(p)q, R(p')k> - <q, R(p'-p)k>: max |diff| = {worst:.2e} over {} (p, p', head) triples",
        pairs_checked.len() * HEADS
    );
    let cls_untouched = q[..HEADS * HEAD_DIM] == q0[..HEADS * HEAD_DIM];
    println!("CLS token left unrotated: {cls_untouched}");
    if worst > 1e-4 || !cls_untouched {
        std::process::exit(1);
    }
    Ok(())
}
