#!/usr/bin/env python3
"""Where a firmware image can reach a panic: every call into a panicking function, with the
source lines it was inlined from.

Usage: panic_paths.py ELF. Needs llvm-objdump (rustup component llvm-tools) and, for the source
lines, arm-none-eabi-addr2line (Debian's binutils-arm-none-eabi). Run by .ci/run when the
panic-check link fails, on the image built without the check, so the failure says where.
Prints nothing when no panic is reachable.
"""
import glob
import re
import shutil
import subprocess
import sys

PANICKY = ("core::panicking::", "panic_on_ord_violation", "len_mismatch_fail", "slice_index_fail",
           "unwrap_failed", "expect_failed", "rust_begin_unwind", "slice_end_index", "slice_start_index")

elf = sys.argv[1]
tools = glob.glob("/root/.rustup/toolchains/*/lib/rustlib/*/bin/llvm-objdump") + glob.glob(
    str(__import__("pathlib").Path.home()) + "/.rustup/toolchains/*/lib/rustlib/*/bin/llvm-objdump")
objdump = shutil.which("llvm-objdump") or (tools[0] if tools else None)
if objdump is None:
    sys.exit("llvm-objdump not found: rustup component add llvm-tools")
dis = subprocess.run([objdump, "-d", "--no-show-raw-insn", "-C", elf], capture_output=True, text=True).stdout
addr2line = shutil.which("arm-none-eabi-addr2line")

# Calls into a panicking function, and the branches that lead to those calls (a function often
# shares one call among several checks).
calls = {}
branches = []
current = None
for line in dis.splitlines():
    head = re.match(r"^[0-9a-f]+ <(.*)>:$", line.strip())
    if head:
        current = head.group(1)
        continue
    ins = re.match(r"^\s*([0-9a-f]+):\s+([a-z.]+)\s+0x([0-9a-f]+) <([^>+]*)", line)
    if not ins or current is None:
        continue
    addr, op, target, name = ins.groups()
    if any(p in name for p in PANICKY) and not any(p in current for p in PANICKY):
        calls[addr] = (current, name)
    elif op.startswith("b") and not op.startswith("bl"):
        branches.append((addr, target))


def source(addr):
    if not addr2line:
        return []
    out = subprocess.run([addr2line, "-e", elf, "-i", "-f", "-C", "0x" + addr], capture_output=True, text=True).stdout
    lines = out.strip().splitlines()
    return [f"{loc.split('/work/')[-1]}  ({fn[:80]})" for fn, loc in zip(lines[0::2], lines[1::2]) if "/rustc/" not in loc]


for addr, (caller, target) in sorted(calls.items()):
    print(f"{caller[:120]}\n    calls {target[:100]} at 0x{addr}")
    seen = set()
    for at in [addr] + [b for b, t in branches if t == addr]:
        where = tuple(source(at)[:4])
        if where and where not in seen:
            seen.add(where)
            print("      from " + "\n           ".join(where))
