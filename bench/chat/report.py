#!/usr/bin/env python3
"""bench/chat's report: per turn the prompt's tokens, those taken from the cache, and the
median prefill milliseconds with the prefix cache and with the whole prompt; the totals and
their ratio. Exits 1 when the greedy replies of the two differ (or a run's turns are missing).

  report.py --cached A.json... --whole B.json... [--csv FILE --label TEXT]
"""

import argparse
import datetime
import os
import statistics
import sys


def turns(path):
    import json
    with open(path) as f:
        return json.load(f)["turns"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cached", nargs="+", required=True)
    ap.add_argument("--whole", nargs="+", required=True)
    ap.add_argument("--csv")
    ap.add_argument("--label", default="")
    a = ap.parse_args()
    cached = [turns(p) for p in a.cached]
    whole = [turns(p) for p in a.whole]
    n = len(cached[0])
    if n == 0 or any(len(t) != n for t in cached + whole):
        print("bench/chat: the runs did not all answer every turn", file=sys.stderr)
        return 1
    same = all(run[i]["new_tokens"] == cached[0][i]["new_tokens"]
               for run in cached + whole for i in range(n))
    print(f"{'turn':>4} {'prompt':>7} {'cached':>7} {'prefill ms cached':>18} "
          f"{'prefill ms whole':>17} {'ratio':>7}")
    tot_c = tot_w = 0.0
    rows = []
    for i in range(n):
        c = statistics.median(run[i]["prefill_ms"] for run in cached)
        w = statistics.median(run[i]["prefill_ms"] for run in whole)
        tot_c += c
        tot_w += w
        prompt = len(cached[0][i]["prompt_ids"])
        reused = cached[0][i]["cached_tokens"]
        rows.append((i + 1, prompt, reused, c, w))
        print(f"{i + 1:>4} {prompt:>7} {reused:>7} {c:>18.1f} {w:>17.1f} {w / c:>7.2f}")
    print(f"total prefill: {tot_c:.1f} ms with the prefix cache, {tot_w:.1f} ms whole: "
          f"{tot_w / tot_c:.2f}x; greedy replies {'the same' if same else 'DIFFER'} "
          f"({len(cached)} + {len(whole)} runs)")
    if a.csv:
        new = not os.path.exists(a.csv)
        with open(a.csv, "a") as f:
            if new:
                f.write("date,label,turn,prompt_tokens,cached_tokens,prefill_ms_cached,"
                        "prefill_ms_whole,replies_same\n")
            date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            for t, p, r, c, w in rows:
                f.write(f'{date},"{a.label}",{t},{p},{r},{c:.2f},{w:.2f},{int(same)}\n')
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
