#!/usr/bin/env python3
"""Medians of the last criterion run (target/criterion/rope2d_*/<id>/new/estimates.json) as
a table: each group's ids with the median and its ratio to `stream`, `stream_avx512` (when
present) and to the faster of the two.

usage: python3 .ci/bench_table.py [GROUP...]     (default: every rope2d group)
"""
import json
import pathlib
import sys

root = pathlib.Path(__file__).resolve().parent.parent / "target" / "criterion"
groups = sys.argv[1:] or sorted(p.name[len("rope2d_"):] for p in root.glob("rope2d_*"))
order = ["stream", "stream_avx512", "memcpy", "scalar", "portable", "avx2", "avx512", "neon", "auto"]


def fmt(ns):
    if ns >= 1e6:
        return f"{ns / 1e6:.3f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.2f} µs"
    return f"{ns:.0f} ns"


print("| group | id | median | ÷ stream | ÷ stream_avx512 | ÷ faster stream |")
print("| --- | --- | ---: | ---: | ---: | ---: |")
for group in groups:
    d = root / f"rope2d_{group}"
    medians = {}
    for est in d.glob("*/new/estimates.json"):
        medians[est.parent.parent.name] = json.loads(est.read_text())["median"]["point_estimate"]
    if not medians:
        continue
    stream = medians.get("stream")
    s512 = medians.get("stream_avx512")
    floor = min(x for x in (stream, s512) if x) if (stream or s512) else None
    ids = sorted(medians, key=lambda i: (order.index(i) if i in order else len(order), i))
    for i in ids:
        m = medians[i]
        r = lambda b: f"{m / b:.2f}" if b else "—"
        name = f"**{i}**" if i == "auto" else i
        print(f"| {group} | {name} | {fmt(m)} | {r(stream)} | {r(s512)} | {r(floor)} |")
