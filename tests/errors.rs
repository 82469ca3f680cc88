//! Every error case: each is reported as its `Error` variant and leaves every buffer (and
//! table storage) untouched.

use rope2d::{
    AnglePrecision, Backend, Coords, Direct, Direction, Error, FixedTable, FreqIndex, Freqs, Grid,
    Layout, LearnedFreqs, PerPair, Piece, Q15Table, Run, Section, Sections, Shape, Spec, Summed,
    Table,
    preset::{self, HfRope, HfScaling},
};

const FWD: Direction = Direction::Forward;
const SENTINEL: f32 = 0.123;

fn buffer(len: usize) -> Vec<f32> {
    vec![SENTINEL; len]
}

fn untouched(x: &[f32]) -> bool {
    x.iter().all(|&v| v == SENTINEL)
}

fn sections<const A: usize>(sections: [Section; A]) -> Sections<A> {
    Sections {
        sections,
        index: FreqIndex::PerSection,
    }
}

fn base() -> Freqs<'static> {
    Freqs::Base {
        base: 100.0,
        freq_scale: 1.0,
    }
}

#[test]
fn spec_errors() {
    let ok = preset::rope_vit(16);
    assert_eq!(ok.check(), Ok(()));
    // Rotary dimension: no pairs, or more than the head holds.
    let empty = Spec::new(16, Layout::Half, sections([Section::new(0, 0)]), base());
    assert_eq!(
        empty.check(),
        Err(Error::RotaryDim {
            pairs: 0,
            head_dim: 16
        })
    );
    let wide = Spec::new(6, Layout::Half, sections([Section::new(0, 4)]), base());
    assert_eq!(
        wide.check(),
        Err(Error::RotaryDim {
            pairs: 4,
            head_dim: 6
        })
    );
    // Axes.
    let axis = Spec::new(
        8,
        Layout::Half,
        sections([Section::new(2, 2), Section::new(0, 2)]),
        base(),
    );
    assert_eq!(axis.check(), Err(Error::InvalidAxis { axis: 2, axes: 2 }));
    let axes = [0u8, 1, 3];
    let per_pair = Spec::<2, _>::new(8, Layout::Half, PerPair { axes: &axes }, base());
    assert_eq!(
        per_pair.check(),
        Err(Error::InvalidAxis { axis: 3, axes: 2 })
    );
    // Frequencies.
    for (b, s, e) in [
        (1.0, 1.0, Error::InvalidBase),
        (f64::NAN, 1.0, Error::InvalidBase),
        (0.5, 1.0, Error::InvalidBase),
        (100.0, 0.0, Error::InvalidFreqScale),
        (100.0, -1.0, Error::InvalidFreqScale),
        (100.0, f64::INFINITY, Error::InvalidFreqScale),
        (100.0, 5e9, Error::InvalidFreqScale),
    ] {
        let spec = Spec {
            freqs: Freqs::Base {
                base: b,
                freq_scale: s,
            },
            ..ok
        };
        assert_eq!(spec.check(), Err(e), "{b} {s}");
    }
    let short = [1.0; 3];
    let spec = Spec {
        freqs: Freqs::Explicit(&short),
        ..ok
    };
    assert_eq!(
        spec.check(),
        Err(Error::FrequencyLength {
            expected: 8,
            actual: 3
        })
    );
    for bad in [f64::NAN, f64::INFINITY, 5e9] {
        let mut values = [0.5; 8];
        values[3] = bad;
        let spec = Spec {
            freqs: Freqs::Explicit(&values),
            ..ok
        };
        assert_eq!(spec.check(), Err(Error::InvalidFrequency), "{bad}");
    }
    // Learned frequencies go with the summed plan only.
    let f = [0.5f32; 16];
    let learned = Freqs::Learned(LearnedFreqs { x: &f, y: &f });
    assert_eq!(
        Spec {
            freqs: learned,
            ..ok
        }
        .check(),
        Err(Error::PlanMismatch)
    );
    let summed = Spec::new(
        16,
        Layout::Interleaved,
        Summed { heads: 2, pairs: 8 },
        base(),
    );
    assert_eq!(summed.check(), Err(Error::PlanMismatch));
    let mixed = preset::rope_mixed(16, 2, LearnedFreqs { x: &f[..15], y: &f });
    assert_eq!(
        mixed.check(),
        Err(Error::FrequencyLength {
            expected: 16,
            actual: 15
        })
    );
    let mut nan = f;
    nan[9] = f32::NAN;
    let mixed = preset::rope_mixed(16, 2, LearnedFreqs { x: &f, y: &nan });
    assert_eq!(mixed.check(), Err(Error::InvalidFrequency));
    let zero_heads = preset::rope_mixed(16, 0, LearnedFreqs { x: &[], y: &[] });
    assert_eq!(zero_heads.check(), Err(Error::ZeroHeads));
    // Magnitude and coordinates.
    for m in [0.0, -1.0, f32::NAN, f32::INFINITY] {
        assert_eq!(ok.with_mscale(m).check(), Err(Error::InvalidMscale), "{m}");
    }
    let rescale = ok.with_coords([Coords::Rescale { reference: 0 }, Coords::Index]);
    assert_eq!(rescale.check(), Err(Error::InvalidRefGrid));
    let linspace = ok.with_coords([
        Coords::Index,
        Coords::Linspace {
            start: 0.0,
            stop: f32::NAN,
        },
    ]);
    assert_eq!(linspace.check(), Err(Error::NonFiniteCoordinate));
    // Finite ends whose difference overflows: every coordinate but the ends would be NaN.
    let wide = ok.with_coords([
        Coords::Index,
        Coords::Linspace {
            start: -3e38,
            stop: 3e38,
        },
    ]);
    assert_eq!(wide.check(), Err(Error::NonFiniteCoordinate));
    let mut storage = vec![[7.0f32; 2]; Table::storage_len(&ok, [2, 3]).unwrap()];
    assert_eq!(
        Table::build(&mut storage, &wide, [2, 3]).err(),
        Some(Error::NonFiniteCoordinate)
    );
    assert!(storage.iter().flatten().all(|&v| v == 7.0));
}

