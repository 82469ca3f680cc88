#!/usr/bin/env python3
"""The llvm-mca cycle table of the production kernels (see .ci/mca.sh).

Reads the assembly of `--cfg rope2d_mca` builds, takes every `LLVM-MCA-BEGIN name` ..
`LLVM-MCA-END name` region inside the `rope2d_mca_<isa>` functions (one iteration of a
production loop body; the name ends in the vectors `_Nv`, or pairs `_Np`, it rotates), runs
llvm-mca on each for every modelled core of its architecture, prints cycles per 16 floats
(Cortex-M: per pair), and compares with the baseline file:

- a figure more than 3 % above its baseline fails, as does a figure with no baseline or a
  baseline with no figure (a deliberate change regenerates the baseline: MCA_UPDATE=1);
- for a modelled core with AVX-512, where `Backend::auto()` picks `avx512`, a form the model
  rates more than 5 % slower than the AVX2 form fails, unless the baseline has a
  `hardware <core> <note>` line recording a measurement that says otherwise.

Usage: mca.py LLVM_MCA BASELINE ASM_X86_64 ASM_AARCH64 ASM_THUMBV7EM
"""

import os
import re
import subprocess
import sys
import tempfile

# Floats per vector register of each backend.
LANES = {"avx2": 8, "avx512": 16, "neon": 4}
# The cores modelled for each instruction set (LLVM 19 scheduling models).
CORES = {
    "avx2": ["skylake", "alderlake", "icelake-server", "sapphirerapids",
             "znver2", "znver3", "znver4", "znver5"],
    "avx512": ["icelake-server", "sapphirerapids", "znver4", "znver5"],
    "neon": ["cortex-a53", "cortex-a55", "cortex-a57", "cortex-a72", "cortex-a76",
             "neoverse-n1", "neoverse-n2", "neoverse-v1", "neoverse-v2"],
    "cortex_m": ["cortex-m4", "cortex-m7", "cortex-m55"],
}
TRIPLE = {"avx2": "x86_64", "avx512": "x86_64", "neon": "aarch64",
          "cortex_m": "thumbv7em-none-eabihf"}
RISE, DISPATCH = 1.03, 1.05


def regions(path):
    """{(isa, name): [instruction lines]} of the rope2d_mca_<isa> functions in `path`."""
    out = {}
    isa = None
    current = None
    for line in open(path, encoding="utf-8"):
        label = re.match(r"^(\w+):", line)
        if label:
            m = re.match(r"^rope2d_mca_(\w+)$", label.group(1))
            isa = m.group(1) if m else None
            continue
        marker = re.search(r"LLVM-MCA-(BEGIN|END) (\w+)", line)
        if marker:
            if marker.group(1) == "BEGIN" and isa:
                current = (isa, marker.group(2))
                out[current] = []
            else:
                current = None
            continue
        stripped = line.strip()
        # Instructions only: no directives, labels or comments.
        if current and stripped and not re.match(r"^([.#@]|//|\w+:)", stripped):
            out[current].append(stripped)
    return out


def cycles(mca, triple, cpu, body):
    """llvm-mca's cycles per iteration of `body` on `cpu`."""
    with tempfile.NamedTemporaryFile("w", suffix=".s", delete=False) as f:
        f.write("\n".join(body) + "\n")
        name = f.name
    try:
        res = subprocess.run(
            [mca, f"-mtriple={triple}", f"-mcpu={cpu}", "-iterations=400", name],
            capture_output=True, text=True, check=True)
    finally:
        os.unlink(name)
    total = int(re.search(r"Total Cycles:\s+(\d+)", res.stdout).group(1))
    iterations = int(re.search(r"Iterations:\s+(\d+)", res.stdout).group(1))
    return total / iterations


