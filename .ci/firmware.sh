#!/usr/bin/env bash
# rope2d on a Cortex-M4F (QEMU MPS2-AN386), a Cortex-M33 (MPS2-AN505), a Cortex-M0 (micro:bit)
# and a RISC-V RV32IMAC (sifive_e): runs examples/cortex_m4.rs (plain text and defmt; and for
# the M33), examples/cortex_m0.rs and examples/riscv32.rs, measures the budgets below on the
# same images (instructions from a QEMU trace; sizes, panic paths and stack bounds from the
# disassembly, the stack bounds beside the peaks the firmware measures), prints every figure,
# and exits non-zero when a check fails or a budget is exceeded. (The other embedded targets'
# builds are .ci/test's "embedded builds" step.) Idempotent; installs what it needs
# (qemu-system-arm and -misc, the Arm and RISC-V binutils, python3, rustup targets,
# defmt-print).
set -euo pipefail
cd "$(dirname "$0")/.."

# Budgets.
MAX_INSNS_PER_PAIR=7       # apply loop, per rotated pair
MAX_INSNS_PER_ENTRY=80     # table build, per (cos, sin) entry
MAX_Q15_INSNS_PER_PAIR=8   # Q15 whole grid on the DSP extension, per rotated pair
# .text of everything the example's rope2d calls reach (issue 9's goal).
MAX_TEXT_BYTES=4096
# Stack a call of the lean axial set (calls::*) can take at most, by the disassembly's bound.
MAX_STACK_BYTES=512
# Cortex-M0 (no FPU), examples/cortex_m0.rs: Q15, integer arithmetic only (issue 10's goals).
MAX_M0_INSNS_PER_PAIR=32     # rotated pair, rounded and saturated
MAX_M0_INSNS_PER_ENTRY=250   # Q15 (cos, sin) entry
MAX_M0_STACK_BYTES=768       # stack of any rope2d call the example makes, by the bound
# RISC-V RV32IMAC (no FPU; QEMU sifive_e), examples/riscv32.rs: the same integer-only checks
# through the plain-Rust Q15 loop.
MAX_RV_INSNS_PER_PAIR=36     # rotated pair, rounded and saturated
MAX_RV_INSNS_PER_ENTRY=100   # Q15 (cos, sin) entry
MAX_RV_TEXT_BYTES=5120       # .text the example's rope2d calls reach
MAX_RV_STACK_BYTES=384       # stack of any rope2d call of the example, by the bound

TARGET=thumbv7em-none-eabihf
EXAMPLE=cortex_m4
QEMU=(qemu-system-arm -cpu cortex-m4 -machine mps2-an386 -nographic
      -semihosting-config enable=on,target=native)
QEMU_TIMEOUT=300
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"

