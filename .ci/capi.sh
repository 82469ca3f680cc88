#!/usr/bin/env bash
# The C interface (capi/): header current, compiles as C99 and C++ with every warning an
# error, Rust tests, a host C program (static and shared library) and a Cortex-M4F firmware
# built from C with arm-none-eabi-gcc, both checking golden vectors. Installs what it needs
# (cbindgen, gcc, g++, gcc-arm-none-eabi, qemu-system-arm).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
OUT="$CARGO_TARGET_DIR/capi-check"
mkdir -p "$OUT"
# Absolute: cbindgen below writes it from capi/ (a relative CARGO_TARGET_DIR or an absolute
# one alike).
OUT="$(cd "$OUT" && pwd)"
WARN=(-Wall -Wextra -Werror -pedantic)

have() { command -v "$1" >/dev/null 2>&1; }
need=()
have gcc || need+=(gcc)
have g++ || need+=(g++)
# newlib (the firmware's libc headers) is only a recommendation of gcc-arm-none-eabi, and
# recommends are not installed (see .ci/firmware.sh).
have arm-none-eabi-gcc || need+=(gcc-arm-none-eabi libnewlib-arm-none-eabi)
have qemu-system-arm || need+=(qemu-system-arm)
have python3 || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
    sudo=(); [ "$(id -u)" = 0 ] || sudo=(sudo)
    "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=300 update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${need[@]}"
fi
rustup target add thumbv7em-none-eabihf >/dev/null
CBINDGEN_VERSION=0.29.4
if [[ "$(cbindgen --version 2>/dev/null || true)" != *"$CBINDGEN_VERSION"* ]]; then
    # Unoptimised (`--debug`): it writes the header in 0.24 s against 0.21, and its
    # optimised build took 138 CPU-s against 52 (docs/performance-log.md, stop 58).
    cargo install --debug cbindgen --version "$CBINDGEN_VERSION" --locked
fi

echo "--- include/rope2d.h is what cbindgen generates from capi/src/lib.rs"
(cd capi && cbindgen --config cbindgen.toml --quiet --output "$OUT/rope2d.h")
if ! diff -u capi/include/rope2d.h "$OUT/rope2d.h"; then
    echo "capi/include/rope2d.h is stale: run (cd capi && cbindgen --config cbindgen.toml --output include/rope2d.h)"
    exit 1
fi

echo "--- the header compiles as C99 and C++11, warnings as errors"
echo '#include "rope2d.h"' > "$OUT/header_c.c"
gcc -std=c99 "${WARN[@]}" -fsyntax-only -Icapi/include "$OUT/header_c.c"
g++ -std=c++11 "${WARN[@]}" -fsyntax-only -Icapi/include capi/tests/c/header_cpp.cpp

echo "--- Rust tests and clippy of the C interface"
cargo clippy -p rope2d-capi --all-targets -- -D warnings
# The Rust tests check the boundary (handles, pointers, overlap, statuses, results against
# the Rust API on a named backend), which is the same with or without the x86 backends; the
# test build without them took 12 CPU-seconds against 124 (non-incremental, this package
# alone). Miri runs them on the default build, with AVX2 (.ci/hardening.sh).
cargo test -p rope2d-capi --no-default-features

echo "--- host C program: golden checks through the static and the shared library"
# The dev profile: the release build of the host library took 16 minutes on a 2-core AMD
# Zen 3 guest (27 CPU-minutes: every element type, angle source, position kind and head size
# for every x86 backend; docs/performance-log.md, stop 53); the dev build runs the same code
# paths in 20 s, and the Cortex-M4F build below is a release build. Without default features,
# as the Rust tests above build it: what C programs call, link and read back does not depend
# on the backends compiled in, and the program checks the golden vectors on every backend the
# library has (`scalar` and `portable` here; the crate's tests compare the x86 backends with
# `scalar`, and Miri runs the Rust tests above through `avx2`). The default build took 103
# more CPU-s (stop 62).
cargo build -p rope2d-capi --no-default-features
python3 capi/tests/c/gen_golden.py tests/golden "$OUT/golden_cases.h"
LIB="$CARGO_TARGET_DIR/debug"
C_SOURCES=(capi/tests/c/checks.c capi/tests/c/host_main.c)
INCLUDES=(-Icapi/include -Icapi/tests/c -I"$OUT")
gcc -std=c99 "${WARN[@]}" -O2 "${INCLUDES[@]}" "${C_SOURCES[@]}" "$LIB/librope2d_capi.a" \
    -lpthread -ldl -lm -o "$OUT/checks_static"
"$OUT/checks_static"
gcc -std=c99 "${WARN[@]}" -O2 "${INCLUDES[@]}" "${C_SOURCES[@]}" -L"$LIB" -lrope2d_capi \
    -Wl,-rpath,"$(cd "$LIB" && pwd)" -o "$OUT/checks_shared"
"$OUT/checks_shared" | tail -1

echo "--- Cortex-M4F firmware from C (arm-none-eabi-gcc, no libc) under QEMU mps2-an386"
cargo rustc -p rope2d-capi --release --target thumbv7em-none-eabihf --crate-type staticlib
ARM=(-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16)
M4=capi/tests/c/m4
arm-none-eabi-gcc "${ARM[@]}" -O2 -g -std=c99 "${WARN[@]}" -ffreestanding -ffunction-sections \
    -fdata-sections "${INCLUDES[@]}" -I"$M4" \
    "$M4/startup.c" "$M4/semihost.c" "$M4/main.c" capi/tests/c/checks.c \
    "$CARGO_TARGET_DIR/thumbv7em-none-eabihf/release/librope2d_capi.a" \
    -nostdlib -T "$M4/mps2_an386.ld" -Wl,--gc-sections -Wl,-z,noexecstack -lgcc -o "$OUT/firmware.elf"
arm-none-eabi-size "$OUT/firmware.elf"
# Semihosting output arrives on QEMU's stderr; QEMU exits with main's return value.
status=0
timeout 300 qemu-system-arm -cpu cortex-m4 -machine mps2-an386 -nographic \
    -semihosting-config enable=on,target=native -kernel "$OUT/firmware.elf" \
    >"$OUT/firmware.log" 2>&1 || status=$?
cat "$OUT/firmware.log"
if [ "$status" -ne 0 ] || ! grep -q '[1-9][0-9]* passed, 0 failed' "$OUT/firmware.log"; then
    echo "C firmware failed (exit status $status)"
    exit 1
fi
echo "C interface: all checks passed"