/// `Table::entries` is `None` outside the extents, on an axis that rotates no pairs too
/// (whose table is empty).
#[test]
fn entries_outside_the_table_are_none() {
    let spec = Spec::new(
        16,
        Layout::Half,
        sections([Section::new(0, 8), Section::new(1, 0)]),
        base(),
    );
    let mut storage = vec![[0f32; 2]; Table::storage_len(&spec, [3, 4]).unwrap()];
    let table = Table::build(&mut storage, &spec, [3, 4]).unwrap();
    assert_eq!(table.entries(0, 2).map(<[_]>::len), Some(8));
    assert_eq!(table.entries(1, 3), Some(&[][..]));
    for (axis, index) in [(0, 3), (1, 4), (1, 1_000_000), (2, 0), (0, usize::MAX)] {
        assert_eq!(table.entries(axis, index), None, "{axis} {index}");
    }
}

#[test]
fn table_errors_leave_storage_untouched() {
    let spec = preset::rope_vit(16);
    assert_eq!(Table::storage_len(&spec, [3, 4]), Ok((3 + 4) * 4));
    assert_eq!(Table::storage_len(&spec, [0, 4]), Err(Error::EmptyTable));
    assert_eq!(
        Table::storage_len(&spec, [usize::MAX, 4]),
        Err(Error::ShapeOverflow)
    );
    let mut storage = vec![[7.0f32; 2]; 27];
    assert_eq!(
        Table::build(&mut storage, &spec, [3, 4]).err(),
        Some(Error::StorageLength {
            expected: 28,
            actual: 27
        })
    );
    assert!(storage.iter().flatten().all(|&v| v == 7.0));
    let bad = Spec {
        freqs: Freqs::Base {
            base: 1.0,
            freq_scale: 1.0,
        },
        ..spec
    };
    let mut storage = vec![[7.0f32; 2]; 28];
    assert_eq!(
        Table::build(&mut storage, &bad, [3, 4]).err(),
        Some(Error::InvalidBase)
    );
    assert!(
        storage.iter().all(|e| *e == [7.0, 7.0]),
        "storage written on error"
    );
    assert_eq!(
        FixedTable::<27, 2>::new(&spec, [3, 4]).err(),
        Some(Error::StorageLength {
            expected: 28,
            actual: 27
        })
    );
    assert!(FixedTable::<28, 2>::new(&spec, [3, 4]).is_ok());
    assert_eq!(spec.plan.table_len([3, 4]), 28);
    // An empty axis: every constructor refuses it, storage untouched.
    let mut storage = vec![[7.0f32; 2]; 16];
    assert_eq!(
        Table::build(&mut storage, &spec, [0, 4]).err(),
        Some(Error::EmptyTable)
    );
    assert!(storage.iter().all(|e| *e == [7.0, 7.0]));
    let mut q15 = vec![[7i16; 2]; 16];
    assert_eq!(
        Q15Table::build(&mut q15, &spec, [4, 0]).err(),
        Some(Error::EmptyTable)
    );
    assert!(q15.iter().all(|e| *e == [7, 7]));
    assert_eq!(
        FixedTable::<16, 2>::new(&spec, [0, 4]).err(),
        Some(Error::EmptyTable)
    );
}

