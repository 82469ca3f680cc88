#!/usr/bin/env python3
"""What the firmware pulls from rope2d: the call graph of examples/cortex_m4.rs's
`calls::*` functions (every rope2d call the example makes sits in one of them), followed
through `bl`/`b` into every function they reach, from the disassembly.

Prints every reached function with its size, then `closure_text_bytes N`, and exits 1
when a reached function is a panic path (core::panicking, bounds/slice/unwrap failures).

usage: firmware_closure.py OBJDUMP ELF ROOT_PREFIX
"""
import re
import subprocess
import sys

objdump, elf, root_prefix = sys.argv[1:4]
text = subprocess.run(
    [objdump, "-d", "-C", "--no-show-raw-insn", elf],
    check=True, capture_output=True, text=True,
).stdout

header = re.compile(r"^([0-9a-f]+) <(.*)>:$")
insn = re.compile(r"^\s*([0-9a-f]+):\s+(\S+)\s*(.*)$")
target = re.compile(r"\b([0-9a-f]+) <.*>$")

functions = {}  # start address -> [name, end address (exclusive), set of branch targets]
current = None
for line in text.splitlines():
    m = header.match(line)
    if m:
        current = int(m.group(1), 16)
        functions[current] = [m.group(2), current, set()]
        continue
    m = insn.match(line)
    if m and current is not None:
        address, mnemonic, operands = int(m.group(1), 16), m.group(2), m.group(3)
        entry = functions[current]
        entry[1] = max(entry[1], address + (2 if mnemonic.endswith(".n") else 4))
        if mnemonic.startswith("b") and not mnemonic.startswith(("bic", "bfi", "bfc", "bkpt")):
            t = target.search(operands)
            if t:
                entry[2].add(int(t.group(1), 16))

# Symbol sizes from the symbol table (objdump's last-instruction estimate as a fallback).
sizes = {}
for line in subprocess.run(
    [objdump.replace("objdump", "nm"), "-S", "--defined-only", elf],
    check=True, capture_output=True, text=True,
).stdout.splitlines():
    parts = line.split()
    if len(parts) >= 4 and parts[2].lower() == "t":
        sizes[int(parts[0], 16) & ~1] = int(parts[1], 16)

starts = sorted(functions)


def containing(address):
    lo, hi = 0, len(starts) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if starts[mid] <= address:
            lo = mid + 1
        else:
            hi = mid - 1
    return starts[hi] if hi >= 0 else None


roots = [a for a, f in functions.items() if f[0].startswith(root_prefix)]
if not roots:
    sys.exit(f"no function named {root_prefix}* in {elf}")
seen, todo = set(), list(roots)
while todo:
    a = todo.pop()
    if a in seen:
        continue
    seen.add(a)
    for t in functions[a][2]:
        f = containing(t)
        if f is not None and f != a and f not in seen:
            todo.append(f)

panic_path = re.compile(
    r"core::panicking|panic_bounds_check|slice_(start|end)_index|slice_index_order"
    r"|index_len_fail|unwrap_failed|expect_failed|rust_begin_unwind|panic_fmt"
)
total, panics = 0, []
for a in sorted(seen, key=lambda a: -sizes.get(a, functions[a][1] - a)):
    name = functions[a][0]
    size = sizes.get(a, functions[a][1] - a)
    total += size
    print(f"  {size:6d}  {name}")
    if panic_path.search(name):
        panics.append(name)
print(f"closure_functions {len(seen)}")
print(f"closure_text_bytes {total}")
for name in panics:
    print(f"panic path reached: {name}")
sys.exit(1 if panics else 0)
