#!/usr/bin/env python3
"""sampled_accuracy.py - how close a sampled recording's heap figures are
to the truth.

    bench/sampled_accuracy.py [--build DIR] [--seeds N] [-o FILE] [--tiny]

For each workload (churn, deep and mix, with 2 threads and with 1), one
full recording (`wsprof record`: every block, the truth) and N sampled ones
(`--sample-bytes 524288`, WSPROF_SAMPLE_SEED 1..N) of the same program.
Compared with the full recording, from `wsprof report summary --json` and
`wsprof report timeline --json`:

  peak              the counted peak (the summary's), and the peak the
                    sampled blocks alone estimate ("estimated_from_samples"),
                    relative error
  leaked            the counted leaked bytes, difference in bytes
  allocations       the counted allocations, difference
  live over time    the highest live bytes in each twentieth of the run
                    (time as a fraction of each run's length: a sampled run
                    is faster), the largest and the mean difference over the
                    twentieths, relative to the full run's peak

With one thread a workload does the same thing in the same order in every
run, so the figures measure the recorder. With two, the threads interleave
differently in every run, and a full recording (several times slower)
interleaves them differently from a sampled one: the peak and the live
bytes of two runs differ by that much whatever records them (the spread of
two full runs is given for comparison).

With -o, the table replaces the block between <!-- sampled_accuracy.py -->
and <!-- /sampled_accuracy.py --> of FILE (BENCHMARKS.md), which
compare.py keeps. --tiny runs small inputs with one seed (the test suite's
check that this script works; its figures mean nothing).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

SOURCE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE_BYTES = 524288
# program, threads, iterations a thread (full, tiny)
# (long enough that a twentieth of a sampled run spans several ticks of
# the coarse clock that stamps events: a few ms)
WORKLOADS = [
    ("churn", 1, 4_000_000, 2000), ("churn", 2, 2_000_000, 1000),
    ("deep", 1, 10_000_000, 2000), ("deep", 2, 5_000_000, 1000),
    ("mix", 1, 8_000_000, 1000), ("mix", 2, 4_000_000, 1000),
]
TWENTIETHS = 20


def fail(message):
    print("sampled_accuracy.py: " + message, file=sys.stderr)
    sys.exit(1)


def run_json(argv):
    out = subprocess.run(argv, capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"{' '.join(argv)}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def record(wsprof, program, threads, iterations, scratch, seed=None):
    """One recording: the heap's summary object and its timeline."""
    trace = os.path.join(scratch, "trace.wsp")
    if os.path.exists(trace):
        os.unlink(trace)
    env = dict(os.environ)
    argv = [wsprof, "record", "-o", trace]
    if seed is not None:
        argv += ["--sample-bytes", str(SAMPLE_BYTES)]
        env["WSPROF_SAMPLE_SEED"] = str(seed)
    out = subprocess.run(argv + [program, str(threads), str(iterations)], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"{' '.join(argv)} {program}: {out.stderr.strip()}")
    heap = run_json([wsprof, "report", "summary", "--json", trace])["kinds"]["heap"]
    timeline = run_json([wsprof, "report", "timeline", "--json", trace])
    live = next(k for k in timeline["kinds"] if k["kind"] == "heap")
    if seed is not None and not heap.get("counted"):
        fail(f"the sampled trace of {program} has no counted heap totals")
    os.unlink(trace)
    return heap, live


def twentieths(live):
    """The highest live bytes in each twentieth of the run."""
    points = live["points"]
    end = points[-1]["t_s"] if points and points[-1]["t_s"] > 0 else 1
    out = []
    for i in range(TWENTIETHS):
        lo, hi = i / TWENTIETHS * end, (i + 1) / TWENTIETHS * end
        values = [p["allocated"] for p in points if lo <= p["t_s"] < hi]
        out.append(max(values) if values else (out[-1] if out else 0))
    return out


def series_error(truth, other, peak):
    d = [abs(a - b) / peak for a, b in zip(twentieths(truth), twentieths(other))] if peak else [0]
    return max(d), sum(d) / len(d)