#[test]
fn rotation_errors_leave_buffers_untouched() {
    let spec = preset::rope_vit(16);
    let mut storage = vec![[0f32; 2]; 28];
    let table = Table::build(&mut storage, &spec, [3, 4]).unwrap();
    let grid = Grid::new([3, 4]);
    let token = 2 * 16;
    let cases: Vec<(Vec<f32>, Shape, Error)> = vec![
        (buffer(12 * token), Shape::heads(0), Error::ZeroHeads),
        (
            buffer(12 * token + 1),
            Shape::heads(2),
            Error::BufferLength {
                actual: 12 * token + 1,
                token_len: token,
            },
        ),
        (
            buffer(11 * token),
            Shape::heads(2),
            Error::TokenCount {
                expected: 12,
                actual: 11,
            },
        ),
        (
            buffer(12 * token),
            Shape::heads(2).with_prefix(1),
            Error::TokenCount {
                expected: 13,
                actual: 12,
            },
        ),
    ];
    for (mut x, shape, error) in cases {
        assert_eq!(table.rotate(&mut x, shape, grid, FWD), Err(error));
        assert!(untouched(&x), "{error:?}");
    }
    // A bare run takes every token after the prefix: a prefix longer than the buffer is
    // refused, one as long leaves nothing to rotate.
    let run = rope2d::Run::from([0, 0]);
    let mut x = buffer(3 * token);
    assert_eq!(
        table.rotate(&mut x, Shape::heads(2).with_prefix(4), run, FWD),
        Err(Error::TokenCount {
            expected: 4,
            actual: 3
        })
    );
    assert!(untouched(&x));
    assert_eq!(
        table.rotate(&mut x, Shape::heads(2).with_prefix(3), run, FWD),
        Ok(())
    );
    assert!(untouched(&x));
    // A token length past `usize::MAX`.
    assert_eq!(
        table.rotate(&mut x, Shape::heads(usize::MAX / 8), grid, FWD),
        Err(Error::ShapeOverflow)
    );
    assert!(untouched(&x));
    // Positions outside the table: a larger grid, a list, a run, pieces.
    let mut x = buffer(15 * token);
    assert_eq!(
        table.rotate(&mut x, Shape::heads(2), Grid::new([3, 5]), FWD),
        Err(Error::PositionOutOfRange {
            axis: 1,
            value: 4,
            extent: 4
        })
    );
    // The grid's lines inside the table are not rotated either.
    assert!(untouched(&x));
    let list = [[0u32, 0], [2, 3], [3, 0]];
    let mut x = buffer(3 * token);
    assert_eq!(
        table.rotate_at(&mut x, Shape::heads(2), &list, FWD),
        Err(Error::PositionOutOfRange {
            axis: 0,
            value: 3,
            extent: 3
        })
    );
    assert_eq!(
        table.rotate(
            &mut x,
            Shape::heads(2),
            Run {
                start: [0, 2],
                step: [1, 1]
            },
            FWD
        ),
        Err(Error::PositionOutOfRange {
            axis: 1,
            value: 4,
            extent: 4
        })
    );
    let pieces = [Piece::Grid {
        grid: Grid::new([3, 4]).at([1, 0]),
        repeat: 1,
    }];
    let mut y = buffer(12 * token);
    assert_eq!(
        table.rotate(&mut y, Shape::heads(2), &pieces[..], FWD),
        Err(Error::PositionOutOfRange {
            axis: 0,
            value: 3,
            extent: 3
        })
    );
    let windows = [Piece::Windows {
        grid: Grid::new([2, 2]),
        window: 0,
        repeat: 1,
    }];
    let mut w = buffer(4 * token);
    assert_eq!(
        table.rotate(&mut w, Shape::heads(2), &windows[..], FWD),
        Err(Error::EmptyTable)
    );
    // The presets' merge size of 0 is that window.
    let windows = preset::qwen2_vl_vision_positions([1, 2, 2], 0);
    assert_eq!(
        table.rotate(&mut w, Shape::heads(2), &windows[..], FWD),
        Err(Error::EmptyTable)
    );
    assert!(untouched(&x) && untouched(&y) && untouched(&w));
    let spec = preset::qwen2_vl_mrope(16, 10_000.0, [2, 3, 3]);
    let mut storage = vec![[0f32; 2]; Table::storage_len(&spec, [8; 3]).unwrap()];
    let mrope = Table::build(&mut storage, &spec, [8; 3]).unwrap();
    let (image, next) = preset::mrope_image(1, [1, 4, 4], 0);
    assert_eq!(next, 1);
    let mut m = buffer(16 * 16);
    assert_eq!(
        mrope.rotate(&mut m, Shape::heads(1), &[image][..], FWD),
        Err(Error::EmptyTable)
    );
    assert!(untouched(&m));
    // q and k: neither is touched unless both are valid.
    let (mut q, mut k) = (buffer(12 * token), buffer(12 * token - 1));
    assert_eq!(
        table.rotate_qk(&mut q, &mut k, Shape::heads(2), grid, FWD),
        Err(Error::BufferLength {
            actual: 12 * token - 1,
            token_len: token
        })
    );
    assert!(untouched(&q) && untouched(&k));
    // A bare run takes every token of a buffer, but q and k must still hold as many.
    let (mut q, mut k) = (buffer((1 + 3) * token), buffer((1 + 2) * token));
    let run = Run::from([0, 0]);
    let prefixed = Shape::heads(2).with_prefix(1);
    assert_eq!(
        table.rotate_qk(&mut q, &mut k, prefixed, run, FWD),
        Err(Error::TokenCount {
            expected: 4,
            actual: 3
        })
    );
    assert_eq!(
        table.rotate_qk(&mut k, &mut q, prefixed, run, FWD),
        Err(Error::TokenCount {
            expected: 3,
            actual: 4
        })
    );
    assert!(untouched(&q) && untouched(&k));
    let mut k = buffer((1 + 3) * token);
    assert_eq!(table.rotate_qk(&mut q, &mut k, prefixed, run, FWD), Ok(()));
    assert!(!untouched(&q) && q == k);
    // One head.
    let mut head = buffer(15);
    assert_eq!(
        table.rotate_head(&mut head, [0, 0], FWD),
        Err(Error::HeadLength {
            expected: 16,
            actual: 15
        })
    );
    let mut head = buffer(16);
    assert_eq!(
        table.rotate_head(&mut head, [0, 4], FWD),
        Err(Error::PositionOutOfRange {
            axis: 1,
            value: 4,
            extent: 4
        })
    );
    assert!(untouched(&head));
    // RoPE-Mixed: the buffer's heads must be the frequencies' heads.
    let f = [0.25f32; 16];
    let mixed = preset::rope_mixed(16, 2, LearnedFreqs { x: &f, y: &f });
    let mut storage = vec![[0f32; 2]; Table::storage_len(&mixed, [3, 4]).unwrap()];
    let table = Table::build(&mut storage, &mixed, [3, 4]).unwrap();
    let mut x = buffer(12 * 3 * 16);
    assert_eq!(
        table.rotate(&mut x, Shape::heads(3), grid, FWD),
        Err(Error::HeadCount {
            expected: 2,
            actual: 3
        })
    );
    let mut head = buffer(16);
    assert_eq!(
        table.rotate_head(&mut head, [0, 0], FWD),
        Err(Error::HeadCount {
            expected: 2,
            actual: 1
        })
    );
    assert!(untouched(&x) && untouched(&head));
}

