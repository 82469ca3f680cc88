#!/usr/bin/env python3
"""What a firmware pulls from rope2d: the call graph of an example's `calls::*` functions
(every rope2d call the example makes sits in one of them), followed through its calls and
branches into every function they reach, from the disassembly (Arm Thumb or RISC-V, GNU
objdump's format).

Prints every reached function with its size, then `closure_text_bytes N`, then for each
root `stack_bound NAME BYTES`: the most stack a call of it can take, its own frame plus the
deepest callee's, over every path of the call graph (an upper bound: a function's frame is the
sum of all its stack decrements, and a tail call is counted as if the frame were still there).
Exits 1 when a reached function is a panic path (core::panicking, bounds/slice/unwrap
failures), or when the bound cannot be computed: recursion, an indirect call, or a stack
pointer moved by a register.

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
riscv = "littleriscv" in text[:2000]

header = re.compile(r"^([0-9a-f]+) <(.*)>:$")
insn = re.compile(r"^\s*([0-9a-f]+):\s+(\S+)\s*(.*)$")
target = re.compile(r"\b([0-9a-f]+) <.*>$")

functions = {}  # start address -> [name, end address (exclusive), set of branch targets]
frames = {}  # start address -> bytes the function's stack decrements add up to
unbounded = {}  # start address -> the first instruction that defeats the stack bound
registers = re.compile(r"\{([^}]*)\}")
immediate = re.compile(r"#(-?\d+)")


def register_count(operands):
    """Registers in a `{r4, r5, lr}` or `{d8-d15}` list."""
    count = 0
    for item in registers.search(operands).group(1).split(","):
        first, _, last = item.strip().partition("-")
        count += int(last[1:]) - int(first[1:]) + 1 if last else 1
    return count


def stack_decrement(mnemonic, operands):
    """Bytes an instruction moves the stack pointer down by; None when not known statically."""
    if riscv:
        if mnemonic in ("add", "addi", "sub", "mv") and operands.startswith("sp,"):
            m = re.fullmatch(r"sp,sp,(-?\d+)", operands.split()[0])
            if m is None or mnemonic in ("sub", "mv"):  # sp from a register
                return None
            return max(0, -int(m.group(1)))
        return 0
    base = mnemonic.split(".")[0]
    if base == "push":
        return 4 * register_count(operands)
    if base == "vpush":
        size = 8 if registers.search(operands).group(1).strip().startswith("d") else 4
        return size * register_count(operands)
    if base == "stmdb" and operands.startswith("sp!"):
        return 4 * register_count(operands)
    if base in ("str", "strd", "vstr") and "[sp, #-" in operands and operands.endswith("!"):
        return -int(immediate.search(operands.split("[sp,")[1]).group(1))
    if base in ("sub", "subw", "add", "addw") and re.match(r"sp,", operands):
        m = immediate.search(operands)
        if m is None:  # sp changed by a register: a dynamic allocation
            return None
        n = int(m.group(1))
        return n if base.startswith("sub") else max(0, -n)
    if base == "mov" and operands.startswith("sp,"):
        return None
    return 0


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
        if riscv:
            branch = mnemonic.startswith(("b", "j")) or mnemonic in ("call", "tail")
            # `jalr`/`jr` through a register with no target in objdump's comment.
            indirect = mnemonic in ("jalr", "jr") and operands != "ra"
        else:
            branch = mnemonic.startswith("b") and not mnemonic.startswith(
                ("bic", "bfi", "bfc", "bkpt"))
            indirect = mnemonic.startswith("bl") or (mnemonic.startswith("bx") and operands != "lr")
        if branch:
            t = target.search(operands)
            if t:
                entry[2].add(int(t.group(1), 16))
            elif indirect:
                unbounded.setdefault(current, f"{mnemonic} {operands}")
        step = stack_decrement(mnemonic, operands)
        if step is None:
            unbounded.setdefault(current, f"{mnemonic} {operands}")
        else:
            frames[current] = frames.get(current, 0) + step

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

depths, problems = {}, []


def depth(a, path):
    """The bound of function `a`, None (and a line in `problems`) when there is none."""
    if a in depths:
        return depths[a]
    name = functions[a][0]
    if a in path:
        problems.append(f"recursion through {name}")
        return None
    if a in unbounded:
        problems.append(f"{name}: {unbounded[a]}")
        return None
    deepest = 0
    for t in functions[a][2]:
        f = containing(t)
        if f is None or f == a:
            continue
        d = depth(f, path | {a})
        if d is None:
            return None
        deepest = max(deepest, d)
    depths[a] = frames.get(a, 0) + deepest
    return depths[a]


for a in sorted(roots, key=lambda a: functions[a][0]):
    bound = depth(a, frozenset())
    print(f"stack_bound {functions[a][0]} {'unbounded' if bound is None else bound}")
for problem in problems:
    print(f"stack bound not computable: {problem}")
sys.exit(1 if panics or problems else 0)
