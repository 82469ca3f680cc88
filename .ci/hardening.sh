#!/usr/bin/env bash
# Hardening checks, on a fresh machine too (installs what it needs, once):
#   1. Miri (undefined behaviour, out-of-bounds and aliasing checks): on x86_64, with AVX2 +
#      FMA enabled at compile time, the AVX2 element conversions (tests/suite/elements.rs)
#      and the Q15 integer loop (a small tests/suite/q15.rs case); the C interface's tests;
#      and (beside those, on the other core) the lib, tests/errors.rs and tests/backends.rs
#      with AVX-512 enabled
#      (`wide` needs AVX-512BW/DQ/VL alongside AVX-512F to compile): that build compiles and
#      compares the x86 backends with `unsafe` code (avx2, avx512) against scalar — the avx2
#      backend's code is the same with or without AVX-512 flags — with their intrinsics,
#      masked loads and stores and pointer code (`portable` forbids `unsafe`: the native runs
#      compare it), then the same small tests/suite/q15.rs case with those flags (the avx512
#      backend's 512-bit Q15 loop). Elsewhere the lib, tests/errors.rs and tests/backends.rs
#      run in the default build, portable included.
#      Miri does not implement `vpermt2ps` (`llvm.x86.avx512.vpermi2var.ps.512`), so under
#      Miri the avx512 backend de-interleaves half-layout tables through a stack copy instead
#      (the data's memory accesses are the native ones).
#      NEON is not run under Miri (its intrinsics are only partly implemented there); it is
#      covered natively instead: the cross tests under qemu-aarch64 in .ci/test, and the fuzz
#      targets on an aarch64 host. Cortex-M (inline asm) cannot run under Miri either.
#      tests/suite/golden.rs (10 MB of JSON) is not run under Miri. The C interface's Rust
#      tests (capi/src/lib.rs) run under Miri too: its `unsafe` is the pointer-to-slice
#      boundary.
#   2. Every cargo-fuzz target for a bounded time (side by side, one core each), seeded from
#      fuzz/corpus/<target> (left unchanged: new inputs go to a scratch directory); any crash,
#      panic or sanitizer report fails the script, its input saved under
#      fuzz/artifacts/<target>/.
# Usage: bash .ci/hardening.sh [all|install|miri|miri-avx512|miri-rest|fuzz]
#   (FUZZ_SECONDS=45 per target by default)
#   all (the default) installs and runs both, the fuzz build beside Miri; `install` only
#   installs (the nightly with Miri, cargo-fuzz, Miri's sysroot), `miri` and `fuzz` install
#   what is missing and run one part each. `miri` is `miri-avx512` (on x86_64 the AVX-512
#   run and its Q15 case; elsewhere nothing) beside `miri-rest` (everything else), which
#   .ci/test starts apart: the AVX-512 run, the longest, from the start of its MSRV step on.
set -euo pipefail
cd "$(dirname "$0")/.."
part="${1:-all}"
case "$part" in
all | install | miri | miri-avx512 | miri-rest | fuzz) ;;
*)
    echo "usage: bash .ci/hardening.sh [all|install|miri|miri-avx512|miri-rest|fuzz]" >&2
    exit 2
    ;;
esac

FUZZ_SECONDS="${FUZZ_SECONDS:-45}"
FUZZ_MAX_LEN=512
# The nightly and the tools are pinned, so that a new release cannot fail a run of unchanged
# code: the versions these checks last passed with (update them together, and run this
# script, when a newer Miri is wanted).
NIGHTLY=nightly-2026-10-30
CARGO_FUZZ_VERSION=0.13.2

# Each step prints how long the previous one took (CI time is budgeted: keep the whole
# run under 25 minutes).
step_start=$SECONDS
step() {
    printf '    (%ss)\n\n==> %s\n' "$((SECONDS - step_start))" "$*"
    step_start=$SECONDS
}
start=$SECONDS

step "install: $NIGHTLY with miri and rust-src, cargo-fuzz $CARGO_FUZZ_VERSION (only if missing)"
installed="$(rustup component list --toolchain "$NIGHTLY" --installed 2>/dev/null || true)"
if ! grep -q '^miri' <<<"$installed" || ! grep -q '^rust-src' <<<"$installed"; then
    rustup toolchain install "$NIGHTLY" --profile minimal --component miri,rust-src
else
    echo "$NIGHTLY with miri and rust-src: present"
