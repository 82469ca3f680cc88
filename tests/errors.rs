//! Every caller mistake each fallible entry point can see, and the exact error it returns.
//! Every case also checks that nothing was written: buffers and storage are unchanged.

use rope2d::{
    Axial2d, AxialDirect, AxialTable, AxialTableRef, Backend, Coord, Coords, Direction, Error,
    Grid, GridPos, LearnedFreqs, Mixed2d, MixedTable, MixedTableRef, Rope1d, Rope1dDirect,
    Rope1dTable, Rope1dTableRef, Shape,
};

const FWD: Direction = Direction::Forward;
const SENTINEL: f32 = 0.123;

fn buffer(len: usize) -> Vec<f32> {
    vec![SENTINEL; len]
}

fn untouched(x: &[f32]) -> bool {
    x.iter().all(|&v| v == SENTINEL)
}

#[test]
fn axial_table_shape_and_config_errors() {
    let grid = Grid::new(4, 3);
    assert_eq!(
        AxialTableRef::storage_len(0, grid),
        Err(Error::InvalidHeadDim {
            head_dim: 0,
            multiple_of: 4
        })
    );
    assert_eq!(
        AxialTableRef::storage_len(6, grid),
        Err(Error::InvalidHeadDim {
            head_dim: 6,
            multiple_of: 4
        })
    );
    assert_eq!(
        AxialTableRef::storage_len(8, Grid::new(0, 3)),
        Err(Error::EmptyTable)
    );
    assert_eq!(
        AxialTableRef::storage_len(8, Grid::new(3, 0)),
        Err(Error::EmptyTable)
    );
    assert_eq!(
        AxialTableRef::storage_len(8, Grid::new(usize::MAX, 2)),
        Err(Error::ShapeOverflow)
    );
    assert_eq!(AxialTableRef::storage_len(8, grid), Ok(14));

    let mut storage = vec![[7.0f32; 2]; 14];
    let mut short = vec![[7.0f32; 2]; 13];
    assert_eq!(
        AxialTableRef::build(&mut short, &Axial2d::ROPE_VIT, 8, grid).err(),
        Some(Error::StorageLength {
            expected: 14,
            actual: 13
        })
    );
    let bad = [
        (
            Axial2d::ROPE_VIT.with_freq_scale(f64::NAN),
            Error::InvalidFreqScale,
        ),
        (
            Axial2d::ROPE_VIT.with_freq_scale(0.0),
            Error::InvalidFreqScale,
        ),
        (
            Axial2d::ROPE_VIT.with_freq_scale(-1.0),
            Error::InvalidFreqScale,
        ),
        (
            Axial2d::ROPE_VIT.with_freq_scale(f64::INFINITY),
            Error::InvalidFreqScale,
        ),
        (
            Axial2d::ROPE_VIT.with_freq_scale(1e10),
            Error::InvalidFreqScale,
        ),
        (
            Axial2d {
                base: f64::NAN,
                ..Axial2d::ROPE_VIT
            },
            Error::InvalidBase,
        ),
        (
            Axial2d {
                base: f64::INFINITY,
                ..Axial2d::ROPE_VIT
            },
            Error::InvalidBase,
        ),
        (
            Axial2d {
                base: 1.0,
                ..Axial2d::ROPE_VIT
            },
            Error::InvalidBase,
        ),
        (
            Axial2d {
                base: 0.5,
                ..Axial2d::ROPE_VIT
            },
            Error::InvalidBase,
        ),
        (
            Axial2d {
                base: -100.0,
                ..Axial2d::ROPE_VIT
            },
            Error::InvalidBase,
        ),
        (
            Axial2d::EVA02.with_coords(Coords::Rescale {
                ref_rows: 0,
                ref_cols: 16,
            }),
            Error::InvalidRefGrid,
        ),
        (
            Axial2d::EVA02.with_coords(Coords::Rescale {
                ref_rows: 16,
                ref_cols: 0,
            }),
            Error::InvalidRefGrid,
        ),
    ];
    for (config, error) in bad {
        assert_eq!(
            AxialTableRef::build(&mut storage, &config, 8, grid).err(),
            Some(error),
            "{config:?}"
        );
        assert!(
            storage.iter().all(|e| *e == [7.0, 7.0]),
            "storage written on error"
        );
        assert_eq!(AxialTable::<8, 4, 3>::new(&config).err(), Some(error));
        // Tableless rotation has no grid, so no reference grid to check.
        if error != Error::InvalidRefGrid {
            assert_eq!(AxialDirect::new(&config, 8).err(), Some(error));
        }
    }
    assert_eq!(
        AxialDirect::new(&Axial2d::ROPE_VIT, 10).err(),
        Some(Error::InvalidHeadDim {
            head_dim: 10,
            multiple_of: 4
        })
    );
}

