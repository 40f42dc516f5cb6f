"""privdb's secure noise against insecure NumPy and two secure peers, in one run on the same data.

Three tasks at ε = 1, sensitivity 1: Laplace noise on floats, two-sided geometric noise on integers and
randomised response on bits. The **floor** is NumPy's PCG64 noise added in plain floats: not private as
released (predictable PRNG; float Laplace leaks through its low bits, Mironov 2012), it only shows how fast
noise can be. **privdb** draws exact noise from ChaCha20, whole vectors per call. **IBM diffprivlib** and
**OpenDP** run at their most secure settings (listed in the notes written to docs/benchmarks.md).

diffprivlib randomises one Python scalar per call and OpenDP samples value by value in exact big integers:
both take minutes on 10M values, so they run once on the first ``--subset`` values of the same data and
their time per value is extrapolated to N (marked *). Fast rows run on all N values, best of 3.

Run: ``.venv/bin/python -m bench.mechanisms [--n 10000000] [--subset 200000] [--quick]``. A full run
rewrites the section of docs/benchmarks.md between the ``mechanisms`` markers; ``--quick`` only prints.
"""

from __future__ import annotations

import argparse
import math
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bench.harness import machine, peers, report
from privdb.mechanisms import BinaryRandomizedResponse, Geometric, Laplace

EPS = 1.0
FLIP = 1.0 / (1.0 + math.exp(EPS))  # randomised response at ε: flip each bit with probability 1/(1 + e^ε)
LAPLACE, INTEGER, RR = "Laplace, float", "Geometric, integer", "Randomised response"
FLOOR = "numpy (floor)"
COLUMNS = ["task (ε = 1)", "implementation", "setting", "measured on", "s for N", "values/s", "÷ numpy"]
COLUMNS += ["privdb speed-up", "peak MiB", "check"]
NOTES = """\
{written_by}

Machine: {machine}

N = {n:,} values (floats uniform in [0, 1000], the same rounded to integers, and bits with 30% ones), the
same data for every implementation. Fast rows: best of 3 runs on all N values. Rows marked * ran once on the
first {subset:,} values and are extrapolated to N (time per value × N). Converting inputs to a peer's API
types is not timed. "÷ numpy": time over the insecure NumPy floor of the same task; "privdb speed-up": the
peer's time over privdb's; "peak MiB": tracemalloc peak of one further call, NumPy buffers and output
included; "check": empirical noise sd (expected: √2 ≈ 1.414 for floats, {sd_int:.3f} for integers) or
share of flipped bits ({flip:.4f} expected).
"""

SETTINGS = """\
Settings, each peer's most secure one at ε = 1, sensitivity 1:

- **privdb**: `Laplace(epsilon=1, sensitivity=1).release`: exact discrete Laplace on a 2^-20 grid;
  `Geometric(epsilon=1).release_int`; `BinaryRandomizedResponse.for_epsilon(1).release`: each flip an exact
  Bernoulli(1/(1+e)). All from ChaCha20 keyed by `os.urandom`, whole vectors per call.
- **diffprivlib 0.6.6** (`random_state=None`, i.e. `secrets.SystemRandom`; loaded without the package
  `__init__`, which fails on scikit-learn 1.9): `Snapping(lower=0, upper=1000)` is Mironov's snapping
  mechanism, its only float Laplace built against the floating-point attack. It clamps to the bounds and
  rounds outputs to a power of two at or above the scale (here 2), hence its larger sd; without the optional
  `crlibm` it uses `np.log`. `Laplace` (Holohan–Braghin 4-uniform sampler, unsnapped float output) is shown
  for reference. `Geometric` and `Binary` (string labels "0"/"1") are its integer and yes/no mechanisms.
- **OpenDP 0.16** (`contrib`, OpenSSL CSPRNG): `make_laplace` on `vector_domain(atom_domain(T=float,
  nan=False), size=…)` with `l1_distance(T=float)`, scale 1. The default `k = -1074` samples exactly on the
  finest float grid (ε exactly 1). `k = -20 - ⌈log2 N⌉ = {k}` is the coarsest grid, the nearest to
  privdb's, whose rounding charge keeps ε ≤ 1 + 2^-20 over N values (an L1 metric cannot assume that only
  one value changes); coarser grids are no faster. The 50× target uses the faster of the two. Integers:
  `make_laplace` on `Vec<i64>` (exact discrete Laplace). Randomised response:
  `make_randomized_response_bool(prob=e/(1+e))` per value, and `make_randomized_response_bitvec(f=2/(1+e))`
  on the packed bits: it flips each bit with probability f/2 = 1/(1+e), the same channel (its own account
  treats the vector as one record).
"""


@dataclass(frozen=True)
class Case:
    task: str
    impl: str
    setting: str
    run: Callable[[], Any]
    truth: NDArray[Any]  # the input, to check the output against; its size is the values per call

    @property
    def role(self) -> str:
        return {FLOOR: "floor", "privdb": "privdb"}.get(self.impl, "peer")