#[test]
fn direct_errors() {
    assert_eq!(
        Direct::new(&preset::dinov3(16)).err(),
        Some(Error::TableCoords)
    );
    let direct = Direct::new(&preset::llama(16)).unwrap();
    let mut x = buffer(2 * 16);
    // Integer positions are never out of range, but a run past u32::MAX is.
    assert_eq!(
        direct.rotate(&mut x, Shape::heads(1), Run::from([u32::MAX]), FWD),
        Err(Error::PositionOutOfRange {
            axis: 0,
            value: 1 << 32,
            extent: usize::try_from(1u64 << 32).unwrap_or(usize::MAX)
        })
    );
    assert!(
        direct
            .rotate(&mut x, Shape::heads(2), Run::from([u32::MAX]), FWD)
            .is_ok()
    );
    let mut y = buffer(2 * 16);
    let coords = [[1.5f32], [f32::INFINITY]];
    assert_eq!(
        direct.rotate_coords(&mut y, Shape::heads(1), &coords, FWD),
        Err(Error::NonFiniteCoordinate)
    );
    assert_eq!(
        direct.rotate_coords(&mut y, Shape::heads(1), &coords[..1], FWD),
        Err(Error::TokenCount {
            expected: 1,
            actual: 2
        })
    );
    assert!(untouched(&y));
}