#[test]
fn axial_rotation_errors() {
    let table = AxialTable::<8, 2, 3>::new(&Axial2d::ROPE_VIT).unwrap();
    let shape = Shape::heads(2).with_prefix(1);
    let token = 2 * 8;

    let mut head = buffer(7);
    assert_eq!(
        table.rotate_head(&mut head, GridPos::new(0, 0), FWD),
        Err(Error::HeadLength {
            expected: 8,
            actual: 7
        })
    );
    let mut head = buffer(8);
    let outside = Error::GridPositionOutOfRange {
        row: 2,
        col: 0,
        rows: 2,
        cols: 3,
    };
    assert_eq!(
        table.rotate_head(&mut head, GridPos::new(2, 0), FWD),
        Err(outside)
    );
    let outside_col = Error::GridPositionOutOfRange {
        row: 0,
        col: 3,
        rows: 2,
        cols: 3,
    };
    assert_eq!(
        table.rotate_head(&mut head, GridPos::new(0, 3), FWD),
        Err(outside_col)
    );
    assert!(untouched(&head));

    let mut x = buffer(7 * token);
    assert_eq!(
        table.rotate(&mut x, Shape::heads(0), FWD),
        Err(Error::ZeroHeads)
    );
    let mut ragged = buffer(7 * token + 3);
    assert_eq!(
        table.rotate(&mut ragged, shape, FWD),
        Err(Error::BufferLength {
            actual: 7 * token + 3,
            token_len: token
        })
    );
    let mut short = buffer(6 * token);
    assert_eq!(
        table.rotate(&mut short, shape, FWD),
        Err(Error::TokenCount {
            expected: 7,
            actual: 6
        })
    );
    assert_eq!(
        table.rotate(&mut x, Shape::heads(2), FWD),
        Err(Error::TokenCount {
            expected: 6,
            actual: 7
        })
    );
    assert_eq!(
        table.rotate(&mut x, Shape::heads(2).with_prefix(usize::MAX), FWD),
        Err(Error::ShapeOverflow)
    );
    assert!(untouched(&x) && untouched(&ragged) && untouched(&short));

    let (mut q, mut k) = (buffer(7 * token), buffer(6 * token));
    assert_eq!(
        table.rotate_qk(&mut q, &mut k, shape, FWD),
        Err(Error::TokenCount {
            expected: 7,
            actual: 6
        })
    );
    assert!(
        untouched(&q) && untouched(&k),
        "q must not be rotated when k is invalid"
    );

    let positions = [GridPos::new(1, 2), GridPos::new(0, 0)];
    let mut x = buffer(3 * token);
    assert_eq!(
        table.rotate_at(&mut x, shape, &positions[..1], FWD),
        Err(Error::TokenCount {
            expected: 2,
            actual: 3
        })
    );
    let bad = [GridPos::new(1, 2), GridPos::new(5, 1)];
    let outside = Error::GridPositionOutOfRange {
        row: 5,
        col: 1,
        rows: 2,
        cols: 3,
    };
    assert_eq!(table.rotate_at(&mut x, shape, &bad, FWD), Err(outside));
    assert!(untouched(&x));
    assert_eq!(table.rotate_at(&mut x, shape, &positions, FWD), Ok(()));
    assert!(untouched(&x[..token]) && !untouched(&x[token..]));
}