@dataclass(frozen=True)
class Result:
    case: Case
    seconds: float  # one call of ``run`` (best of the repeats)
    check: str
    peak_mib: float | None

    def seconds_for(self, n: int) -> float:
        return self.seconds * n / self.case.truth.size


def opendp_k(n: int) -> int:
    """OpenDP's grid 2^k for floats: its rounding charge over ``n`` values stays below 2^-20·ε."""
    return -20 - math.ceil(math.log2(n))


def build_cases(n: int, subset: int) -> list[Case]:
    data = np.random.default_rng(20240601)  # the data only; every mechanism draws its own noise
    values = data.uniform(0.0, 1000.0, n)
    ints = np.rint(values).astype(np.int64)
    bits = data.random(n) < 0.3
    sub_f, sub_i, sub_b = values[:subset], ints[:subset], bits[:subset]
    f_list, i_list, b_list = sub_f.tolist(), sub_i.tolist(), sub_b.tolist()
    rng = np.random.default_rng()
    p = -math.expm1(-EPS)  # numpy's geometric is on {1, 2, ...}: the difference of two is discrete Laplace

    def geo(size: int) -> NDArray[np.int64]:
        return rng.geometric(p, size)

    pdb_lap, pdb_geo = Laplace(epsilon=EPS, sensitivity=1.0), Geometric(epsilon=EPS, sensitivity=1)
    pdb_rr = BinaryRandomizedResponse.for_epsilon(EPS)  # every mechanism is built off the clock
    cases = [
        Case(LAPLACE, FLOOR, "rng.laplace, float add", lambda: values + rng.laplace(0, 1 / EPS, n), values),
        Case(LAPLACE, "privdb", "Laplace", lambda: pdb_lap.release(values), values),
        Case(INTEGER, FLOOR, "G − G′, rng.geometric", lambda: ints + geo(n) - geo(n), ints),
        Case(INTEGER, "privdb", "Geometric.release_int", lambda: pdb_geo.release_int(ints), ints),
        Case(RR, FLOOR, "rng.random() < p, xor", lambda: bits ^ (rng.random(n) < FLIP), bits),
        Case(RR, "privdb", "BinaryRandomizedResponse", lambda: pdb_rr.release(bits), bits),
    ]
    dpl = peers.load_diffprivlib()
    if dpl is not None:  # random_state=None: every mechanism draws from secrets.SystemRandom (os.urandom)
        d_snap = dpl.Snapping(epsilon=EPS, sensitivity=1.0, lower=0.0, upper=1000.0).randomise
        d_lap = dpl.Laplace(epsilon=EPS, sensitivity=1.0).randomise
        d_geo = dpl.Geometric(epsilon=EPS, sensitivity=1).randomise
        d_bin = dpl.Binary(epsilon=EPS, value0="0", value1="1").randomise
        labels = np.where(sub_b, "1", "0")
        l_list = labels.tolist()
        cases += [
            Case(LAPLACE, "diffprivlib", "Snapping on [0, 1000]", lambda: [d_snap(v) for v in f_list], sub_f),
            Case(LAPLACE, "diffprivlib", "Laplace (not snapped)", lambda: [d_lap(v) for v in f_list], sub_f),
            Case(INTEGER, "diffprivlib", "Geometric", lambda: [d_geo(v) for v in i_list], sub_i),
            Case(RR, "diffprivlib", "Binary", lambda: [d_bin(v) for v in l_list], labels),
        ]
    dp: Any = peers.optional("opendp.prelude")
    if dp is None:
        return cases
    dp.enable_features("contrib")
    k = opendp_k(n)
    floats = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=subset), dp.l1_distance(T=float)
    exact = dp.m.make_laplace(*floats, scale=1.0 / EPS)
    gridded = dp.m.make_laplace(*floats, scale=1.0 / EPS, k=k)
    integers = dp.vector_domain(dp.atom_domain(T="i64")), dp.l1_distance(T="i64")
    i64 = dp.m.make_laplace(*integers, scale=1.0 / EPS)
    rr_bool = dp.m.make_randomized_response_bool(prob=1.0 - FLIP)
    bitvec = dp.bitvector_domain(max_weight=1), dp.discrete_distance()
    rr_vec = dp.m.make_randomized_response_bitvec(*bitvec, f=2 * FLIP)  # flips a bit w.p. f/2
    packed = np.packbits(bits)
    cases += [
        Case(LAPLACE, "OpenDP", "make_laplace, default k = -1074", lambda: exact(f_list), sub_f),
        Case(LAPLACE, "OpenDP", f"make_laplace, k = {k}", lambda: gridded(f_list), sub_f),
        Case(INTEGER, "OpenDP", "make_laplace on Vec<i64>", lambda: i64(i_list), sub_i),
        Case(RR, "OpenDP", "make_randomized_response_bool", lambda: [rr_bool(b) for b in b_list], sub_b),
        Case(RR, "OpenDP", "make_randomized_response_bitvec", lambda: rr_vec(packed), bits),
    ]
    return cases


