#!/usr/bin/env bash
# The crate as crates.io would receive it: only what a user needs (no test data, fuzz corpus,
# CI or firmware files), small, and `cargo publish --dry-run` (which builds the packaged crate
# on its own) passes.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
MAX_CRATE_BYTES=400000

list=$(cargo package --list -p rope2d --allow-dirty)
echo "$list"
unwanted=$(grep -Ev '^(src/.*\.rs|build\.rs|examples/demo\.rs|README\.md|CHANGELOG\.md|Cargo\.(toml|toml\.orig|lock)|\.cargo_vcs_info\.json)$' <<<"$list" || true)
if [ -n "$unwanted" ]; then
    echo "files a user does not need are packaged:"; echo "$unwanted"; exit 1
fi
for needed in src/lib.rs build.rs README.md CHANGELOG.md; do
    grep -qx "$needed" <<<"$list" || { echo "$needed is missing from the package"; exit 1; }
done
# --allow-dirty: the check runs inside the test suite, where build outputs may exist.
cargo publish --dry-run -p rope2d --allow-dirty
# The crate of this version (an older version's may be left in the target directory).
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
crate=$(find "$CARGO_TARGET_DIR/package" -name "rope2d-$version.crate" | head -1)
[ -n "$crate" ] || { echo "no rope2d-$version.crate under $CARGO_TARGET_DIR/package"; exit 1; }
bytes=$(stat -c %s "$crate")
echo "$crate: $bytes bytes (limit $MAX_CRATE_BYTES)"
[ "$bytes" -le "$MAX_CRATE_BYTES" ] || { echo "the .crate is larger than $MAX_CRATE_BYTES bytes"; exit 1; }