/// With float32 angles, a coordinate of magnitude 2⁹⁶ or more is refused: its angle `fl(c · f)`
/// could overflow (it would be reduced as angle 0, where the reference code's cos/sin are NaN).
/// Exact angles reduce it.
#[test]
fn float32_angles_that_could_overflow_are_refused() {
    // The largest frequency a spec may have (below 2³² radians): 2⁹⁶ is where its angle could
    // overflow.
    let freqs = [4.2e9, 0.5, 0.25, 0.125];
    let base = Spec {
        freqs: Freqs::Explicit(&freqs),
        ..preset::llama(8)
    };
    let float32 = base.with_precision(AnglePrecision::Float32);
    // 2⁹⁶ by its bits (Miri gives `powi` a random error) and the float below it.
    let limit = f32::from_bits((127 + 96) << 23);
    let below = f32::from_bits(limit.to_bits() - 1);
    for (spec, c, refused) in [
        (float32, limit, true),
        (float32, -1e30, true),
        (float32, below, false),
        (float32, -below, false),
        (base, 1e30, false),
    ] {
        let direct = Direct::new(&spec).unwrap();
        let mut y = buffer(2 * 8);
        let got = direct.rotate_coords(&mut y, Shape::heads(1), &[[0.5], [c]], FWD);
        let wide = spec.with_coords([Coords::Linspace {
            start: 0.0,
            stop: c,
        }]);
        let mut storage = vec![[7.0f32; 2]; Table::storage_len(&base, [3]).unwrap()];
        let built = Table::build(&mut storage, &wide, [3]).map(|_| ());
        if refused {
            assert_eq!(got, Err(Error::NonFiniteCoordinate), "{c}");
            assert!(untouched(&y));
            assert_eq!(built, Err(Error::NonFiniteCoordinate), "{c}");
            assert!(storage.iter().flatten().all(|&v| v == 7.0));
        } else {
            assert_eq!(got, Ok(()), "{c}");
            assert!(y.iter().all(|v| v.is_finite()), "{c}");
            assert_eq!(built, Ok(()), "{c}");
            assert!(storage.iter().flatten().all(|v| v.is_finite()), "{c}");
        }
    }
    // RoPE-Mixed's learned frequencies, on either axis.
    let (y, x) = ([1000.0f32; 4], [0.5f32; 4]);
    let mixed = preset::rope_mixed(4, 2, LearnedFreqs { x: &x, y: &y })
        .with_precision(AnglePrecision::Float32);
    let direct = Direct::new(&mixed).unwrap();
    for coord in [[1e30, 0.0], [0.0, -1e30]] {
        let mut z = buffer(2 * 4);
        assert_eq!(
            direct.rotate_coords(&mut z, Shape::heads(2), &[coord], FWD),
            Err(Error::NonFiniteCoordinate)
        );
        assert!(untouched(&z));
    }
    let mut z = buffer(2 * 4);
    assert!(
        direct
            .rotate_coords(&mut z, Shape::heads(2), &[[1e28, -1e28]], FWD)
            .is_ok()
    );
}

