#!/usr/bin/env bash
# Where a tuned kernel spends its time, per basic block of its machine code: rebuilds a
# database record with `metatune replay` (LLVM CPU target), dumps its assembly
# (METATUNE_LLVM_DUMP_DIR), assembles it with its local labels, samples a second replay with
# `perf record`, aligns the JIT samples to the object's instruction offsets and prints the
# hottest blocks with what they contain (FMAs, broadcasts, loads, ...).
#
#   bash scripts/profile_record.sh DB RECORD [METATUNE]
#
# Needs perf (Debian: linux-perf) and binutils' as/objdump; not installed by scripts/setup.sh
# (a debugging aid, not part of the build or the tests). JIT code has no symbols for perf, so
# the alignment is found by matching sample addresses to instruction starts; the share of
# samples it places is printed first.
set -euo pipefail
if [ $# -lt 2 ]; then echo "usage: $0 DB RECORD [path/to/metatune]" >&2; exit 2; fi
db=$1 rec=$2
mt=${3:-$(cd "$(dirname "$0")/.." && pwd)/build/bin/metatune}
for tool in perf as objdump python3; do
  command -v $tool >/dev/null || { echo "profile_record: needs '$tool'" >&2; exit 2; }
done
[ -x "$mt" ] || { echo "profile_record: no metatune binary at $mt" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/dump"
METATUNE_LLVM_DUMP_DIR="$work/dump" "$mt" replay --db "$db" --record "$rec" --repeats 1 \
  --min-repeat-ms 1 >"$work/first.txt" 2>&1 || { tail -5 "$work/first.txt"; exit 1; }
asm=$(ls "$work"/dump/*.s 2>/dev/null | head -1)
[ -n "$asm" ] || { echo "profile_record: no assembly dumped (not an llvm.cpu record?)" >&2; exit 1; }
as -L "$asm" -o "$work/k.o"
objdump -d --no-show-raw-insn "$work/k.o" >"$work/k.dis"
perf record -q -o "$work/perf.data" "$mt" replay --db "$db" --record "$rec" --repeats 5 \
  --min-repeat-ms 300 >"$work/replay.txt" 2>&1
perf script -i "$work/perf.data" -F ip 2>/dev/null | sort | uniq -c >"$work/samples.txt"
python3 - "$work" <<'PY'
import collections, re, sys
d = sys.argv[1]
lines = open(d + '/k.dis').read().splitlines()
targets = set()
for l in lines:
    m = re.match(r'^ +([0-9a-f]+):\s+j\w+\s+([0-9a-f]+) <', l)
    if m: targets.add(int(m.group(2), 16))
# Basic blocks: a new one at every label, jump target and instruction after a jump.
ins, block_of, blocks, cur, after_jump = {}, {}, collections.OrderedDict(), None, False
for l in lines:
    m = re.match(r'^([0-9a-f]+) <(.*)>:', l)
    if m:
        cur = m.group(2); blocks[cur] = []; after_jump = False; continue
    m = re.match(r'^ +([0-9a-f]+):\s+(\S+)\s*(.*)', l)
    if not m or cur is None: continue
    a = int(m.group(1), 16)
    if a in targets or after_jump:
        cur = '%s@%x' % (cur.split('@')[0], a); blocks[cur] = []
    ins[a] = m.group(2); block_of[a] = cur; blocks[cur].append((m.group(2), m.group(3)))
    after_jump = m.group(2).startswith('j')
samples = [(int(c), int(a, 16)) for c, a in (l.split() for l in open(d + '/samples.txt'))]
total = sum(c for c, _ in samples)
jit = sorted(((c, a) for c, a in samples if 0x7f0000000000 <= a < 0x800000000000), reverse=True)
best = (0, 0)
for _, a0 in jit[:8]:
    for o in ins:
        hit = sum(c for c, a in jit if (a - (a0 - o)) in ins)
        if hit > best[0]: best = (hit, a0 - o)
placed, base = best
if not placed:
    sys.exit('profile_record: no sample fell on the kernel (too short a run?)')
per = collections.Counter()
for c, a in jit:
    if (a - base) in block_of: per[block_of[a - base]] += c
print(f'{total} samples, {placed} ({100 * placed / total:.0f} %) placed in the kernel; share of those:')
for b, c in per.most_common(12):
    kinds = collections.Counter(i for i, _ in blocks[b])
    fma = sum(v for k, v in kinds.items() if 'fmadd' in k)
    what = ', '.join(f'{k} {v}' for k, v in kinds.most_common(6))
    print(f'{100 * c / placed:5.1f} %  {b:28s} {len(blocks[b]):4d} instructions, {fma} FMA: {what}')
PY
tail -1 "$work/replay.txt"
