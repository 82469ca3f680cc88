//! Every public entry point with arbitrary shapes, lengths, positions, coordinates and
//! configurations. Checks that it never panics, returns `Err` exactly when the input is
//! invalid (by an oracle written here, independently of the crate's checks), writes nothing
//! on `Err`, never writes outside the slice it was given (guard values around it), and never
//! touches the unrotated prefix.
#![no_main]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use rope2d::{
    AnglePrecision, Axial2d, AxialDirect, AxialTableRef, AxisOrder, Backend, Coord, Coords,
    Direction, Grid, GridPos, Layout, LearnedFreqs, Mixed2d, MixedTableRef, Rope1d, Rope1dDirect,
    Rope1dTableRef, Shape,
};

const GUARD: usize = 9;
const SENTINEL: f32 = -7.25;

fuzz_target!(|data: &[u8]| {
    let _ = run(&mut Unstructured::new(data));
});

fn run(u: &mut Unstructured<'_>) -> Result<()> {
    let backend = *u.choose(Backend::ALL)?;
    match u.int_in_range(0..=4)? {
        0 => axial(u, backend),
        1 => rope1d(u, backend),
        2 => mixed(u, backend),
        3 => direct_axial(u, backend),
        _ => direct_1d(u, backend),
    }
}

/// A float that is often ordinary and sometimes anything (NaN, ±Inf, subnormal, huge).
fn float(u: &mut Unstructured<'_>, ordinary: &[f64]) -> Result<f64> {
    Ok(if u.ratio(3, 4)? {
        *u.choose(ordinary)?
    } else {
        f64::from_bits(u.arbitrary()?)
    })
}

fn layout(u: &mut Unstructured<'_>) -> Result<Layout> {
    Ok(if u.arbitrary()? {
        Layout::Interleaved
    } else {
        Layout::Half
    })
}

fn direction(u: &mut Unstructured<'_>) -> Result<Direction> {
    Ok(if u.arbitrary()? {
        Direction::Forward
    } else {
        Direction::Inverse
    })
}

fn coords(u: &mut Unstructured<'_>) -> Result<Coords> {
    Ok(match u.int_in_range(0..=2)? {
        0 => Coords::Index,
        1 => Coords::Centered,
        _ => Coords::Rescale {
            ref_rows: u.int_in_range(0..=20)?,
            ref_cols: u.int_in_range(0..=20)?,
        },
    })
}

fn coords_valid(c: Coords) -> bool {
    !matches!(
        c,
        Coords::Rescale { ref_rows: 0, .. } | Coords::Rescale { ref_cols: 0, .. }
    )
}

fn base_valid(base: f64) -> bool {
    base.is_finite() && base > 1.0
}

fn scale_valid(scale: f64) -> bool {
    scale.is_finite() && scale > 0.0 && scale < 4_294_967_296.0
}

/// A buffer of `len` values from the input, framed by guards; returns (buffer, offset).
fn framed(u: &mut Unstructured<'_>, len: usize) -> Result<(Vec<f32>, usize)> {
    let offset = GUARD + u.int_in_range(0..=3)?; // misaligned starts too
    let mut buffer = vec![SENTINEL; offset + len + GUARD];
    for v in &mut buffer[offset..offset + len] {
        *v = if u.ratio(1, 16)? {
            f32::from_bits(u.arbitrary()?)
        } else {
            u.int_in_range(-64i8..=64)? as f32 / 16.0
        };
    }
    Ok((buffer, offset))
}

fn bits(x: &[f32]) -> Vec<u32> {
    x.iter().map(|v| v.to_bits()).collect()
}