def pct(x):
    return f"{x * 100:+.1f}%"


def main():
    p = argparse.ArgumentParser(description="A sampled recording's heap figures against a full recording's.")
    p.add_argument("--build", default=os.path.join(SOURCE_ROOT, "build"), help="the build directory (default build)")
    p.add_argument("--seeds", type=int, default=None, help="sampled runs per workload (default 3; --tiny 1)")
    p.add_argument("-o", "--output", default=None, help="write the table into this file's block (BENCHMARKS.md)")
    p.add_argument("--tiny", action="store_true", help="tiny inputs, once: checks that everything runs")
    args = p.parse_args()
    seeds = args.seeds if args.seeds is not None else (1 if args.tiny else 3)
    if seeds < 1:
        fail("--seeds must be at least 1")
    wsprof = os.path.join(args.build, "analyzer", "wsprof")
    for f in [wsprof] + [os.path.join(args.build, "bench", w[0]) for w in WORKLOADS]:
        if not os.access(f, os.X_OK):
            fail(f"{f} is missing: build first (ninja -C {args.build})")

    rows = []
    with tempfile.TemporaryDirectory(prefix="wsprof-accuracy-") as scratch:
        for prog, threads, full, tiny in WORKLOADS:
            n = tiny if args.tiny else full
            program = os.path.join(args.build, "bench", prog)
            print(f"sampled_accuracy.py: {prog}, {threads} thread(s), {n} steps each: 2 full runs, {seeds} sampled",
                  file=sys.stderr)
            truth, truth_live = record(wsprof, program, threads, n, scratch)
            again, again_live = record(wsprof, program, threads, n, scratch)
            peak = truth["peak_bytes"]
            spread = (again["peak_bytes"] / peak - 1 if peak else 0, series_error(truth_live, again_live, peak)[1])
            for seed in range(1, seeds + 1):
                s, live = record(wsprof, program, threads, n, scratch, seed)
                most, mean = series_error(truth_live, live, peak)
                est = s["estimated_from_samples"]["peak_bytes"]
                rows.append((f"{prog} {threads}", seed, peak, s["peak_bytes"] / peak - 1 if peak else 0,
                             est / peak - 1 if peak else 0, s["leaked_bytes"] - truth["leaked_bytes"],
                             s["allocations"] - truth["allocations"], most, mean, spread))

    lines = [f"Sampled recording (`--sample-bytes {SAMPLE_BYTES:,}`) against a full recording of the same program, "
             f"{seeds} seed(s) each" + (" (tiny inputs: the figures mean nothing)" if args.tiny else "") + ".",
             "Peak and live errors are relative to the full run's peak; live over time compares the highest live",
             "bytes in each twentieth of the run. The last column is a second full run against the first (peak,",
             "mean live error): how much two runs differ whatever records them.",
             "",
             "| workload, threads | seed | true peak | counted peak | estimated peak (samples only) | leaked, B off "
             "| allocations off | live: largest error | live: mean error | full vs full |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, seed, peak, counted, est, leaked, allocs, most, mean, spread in rows:
        lines.append(f"| {name} | {seed} | {peak:,} | {pct(counted)} | {pct(est)} | {leaked:+,} | {allocs:+,} | "
                     f"{most * 100:.1f}% | {mean * 100:.1f}% | {pct(spread[0])}, {spread[1] * 100:.1f}% |")
    table = "\n".join(lines)
    print(table)
    if args.output:
        block = ("<!-- sampled_accuracy.py -->\n## Sampled recording's accuracy (bench/sampled_accuracy.py)\n\n"
                 + table + "\n<!-- /sampled_accuracy.py -->\n")
        try:
            with open(args.output) as f:
                text = f.read()
        except OSError:
            text = ""
        pattern = re.compile(r"<!-- sampled_accuracy\.py -->.*?<!-- /sampled_accuracy\.py -->\n", re.S)
        text = pattern.sub(lambda _: block, text) if pattern.search(text) else text + "\n" + block
        with open(args.output, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
