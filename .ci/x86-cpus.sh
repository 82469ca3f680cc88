#!/usr/bin/env bash
# x86_64 CPUs other than the machine's, emulated by qemu-x86_64 (user mode; its TCG runs
# AVX2, FMA and F16C but no AVX-512): on an AVX-512 host, the paths of the CPUs without it are
# otherwise never run — detection without `std` (CPUID, XGETBV) against std's, what `auto()`
# picks, the backends it refuses, the CPU identity `describe()` prints (AMD's extended family
# too), and `avx2`'s outputs, bit for bit the committed digests of every element type, on a
# CPU where an AVX-512 instruction slipped into its code would fault.
# Usage: bash .ci/x86-cpus.sh   (`.ci/test` runs it after `cargo test` built the tests)
set -euo pipefail
cd "$(dirname "$0")/.."

# The dev-profile test executables of the default features (`cargo test` built them).
built=$(cargo test --no-run --lib --test errors --test backends --test suite 2>&1)
executable() {
    sed -n "s|^ *Executable $1 (\(.*\))\$|\1|p" <<<"$built"
}
lib=$(executable 'unittests src/lib.rs')
errors=$(executable tests/errors.rs)
backends=$(executable tests/backends.rs)
suite=$(executable tests/suite/main.rs)
for exe in "$lib" "$errors" "$backends" "$suite"; do
    [ -x "$exe" ] || { echo "test executable not found in: $built"; exit 1; }
done

# Runs test executable $2 with arguments $3… on CPU model $1 (`QEMU_CPU` also tells
# tests/backends.rs which identity to expect). qemu warns once a thread about the model's
# features TCG lacks (none of them the backends'): those lines are dropped.
emulated() {
    local model=$1
    shift
    QEMU_CPU=$model qemu-x86_64 "$@" -q 2>&1 | grep -v "TCG doesn't support requested feature"
}
# Tests of tests/backends.rs that take under a second under TCG each (the full sweep takes
# minutes: CI runs it natively and under Miri): dispatch, descriptions, and each fused
# backend this CPU has against scalar on special values and small shapes.
quick_backends=(dispatch descriptions_name_the_backend_form_and_cpu
    fused_backends_are_not_scalar special_values_propagate_like_scalar nan_stays_in_its_pair
    exact_zeros_keep_their_sign grid_with_repeated_axis_sections sections_on_256_bit_vectors_only)

# Intel Haswell: AVX2, FMA and F16C, no AVX-512 (`auto` is `avx2`, `avx512` refused); then
# the same without F16C (`avx2` converts `f16` in scalar code); AMD Zen 3 (EPYC Milan,
# family 25: the extended family counts); Intel Nehalem, no AVX (`auto` is `scalar`, both
# x86 backends refused).
for model in Haswell-v4 Haswell-v4,-f16c EPYC-Milan-v1 Nehalem-v2; do
    echo "== QEMU_CPU=$model"
    emulated "$model" "$lib" x86::
    emulated "$model" "$errors"
    emulated "$model" "$backends" "${quick_backends[@]}"
    case $model in
    Haswell*) emulated "$model" "$suite" simd_bits:: ;;
    esac
done