#[test]
fn rope1d_errors() {
    assert_eq!(
        Rope1dTableRef::storage_len(0, 4),
        Err(Error::InvalidHeadDim {
            head_dim: 0,
            multiple_of: 2
        })
    );
    assert_eq!(
        Rope1dTableRef::storage_len(5, 4),
        Err(Error::InvalidHeadDim {
            head_dim: 5,
            multiple_of: 2
        })
    );
    assert_eq!(Rope1dTableRef::storage_len(6, 0), Err(Error::EmptyTable));
    assert_eq!(Rope1dTableRef::storage_len(6, 4), Ok(12));
    let mut storage = vec![[7.0f32; 2]; 11];
    assert_eq!(
        Rope1dTableRef::build(&mut storage, &Rope1d::LLAMA, 6, 4).err(),
        Some(Error::StorageLength {
            expected: 12,
            actual: 11
        })
    );
    let mut storage = vec![[7.0f32; 2]; 12];
    let bad_base = Rope1d {
        base: 0.0,
        ..Rope1d::LLAMA
    };
    assert_eq!(
        Rope1dTableRef::build(&mut storage, &bad_base, 6, 4).err(),
        Some(Error::InvalidBase)
    );
    assert!(storage.iter().all(|e| *e == [7.0, 7.0]));
    assert_eq!(
        Rope1dTable::<8, 4>::new(&bad_base).err(),
        Some(Error::InvalidBase)
    );
    assert_eq!(
        Rope1dDirect::new(&bad_base, 8).err(),
        Some(Error::InvalidBase)
    );
    assert_eq!(
        Rope1dDirect::new(&Rope1d::LLAMA, 3).err(),
        Some(Error::InvalidHeadDim {
            head_dim: 3,
            multiple_of: 2
        })
    );
    let scale = Rope1d::LLAMA.with_freq_scale(f64::NEG_INFINITY);
    assert_eq!(
        Rope1dTable::<8, 4>::new(&scale).err(),
        Some(Error::InvalidFreqScale)
    );

    let table = Rope1dTable::<8, 4>::new(&Rope1d::LLAMA).unwrap();
    let mut head = buffer(8);
    assert_eq!(
        table.rotate_head(&mut head, 4, FWD),
        Err(Error::PositionOutOfRange {
            position: 4,
            len: 4
        })
    );
    let mut x = buffer(3 * 8);
    assert_eq!(
        table.rotate(&mut x, Shape::heads(1), 2, FWD),
        Err(Error::PositionOutOfRange {
            position: 4,
            len: 4
        })
    );
    assert_eq!(
        table.rotate(&mut x, Shape::heads(1).with_prefix(4), 0, FWD),
        Err(Error::TokenCount {
            expected: 4,
            actual: 3
        })
    );
    assert_eq!(
        table.rotate(&mut x, Shape::heads(0), 0, FWD),
        Err(Error::ZeroHeads)
    );
    assert_eq!(
        table.rotate(&mut x, Shape::heads(2), 0, FWD),
        Err(Error::BufferLength {
            actual: 24,
            token_len: 16
        })
    );
    assert_eq!(
        table.rotate_at(&mut x, Shape::heads(1), &[0, 9, 1], FWD),
        Err(Error::PositionOutOfRange {
            position: 9,
            len: 4
        })
    );
    assert_eq!(
        table.rotate_at(&mut x, Shape::heads(1), &[0, 1], FWD),
        Err(Error::TokenCount {
            expected: 2,
            actual: 3
        })
    );
    let mut k = buffer(2 * 8);
    assert_eq!(
        table.rotate_qk(&mut x, &mut k, Shape::heads(1), 0, FWD),
        Err(Error::TokenCount {
            expected: 3,
            actual: 2
        })
    );
    assert!(untouched(&head) && untouched(&x) && untouched(&k));

    let rotor = Rope1dDirect::new(&Rope1d::NEOX, 8).unwrap();
    let mut x = buffer(3 * 8);
    let past = Error::PositionOutOfRange {
        position: u64::from(u32::MAX) + 1,
        len: 1 << 32,
    };
    assert_eq!(
        rotor.rotate(&mut x, Shape::heads(1), u32::MAX - 1, FWD),
        Err(past)
    );
    assert_eq!(
        rotor.rotate_qk(&mut x, &mut buffer(16), Shape::heads(1), 0, FWD),
        Err(Error::TokenCount {
            expected: 3,
            actual: 2
        })
    );
    assert_eq!(
        rotor.rotate_at(&mut x, Shape::heads(1), &[1, 2], FWD),
        Err(Error::TokenCount {
            expected: 2,
            actual: 3
        })
    );
    assert_eq!(
        rotor.rotate_head(&mut x, 0, FWD),
        Err(Error::HeadLength {
            expected: 8,
            actual: 24
        })
    );
    assert!(untouched(&x));
    assert_eq!(
        rotor.rotate(&mut x, Shape::heads(1), u32::MAX - 2, FWD),
        Ok(())
    );
}