#[test]
fn hf_errors() {
    let hf = HfRope {
        rope_theta: 10_000.0,
        head_dim: 64,
        partial_rotary_factor: 1.0,
        max_position_embeddings: 4096,
        layout: Layout::Half,
        scaling: HfScaling::Linear { factor: 0.0 },
    };
    let mut freqs = [9.0f64; 32];
    assert_eq!(
        hf.spec(4096, &mut freqs).err(),
        Some(Error::InvalidFrequency)
    );
    assert_eq!(
        hf.spec(4096, &mut freqs[..31]).err(),
        Some(Error::FrequencyLength {
            expected: 32,
            actual: 31
        })
    );
    let short = [1.0; 31];
    let longrope = HfRope {
        scaling: HfScaling::LongRope {
            short_factor: &short,
            long_factor: &short,
            factor: None,
            original_max_position_embeddings: None,
            attention_factor: None,
        },
        ..hf
    };
    assert_eq!(
        longrope.spec(10, &mut freqs).err(),
        Some(Error::FrequencyLength {
            expected: 32,
            actual: 31
        })
    );
    // Either list of another length, whichever this sequence length selects.
    let right = [1.0; 32];
    for (short_factor, long_factor) in [(&short[..], &right[..]), (&right, &short)] {
        for seq_len in [10, 5000] {
            let longrope = HfRope {
                scaling: HfScaling::LongRope {
                    short_factor,
                    long_factor,
                    factor: None,
                    original_max_position_embeddings: None,
                    attention_factor: None,
                },
                ..hf
            };
            assert_eq!(
                longrope.spec(seq_len, &mut freqs).err(),
                Some(Error::FrequencyLength {
                    expected: 32,
                    actual: 31
                }),
                "{seq_len}"
            );
        }
    }
    // A partial rotary factor that leaves no pair.
    let none = HfRope {
        partial_rotary_factor: 0.01,
        ..hf
    };
    assert_eq!(
        none.spec(10, &mut freqs[..0]).err(),
        Some(Error::RotaryDim {
            pairs: 0,
            head_dim: 64
        })
    );
    // Llama 3 with an original context of 0, as YaRN's and LongRoPE's.
    let llama3 = HfRope {
        scaling: HfScaling::Llama3 {
            factor: 8.0,
            low_freq_factor: 1.0,
            high_freq_factor: 4.0,
            original_max_position_embeddings: 0,
        },
        ..hf
    };
    assert_eq!(
        llama3.spec(10, &mut freqs).err(),
        Some(Error::InvalidFrequency)
    );
    let theta = HfRope {
        rope_theta: 1.0,
        scaling: HfScaling::Default,
        ..hf
    };
    assert_eq!(theta.spec(10, &mut freqs).err(), Some(Error::InvalidBase));
    // Attention factors that are not a positive finite f32 mscale, in f64 or only as f32.
    for attention_factor in [1e300, 1e-300, 0.0, -1.0, f64::NAN, f64::INFINITY] {
        let yarn = HfRope {
            scaling: HfScaling::Yarn {
                factor: 4.0,
                original_max_position_embeddings: None,
                beta_fast: 32.0,
                beta_slow: 1.0,
                attention_factor: Some(attention_factor),
                mscale: None,
                mscale_all_dim: None,
                truncate: true,
            },
            ..hf
        };
        assert_eq!(
            yarn.spec(10, &mut freqs).err(),
            Some(Error::InvalidMscale),
            "{attention_factor}"
        );
    }
    assert!(freqs.iter().all(|&f| f == 9.0), "storage written on error");
    assert!(
        HfRope {
            scaling: HfScaling::Default,
            ..hf
        }
        .spec(10, &mut freqs)
        .is_ok()
    );
}

#[test]
fn backend_choice() {
    let spec = preset::rope_vit(8);
    for &backend in Backend::ALL {
        let table = FixedTable::<8, 2>::new(&spec, [2, 2]).unwrap();
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
        Error::RotaryDim {
            pairs: 0,
            head_dim: 4,
        },
        Error::InvalidAxis { axis: 3, axes: 2 },
        Error::PlanMismatch,
        Error::InvalidMscale,
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
            axis: 0,
            value: 1,
            extent: 1,
        },
        Error::HeadCount {
            expected: 1,
            actual: 2,
        },
        Error::NonFiniteCoordinate,
        Error::ShapeOverflow,
        Error::BackendUnavailable,
        Error::TableCoords,
        Error::InvalidScales,
        Error::FixedPoint,
    ];
    // One message per variant, its fields in their places.
    let mut messages: Vec<String> = all.iter().map(|e| e.to_string()).collect();
    messages.sort();
    messages.dedup();
    assert_eq!(messages.len(), all.len());
    let placed = [
        (
            Error::StorageLength {
                expected: 28,
                actual: 27,
            },
            "table storage holds 27 entries, needs 28",
        ),
        (
            Error::TokenCount {
                expected: 4,
                actual: 3,
            },
            "buffer holds 3 tokens, positions describe 4",
        ),
        (
            Error::PositionOutOfRange {
                axis: 1,
                value: 5,
                extent: 4,
            },
            "coordinate 5 on axis 1 outside a table of extent 4",
        ),
        (
            Error::BufferLength {
                actual: 31,
                token_len: 32,
            },
            "buffer of 31 values is not a whole number of 32-value tokens",
        ),
    ];
    for (e, message) in placed {
        assert_eq!(e.to_string(), message);
    }
    for e in all {
        assert!(!e.to_string().is_empty() && !format!("{e:?}").is_empty());
        // `core::error::Error` without any feature: `?` into `Box<dyn Error>` works by default.
        let boxed: Box<dyn core::error::Error> = Box::new(e);
        assert!(boxed.source().is_none());
    }
}