# --- tools -------------------------------------------------------------------------------
have() { command -v "$1" >/dev/null 2>&1; }
apt_install() {
    local sudo=()
    [ "$(id -u)" = 0 ] || sudo=(sudo)
    "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=300 update -qq
    # Without recommends: qemu-system-arm's pull in a GUI, audio and network boot (about 150
    # packages, a minute and a half of a fresh machine's CI run) that firmware under
    # -nographic never uses.
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "$@"
}
missing=()
have qemu-system-arm || missing+=(qemu-system-arm)
have qemu-system-riscv32 || missing+=(qemu-system-misc)
have riscv64-unknown-elf-objdump || missing+=(binutils-riscv64-unknown-elf)
have arm-none-eabi-objdump || missing+=(binutils-arm-none-eabi)
have python3 || missing+=(python3)
have timeout || missing+=(coreutils)
if [ ${#missing[@]} -gt 0 ]; then apt_install "${missing[@]}"; fi
rustup target add thumbv7em-none-eabihf thumbv8m.main-none-eabihf thumbv6m-none-eabi riscv32imac-unknown-none-elf >/dev/null
# Pinned (as hardening.sh pins its tools): the version these checks last passed with.
DEFMT_PRINT_VERSION=1.2.0
[ "$(defmt-print --version 2>/dev/null | head -n 1)" = "defmt-print $DEFMT_PRINT_VERSION" ] ||
    # Unoptimised (`--debug`): it decodes a few lines, and its optimised build took 153
    # CPU-s against 79 (docs/performance-log.md, stop 58).
    cargo install --debug defmt-print --version "$DEFMT_PRINT_VERSION" --locked
OBJDUMP=arm-none-eabi-objdump
NM=arm-none-eabi-nm
# One instruction per translation block, so every executed instruction is one trace line
# (`-singlestep` before QEMU 8).
qemu_major=$(qemu-system-arm --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p')
if [ "${qemu_major:-0}" -ge 8 ]; then ONE_INSN=(-accel tcg,one-insn-per-tb=on); else ONE_INSN=(-singlestep); fi

fail=0
budget() { # name value limit unit
    # A missing measurement (an empty or non-numeric value) fails: awk would compare it as a
    # string, and "" <= "7" holds.
    if [[ "$2" =~ ^[0-9]+([.][0-9]+)?$ ]] && awk -v v="$2" -v l="$3" 'BEGIN { exit !(v <= l) }'; then
        printf 'budget ok    %-58s %10s  (limit %s %s)\n' "$1" "$2" "$3" "$4"
    else
        printf 'BUDGET FAIL  %-58s %10s  (limit %s %s)\n' "$1" "$2" "$3" "$4"
        fail=1
    fi
}

# --- firmware, plain text ---------------------------------------------------------------------
echo "== clippy, firmware example"
cargo clippy --quiet --release --target $TARGET --example $EXAMPLE -- -D warnings
cargo clippy --quiet --release --target $TARGET --example $EXAMPLE --features defmt -- -D warnings

echo "== cargo run --release --target $TARGET --example $EXAMPLE"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cargo build --quiet --release --target $TARGET --example $EXAMPLE
ELF="$work/$EXAMPLE.elf"
cp "$CARGO_TARGET_DIR/$TARGET/release/examples/$EXAMPLE" "$ELF"
set +e
cargo run --quiet --release --target $TARGET --example $EXAMPLE | tee "$work/run.txt"
status=${PIPESTATUS[0]}
set -e
echo "QEMU exit status: $status"
if [ "$status" != 0 ] || ! grep -q '^[1-9][0-9]* passed, 0 failed$' "$work/run.txt"; then
    echo "firmware checks failed"
    exit 1
fi

# --- firmware, defmt --------------------------------------------------------------------------
echo "== the same with --features defmt, decoded by defmt-print"
cargo build --quiet --release --target $TARGET --example $EXAMPLE --features defmt
DEFMT_ELF="$work/$EXAMPLE-defmt.elf"
cp "$CARGO_TARGET_DIR/$TARGET/release/examples/$EXAMPLE" "$DEFMT_ELF"
set +e
timeout $QEMU_TIMEOUT "${QEMU[@]}" -kernel "$DEFMT_ELF" | defmt-print -e "$DEFMT_ELF" | tee "$work/defmt.txt"
status=${PIPESTATUS[0]}
set -e
echo "QEMU exit status: $status"
if [ "$status" != 0 ] || ! grep -q '[1-9][0-9]* passed, 0 failed' "$work/defmt.txt"; then
    echo "defmt firmware checks failed"
    exit 1
fi

# --- instruction budgets: QEMU trace of the plain image ------------------------------------------
# measure DIR ELF NM QEMU-ARGS...: counts the instructions QEMU executes between each return
# from `measure_begin` and the next `measure_end` of ELF (whose symbols NM reads), pairs them
# with the work the firmware prints (`measure: <what> <units>`), into DIR/measured.txt, and
# prints them.
measure() {
    local dir=$1 elf=$2 nm=$3; shift 3
    sym() { $nm -S "$elf" | awk -v s="$1" '$4 == s { print $1, $2 }'; }
    local begin_addr begin_size end_addr end_size
    read -r begin_addr begin_size < <(sym measure_begin)
    read -r end_addr end_size < <(sym measure_end)
    rm -f "$dir/trace"; mkfifo "$dir/trace"
    timeout $QEMU_TIMEOUT "$@" "${ONE_INSN[@]}" -d exec,nochain -D "$dir/trace" \
        -kernel "$elf" >"$dir/trace-run.txt" &
    local qemu_pid=$!
    # The reader has a timeout of its own: a QEMU that dies before it opens the FIFO would
    # leave the reader's open() blocked for good.
    # Every halfword address of the two functions, as QEMU prints a 32-bit pc (%08x): a set
    # lookup per line, where parsing each line's pc cost the reader as much as QEMU's run.
    timeout $((QEMU_TIMEOUT + 5)) awk -v b=$((16#$begin_addr & ~1)) -v bs=$((16#$begin_size)) \
        -v e=$((16#$end_addr & ~1)) -v es=$((16#$end_size)) '
        BEGIN {
            for (a = b; a < b + bs; a += 2) B[sprintf("%08x", a)] = 1
            for (a = e; a < e + es; a += 2) E[sprintf("%08x", a)] = 1
        }
        /^Trace/ {
            split($4, f, "/"); pc = tolower(f[2])
            if (pc in B) { on = 1; n = 0; next }
            if (pc in E) { if (on) print n; on = 0; next }
            if (on) n++
        }' "$dir/trace" >"$dir/counts.txt" || { echo "the trace reader failed or timed out"; exit 1; }
    wait $qemu_pid
    grep '^measure: ' "$dir/trace-run.txt" | awk '{ print $2, $3 }' >"$dir/work.txt"
    if [ "$(wc -l <"$dir/counts.txt")" != "$(wc -l <"$dir/work.txt")" ]; then
        echo "trace regions and measure: lines do not match"; exit 1
    fi
    paste -d' ' "$dir/work.txt" "$dir/counts.txt" >"$dir/measured.txt"
    while read -r what units insns; do
        printf '  %-16s %8d instructions for %6d units = %.2f per unit\n' \
            "$what" "$insns" "$units" "$(awk -v a="$insns" -v b="$units" 'BEGIN { print a / b }')"
    done <"$dir/measured.txt"
}
per() { awk -v k="$2" '$1 == k { printf "%.2f", $3 / $2 }' "$1/measured.txt"; }

# stack_check RUN CLOSURE PREFIX: each function's stack bound from CLOSURE (firmware_closure.py's
# `stack_bound` lines) beside the peak the firmware measured by painting (RUN's `stack: NAME
# BYTES` lines, NAME the function's path after PREFIX). Fails when a measured call has no
# bound, or used more stack than its bound (the analysis would be missing something).
stack_check() {
    python3 - "$@" <<'PY'
import sys
run, closure, prefix = sys.argv[1:4]
bounds = {}
for line in open(closure):
    f = line.split()
    if len(f) == 3 and f[0] == "stack_bound" and f[1].startswith(prefix):
        bounds[f[1][len(prefix):]] = f[2]
measured = {}
for line in open(run):
    f = line.split()
    if len(f) >= 3 and f[0] == "stack:":
        measured[f[1]] = " ".join(f[2:])
failed = False
for name in sorted(set(bounds) | set(measured)):
    bound, got = bounds.get(name, "none"), measured.get(name, "-")
    ok = got == "-" or (bound.isdigit() and got.isdigit() and int(got) <= int(bound))
    failed |= not ok
    unit = lambda v: f"{v:>9} B" if v.isdigit() else f"{v:>11}"
    print(f"  {'' if ok else 'CHECK FAIL '}stack of {name:<24} bound {unit(bound)}"
          f"   measured {unit(got)}")
sys.exit(1 if failed else 0)
PY
}
# max_bound CLOSURE PREFIX: the largest `stack_bound` of the functions named PREFIX*.
max_bound() {
    awk -v p="$2" '$1 == "stack_bound" && index($2, p) == 1 {
        if ($3 !~ /^[0-9]+$/) { m = $3; exit } if ($3 > m) m = $3 } END { print m }' "$1"
}
# run_image NAME DIR TARGET EXAMPLE FEATURES QEMU-ARGS...: clippy and a release build of
# EXAMPLE for TARGET (FEATURES: cargo's `--features x`, or empty), the image copied to
# DIR/EXAMPLE.elf and run under QEMU into DIR/run.txt; exits when the run or a check fails.
run_image() {
    local name=$1 dir=$2 target=$3 example=$4 features=$5; shift 5
    echo "== $name: clippy and cargo run --release --target $target --example $example $features"
    # shellcheck disable=SC2086 # FEATURES is zero or two words.
    cargo clippy --quiet --release --target "$target" --example "$example" $features -- -D warnings
    # shellcheck disable=SC2086
    cargo build --quiet --release --target "$target" --example "$example" $features
    mkdir -p "$dir"
    cp "$CARGO_TARGET_DIR/$target/release/examples/$example" "$dir/$example.elf"
    set +e
    timeout $QEMU_TIMEOUT "$@" -kernel "$dir/$example.elf" | tee "$dir/run.txt"
    local status=${PIPESTATUS[0]}
    set -e
    echo "QEMU exit status: $status"
    if [ "$status" != 0 ] || ! grep -q '^[1-9][0-9]* passed, 0 failed$' "$dir/run.txt"; then
        echo "$name firmware checks failed"
        exit 1
    fi
}
# calls_check NAME DIR OBJDUMP ELF CRATE: the call graph of the image's `CRATE::firmware::calls`
# functions into DIR/calls.txt (firmware_closure.py); a panic path or a call without a stack
# bound fails, and each call's bound is printed beside its measured peak (stack_check).
calls_check() {
    local name=$1 dir=$2 objdump=$3 elf=$4 crate=$5
    set +e
    python3 .ci/firmware_closure.py "$objdump" "$elf" "$crate::firmware::calls" >"$dir/calls.txt"
    local status=$?
    set -e
    if [ "$status" != 0 ]; then
        echo "CHECK FAIL   a $name rope2d call reaches a panic path or has no stack bound"
        grep -E 'panic path|stack bound not' "$dir/calls.txt"
        fail=1
    else
        echo "check ok     no panic path reachable from the $name image's rope2d calls"
    fi
    stack_check "$dir/run.txt" "$dir/calls.txt" "$crate::firmware::" || fail=1
}
# Soft-float routines, by their ABI and libgcc names (__aeabi_fmul, __aeabi_i2f, __addsf3,
# __fixsfsi, __floatsisf, __truncdfsf2, ...); integer helpers (__aeabi_lmul, __aeabi_uidiv)
# are fine.
SOFT_FLOAT='^(__aeabi_([fd]|u?[il]2[fd])|__[a-z]+[sd]f[0-9]|__[a-z]+[sd]f[sd]i|__float[a-z]*[sd]f)'
# The pattern itself must catch what it is for.
for name in __aeabi_fmul __aeabi_dadd __aeabi_i2f __aeabi_ul2d __addsf3 __fixsfsi __floatsisf \
            __truncdfsf2 __powisf2; do
    echo "$name" | grep -Eq "$SOFT_FLOAT" || { echo "CHECK FAIL   pattern misses $name"; fail=1; }
done
for name in __aeabi_lmul __aeabi_uidiv __aeabi_memcpy __udivsi3 __aeabi_llsl; do
    echo "$name" | grep -Eq "$SOFT_FLOAT" && { echo "CHECK FAIL   pattern matches $name"; fail=1; }
done
# no_soft_float NAME NM ELF: fails when the image links a soft-float routine.
no_soft_float() {
    # `nm` apart from the match: under `|| true` its failure would read as "none found".
    local symbols soft
    symbols=$($2 "$3")
    soft=$(awk '{ print $NF }' <<<"$symbols" | grep -E "$SOFT_FLOAT" || true)
    if [ -n "$soft" ]; then
        echo "CHECK FAIL   soft-float routines in the $1 image:" $soft
        fail=1
    else
        echo "check ok     no soft-float routine (__aeabi_f*, __aeabi_d*, __addsf3, ...) in the $1 image"
    fi
}
text_of() { awk '$1 == "closure_text_bytes" { print $2 }' "$1"; }
echo "== instruction counts (QEMU exec trace, one instruction per block)"
measure "$work" "$ELF" $NM "${QEMU[@]}"
budget "instructions per rotated pair (scalar backend, rotate_qk, whole grid)" "$(per "$work" pairs)" $MAX_INSNS_PER_PAIR instructions
budget "instructions per (cos, sin) entry (Table::build, 14x14, d = 64)" "$(per "$work" table_entries)" $MAX_INSNS_PER_ENTRY instructions
budget "instructions per rotated pair (Q15, DSP extension, rotate, whole grid)" "$(per "$work" q15_pairs)" $MAX_Q15_INSNS_PER_PAIR instructions

# --- sizes and panic paths -------------------------------------------------------------------
echo "== what the example pulls from rope2d (call graph of calls::*)"
set +e
python3 .ci/firmware_closure.py $OBJDUMP "$ELF" "cortex_m4::firmware::calls::" | tee "$work/closure.txt"
closure_status=${PIPESTATUS[0]}
set -e
if [ "$closure_status" != 0 ]; then
    echo "CHECK FAIL   rope2d's apply/table functions reach a panic path (or have no stack bound)"
    fail=1
else
    echo "check ok     no panic path reachable from rope2d's apply and table functions"
fi
text_bytes=$(awk '$1 == "closure_text_bytes" { print $2 }' "$work/closure.txt")
budget ".text reached from the example's rope2d calls (axial 2-D, constant preset)" "$text_bytes" $MAX_TEXT_BYTES bytes
# For information: the 3-D check (Wan 2.1 table from its constant preset, tokens at
# explicit positions), the general table builder (specs chosen at run time) and an i8 buffer
# requantised by the f32 table (the staged path).
for part in calls_3d calls_general calls_i8; do
    set +e
    python3 .ci/firmware_closure.py $OBJDUMP "$ELF" "cortex_m4::firmware::$part::" >"$work/$part.txt"
    part_status=$?
    set -e
    if [ "$part_status" != 0 ]; then
        echo "CHECK FAIL   $part reaches a panic path or has no stack bound"
        grep -E 'panic path|stack bound not' "$work/$part.txt"; fail=1
    fi
    printf '  %-14s .text %6s bytes (all it reaches, shared code included)\n' "$part" \
        "$(awk '$1 == "closure_text_bytes" { print $2 }' "$work/$part.txt")"
done
echo "== stack: bound from the disassembly (every path), peak measured on the device (by painting)"
# Every calls* set at once (the Q15 and i8 calls included): panic paths and stack bounds.
calls_check Cortex-M4F "$work" $OBJDUMP "$ELF" cortex_m4
budget "stack of any call of the axial set (calls::*), bound" \
    "$(max_bound "$work/calls.txt" "cortex_m4::firmware::calls::")" $MAX_STACK_BYTES bytes
# Not `nm | grep -q`: under pipefail, grep's early exit can fail nm with SIGPIPE, and the
# failed pipeline would read as "not linked".
symbols=$($NM "$ELF")
if grep -Eq 'rem_pio2|[^a-z_](sinf|cosf|sin|cos)$' <<<"$symbols"; then
    echo "CHECK FAIL   libm sin/cos or its argument reduction is linked"; fail=1
else
    echo "check ok     no libm sinf/cosf and no rem_pio2 (large-argument reduction) in the image"
fi
# For information: every rope2d function in the image, also those reached only indirectly
# (`Error`'s `Display`, called through `core::fmt` when the example prints an error).
# (Into a variable first: a failed nm inside `echo "$(…)"` would go unnoticed under set -e.)
rope2d_bytes=$($NM -S -C --defined-only "$ELF" | python3 -c '
import sys
print(sum(int(f[1], 16) for f in (l.split(None, 3) for l in sys.stdin)
          if len(f) == 4 and f[2] in "tT" and f[3].lstrip("<").startswith("rope2d::")))')
echo "  all rope2d functions in the image: $rope2d_bytes bytes"
echo "  whole firmware image (golden data, formatting, semihosting included):"
arm-none-eabi-size "$ELF" | sed 's/^/    /'
grep '^table: ' "$work/run.txt" | sed 's/^/  RAM of the 14x14, d = 64 /'

# --- the other images: Cortex-M33, Cortex-M0, RISC-V ---------------------------------------
# Cortex-M33: examples/cortex_m4.rs for thumbv8m.main-none-eabihf with the `dsp` feature
# (QEMU's Cortex-M33 has the optional DSP extension) on MPS2-AN505, held to the M4F's budgets.
# (Without the feature its Q15 calls take the plain-Rust loop, which the M0 and RISC-V images
# run.)
m33="$work/m33"
M33_QEMU=(qemu-system-arm -cpu cortex-m33 -machine mps2-an505 -nographic
          -semihosting-config enable=on,target=native)
run_image Cortex-M33 "$m33" thumbv8m.main-none-eabihf $EXAMPLE "--features dsp" "${M33_QEMU[@]}"
echo "== Cortex-M33 instruction counts"
measure "$m33" "$m33/$EXAMPLE.elf" $NM "${M33_QEMU[@]}"
budget "Cortex-M33: instructions per rotated pair (rotate_qk, whole grid)" "$(per "$m33" pairs)" $MAX_INSNS_PER_PAIR instructions
budget "Cortex-M33: instructions per (cos, sin) entry (Table::build, 14x14, d = 64)" "$(per "$m33" table_entries)" $MAX_INSNS_PER_ENTRY instructions
budget "Cortex-M33: instructions per rotated pair (Q15, DSP extension, rotate, whole grid)" "$(per "$m33" q15_pairs)" $MAX_Q15_INSNS_PER_PAIR instructions
echo "== Cortex-M33: what the example pulls from rope2d, its stack"
calls_check Cortex-M33 "$m33" $OBJDUMP "$m33/$EXAMPLE.elf" cortex_m4
python3 .ci/firmware_closure.py $OBJDUMP "$m33/$EXAMPLE.elf" "cortex_m4::firmware::calls::" >"$m33/closure.txt" || true
budget "Cortex-M33: .text reached from the axial set's rope2d calls" "$(text_of "$m33/closure.txt")" $MAX_TEXT_BYTES bytes
budget "Cortex-M33: stack of any call of the axial set (calls::*), bound" \
    "$(max_bound "$m33/calls.txt" "cortex_m4::firmware::calls::")" $MAX_STACK_BYTES bytes

# Cortex-M0 (no FPU): examples/cortex_m0.rs, integer only, on the micro:bit.
m0="$work/m0"
M0_QEMU=(qemu-system-arm -cpu cortex-m0 -machine microbit -nographic
         -semihosting-config enable=on,target=native)
run_image Cortex-M0 "$m0" thumbv6m-none-eabi cortex_m0 "" "${M0_QEMU[@]}"
echo "== Cortex-M0 instruction counts"
measure "$m0" "$m0/cortex_m0.elf" $NM "${M0_QEMU[@]}"
budget "Cortex-M0: instructions per rotated pair (Q15, rounded, saturated, whole grid)" "$(per "$m0" pairs)" $MAX_M0_INSNS_PER_PAIR instructions
budget "Cortex-M0: instructions per Q15 (cos, sin) entry (Q15Table::build, 8x8, d = 32)" "$(per "$m0" table_entries)" $MAX_M0_INSNS_PER_ENTRY instructions
echo "== Cortex-M0: what the example pulls from rope2d (call graph of calls::*), its stack"
calls_check Cortex-M0 "$m0" $OBJDUMP "$m0/cortex_m0.elf" cortex_m0
printf '  .text %s bytes (all the calls reach, compiler-builtins included)\n' "$(text_of "$m0/calls.txt")"
budget "Cortex-M0: stack of any rope2d call of the example, bound" \
    "$(max_bound "$m0/calls.txt" "cortex_m0::firmware::calls::")" $MAX_M0_STACK_BYTES bytes
no_soft_float Cortex-M0 $NM "$m0/cortex_m0.elf"
echo "  Cortex-M0 image:"
arm-none-eabi-size "$m0/cortex_m0.elf" | sed 's/^/    /'

# RISC-V RV32IMAC (no FPU): examples/riscv32.rs, the same integer-only checks, on sifive_e.
rv="$work/rv"
RV_QEMU=(qemu-system-riscv32 -machine sifive_e -nographic
         -semihosting-config enable=on,target=native)
run_image RISC-V "$rv" riscv32imac-unknown-none-elf riscv32 "" "${RV_QEMU[@]}"
echo "== RISC-V instruction counts"
measure "$rv" "$rv/riscv32.elf" riscv64-unknown-elf-nm "${RV_QEMU[@]}"
budget "RISC-V: instructions per rotated pair (Q15, rounded, saturated, whole grid)" "$(per "$rv" pairs)" $MAX_RV_INSNS_PER_PAIR instructions
budget "RISC-V: instructions per Q15 (cos, sin) entry (Q15Table::build, 8x8, d = 32)" "$(per "$rv" table_entries)" $MAX_RV_INSNS_PER_ENTRY instructions
echo "== RISC-V: what the example pulls from rope2d (call graph of calls::*), its stack"
calls_check RISC-V "$rv" riscv64-unknown-elf-objdump "$rv/riscv32.elf" riscv32
budget "RISC-V: .text reached from the example's rope2d calls" "$(text_of "$rv/calls.txt")" $MAX_RV_TEXT_BYTES bytes
budget "RISC-V: stack of any rope2d call of the example, bound" \
    "$(max_bound "$rv/calls.txt" "riscv32::firmware::calls::")" $MAX_RV_STACK_BYTES bytes
no_soft_float RISC-V riscv64-unknown-elf-nm "$rv/riscv32.elf"
echo "  RISC-V image:"
riscv64-unknown-elf-size "$rv/riscv32.elf" | sed 's/^/    /'

exit $fail