/// Checks the outcome of a call on `buffer[offset .. offset + len]`.
fn check(
    result: core::result::Result<(), rope2d::Error>,
    valid: bool,
    before: &[u32],
    after: &[f32],
    offset: usize,
    len: usize,
    keep: usize,
) {
    assert_eq!(result.is_ok(), valid, "{result:?}");
    let after_bits = bits(after);
    assert_eq!(
        before[..offset],
        after_bits[..offset],
        "wrote before the slice"
    );
    assert_eq!(
        before[offset + len..],
        after_bits[offset + len..],
        "wrote after the slice"
    );
    if valid {
        assert_eq!(
            before[offset..offset + keep],
            after_bits[offset..offset + keep],
            "touched the prefix"
        );
    } else {
        assert_eq!(before, &after_bits[..], "wrote on error");
    }
}

/// Buffer length: mostly the right one, sometimes anything.
fn length(u: &mut Unstructured<'_>, right: Option<usize>) -> Result<usize> {
    Ok(match right {
        Some(n) if u.ratio(3, 4)? => n,
        _ => u.int_in_range(0..=300)?,
    })
}

fn tokens_ok(len: usize, heads: usize, head_dim: usize, expected_tokens: usize) -> bool {
    let token = heads * head_dim;
    heads > 0 && len % token == 0 && len / token == expected_tokens
}

fn axial(u: &mut Unstructured<'_>, backend: Backend) -> Result<()> {
    let head_dim = u.int_in_range(0..=24)?;
    let grid = Grid::new(u.int_in_range(0..=5)?, u.int_in_range(0..=5)?);
    let order = if u.arbitrary()? {
        AxisOrder::ColFirst
    } else {
        AxisOrder::RowFirst
    };
    let config = Axial2d::new(layout(u)?, order, float(u, &[100.0, 10_000.0, 2.0])?)
        .with_coords(coords(u)?)
        .with_freq_scale(float(u, &[1.0, core::f64::consts::TAU, 0.125])?);
    let shape_ok = head_dim > 0 && head_dim % 4 == 0 && grid.rows > 0 && grid.cols > 0;
    let entries = (grid.rows + grid.cols) * (head_dim / 4);
    assert_eq!(
        AxialTableRef::storage_len(head_dim, grid).ok(),
        shape_ok.then_some(entries)
    );
    let storage_len = length(u, Some(entries))?;
    let mut storage = vec![[SENTINEL; 2]; storage_len];
    let built = AxialTableRef::build(&mut storage, &config, head_dim, grid);
    let valid = shape_ok
        && storage_len == entries
        && base_valid(config.base)
        && scale_valid(config.freq_scale)
        && coords_valid(config.coords);
    assert_eq!(built.is_ok(), valid, "{built:?}");
    let Ok(table) = built else {
        assert!(
            storage.iter().all(|e| *e == [SENTINEL; 2]),
            "storage written on error"
        );
        return Ok(());
    };
    let table = table.with_backend(backend).unwrap();
    for row in 0..grid.rows {
        for [c, s] in table.row_entries(row).unwrap() {
            assert!((c * c + s * s - 1.0).abs() < 1e-6);
        }
    }
    let heads = u.int_in_range(0..=3)?;
    let prefix = u.int_in_range(0..=2)?;
    let dir = direction(u)?;
    let token = heads * head_dim;
    match u.int_in_range(0..=3)? {
        0 => {
            let len = length(u, Some((prefix + grid.rows * grid.cols) * token))?;
            let (mut buffer, offset) = framed(u, len)?;
            let before = bits(&buffer);
            let r = table.rotate(
                &mut buffer[offset..offset + len],
                Shape::heads(heads).with_prefix(prefix),
                dir,
            );
            let valid = tokens_ok(len, heads, head_dim, prefix + grid.rows * grid.cols);
            check(r, valid, &before, &buffer, offset, len, prefix * token);
        }
        1 => {
            let n = u.int_in_range(0..=6)?;
            let positions: Vec<GridPos> = (0..n)
                .map(|_| Ok(GridPos::new(u.int_in_range(0..=6)?, u.int_in_range(0..=6)?)))
                .collect::<Result<_>>()?;
            let inside = positions
                .iter()
                .all(|p| (p.row as usize) < grid.rows && (p.col as usize) < grid.cols);
            let len = length(u, Some((prefix + n) * token))?;
            let (mut buffer, offset) = framed(u, len)?;
            let before = bits(&buffer);
            let r = table.rotate_at(
                &mut buffer[offset..offset + len],
                Shape::heads(heads).with_prefix(prefix),
                &positions,
                dir,
            );
            let valid = inside && tokens_ok(len, heads, head_dim, prefix + n);
            check(r, valid, &before, &buffer, offset, len, prefix * token);
        }
        2 => {
            let len = length(u, Some(head_dim))?;
            let pos = GridPos::new(u.int_in_range(0..=6)?, u.int_in_range(0..=6)?);
            let (mut buffer, offset) = framed(u, len)?;
            let before = bits(&buffer);
            let r = table.rotate_head(&mut buffer[offset..offset + len], pos, dir);
            let valid =
                len == head_dim && (pos.row as usize) < grid.rows && (pos.col as usize) < grid.cols;
            check(r, valid, &before, &buffer, offset, len, 0);
        }
        _ => {
            let expected = (prefix + grid.rows * grid.cols) * token;
            let (len_q, len_k) = (length(u, Some(expected))?, length(u, Some(expected))?);
            let (mut q, off_q) = framed(u, len_q)?;
            let (mut k, off_k) = framed(u, len_k)?;
            let (before_q, before_k) = (bits(&q), bits(&k));
            let r = table.rotate_qk(
                &mut q[off_q..off_q + len_q],
                &mut k[off_k..off_k + len_k],
                Shape::heads(heads).with_prefix(prefix),
                dir,
            );
            let tokens = prefix + grid.rows * grid.cols;
            let valid = tokens_ok(len_q, heads, head_dim, tokens)
                && tokens_ok(len_k, heads, head_dim, tokens);
            check(r, valid, &before_q, &q, off_q, len_q, prefix * token);
            check(r, valid, &before_k, &k, off_k, len_k, prefix * token);
        }
    }
    Ok(())
}

