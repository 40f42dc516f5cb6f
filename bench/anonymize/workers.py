"""The workers, each in a fresh process: ``python -m bench.anonymize.workers mondrian`` (Mondrian on one
big table, its peak RSS its own) and ``… pycanon`` (pycanon's checks, one JSON line per function as it
finishes, so the parent can stop it when its budget is spent); and the snippets each tool runs from a cold
process (``python -c SNIPPET csv hierarchies k suppression out qi-json``; the last stdout line is JSON)."""

from __future__ import annotations

import json
import math
import resource
import sys
import time
from typing import Any

from bench.anonymize.spec import PYCANON_FUNCS
from bench.harness.peers import worker_main

PRIVDB_COLD = """
import json, sys, time
import pandas as pd
from privdb.anonymize import anonymize
csv, hdir, k, supp, out, qi = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5], \
    json.loads(sys.argv[6])
df = pd.read_csv(csv, sep=";")
a = anonymize(df, qi, k=k, algorithm="lattice", hierarchies=hdir, fix_labels=True, suppression_limit=supp)
t = time.perf_counter()
a.table.to_csv(out, sep=";", index=False)
write = time.perf_counter() - t
print(json.dumps({"write": write, "node": a.node, "loss": a.ncp, "suppressed": a.n_suppressed,
                  "evaluations": a.params.get("evaluations"), "inner": a.seconds}))
"""

ANJANA_COLD = """
import json, sys, time
import pandas as pd
from anjana.anonymity import k_anonymity_inner
csv, hdir, k, supp, out, qi = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5], \
    json.loads(sys.argv[6])
df = pd.read_csv(csv, sep=";")
hier = {c: dict(pd.read_csv(f"{hdir}/{c}.csv", sep=";", header=None)) for c in qi}
t = time.perf_counter()
data, n_supp, levels = k_anonymity_inner(df, [], qi, k, supp * 100, hier)
inner = time.perf_counter() - t
t = time.perf_counter()
data.to_csv(out, sep=";", index=False)
write = time.perf_counter() - t
print(json.dumps({"write": write, "node": {c: int(v) for c, v in levels.items()}, "suppressed": int(n_supp),
                  "inner": inner}))
"""


def mondrian_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """Mondrian on one big table read from Parquet: seconds per run, NCP, peak RSS before and after."""
    import pandas as pd

    from privdb.anonymize import anonymize

    frame = pd.read_parquet(spec["path"])
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    times = []
    result = None
    for _ in range(int(spec["repeats"])):
        t0 = time.perf_counter()
        result = anonymize(frame, spec["qi"], k=int(spec["k"]))
        times.append(time.perf_counter() - t0)
    assert result is not None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "rows": len(frame),
        "times": times,
        "ncp": result.ncp,
        "k": int(result.class_sizes().min()),
        "classes": result.n_classes,
        "rss_table_mib": base,
        "rss_peak_mib": peak,
    }


def pycanon_worker(spec: dict[str, Any]) -> None:
    """pycanon's checks on a table read from Parquet, one JSON line per function as it finishes."""
    import pandas as pd
    from pycanon import anonymity  # type: ignore[import-untyped, unused-ignore]

    frame = pd.read_parquet(spec["path"])
    qi, sens = spec["qi"], [spec["sensitive"]]
    print(json.dumps({"ready": True}), flush=True)
    for name in PYCANON_FUNCS:
        fn = getattr(anonymity, name)
        t0 = time.perf_counter()
        value = fn(frame, qi) if name == "k_anonymity" else fn(frame, qi, sens)
        seconds = time.perf_counter() - t0
        print(json.dumps({"name": name, "seconds": seconds, "value": _jsonable(value)}), flush=True)
    print(json.dumps({"done": True}), flush=True)


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    value = float(value)
    return None if math.isnan(value) else value


if __name__ == "__main__":
    if sys.argv[1:] == ["mondrian"]:
        worker_main(mondrian_worker)
    else:
        pycanon_worker(json.loads(sys.stdin.read()))
