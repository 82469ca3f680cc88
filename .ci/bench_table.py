#!/usr/bin/env python3
"""Medians of criterion runs as a table: each group's ids with the median and its ratio to
`stream`, `stream_avx512` (when present) and to the faster of the two.

usage: python3 .ci/bench_table.py [GROUP...] [--run DIR...]

Without `--run`, the last run (target/criterion/rope2d_*/<id>/new/estimates.json). With
several run directories (copies of target/criterion, one per run), each id's median is
the median of its medians over the runs and each ratio the median of the runs' ratios (ids
measured seconds apart in one run share its phase of a shared machine's load; the groups of
the first run, an id missing from a run left out), and a last column gives `auto` ÷ the
faster stream in each run, so that the spread between runs shows.

default GROUPs: every rope2d group
"""
import json
import pathlib
import statistics
import sys

args = sys.argv[1:]
if "--run" in args:
    i = args.index("--run")
    args, runs = args[:i], [pathlib.Path(a) for a in args[i + 1 :]]
    if not runs:
        sys.exit("--run needs at least one directory")
    for run in runs:
        if not run.is_dir():
            sys.exit(f"{run}: not a directory")
else:
    runs = [pathlib.Path(__file__).resolve().parent.parent / "target" / "criterion"]
groups = args or sorted(p.name[len("rope2d_"):] for p in runs[0].glob("rope2d_*"))
order = ["stream", "stream_avx512", "memcpy", "scalar", "portable", "avx2", "avx512", "neon", "auto"]


def fmt(ns):
    if ns >= 1e6:
        return f"{ns / 1e6:.3f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.2f} µs"
    return f"{ns:.0f} ns"


def medians_of(run, group):
    return {
        est.parent.parent.name: json.loads(est.read_text())["median"]["point_estimate"]
        for est in (run / f"rope2d_{group}").glob("*/new/estimates.json")
    }


def faster_stream(medians):
    streams = [medians[i] for i in ("stream", "stream_avx512") if medians.get(i)]
    return min(streams) if streams else None


spread = len(runs) > 1
print("| group | id | median | ÷ stream | ÷ stream_avx512 | ÷ faster stream |" + (" auto ÷ faster stream per run |" if spread else ""))
print("| --- | --- | ---: | ---: | ---: | ---: |" + (" ---: |" if spread else ""))
for group in groups:
    per_run = [medians_of(run, group) for run in runs]
    ids = [i for i in per_run[0] if all(i in m for m in per_run)]
    if not ids:
        continue
    medians = {i: statistics.median(m[i] for m in per_run) for i in ids}
    ids.sort(key=lambda i: (order.index(i) if i in order else len(order), i))
    def ratio(i, baseline):
        """The median over the runs of id `i` ÷ the baseline of the same run."""
        ratios = [m[i] / b for m in per_run if (b := baseline(m))]
        return f"{statistics.median(ratios):.2f}" if ratios else "—"

    for i in ids:
        name = f"**{i}**" if i == "auto" else i
        row = (
            f"| {group} | {name} | {fmt(medians[i])} | {ratio(i, lambda m: m.get('stream'))}"
            f" | {ratio(i, lambda m: m.get('stream_avx512'))} | {ratio(i, faster_stream)} |"
        )
        if spread:
            runs_ratio = (
                ", ".join(f"{r['auto'] / faster_stream(r):.2f}" for r in per_run if faster_stream(r))
                if i == "auto"
                else ""
            )
            row += f" {runs_ratio} |"
        print(row)