/// The limits of the fixed-point construction (frequency denominators of 65 535; extents
/// of 65 535 when coordinates are divided by the extent), checked on both sides.
#[test]
fn construction_limits() {
    // Axial: d/4 frequencies per section, 1-D: d/2.
    assert!(Direct::new(&preset::rope_vit(4 * 65_535)).is_ok());
    assert_eq!(
        Direct::new(&preset::rope_vit(4 * 65_536)).err(),
        Some(Error::ShapeOverflow)
    );
    assert!(Direct::new(&preset::llama(2 * 65_535)).is_ok());
    assert_eq!(
        Direct::new(&preset::llama(2 * 65_536)).err(),
        Some(Error::ShapeOverflow)
    );
    // `Spec::check` and `storage_len` say so before any table or `Direct` is made; heads of
    // 131 071 (1-D) and 262 143 values (axial) rotate 65 535 pairs a section.
    let expected = |ok| {
        if ok {
            Ok(())
        } else {
            Err(Error::ShapeOverflow)
        }
    };
    for (spec, ok) in [
        (preset::rope_vit(4 * 65_535 + 3), true),
        (preset::rope_vit(4 * 65_536), false),
    ] {
        assert_eq!(spec.check(), expected(ok), "{}", spec.head_dim);
        assert_eq!(Table::storage_len(&spec, [1, 1]).err(), expected(ok).err());
    }
    for (spec, ok) in [
        (preset::llama(2 * 65_535 + 1), true),
        (preset::llama(2 * 65_536), false),
    ] {
        assert_eq!(spec.check(), expected(ok), "{}", spec.head_dim);
        assert_eq!(Table::storage_len(&spec, [1]).err(), expected(ok).err());
        assert_eq!(Direct::new(&spec).err(), expected(ok).err());
    }
    if cfg!(miri) {
        return;
    }
    let mut storage = vec![[7.0f32; 2]; 65_536];
    assert_eq!(
        Table::build(&mut storage, &preset::neox(2 * 65_536), [1]).err(),
        Some(Error::ShapeOverflow)
    );
    assert!(
        storage.iter().all(|e| *e == [7.0, 7.0]),
        "storage written on error"
    );
    // An extent of 65 536 is fine with index coordinates, too large when divided by.
    let spec = preset::rope_vit(4);
    let wide = [1, 65_536];
    let entries = Table::storage_len(&spec, wide).unwrap();
    let mut storage = vec![[7.0f32; 2]; entries];
    assert!(Table::build(&mut storage, &spec, wide).is_ok());
    for coords in [Coords::Centered, Coords::Rescale { reference: 16 }] {
        let spec = spec.with_coords([coords; 2]);
        let mut storage = vec![[7.0f32; 2]; entries];
        assert_eq!(
            Table::build(&mut storage, &spec, wide).err(),
            Some(Error::ShapeOverflow),
            "{coords:?}"
        );
        assert!(
            storage.iter().all(|e| *e == [7.0, 7.0]),
            "storage written on error"
        );
        let side = [1, 65_535];
        let mut storage = vec![[7.0f32; 2]; Table::storage_len(&spec, side).unwrap()];
        assert!(Table::build(&mut storage, &spec, side).is_ok());
    }
}

