#!/usr/bin/env python3
"""What run.sh reads from the JSON lines of ort_model.py and reference.py.

  json_field.py JSON KEY       the value of KEY ("" if absent)
  json_field.py JSON variants  ort_model.py's variants as "name=ms name=ms ..."
  json_field.py JSON check     reference.py's verdict as "ok rel_err=1.2e-07" or "FAIL ..."
"""

import json
import sys


def main(text, key):
    r = json.loads(text)
    if key == "variants":
        return " ".join(f"{k}={v['latency_ms']}" for k, v in r["variants"].items()
                        if "latency_ms" in v)
    if key == "check":
        verdict = "ok" if r["ok"] else "FAIL"
        if "error" in r:
            return f"{verdict} {r['error']}"
        return f"{verdict} rel_err={r['rel_err']:.2e}"
    value = r.get(key, "")
    return value if isinstance(value, str) else json.dumps(value)


if __name__ == "__main__":
    print(main(sys.argv[1], sys.argv[2]))