fi
if [ "$(cargo +"$NIGHTLY" fuzz --version 2>/dev/null)" != "cargo-fuzz $CARGO_FUZZ_VERSION" ]; then
    # Unoptimised (`--debug`): it only starts cargo, and its optimised build took 62 CPU-s
    # against 36 (docs/performance-log.md, stop 58).
    cargo install --debug cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked
else
    echo "cargo-fuzz: present ($(cargo +"$NIGHTLY" fuzz --version))"
fi
[ "$part" = fuzz ] || cargo +"$NIGHTLY" miri setup
if [ "$part" = install ]; then
    echo "hardening tools installed in $((SECONDS - start))s"
    exit 0
fi

# The targets instantiate every plan, axis count, element type and backend: an optimised ASan
# build takes 11 minutes here (16 codegen units), an unoptimised one 3 on two cores (369 s of
# CPU time with line tables). CI builds unoptimised (still ASan, debug assertions and
# overflow checks; 100–180 inputs/s per target here);
# FUZZ_BUILD="--codegen-units 16" bash .ci/hardening.sh builds optimised, for long runs.
read -r -a FUZZ_BUILD <<<"${FUZZ_BUILD:---dev}"
# Without debug info (319 s of CPU time against 369 with line tables, `time` on two cores): a
# crash's backtrace still names the functions, and its input is saved; for the lines, run it
# again with `cargo fuzz run --dev <target> artifacts/<target>/<input>` in fuzz/, which builds
# with fuzz/Cargo.toml's line tables. The build and the runs both take it (a run with other
# settings would build again).
FUZZ_CARGO=(env CARGO_PROFILE_DEV_DEBUG=false cargo +"$NIGHTLY" fuzz)
# The targets reach every backend compiled in. On an x86_64 CPU without AVX-512 the avx512
# backend's code could never run, so the build there leaves it out (fuzz/Cargo.toml forwards
# the crate's backend features): 167 CPU-s instead of 262 on an AMD Zen 3, nothing less
# fuzzed. Elsewhere, every backend. The build and the runs both take it.
FUZZ_FEATURES=()
if [[ "$(uname -m)" == x86_64 ]] && ! grep -qw avx512f /proc/cpuinfo; then
    FUZZ_FEATURES=(--no-default-features --features avx2)
fi
# Miri interprets on one core: with both parts, the fuzz build compiles beside it, in the
# background, instead of after it, and on x86_64 the AVX-512 Miri run (the longest, longer than
# the other Miri runs together) interprets beside them on the other core. A
# background job's output is printed when it is waited for.
scratch="$(mktemp -d)"
fuzz_build=
miri_avx512=
# On any exit, background jobs still running are stopped with everything they started (each
# runs in its own process group, through `setsid`): a fuzz build or Miri run would hold a
# core and a target directory after a failed step. So are fuzz runs still running (each also
# ends by itself after FUZZ_SECONDS).
fuzzers=()
trap 'for pid in "$fuzz_build" "$miri_avx512"; do [ -z "$pid" ] || kill -- "-$pid" 2>/dev/null || true; done
    for pid in "${fuzzers[@]}"; do [ -z "$pid" ] || kill "$pid" 2>/dev/null || true; done
    rm -rf "$scratch"' EXIT
# (`setsid` does not fork here: a background job of a script without job control is not a
# process group leader, so the job's pid is its new group's id.)
if [ "$part" = all ]; then
    (cd fuzz && exec setsid "${FUZZ_CARGO[@]}" build "${FUZZ_BUILD[@]}" "${FUZZ_FEATURES[@]}") \
        >"$scratch/fuzz-build.log" 2>&1 &
    fuzz_build=$!
fi