/// Sizes and positions at the edge of their types: no overflow panic (these tests run in the
/// dev profile, with overflow checks), and the results are refused or saturated, never
/// wrapped to small values.
#[test]
fn arithmetic_at_the_type_limits() {
    // A section sum past `usize::MAX`: `pairs` saturates and `check` refuses it.
    let huge = Spec::new(
        16,
        Layout::Half,
        sections([Section::new(0, usize::MAX), Section::new(1, 1)]),
        base(),
    );
    assert_eq!(huge.pairs(), usize::MAX);
    assert!(huge.check().is_err());
    // Head dimensions summed from per-axis sizes saturate: no table accepts them.
    for spec in [
        preset::flux([usize::MAX, 2, 0], 1e4),
        preset::hunyuan_video([usize::MAX, 2, 2], 256.0),
    ] {
        assert_eq!(spec.head_dim, usize::MAX);
        assert!(spec.check().is_err());
        assert!(Table::storage_len(&spec, [1, 1, 1]).is_err());
    }
    // M-RoPE pieces: the next position saturates at `u32::MAX`.
    assert_eq!(preset::mrope_text(u32::MAX, 1).1, u32::MAX);
    assert_eq!(preset::mrope_text(7, usize::MAX).1, u32::MAX);
    assert_eq!(preset::mrope_text(7, 5).1, 12);
    assert_eq!(preset::mrope_image(u32::MAX - 1, [1, 4, 4], 1).1, u32::MAX);
    assert_eq!(preset::mrope_image(10, [1, 4, 6], 2).1, 13);
    // A run whose last coordinate passes `u32::MAX` is refused, not wrapped: from 3 by steps
    // of `u32::MAX`, the second position would wrap to 2, inside the table.
    let spec = preset::llama(8);
    let mut storage = vec![[0f32; 2]; Table::storage_len(&spec, [16]).unwrap()];
    let table = Table::build(&mut storage, &spec, [16]).unwrap();
    let mut x = buffer(2 * 8);
    let wraps = Run {
        start: [3],
        step: [u32::MAX],
    };
    // Past `u32::MAX`, the error names 2³², the first coordinate no position can hold.
    let past = |value| {
        Err(Error::PositionOutOfRange {
            axis: 0,
            value,
            extent: 16,
        })
    };
    let result = table.rotate(&mut x, Shape::heads(1), wraps, FWD);
    assert_eq!(result, past(1 << 32));
    let pieces = [Piece::Run {
        run: wraps,
        count: 2,
    }];
    let result = table.rotate(&mut x, Shape::heads(1), &pieces[..], FWD);
    assert_eq!(result, past(1 << 32));
    assert!(untouched(&x));
    // An empty grid may start anywhere (it rotates nothing): its origin's offset into a
    // table (`u32::MAX` rows of 8 pairs) overflows a 32-bit `usize`, and must not panic.
    let spec = preset::rope_vit(16);
    let mut storage = vec![[0f32; 2]; Table::storage_len(&spec, [2, 2]).unwrap()];
    let table = Table::build(&mut storage, &spec, [2, 2]).unwrap();
    for &backend in Backend::ALL {
        let Ok(table) = table.with_backend(backend) else {
            continue;
        };
        for origin in [[0, u32::MAX], [u32::MAX, 0], [u32::MAX; 2]] {
            let empty = Grid::new([0, 2]).at(origin);
            assert_eq!(
                table.rotate(&mut [0f32; 0], Shape::heads(1), empty, FWD),
                Ok(())
            );
        }
    }
}

/// `longrope`'s attention factor follows transformers' `rope_parameters` rule: `factor` when
/// given, else `max_position_embeddings / original`; a given `attention_factor` wins, and
/// then `factor` is not read.
#[test]
fn longrope_attention_factor() {
    let factors = [1.0; 32];
    let hf = |factor, original, attention_factor| HfRope {
        rope_theta: 10_000.0,
        head_dim: 64,
        partial_rotary_factor: 1.0,
        max_position_embeddings: 131_072,
        layout: Layout::Half,
        scaling: HfScaling::LongRope {
            short_factor: &factors,
            long_factor: &factors,
            factor,
            original_max_position_embeddings: original,
            attention_factor,
        },
    };
    let mscale = |rope: HfRope<'_>| rope.spec(16, &mut [0f64; 32]).map(|spec| spec.mscale);
    let expected = |s: f64, original: f64| (1.0 + s.ln() / original.ln()).sqrt() as f32;
    // Phi-3: no `factor`, the ratio 131 072 / 4 096 = 32.
    assert_eq!(
        mscale(hf(None, Some(4096), None)),
        Ok(expected(32.0, 4096.0))
    );
    // `factor` given: it, not the ratio.
    assert_eq!(
        mscale(hf(Some(8.0), Some(4096), None)),
        Ok(expected(8.0, 4096.0))
    );
    // No `original`: the ratio is 1, `factor` alone scales.
    assert_eq!(mscale(hf(None, None, None)), Ok(1.0));
    assert_eq!(
        mscale(hf(Some(32.0), None, None)),
        Ok(expected(32.0, 131_072.0))
    );
    // `attention_factor` wins; an invalid `factor` is then not read.
    assert_eq!(mscale(hf(Some(0.0), None, Some(1.25))), Ok(1.25));
    for bad in [0.0, -2.0, f64::NAN, f64::INFINITY] {
        assert_eq!(
            mscale(hf(Some(bad), None, None)),
            Err(Error::InvalidFrequency)
        );
    }
}