fn rope1d(u: &mut Unstructured<'_>, backend: Backend) -> Result<()> {
    let head_dim = u.int_in_range(0..=20)?;
    let positions_len = u.int_in_range(0..=40)?;
    let precision = if u.arbitrary()? {
        AnglePrecision::Exact
    } else {
        AnglePrecision::Float32
    };
    let config = Rope1d::new(layout(u)?, float(u, &[10_000.0, 500_000.0])?)
        .with_freq_scale(float(u, &[1.0, 0.25])?)
        .with_precision(precision);
    let shape_ok = head_dim > 0 && head_dim % 2 == 0 && positions_len > 0;
    let entries = positions_len * (head_dim / 2);
    assert_eq!(
        Rope1dTableRef::storage_len(head_dim, positions_len).ok(),
        shape_ok.then_some(entries)
    );
    let storage_len = length(u, Some(entries))?;
    let mut storage = vec![[SENTINEL; 2]; storage_len];
    let built = Rope1dTableRef::build(&mut storage, &config, head_dim, positions_len);
    let valid = shape_ok
        && storage_len == entries
        && base_valid(config.base)
        && scale_valid(config.freq_scale);
    assert_eq!(built.is_ok(), valid, "{built:?}");
    let Ok(table) = built else {
        assert!(storage.iter().all(|e| *e == [SENTINEL; 2]));
        return Ok(());
    };
    let table = table.with_backend(backend).unwrap();
    let heads = u.int_in_range(0..=3)?;
    let prefix = u.int_in_range(0..=2)?;
    let token = heads * head_dim;
    let dir = direction(u)?;
    let start: u32 = if u.arbitrary()? {
        u.int_in_range(0..=45)?
    } else {
        u.arbitrary()?
    };
    let tokens = prefix + u.int_in_range(0..=5)?;
    let len = length(u, Some(tokens * token))?;
    let (mut buffer, offset) = framed(u, len)?;
    let before = bits(&buffer);
    let shape = Shape::heads(heads).with_prefix(prefix);
    if u.arbitrary()? {
        let r = table.rotate(&mut buffer[offset..offset + len], shape, start, dir);
        let valid = heads > 0 && len % token == 0 && len / token >= prefix && {
            let n = (len / token - prefix) as u64;
            n == 0 || u64::from(start) + n <= positions_len as u64
        };
        check(r, valid, &before, &buffer, offset, len, prefix * token);
    } else {
        let n = u.int_in_range(0..=5)?;
        let positions: Vec<u32> = (0..n)
            .map(|_| u.int_in_range(0..=45))
            .collect::<Result<_>>()?;
        let r = table.rotate_at(&mut buffer[offset..offset + len], shape, &positions, dir);
        let valid = positions.iter().all(|&p| (p as usize) < positions_len)
            && tokens_ok(len, heads, head_dim, prefix + n);
        check(r, valid, &before, &buffer, offset, len, prefix * token);
    }
    Ok(())
}