# A test run with name filters (the words after `--`), which fails when a filter matched no
# test (after a rename, the run would otherwise pass having tested nothing).
# (Its output goes to a scratch file through `tee`: not `tee /dev/stderr`, which truncates a
# log file that stderr is redirected to.)
filtered() {
    local status=0 arg filters=() after=
    for arg in "$@"; do
        if [ -n "$after" ]; then filters+=("$arg"); elif [ "$arg" = -- ]; then after=1; fi
    done
    [ ${#filters[@]} -gt 0 ] || { echo "filtered: no filter after --: $*"; return 1; }
    "$@" 2>&1 | tee "$scratch/filtered.log" || status=$?
    [ "$status" = 0 ] || return "$status"
    for arg in "${filters[@]}"; do
        if ! grep -Fq -- "$arg" <(grep '^test ' "$scratch/filtered.log"); then
            echo "the test filter $arg matched no test: $*"
            return 1
        fi
    done
}

if [ "$part" != fuzz ]; then
    # Miri is ~1000x slower than native: these tests shrink their shapes under cfg(miri).
    MIRI_TESTS=(--features std --lib --test errors --test backends)
    # With the x86 backends: not the unit tests of the modules that forbid `unsafe` (the
    # math, the positions, the spec, the element conversions' scalar rules), which call no
    # arch code (13 of the lib tests' 17 s under Miri, for nothing Miri checks).
    SAFE_UNIT_TESTS=(-- --skip math::tests:: --skip positions::tests:: --skip spec::tests::
        --skip element::tests::)
    x86_64=; [[ "$(uname -m)" != x86_64 ]] || x86_64=1
    # The lib, tests/errors.rs and tests/backends.rs with AVX-512 enabled (`wide` needs
    # AVX-512BW/DQ/VL alongside AVX-512F to compile): the avx2 and avx512 backends against
    # scalar. Its own target directory; with `all` and `miri`, in the background on the other
    # core.
    AVX512_FLAGS="-C target-feature=+avx512f,+avx512bw,+avx512dq,+avx512vl,+avx2,+fma"
    avx512_step="miri: + avx512 backend, RUSTFLAGS='$AVX512_FLAGS' (lib, tests/errors.rs, tests/backends.rs)"
    avx512_q15_step="miri: the Q15 512-bit loop (AVX-512BW vpmaddwd), tests/suite/q15.rs on small shapes, RUSTFLAGS='$AVX512_FLAGS'"
    avx512_q15() {
        CARGO_TARGET_DIR=target/miri-avx512 RUSTFLAGS="$AVX512_FLAGS" \
            filtered cargo +"$NIGHTLY" miri test --features std --test suite -- q15::small_rotations
    }

    if [ -z "$x86_64" ]; then
        if [ "$part" = miri-avx512 ]; then
            step "miri: the AVX-512 run skipped (host is $(uname -m), not x86_64)"
        else
            step "miri: scalar + portable (lib, tests/errors.rs, tests/backends.rs)"
            CARGO_TARGET_DIR=target/miri-plain cargo +"$NIGHTLY" miri test "${MIRI_TESTS[@]}"
        fi
    elif [ "$part" = miri-avx512 ]; then
        step "$avx512_step"
        CARGO_TARGET_DIR=target/miri-avx512 RUSTFLAGS="$AVX512_FLAGS" \
            cargo +"$NIGHTLY" miri test "${MIRI_TESTS[@]}" "${SAFE_UNIT_TESTS[@]}"
        step "$avx512_q15_step"
        avx512_q15
    elif [ "$part" != miri-rest ]; then
        CARGO_TARGET_DIR=target/miri-avx512 RUSTFLAGS="$AVX512_FLAGS" \
            setsid cargo +"$NIGHTLY" miri test "${MIRI_TESTS[@]}" "${SAFE_UNIT_TESTS[@]}" \
            >"$scratch/miri-avx512.log" 2>&1 &
        miri_avx512=$!
    fi
    # No run of the default build's lib and tests/errors.rs on x86_64: Miri detects no AVX2
    # there, so they would run scalar and portable only, which hold no `unsafe` (the crate
    # forbids it outside the arch files, and portable's `wide` is a dependency), and their
    # code runs in the AVX2 and AVX-512 runs too (CI time: 76 s of Miri that checked no
    # `unsafe`).

    if [ "$part" != miri-avx512 ]; then
        # On x86_64 the AVX2 runs' build directory and flags: the C interface's tests share
        # the dependencies' and the crate's Miri builds with the element conversions' run below
        # (the same features: the crate's defaults, which the C interface's defaults select
        # too; each run's own build took about a minute of CI's Miri time), and go through the
        # avx2 backend.
        AVX2_FLAGS="-C target-feature=+avx2,+fma"
        capi_miri=(env CARGO_TARGET_DIR=target/miri-plain)
        [ -z "$x86_64" ] || capi_miri=(env CARGO_TARGET_DIR=target/miri-avx2 RUSTFLAGS="$AVX2_FLAGS")
        step "miri: the C interface's boundary code (capi/: handles, pointer checks, overlap)"
        "${capi_miri[@]}" cargo +"$NIGHTLY" miri test -p rope2d-capi --lib
    fi

    if [ -n "$x86_64" ] && [ "$part" != miri-avx512 ]; then
        # The avx2 backend's code is the same under both flag sets, and the AVX-512 run compares
        # it against scalar (tests/backends.rs) and runs the lib tests, which cover its
        # helpers: this build adds what differs without AVX-512 at compile time, the element
        # conversions without F16C and the 256-bit Q15 loop.
        step "miri: the element conversions (AVX2 bf16 / i16 / i8, the staging), tests/suite/elements.rs, RUSTFLAGS='$AVX2_FLAGS'"
        # The bit-pattern test reaches every conversion path; the others are too slow under Miri.
        CARGO_TARGET_DIR=target/miri-avx2 RUSTFLAGS="$AVX2_FLAGS" \
            filtered cargo +"$NIGHTLY" miri test --test suite -- \
            elements::every_bit_pattern elements::element_errors
        step "miri: the Q15 integer vector loop (AVX2 vpmaddwd), tests/suite/q15.rs on small shapes"
        CARGO_TARGET_DIR=target/miri-avx2 RUSTFLAGS="$AVX2_FLAGS" \
            filtered cargo +"$NIGHTLY" miri test --test suite -- q15::small_rotations
        if [ "$part" != miri-rest ]; then
            step "$avx512_step (started beside the others: the wait for it)"
            status=0
            wait "$miri_avx512" || status=$?
            miri_avx512=
            cat "$scratch/miri-avx512.log"
            [ "$status" = 0 ] || { echo "miri with AVX-512 failed (exit status $status)"; exit 1; }
            step "$avx512_q15_step"
            avx512_q15
        fi
    fi
fi

if [[ "$part" != miri* ]]; then
    if [ "$part" = all ]; then
        step "fuzz: build every target (started beside Miri: the wait for it)"
        if ! wait "$fuzz_build"; then
            fuzz_build=
            cat "$scratch/fuzz-build.log"
            echo "fuzz build failed"
            exit 1
        fi
        fuzz_build=
        tail -n 3 "$scratch/fuzz-build.log"
    else
        step "fuzz: build every target"
        (cd fuzz && "${FUZZ_CARGO[@]}" build "${FUZZ_BUILD[@]}" "${FUZZ_FEATURES[@]}")
    fi
    cd fuzz
    # Not `for target in $(cargo fuzz list)`: a failed or empty list would fuzz nothing and pass.
    listed=$(cargo +"$NIGHTLY" fuzz list)
    mapfile -t targets <<<"$listed"
    if [ "${#targets[@]}" != "$(grep -c '^\[\[bin\]\]' Cargo.toml)" ]; then
        echo "fuzz targets listed (${targets[*]}) are not the [[bin]]s of fuzz/Cargo.toml"
        exit 1
    fi
    # The targets run side by side, one core each (libFuzzer is single-threaded): each gets its
    # full time, and the step takes one target's time instead of the sum.
    step "fuzz: ${targets[*]} side by side, ${FUZZ_SECONDS}s each (-max_len=$FUZZ_MAX_LEN), seeds fuzz/corpus/<target>"
    fuzzers=()
    for target in "${targets[@]}"; do
        mkdir -p "$scratch/$target" "corpus/$target"
        "${FUZZ_CARGO[@]}" run "${FUZZ_BUILD[@]}" "${FUZZ_FEATURES[@]}" "$target" \
            "$scratch/$target" "corpus/$target" -- \
            -max_total_time="$FUZZ_SECONDS" -max_len="$FUZZ_MAX_LEN" -timeout=30 \
            -print_final_stats=1 >"$scratch/fuzz-$target.log" 2>&1 &
        fuzzers+=($!)
    done
    failed=()
    for i in "${!targets[@]}"; do
        status=0
        wait "${fuzzers[$i]}" || status=$?
        fuzzers[i]=
        echo "--- fuzz: ${targets[$i]} (exit status $status)"
        cat "$scratch/fuzz-${targets[$i]}.log"
        [ "$status" = 0 ] || failed+=("${targets[$i]}")
    done
    if [ ${#failed[@]} -gt 0 ]; then
        echo "fuzz targets failed: ${failed[*]} (inputs under fuzz/artifacts/<target>/)"
        exit 1
    fi
fi

echo
echo "hardening checks passed in $((SECONDS - start))s"