def main():
    mca, baseline_path, *asm = sys.argv[1:]
    found = {}
    for path in asm:
        found.update(regions(path))
    figures = {}  # (cpu, isa, form) -> cycles per 16 floats (Cortex-M: per pair)
    for (isa, name), body in sorted(found.items()):
        if isa not in CORES:
            continue
        form, count = re.match(r"^(\w+)_(\d+)[vp]$", name).groups()
        if not body:
            sys.exit(f"mca: region {isa}/{name} is empty")
        for cpu in CORES[isa]:
            c = cycles(mca, TRIPLE[isa], cpu, body)
            per = c / int(count) if isa == "cortex_m" else c * 16 / (int(count) * LANES[isa])
            figures[(cpu, isa, form)] = per

    # The table: one row per core, one column per backend/form.
    columns = sorted({(isa, form) for (_, isa, form) in figures},
                     key=lambda c: (list(CORES).index(c[0]), c[1] != "stream", c[1]))
    for arch in ("x86_64", "aarch64", "thumbv7em-none-eabihf"):
        cols = [c for c in columns if TRIPLE[c[0]] == arch]
        if not cols:
            continue
        unit = "cycles per pair" if arch.startswith("thumb") else "cycles per 16 floats"
        print(f"\n{arch} ({unit}, llvm-mca 19 model):")
        print("| core | " + " | ".join(f"{i} {f}" for i, f in cols) + " |")
        print("|---|" + "---:|" * len(cols))
        cpus = [cpu for isa in CORES if TRIPLE[isa] == arch for cpu in CORES[isa]]
        for cpu in dict.fromkeys(cpus):
            cells = [f"{figures[(cpu, i, f)]:.2f}" if (cpu, i, f) in figures else "–"
                     for i, f in cols]
            print(f"| {cpu} | " + " | ".join(cells) + " |")

    if os.environ.get("MCA_UPDATE") == "1":
        keep = [l for l in open(baseline_path, encoding="utf-8")
                if l.startswith("hardware ")] if os.path.exists(baseline_path) else []
        with open(baseline_path, "w", encoding="utf-8") as f:
            f.write("# llvm-mca cycles per 16 floats (Cortex-M: per pair) of each kernel form,\n"
                    "# written by `MCA_UPDATE=1 bash .ci/mca.sh`; .ci/mca.sh fails when a figure\n"
                    "# rises more than 3 %. Update it in the commit that changes a kernel, saying\n"
                    "# why. `hardware <core> <note>` lines record a measurement that overrules\n"
                    "# the model for dispatch.\n")
            for (cpu, isa, form), v in sorted(figures.items()):
                f.write(f"{cpu} {isa} {form} {v:.3f}\n")
            f.writelines(keep)
        print(f"\nbaseline written: {baseline_path}")
        return

    failures = []
    base, hardware = {}, {}
    for line in open(baseline_path, encoding="utf-8"):
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        if parts[0] == "hardware":
            hardware[parts[1]] = " ".join(parts[2:])
            continue
        cpu, isa, form, value = parts
        base[(cpu, isa, form)] = float(value)
    for key in sorted(set(base) | set(figures)):
        if key not in figures:
            failures.append(f"{' '.join(key)}: in the baseline, not measured")
        elif key not in base:
            failures.append(f"{' '.join(key)}: {figures[key]:.3f}, not in the baseline")
        elif figures[key] > base[key] * RISE:
            failures.append(f"{' '.join(key)}: {figures[key]:.3f} > {base[key]:.3f} + 3 %")
    # Dispatch: AVX-512 where the core has it.
    for cpu in CORES["avx512"]:
        for (c, isa, form), v in figures.items():
            if c != cpu or isa != "avx512" or form == "stream":
                continue
            other = figures.get((cpu, "avx2", form))
            if other and v > other * DISPATCH:
                note = hardware.get(cpu)
                msg = (f"dispatch on {cpu}: avx512 {form} {v:.2f} > avx2 {other:.2f} "
                       "cycles per 16 floats + 5 %")
                if note:
                    print(f"\n{msg}: overruled by the hardware measurement: {note}")
                else:
                    failures.append(msg)
    if failures:
        print("\nmca: FAILED")
        for f in failures:
            print(f"  {f}")
        sys.exit(1)
    print(f"\nmca: {len(figures)} figures within 3 % of {baseline_path}, dispatch consistent")


if __name__ == "__main__":
    main()
