#!/usr/bin/env python3
"""Where a firmware image spends its instructions under QEMU: instructions executed per source
file and per function (the innermost function an instruction was inlined from), and per
function called with what it calls (inclusive), per call.

Usage:
    qemu-system-arm ... -kernel ELF -d in_asm,exec,nochain -D trace.log
    profile.py ELF trace.log [ROWS]

QEMU logs each translated block once (`in_asm`) and every execution of one (`exec`; `nochain`
keeps chained blocks from skipping the log), so the instructions a block holds times its
executions is exact, but for a block translated again with another length (the last
translation counts; the script says how many starts had two lengths). The inclusive counts
follow the calls: a block that ends in `bl` or `blx` calls, and the run returns when it reaches
a return address on the stack (a tail call returns with its caller); a function called while it
is already on the stack counts once. The whole run is counted, start-up and stack painting
included; the rows name them. Needs arm-none-eabi-addr2line and arm-none-eabi-nm (Debian's
binutils-arm-none-eabi). A UET run logs about 2 GB.
"""
import bisect
import collections
import re
import subprocess
import sys

elf, log = sys.argv[1], sys.argv[2]
rows = int(sys.argv[3]) if len(sys.argv) > 3 else 30

blocks = {}  # block start -> its instructions' addresses (the last translation of it)
calls_at_end = {}  # block start -> the return address, if the block ends in a call
retranslated = set()  # block starts translated with two lengths
runs = collections.Counter()  # block start -> executions
order = []  # block starts in the order they ran
with open(log, errors="replace") as f:
    current, call = None, None
    for line in f:
        if line.startswith("IN:"):
            current, call = [], None
            continue
        if current is not None:
            m = re.match(r"0x([0-9a-f]{8}):\s+([0-9a-f]{4})( [0-9a-f]{4})?\s+(\S+)", line)
            if m:
                a = int(m.group(1), 16)
                current.append(a)
                call = a + (4 if m.group(3) else 2) if m.group(4) in ("bl", "blx") else None
                continue
            if current:
                if current[0] in blocks and len(blocks[current[0]]) != len(current):
                    retranslated.add(current[0])
                blocks[current[0]] = current
                calls_at_end[current[0]] = call
            current = None
        if line.startswith("Trace"):
            m = re.search(r"\[[0-9a-f]+/([0-9a-f]+)/", line)
            if m:
                start = int(m.group(1), 16)
                runs[start] += 1
                order.append(start)

executed = collections.Counter()
for start, n in runs.items():
    for a in blocks.get(start, []):
        executed[a] += n
total = sum(executed.values())

addrs = sorted(executed)
out = subprocess.run(["arm-none-eabi-addr2line", "-e", elf, "-i", "-f", "-C", "-a"] + [hex(a) for a in addrs],
                     capture_output=True, text=True).stdout.splitlines()
frames = {}  # address -> [(function, file:line)], innermost first
address, pending = None, None
for line in out:
    if re.fullmatch(r"0x[0-9a-f]+", line) and pending is None:
        address = int(line, 16)
        frames[address] = []
    elif pending is None:
        pending = line
    else:
        frames[address].append((pending, line))
        pending = None

by_file, by_function = collections.Counter(), collections.Counter()
for a, n in executed.items():
    f = frames.get(a) or [("?", "?")]
    # The innermost frame in this workspace's sources names the file (as `crate/src/file.rs`);
    # else the library function.
    ours = next((loc for _, loc in f if not re.search(r"/rustc/|/\.cargo/|^\?", loc)), None)
    by_file[re.sub(r".*/([\w-]+/src/[^:]*):.*", r"\1", ours) if ours else f[0][0][:70]] += n
    by_function[re.sub(r"<[^<>]*>", "", re.sub(r"<[^<>]*>", "", f[0][0]))[:90]] += n

# Inclusive counts by the function each call entered (its symbol), following the calls.
symbols = []
for line in subprocess.run(["arm-none-eabi-nm", "-C", "--defined-only", elf], capture_output=True,
                           text=True).stdout.splitlines():
    parts = line.split(" ", 2)
    if len(parts) == 3 and parts[1] in "tT":
        symbols.append((int(parts[0], 16) & ~1, parts[2]))
symbols.sort()
starts = [a for a, _ in symbols]


def symbol(a):
    i = bisect.bisect_right(starts, a) - 1
    return symbols[i][1] if i >= 0 else "?"


def readable(name):
    """A legacy-mangled Rust path as source spells it, without generic arguments or hash."""
    for code, text in (("$LT$", "<"), ("$GT$", ">"), ("$C$", ","), ("$u20$", " "), ("$RF$", "&"), ("$BP$", "*"),
                       ("$u7b$", "{"), ("$u7d$", "}"), ("..", "::")):
        name = name.replace(code, text)
    name = re.sub(r"::h[0-9a-f]{16}$", "", name)
    while re.search(r"<[^<>]*>", name):
        name = re.sub(r"<[^<>]*>", "", name)
    return re.sub(r"_?::_?", "::", name)


inclusive, calls = collections.Counter(), collections.Counter()
stack = []  # (return address, function entered, instructions counted when it was entered)
on_stack = collections.Counter()
returns = collections.Counter()  # return address -> frames waiting for it
count, entering = 0, False
for start in order:
    if returns[start]:
        # Back at a return address: every frame above it (tail calls) returns too.
        while stack:
            ret, fn, at = stack.pop()
            returns[ret] -= 1
            on_stack[fn] -= 1
            if not on_stack[fn]:
                inclusive[fn] += count - at
            if ret == start:
                break
    if entering:
        fn = symbol(start)
        calls[fn] += 1
        ret = stack[-1][0]
        stack[-1] = (ret, fn, count)
        on_stack[fn] += 1
    count += len(blocks.get(start, ()))
    ret = calls_at_end.get(start)
    entering = ret is not None
    if entering:
        stack.append((ret, None, count))
        returns[ret] += 1

print(f"{total} instructions" + (f" ({len(retranslated)} blocks translated with two lengths; counted with the last)"
                                   if retranslated else ""))
for title, counter in (("by source file", by_file), ("by function", by_function)):
    print(f"\n{title}:")
    for key, n in counter.most_common(rows):
        print(f"{100 * n / total:5.1f} % {n:>10}  {key}")
print("\nby function called, with what it calls (calls, instructions per call):")
for fn, n in inclusive.most_common(rows):
    print(f"{100 * n / total:5.1f} % {n:>10} {calls[fn]:>8} {n // max(calls[fn], 1):>8}  {readable(fn)[:100]}")