def check(case: Case, out: Any) -> str:
    if isinstance(out, bytes):  # OpenDP's packed bit vector
        out = np.unpackbits(np.frombuffer(out, dtype=np.uint8))[: case.truth.size].astype(bool)
    if case.task == RR:
        return f"flip {np.mean(np.asarray(out) != case.truth):.4f}"
    return f"sd {np.std(np.asarray(out, dtype=np.float64) - case.truth):.3f}"


def measure(case: Case, repeats: int) -> Result:
    best, out = math.inf, None
    for _ in range(repeats):
        out = None  # free the previous output before the next run
        t0 = time.perf_counter()
        out = case.run()
        best = min(best, time.perf_counter() - t0)
    verdict = check(case, out)
    out = None
    peak = None
    if case.role != "peer":  # NumPy buffers trace cheaply; the peers' per-value Python objects would not
        tracemalloc.start()
        case.run()
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    return Result(case, best, verdict, peak)


def machine_line() -> str:
    return machine.describe(
        f"numpy {np.__version__}, " + machine.versions(("cryptography", "diffprivlib", "opendp")),
        memory=False,
    )


def rows(results: list[Result], n: int) -> list[list[str]]:
    ref = {(r.case.task, r.case.role): r.seconds_for(n) for r in results if r.case.role != "peer"}
    out = []
    for r in results:
        full, size = r.seconds_for(n), r.case.truth.size
        star = " *" if size < n else ""
        speed_up = "—" if r.case.role != "peer" else f"{full / ref[r.case.task, 'privdb']:,.0f}×"
        peak = "—" if r.peak_mib is None else f"{r.peak_mib:,.0f}"
        floor = full / ref[r.case.task, "floor"]
        out.append([r.case.task, r.case.impl, r.case.setting, f"{size:,}", f"{full:,.3f}{star}"])
        out[-1] += [f"{size / r.seconds:,.0f}", f"{floor:,.1f}×", speed_up, peak, r.check]
    return out


def targets(results: list[Result], n: int) -> list[str]:
    def best(task: str, impl: str) -> float:
        return min(r.seconds_for(n) for r in results if r.case.task == task and r.case.impl == impl)

    lap, lap_np = best(LAPLACE, "privdb"), best(LAPLACE, FLOOR)
    rr, rr_np = best(RR, "privdb"), best(RR, FLOOR)
    odp = best(LAPLACE, "OpenDP") if any(r.case.impl == "OpenDP" for r in results) else math.nan
    ok = report.OK
    return [
        f"- privdb Laplace ≤ 7× numpy: {lap / lap_np:.1f}× ({ok[lap <= 7 * lap_np]})",
        f"- privdb Laplace ≤ 2 s for N: {lap:.2f} s ({ok[lap <= 2.0]})",
        f"- privdb randomised response ≤ 3× numpy: {rr / rr_np:.1f}× ({ok[rr <= 3 * rr_np]})",
        f"- privdb ≥ 50× faster than OpenDP's fastest float Laplace: {odp / lap:,.0f}×"
        f" ({ok[odp >= 50 * lap]})",
    ]


def markdown(results: list[Result], n: int, subset: int) -> str:
    q = math.exp(-EPS)  # the discrete Laplace of rate ε has variance 2q/(1 − q)²
    sd_int = math.sqrt(2 * q) / (1 - q)
    notes = NOTES.format(
        written_by=report.written_by("bench.mechanisms", "bench/mechanisms.py"),
        machine=machine_line(),
        n=n,
        subset=subset,
        flip=FLIP,
        sd_int=sd_int,
    )
    lines = [*notes.split("\n"), *report.table(COLUMNS, rows(results, n)), "", "Targets:", ""]
    lines += [*targets(results, n), "", *SETTINGS.format(k=opendp_k(n)).split("\n")]
    return report.section("mechanisms", "Noise mechanisms: privdb, NumPy, diffprivlib, OpenDP", lines)


def main() -> None:
    parser = argparse.ArgumentParser(description="Secure noise: privdb against NumPy, diffprivlib, OpenDP.")
    parser.add_argument("--n", type=int, default=10_000_000, help="values per mechanism (default 10M)")
    parser.add_argument("--subset", type=int, default=200_000, help="values for the slow per-value peers")
    parser.add_argument("--quick", action="store_true", help="smoke run on 100,000 values; prints only")
    args = parser.parse_args()
    n, subset = (100_000, 10_000) if args.quick else (args.n, min(args.subset, args.n))
    console = report.console()
    for warm in build_cases(1_000, 1_000):  # first calls pay imports and caches: keep them off the clock
        warm.run()
    results = []
    for case in build_cases(n, subset):
        console.print(f"{case.task}: {case.impl}, {case.setting} ({case.truth.size:,} values)")
        results.append(measure(case, repeats=3 if case.truth.size == n else 1))
    title = f"Noise for N = {n:,} values (* extrapolated from {subset:,})"
    table = report.rich_table(title, COLUMNS, rows(results, n), right=lambda i: 3 <= i <= 8)
    console.print(table, machine_line(), *map(report.plain, targets(results, n)), sep="\n")
    if not args.quick:
        report.write_section("mechanisms", markdown(results, n, subset))
        console.print(f"Wrote the mechanisms section of {report.DOC}")


if __name__ == "__main__":
    main()