#[test]
fn mixed_errors() {
    let grid = Grid::new(2, 2);
    assert_eq!(
        MixedTableRef::storage_len(7, 2, grid),
        Err(Error::InvalidHeadDim {
            head_dim: 7,
            multiple_of: 2
        })
    );
    assert_eq!(
        MixedTableRef::storage_len(8, 0, grid),
        Err(Error::EmptyTable)
    );
    assert_eq!(
        MixedTableRef::storage_len(8, 2, Grid::new(0, 2)),
        Err(Error::EmptyTable)
    );
    assert_eq!(MixedTableRef::storage_len(8, 2, grid), Ok(32));
    let fx = [0.5f32; 8];
    let fy = [0.25f32; 8];
    let mut storage = vec![[7.0f32; 2]; 32];
    let freqs = |x: &'static [f32], y: &'static [f32]| LearnedFreqs { heads: 2, x, y };
    let cases: [(LearnedFreqs<'_>, Error); 5] = [
        (
            freqs(&[0.5; 7], &[0.25; 8]),
            Error::FrequencyLength {
                expected: 8,
                actual: 7,
            },
        ),
        (
            freqs(&[0.5; 8], &[0.25; 9]),
            Error::FrequencyLength {
                expected: 8,
                actual: 9,
            },
        ),
        (
            freqs(&[0.5, f32::NAN, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5], &[0.25; 8]),
            Error::InvalidFrequency,
        ),
        (
            freqs(
                &[0.5; 8],
                &[0.25, 0.25, f32::INFINITY, 0.25, 0.25, 0.25, 0.25, 0.25],
            ),
            Error::InvalidFrequency,
        ),
        (
            freqs(&[0.5; 8], &[1e10, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25]),
            Error::InvalidFrequency,
        ),
    ];
    for (f, error) in cases {
        assert_eq!(
            MixedTableRef::build(&mut storage, &Mixed2d::ROPE_VIT, 8, grid, f).err(),
            Some(error)
        );
        assert!(storage.iter().all(|e| *e == [7.0, 7.0]));
        assert_eq!(
            MixedTable::<8, 2, 2, 2>::new(&Mixed2d::ROPE_VIT, f).err(),
            Some(error)
        );
    }
    let three = LearnedFreqs {
        heads: 3,
        x: &[0.5; 12],
        y: &[0.25; 12],
    };
    assert_eq!(
        MixedTable::<8, 2, 2, 2>::new(&Mixed2d::ROPE_VIT, three).err(),
        Some(Error::HeadCount {
            expected: 2,
            actual: 3
        })
    );
    let mut wrong = vec![[7.0f32; 2]; 31];
    let good = LearnedFreqs {
        heads: 2,
        x: &fx,
        y: &fy,
    };
    assert_eq!(
        MixedTableRef::build(&mut wrong, &Mixed2d::ROPE_VIT, 8, grid, good).err(),
        Some(Error::StorageLength {
            expected: 32,
            actual: 31
        })
    );
    let rescale = Mixed2d {
        coords: Coords::Rescale {
            ref_rows: 0,
            ref_cols: 1,
        },
        ..Mixed2d::ROPE_VIT
    };
    assert_eq!(
        MixedTableRef::build(&mut storage, &rescale, 8, grid, good).err(),
        Some(Error::InvalidRefGrid)
    );

    let table = MixedTable::<8, 2, 2, 2>::new(&Mixed2d::ROPE_VIT, good).unwrap();
    let mut head = buffer(8);
    assert_eq!(
        table.rotate_head(&mut head, 2, GridPos::new(0, 0), FWD),
        Err(Error::HeadCount {
            expected: 2,
            actual: 2
        })
    );
    let outside = Error::GridPositionOutOfRange {
        row: 0,
        col: 2,
        rows: 2,
        cols: 2,
    };
    assert_eq!(
        table.rotate_head(&mut head, 1, GridPos::new(0, 2), FWD),
        Err(outside)
    );
    let mut x = buffer(4 * 3 * 8);
    assert_eq!(
        table.rotate(&mut x, Shape::heads(3), FWD),
        Err(Error::HeadCount {
            expected: 2,
            actual: 3
        })
    );
    let mut x = buffer(5 * 2 * 8);
    assert_eq!(
        table.rotate(&mut x, Shape::heads(2), FWD),
        Err(Error::TokenCount {
            expected: 4,
            actual: 5
        })
    );
    assert_eq!(
        table.rotate_at(&mut x, Shape::heads(2), &[GridPos::new(0, 0)], FWD),
        Err(Error::TokenCount {
            expected: 1,
            actual: 5
        })
    );
    let mut k = buffer(5 * 2 * 8);
    assert_eq!(
        table.rotate_qk(&mut x, &mut k, Shape::heads(2).with_prefix(1), FWD),
        Ok(())
    );
    assert!(untouched(&head));
    assert!(untouched(&x[..16]) && !untouched(&x[16..]) && !untouched(&k[16..]));
}

#[test]
fn direct_axial_errors() {
    let rotor = AxialDirect::new(&Axial2d::DINOV3, 8).unwrap();
    let mut head = buffer(8);
    for bad in [
        Coord {
            row: f32::NAN,
            col: 0.0,
        },
        Coord {
            row: 0.0,
            col: f32::INFINITY,
        },
    ] {
        assert_eq!(
            rotor.rotate_head(&mut head, bad, FWD),
            Err(Error::NonFiniteCoordinate)
        );
    }
    let mut x = buffer(3 * 8);
    let coords = [
        Coord::default(),
        Coord {
            row: 1.5,
            col: -2.0,
        },
    ];
    assert_eq!(
        rotor.rotate(&mut x, Shape::heads(1), &coords, FWD),
        Err(Error::TokenCount {
            expected: 2,
            actual: 3
        })
    );
    let mut k = buffer(2 * 8);
    let mut q = buffer(2 * 8);
    let bad = [
        Coord::default(),
        Coord {
            row: f32::NEG_INFINITY,
            col: 0.0,
        },
    ];
    assert_eq!(
        rotor.rotate_qk(&mut q, &mut k, Shape::heads(1), &bad, FWD),
        Err(Error::NonFiniteCoordinate)
    );
    assert!(untouched(&head) && untouched(&x) && untouched(&q) && untouched(&k));
    assert_eq!(
        rotor.rotate(&mut x, Shape::heads(1).with_prefix(1), &coords, FWD),
        Ok(())
    );
}

#[test]
fn backend_choice() {
    for &backend in Backend::ALL {
        let table = AxialTable::<8, 2, 2>::new(&Axial2d::ROPE_VIT).unwrap();
        match table.with_backend(backend) {
            Ok(t) => assert!(backend.is_available() && t.view().backend() == backend),
            Err(e) => assert!(!backend.is_available() && e == Error::BackendUnavailable),
        }
    }
    assert!(Backend::Scalar.is_available());
    assert!(Backend::auto().is_available());
}

#[test]
fn errors_display_and_debug() {
    let all = [
        Error::InvalidBase,
        Error::InvalidFreqScale,
        Error::InvalidFrequency,
        Error::InvalidHeadDim {
            head_dim: 6,
            multiple_of: 4,
        },
        Error::EmptyTable,
        Error::InvalidRefGrid,
        Error::StorageLength {
            expected: 1,
            actual: 2,
        },
        Error::FrequencyLength {
            expected: 1,
            actual: 2,
        },
        Error::ZeroHeads,
        Error::HeadLength {
            expected: 1,
            actual: 2,
        },
        Error::BufferLength {
            actual: 1,
            token_len: 2,
        },
        Error::TokenCount {
            expected: 1,
            actual: 2,
        },
        Error::PositionOutOfRange {
            position: 1,
            len: 2,
        },
        Error::GridPositionOutOfRange {
            row: 1,
            col: 2,
            rows: 1,
            cols: 1,
        },
        Error::HeadCount {
            expected: 1,
            actual: 2,
        },
        Error::NonFiniteCoordinate,
        Error::ShapeOverflow,
        Error::BackendUnavailable,
    ];
    for e in all {
        assert!(!e.to_string().is_empty());
    }
}

/// The limits of the fixed-point construction (65 535 frequencies per axis; grid sides of
/// 65 535 when coordinates are divided by the side), checked on both sides of each limit.
#[test]
fn construction_limits() {
    // Axial: d/4 frequencies, 1-D: d/2.
    assert!(AxialDirect::new(&Axial2d::ROPE_VIT, 4 * 65_535).is_ok());
    assert_eq!(
        AxialDirect::new(&Axial2d::ROPE_VIT, 4 * 65_536).err(),
        Some(Error::ShapeOverflow)
    );
    assert!(Rope1dDirect::new(&Rope1d::LLAMA, 2 * 65_535).is_ok());
    assert_eq!(
        Rope1dDirect::new(&Rope1d::LLAMA, 2 * 65_536).err(),
        Some(Error::ShapeOverflow)
    );
    // Tables at the limits have 65 536 entries, minutes under Miri: it stops here.
    if cfg!(miri) {
        return;
    }
    let mut storage = vec![[7.0f32; 2]; 65_536];
    assert_eq!(
        Rope1dTableRef::build(&mut storage, &Rope1d::NEOX, 2 * 65_536, 1).err(),
        Some(Error::ShapeOverflow)
    );
    assert!(
        storage.iter().all(|e| *e == [7.0, 7.0]),
        "storage written on error"
    );

    // A grid side of 65 536 is fine with index coordinates, too large when divided by.
    let wide = Grid::new(1, 65_536);
    let entries = AxialTableRef::storage_len(4, wide).unwrap();
    let mut storage = vec![[7.0f32; 2]; entries];
    assert!(AxialTableRef::build(&mut storage, &Axial2d::ROPE_VIT, 4, wide).is_ok());
    for coords in [
        Coords::Centered,
        Coords::Rescale {
            ref_rows: 16,
            ref_cols: 16,
        },
    ] {
        let config = Axial2d::ROPE_VIT.with_coords(coords);
        let mut storage = vec![[7.0f32; 2]; entries];
        assert_eq!(
            AxialTableRef::build(&mut storage, &config, 4, wide).err(),
            Some(Error::ShapeOverflow),
            "{coords:?}"
        );
        assert!(
            storage.iter().all(|e| *e == [7.0, 7.0]),
            "storage written on error"
        );
        let side = Grid::new(1, 65_535);
        let mut storage = vec![[7.0f32; 2]; AxialTableRef::storage_len(4, side).unwrap()];
        assert!(AxialTableRef::build(&mut storage, &config, 4, side).is_ok());
    }
}
