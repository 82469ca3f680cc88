#!/usr/bin/env bash
# A/B of a change with criterion: the bench binary of BASE (a commit) and of the working
# tree, run in alternation on one core, ROUNDS runs each, then each id's median and the
# median over rounds of its new ÷ base ratio (each round's two runs are minutes apart at
# most, so a shared machine's slow phases fall on both).
#
# usage: bash .ci/ab.sh BASE [REGEX] [ROUNDS]
#   BASE    a commit (`HEAD` for the working tree's own changes), or a bench binary built
#           before (a copy of target/release/deps/rope-*: no second build of the base)
#   REGEX   criterion's filter, default 'rope2d/' (every group; about 5 minutes a run)
#   ROUNDS  runs of each binary, default 3
# e.g.  bash .ci/ab.sh HEAD 'rope2d/(tiny|vit_s)/(auto|stream)$' 5
#
# Not part of CI. The runs are kept under target/ab/{base,new}-N (criterion directories:
# `python3 .ci/bench_table.py --run target/ab/new-*` tables one side). `HEAD` against an
# unchanged tree measures the noise floor: on the Zen 4 guest, `tiny`'s `auto` came out
# 0.99 and 1.09 in two rounds of identical code, `vit_s`'s 0.99 and 1.00.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:?usage: bash .ci/ab.sh BASE [REGEX] [ROUNDS]}
regex=${2:-rope2d/}
rounds=${3:-3}
out=target/ab
tree="$out/base-tree"
rm -rf "$out/base-"[0-9]* "$out/new-"[0-9]*
mkdir -p "$out"
if [ ! -f "$base" ]; then
    git worktree remove --force "$tree" 2>/dev/null || rm -rf "$tree"
    git worktree prune
    git worktree add --quiet --detach "$tree" "$base"
    trap 'git worktree remove --force "$tree" 2>/dev/null || true' EXIT
fi

# The bench binary of the tree at $1, built into its own target directory $2.
bench_binary() {
    (cd "$1" && CARGO_TARGET_DIR="$2" cargo bench -p rope2d-bench --no-run 2>&1) |
        sed -n 's/.*Executable benches\/rope.rs (\(.*\))$/\1/p' | tail -n 1
}
if [ -f "$base" ]; then
    base_bin=$(realpath "$base")
else
    base_bin=$(bench_binary "$tree" "$PWD/$out/base-target")
    case "$base_bin" in /*) ;; *) base_bin="$tree/$base_bin" ;; esac
fi
new_bin=$(bench_binary . "$PWD/target")
[ -x "$base_bin" ] && [ -x "$new_bin" ] || { echo "ab: no bench binary" >&2; exit 1; }

for round in $(seq "$rounds"); do
    for side in base new; do
        bin=${side}_bin
        echo "==> round $round/$rounds: $side" >&2
        CRITERION_HOME="$PWD/$out/$side-$round" taskset -c 1 "${!bin}" --bench "$regex" \
            > "$out/$side-$round.log" 2>&1
    done
done

python3 - "$out" "$rounds" "$base" <<'PY'
import json, pathlib, statistics, sys
out, rounds, base = pathlib.Path(sys.argv[1]), int(sys.argv[2]), pathlib.Path(sys.argv[3]).name

def medians(run):
    return {
        (est.parents[2].name[len("rope2d_"):], est.parents[1].name):
            json.loads(est.read_text())["median"]["point_estimate"]
        for est in run.glob("rope2d_*/*/new/estimates.json")
    }

def fmt(ns):
    return f"{ns / 1e6:.3f} ms" if ns >= 1e6 else f"{ns / 1e3:.2f} µs" if ns >= 1e3 else f"{ns:.0f} ns"

sides = {s: [medians(out / f"{s}-{r}") for r in range(1, rounds + 1)] for s in ("base", "new")}
print(f"| group | id | {base} | new | new ÷ {base} | per round |")
print("| --- | --- | ---: | ---: | ---: | --- |")
for key in sorted(set().union(*sides["base"]) & set().union(*sides["new"])):
    pairs = [(b[key], n[key]) for b, n in zip(sides["base"], sides["new"]) if key in b and key in n]
    if not pairs:
        continue
    ratios = [n / b for b, n in pairs]
    print(f"| {key[0]} | {key[1]} | {fmt(statistics.median(b for b, _ in pairs))} "
          f"| {fmt(statistics.median(n for _, n in pairs))} | {statistics.median(ratios):.3f} "
          f"| {', '.join(f'{r:.2f}' for r in ratios)} |")
PY