fn mixed(u: &mut Unstructured<'_>, backend: Backend) -> Result<()> {
    let head_dim = u.int_in_range(0..=12)?;
    let heads = u.int_in_range(0..=3)?;
    let grid = Grid::new(u.int_in_range(0..=4)?, u.int_in_range(0..=4)?);
    let config = Mixed2d {
        layout: layout(u)?,
        coords: coords(u)?,
    };
    let width = heads * (head_dim / 2);
    let frequencies = |u: &mut Unstructured<'_>| -> Result<Vec<f32>> {
        let n = length(u, Some(width))?.min(64);
        (0..n)
            .map(|_| Ok(float(u, &[0.5, -1.25, 0.0, 3.0])? as f32))
            .collect()
    };
    let (x, y) = (frequencies(u)?, frequencies(u)?);
    let shape_ok = head_dim > 0 && head_dim % 2 == 0 && heads > 0 && grid.rows > 0 && grid.cols > 0;
    let entries = (grid.rows + grid.cols) * width;
    let storage_len = length(u, Some(entries))?;
    let mut storage = vec![[SENTINEL; 2]; storage_len];
    let built = MixedTableRef::build(
        &mut storage,
        &config,
        head_dim,
        grid,
        LearnedFreqs {
            heads,
            x: &x,
            y: &y,
        },
    );
    let finite = |v: &[f32]| v.iter().all(|f| f.is_finite() && f.abs() < 4_294_967_296.0);
    let valid = shape_ok
        && storage_len == entries
        && x.len() == width
        && y.len() == width
        && finite(&x)
        && finite(&y)
        && coords_valid(config.coords);
    assert_eq!(built.is_ok(), valid, "{built:?}");
    let Ok(table) = built else {
        assert!(storage.iter().all(|e| *e == [SENTINEL; 2]));
        return Ok(());
    };
    let table = table.with_backend(backend).unwrap();
    let buffer_heads = if u.ratio(3, 4)? {
        heads
    } else {
        u.int_in_range(0..=4)?
    };
    let prefix = u.int_in_range(0..=2)?;
    let token = buffer_heads * head_dim;
    let dir = direction(u)?;
    if u.arbitrary()? {
        let len = length(u, Some((prefix + grid.rows * grid.cols) * token))?;
        let (mut buffer, offset) = framed(u, len)?;
        let before = bits(&buffer);
        let r = table.rotate(
            &mut buffer[offset..offset + len],
            Shape::heads(buffer_heads).with_prefix(prefix),
            dir,
        );
        let valid = buffer_heads == heads
            && tokens_ok(len, buffer_heads, head_dim, prefix + grid.rows * grid.cols);
        check(r, valid, &before, &buffer, offset, len, prefix * token);
    } else {
        let head_index = u.int_in_range(0..=4)?;
        let pos = GridPos::new(u.int_in_range(0..=5)?, u.int_in_range(0..=5)?);
        let len = length(u, Some(head_dim))?;
        let (mut buffer, offset) = framed(u, len)?;
        let before = bits(&buffer);
        let r = table.rotate_head(&mut buffer[offset..offset + len], head_index, pos, dir);
        let valid = head_index < heads
            && len == head_dim
            && (pos.row as usize) < grid.rows
            && (pos.col as usize) < grid.cols;
        check(r, valid, &before, &buffer, offset, len, 0);
    }
    Ok(())
}

