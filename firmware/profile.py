#!/usr/bin/env python3
"""Where a firmware image spends its instructions under QEMU: instructions executed per source
file and per function (the innermost function an instruction was inlined from).

Usage:
    qemu-system-arm ... -kernel ELF -d in_asm,exec,nochain -D trace.log
    profile.py ELF trace.log [ROWS]

QEMU logs each translated block once (`in_asm`) and every execution of one (`exec`; `nochain`
keeps chained blocks from skipping the log), so the instructions a block holds times its
executions is exact, but for a block translated again with another length (the last
translation counts; the script says how many starts had two lengths). The whole run is counted, start-up and stack painting included; the rows
name them. Needs arm-none-eabi-addr2line (Debian's binutils-arm-none-eabi). A UET run logs
about 2 GB.
"""
import collections
import re
import subprocess
import sys

elf, log = sys.argv[1], sys.argv[2]
rows = int(sys.argv[3]) if len(sys.argv) > 3 else 30

blocks = {}  # block start -> its instructions' addresses (the last translation of it)
retranslated = set()  # block starts translated with two lengths
runs = collections.Counter()  # block start -> executions
with open(log, errors="replace") as f:
    current = None
    for line in f:
        if line.startswith("IN:"):
            current = []
            continue
        if current is not None:
            m = re.match(r"0x([0-9a-f]{8}):", line)
            if m:
                current.append(int(m.group(1), 16))
                continue
            if current:
                if current[0] in blocks and len(blocks[current[0]]) != len(current):
                    retranslated.add(current[0])
                blocks[current[0]] = current
            current = None
        if line.startswith("Trace"):
            m = re.search(r"\[[0-9a-f]+/([0-9a-f]+)/", line)
            if m:
                runs[int(m.group(1), 16)] += 1

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

print(f"{total} instructions" + (f" ({len(retranslated)} blocks translated with two lengths; counted with the last)"
                                   if retranslated else ""))
for title, counter in (("by source file", by_file), ("by function", by_function)):
    print(f"\n{title}:")
    for key, n in counter.most_common(rows):
        print(f"{100 * n / total:5.1f} % {n:>10}  {key}")
