#!/usr/bin/env bash
# The llvm-mca cycle table of the production kernels, against .ci/mca-baseline.txt.
#
# Builds the library with `--cfg rope2d_mca` for x86_64, aarch64 and thumbv7em-none-eabihf
# and emits its assembly: the `rope2d_mca_<backend>` functions run the kernels' real loop
# bodies (the same inlined functions) between `LLVM-MCA-BEGIN`/`END` markers. .ci/mca.py
# runs llvm-mca 19 on each region for the modelled cores and prints cycles per 16 floats
# (Cortex-M: per pair) beside a stream loop analysed the same way; it fails when a figure
# rises more than 3 % above the baseline, or when dispatch picks a form the model rates more
# than 5 % slower than another without a recorded hardware measurement.
#
# A model, not a measurement: see the README (Performance) for how far it is from hardware.
# Usage: bash .ci/mca.sh                 (MCA_UPDATE=1 rewrites the baseline)
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v llvm-mca-19 >/dev/null || need+=(llvm-19)
command -v python3 >/dev/null || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
    sudo=(); [ "$(id -u)" = 0 ] || sudo=(sudo)
    "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=300 update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${need[@]}"
fi
rustup target add aarch64-unknown-linux-gnu thumbv7em-none-eabihf

asm=()
for target in x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu thumbv7em-none-eabihf; do
    dir="target/mca/$target/release/deps"
    emit() {
        CARGO_TARGET_DIR=target/mca RUSTFLAGS="--cfg rope2d_mca -D warnings" \
            cargo rustc --quiet --release --lib --target "$target" -- --emit asm
    }
    emit
    if ! compgen -G "$dir/rope2d-*.s" >/dev/null; then
        # A fresh build whose assembly was removed: build it again.
        CARGO_TARGET_DIR=target/mca cargo clean --quiet --release -p rope2d --target "$target"
        emit
    fi
    # The newest: cargo re-emits only when the source or flags changed.
    asm+=("$(ls -t "$dir"/rope2d-*.s | head -n 1)")
done
python3 .ci/mca.py llvm-mca-19 .ci/mca-baseline.txt "${asm[@]}"