fn direct_axial(u: &mut Unstructured<'_>, backend: Backend) -> Result<()> {
    let head_dim = u.int_in_range(0..=20)?;
    let order = if u.arbitrary()? {
        AxisOrder::ColFirst
    } else {
        AxisOrder::RowFirst
    };
    let config = Axial2d::new(layout(u)?, order, float(u, &[100.0, 10_000.0])?)
        .with_freq_scale(float(u, &[1.0])?);
    let built = AxialDirect::new(&config, head_dim);
    let valid = head_dim > 0
        && head_dim % 4 == 0
        && base_valid(config.base)
        && scale_valid(config.freq_scale);
    assert_eq!(built.is_ok(), valid);
    let Ok(rotor) = built else { return Ok(()) };
    let rotor = rotor.with_backend(backend).unwrap();
    let heads = u.int_in_range(0..=2)?;
    let prefix = u.int_in_range(0..=1)?;
    let n = u.int_in_range(0..=4)?;
    let coords: Vec<Coord> = (0..n)
        .map(|_| {
            Ok(Coord {
                row: float(u, &[0.0, 3.5, -1e6, 16_777_217.0])? as f32,
                col: float(u, &[0.25, -2.0])? as f32,
            })
        })
        .collect::<Result<_>>()?;
    let token = heads * head_dim;
    let len = length(u, Some((prefix + n) * token))?;
    let (mut buffer, offset) = framed(u, len)?;
    let before = bits(&buffer);
    let r = rotor.rotate(
        &mut buffer[offset..offset + len],
        Shape::heads(heads).with_prefix(prefix),
        &coords,
        direction(u)?,
    );
    let finite = coords
        .iter()
        .all(|c| c.row.is_finite() && c.col.is_finite());
    check(
        r,
        finite && tokens_ok(len, heads, head_dim, prefix + n),
        &before,
        &buffer,
        offset,
        len,
        prefix * token,
    );
    Ok(())
}

fn direct_1d(u: &mut Unstructured<'_>, backend: Backend) -> Result<()> {
    let head_dim = u.int_in_range(0..=20)?;
    let precision = if u.arbitrary()? {
        AnglePrecision::Exact
    } else {
        AnglePrecision::Float32
    };
    let config = Rope1d::new(layout(u)?, float(u, &[10_000.0])?).with_precision(precision);
    let built = Rope1dDirect::new(&config, head_dim);
    let valid = head_dim > 0 && head_dim % 2 == 0 && base_valid(config.base);
    assert_eq!(built.is_ok(), valid);
    let Ok(rotor) = built else { return Ok(()) };
    let rotor = rotor.with_backend(backend).unwrap();
    let heads = u.int_in_range(0..=2)?;
    let token = heads * head_dim;
    let start: u32 = u.arbitrary()?;
    let tokens: usize = u.int_in_range(0..=4)?;
    let len = length(u, Some(tokens * token))?;
    let (mut buffer, offset) = framed(u, len)?;
    let before = bits(&buffer);
    let r = rotor.rotate(
        &mut buffer[offset..offset + len],
        Shape::heads(heads),
        start,
        direction(u)?,
    );
    let valid = heads > 0 && len % token == 0 && {
        let n = (len / token) as u64;
        n == 0 || u64::from(start) + n <= 1 << 32
    };
    check(r, valid, &before, &buffer, offset, len, 0);
    Ok(())
}
