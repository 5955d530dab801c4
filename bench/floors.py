#!/usr/bin/env python3
"""floors.py - what recording costs without its stacks, without its writer,
and without both: the floor under each workload's figures.

    bench/floors.py [--build DIR] [--scratch DIR] [--runs R] [--only NAME,...] [--tiny]

Builds libwsprof.so three more times from this source tree, configured with
-Drecorder_floor=no-stacks (every event recorded without its call stack),
no-writer (events recorded into the threads' buffers as always, and the
buffers handed back unread: nothing encoded, compressed or written) and
bare (both), into DIR-SCRATCH (default /tmp/wsprof-floors). Then runs the
workloads of compare.py plain, under `wsprof record` with the library of
--build (default build), and under it with each of the three
(WSPROF_PRELOAD), alternating the order, R times each (default 7), and
prints a Markdown table: the median wall time over the plain run's and
the median user + system time over the plain run's, per event (per event
and other call for annotated and cudaheavy, which are mostly calls).

Then the same for reading: the last full trace of each workload read to
its end and nothing more (bench/readtrace), and its `wsprof report
summary`, R times each; where heaptrack is installed, one heaptrack run
of the workload and `heaptrack_print` of it (its totals only, as in
compare.py), R times. Reading alone bounds how much faster than
heaptrack_print any report can be.

--tiny runs each workload once on tiny inputs and checks what the
variants record (the test suite's check that this script and the
recorder_floor option still work; its figures mean nothing): the full
and no-stacks traces hold every event the program made, no-stacks with no
call stack; no-writer and bare traces hold none.

What a variant leaves is a lower bound for any change to the parts it
skips: with no stacks and no writer ("bare"), the program's threads still
take a sequence number, read the clock, append each record, hand buffers
over and read a freed block's size; wsprof's launcher, sampler and
writer threads still run. The traces of the three variants are not
usable and are not kept. Machines are noisy: compare figures of one run.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (its workloads, its timed runs and its checks)
from compare import fail  # noqa: E402

VARIANTS = ["no-stacks", "no-writer", "bare"]


def source_of(build_dir):
    """The source tree a meson build directory was set up from, or None."""
    try:
        with open(os.path.join(build_dir, "meson-info", "meson-info.json")) as f:
            return os.path.realpath(json.load(f)["directories"]["source"])
    except (OSError, ValueError, KeyError):
        return None


def build_variant(name, scratch):
    """libwsprof.so with -Drecorder_floor=name, set up once, rebuilt as the source changes."""
    out = os.path.join(scratch, name)
    if source_of(out) not in (None, os.path.realpath(compare.SOURCE_ROOT)):
        shutil.rmtree(out)  # set up from another source tree: its sources are not these
    if not os.path.exists(os.path.join(out, "build.ninja")):
        r = subprocess.run(["meson", "setup", out, compare.SOURCE_ROOT, f"-Drecorder_floor={name}", "-Dtests=false"],
                           capture_output=True, text=True)
        if r.returncode:
            fail(f"meson setup of the {name} variant failed:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    r = subprocess.run(["ninja", "-C", out, "preload/libwsprof.so"], capture_output=True, text=True)
    if r.returncode:
        fail(f"building the {name} variant failed:\n{r.stdout[-2000:]}")
    with open(os.path.join(out, "config.h")) as f:
        config = f.read()
    want = {"WSP_FLOOR_NO_STACKS": name in ("no-stacks", "bare"), "WSP_FLOOR_NO_WRITER": name in ("no-writer", "bare")}
    for macro, on in want.items():
        if f"#define {macro} {int(on)}" not in config:
            fail(f"{out}/config.h does not say {macro} {int(on)}: remove {out} and run again")
    return os.path.join(out, "preload", "libwsprof.so")


def check_variant(args, tool, trace, events, prog):
    """--tiny: a variant's trace holds what the variant says it records."""
    wsprof = os.path.join(args.build, "analyzer", "wsprof")
    if tool in ("no-writer", "bare"):
        out = subprocess.run([wsprof, "report", "summary", "--json", trace], capture_output=True, text=True)
        m = re.search(r'"events":(\d+)', out.stdout)
        if out.returncode or not m:
            fail(f"wsprof report summary could not read the {tool} trace: {out.stderr.strip()}")
        if int(m.group(1)):
            fail(f"the {tool} trace holds {m.group(1)} events: its recorder wrote them")
    else:
        compare.check_recorded(wsprof, trace, events, f"{prog} ({tool})")
        sites = subprocess.run([wsprof, "report", "callsites", "--json", trace], capture_output=True, text=True)
        stacked = '"function":"' in sites.stdout  # a site named by a function: a stack was recorded
        if sites.returncode or stacked != (tool == "full"):
            fail(f"the {tool} trace's call sites {'have' if stacked else 'lack'} frames: {sites.stderr.strip()}")


def measure(workload, args, libs, scratch):
    prog, threads, full_iterations, tiny_iterations = workload
    iterations = tiny_iterations if args.tiny else full_iterations
    program = os.path.join(args.build, "bench", prog)
    wsprof = os.path.join(args.build, "analyzer", "wsprof")
    env = dict(os.environ)
    if prog == "cudaheavy":
        env["LD_LIBRARY_PATH"] = os.path.join(args.build, "tests", "cuda")
    tools = ["plain"] + list(libs)
    wall = {t: [] for t in tools}
    cpu = {t: [] for t in tools}
    counted = None
    kept = None
    for r in range(args.runs):
        order = tools[r % len(tools):] + tools[:r % len(tools)]
        for tool in order:
            workdir = tempfile.mkdtemp(dir=scratch)
            e = dict(env)
            if tool != "plain":
                e["WSPROF_PRELOAD"] = libs[tool]
            run = compare.Run(compare.command_line("plain" if tool == "plain" else "wsprof", program, threads,
                                                   iterations, workdir, wsprof), e, workdir, sample=False)
            n = compare.program_events(run, f"{prog} under {tool}")
            if args.tiny and tool != "plain":
                check_variant(args, tool, os.path.join(workdir, "trace.wsp"), n[0], prog)
            if tool == "full":
                if kept:
                    shutil.rmtree(kept)
                kept = workdir
            else:
                shutil.rmtree(workdir)
            if counted is None:
                counted = n
            elif n != counted:
                fail(f"{prog} made {n} events and calls this time, {counted} before: it must do the same work every run")
            wall[tool].append(run.wall)
            cpu[tool].append(run.cpu)
    med = {t: (statistics.median(wall[t]), statistics.median(cpu[t])) for t in tools}
    reading = read_times(args, prog, program, threads, iterations, env, kept, scratch)
    shutil.rmtree(kept)
    return prog, threads, counted, med, reading


def read_times(args, prog, program, threads, iterations, env, kept, scratch):
    """Median wall seconds of reading the full trace alone, of its summary,
    and of heaptrack_print on a heaptrack trace of the same work (None
    without heaptrack, or for cudaheavy, whose driver calls it does not see)."""
    trace = os.path.join(kept, "trace.wsp")
    reader = [os.path.join(args.build, "bench", "readtrace"), trace]
    summary = [os.path.join(args.build, "analyzer", "wsprof"), "report", "summary", trace]
    argvs = {"read": reader, "summary": summary}
    if prog != "cudaheavy" and shutil.which("heaptrack") and shutil.which("heaptrack_print") and not args.tiny:
        out = tempfile.mkdtemp(dir=scratch)
        compare.Run(compare.command_line("heaptrack", program, threads, iterations, out, None), env, out, sample=False)
        found = [n for n in os.listdir(out) if re.match(r"heaptrack\.(zst|gz)$", n)]
        if not found:
            fail(f"heaptrack wrote no trace for {prog}")
        argvs["heaptrack_print"] = ["heaptrack_print"] + compare.HEAPTRACK_PRINT_ARGS + ["-f", os.path.join(out, found[0])]
    times = {k: [] for k in argvs}
    for _ in range(args.runs):
        for k, a in argvs.items():
            times[k].append(compare.Run(a, env, kept, sample=False).wall)
    return {k: statistics.median(v) for k, v in times.items()}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default=os.path.join(compare.SOURCE_ROOT, "build"),
                   help="a configured and built tree (bench programs, the test CUDA driver, the full recorder)")
    p.add_argument("--scratch", default="/tmp/wsprof-floors", help="where the three variants are built")
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--only", default="", help="workloads by name, comma-separated")
    p.add_argument("--tiny", action="store_true", help="tiny inputs, once, and the variants' traces checked")
    args = p.parse_args()
    args.build = os.path.abspath(args.build)
    if args.tiny:
        args.runs = 1
    if args.runs < 1:
        fail("--runs must be at least 1")
    full = os.path.join(args.build, "preload", "libwsprof.so")
    for f in [full, os.path.join(args.build, "analyzer", "wsprof"), os.path.join(args.build, "bench", "readtrace")]:
        if not os.path.exists(f):
            fail(f"{f} is missing: build the tree first (meson setup {args.build} && ninja -C {args.build})")
    wanted = {w for w in args.only.split(",") if w}
    unknown = wanted - {w[0] for w in compare.WORKLOADS}
    if unknown:
        fail(f"no workload {', '.join(sorted(unknown))}; there are "
             + ", ".join(sorted({w[0] for w in compare.WORKLOADS})))
    for tool in ("meson", "ninja"):
        if not shutil.which(tool):
            fail(f"{tool} is not on PATH: it builds the variants (./dev.sh test installs it)")
    os.makedirs(args.scratch, exist_ok=True)
    libs = {"full": full}
    for v in VARIANTS:
        libs[v] = build_variant(v, args.scratch)
    has_driver = os.path.exists(os.path.join(args.build, "tests", "cuda", "libcuda.so.1"))
    rows = []
    scratch = tempfile.mkdtemp(prefix="wsprof-floors-")
    try:
        for w in compare.WORKLOADS:
            if (wanted and w[0] not in wanted) or (w[0] == "cudaheavy" and not has_driver):
                continue
            print(f"floors.py: {w[0]} with {w[1]} thread(s)", file=sys.stderr)
            rows.append(measure(w, args, libs, scratch))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    names = list(libs)
    print("| workload | threads | events + other calls | plain s | "
          + " | ".join(f"{n} ×" for n in names) + " | "
          + " | ".join(f"{n} CPU ns/call" for n in names) + " |")
    print("|---|--:|--:|--:|" + "--:|" * (2 * len(names)))
    for prog, threads, (events, calls), med, _ in rows:
        plain_wall, plain_cpu = med["plain"]
        n = calls  # workload.h: its events and its other calls
        print(f"| {prog} | {threads} | {n:,} | {plain_wall:.3f} | "
              + " | ".join(f"{med[t][0] / plain_wall:.2f}" for t in names) + " | "
              + " | ".join(f"{(med[t][1] - plain_cpu) / n * 1e9:.0f}" for t in names) + " |")

    print()
    print("| workload | threads | events + other calls | reading alone s | `wsprof report summary` s | "
          "`heaptrack_print` s | heaptrack_print / reading alone | heaptrack_print / summary |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|")
    for prog, threads, (events, calls), _, r in rows:
        ht = r.get("heaptrack_print")
        ratio = lambda x: f"{ht / x:.1f}" if ht else "n/a"
        print(f"| {prog} | {threads} | {calls:,} | {r['read']:.3f} | {r['summary']:.3f} | "
              f"{f'{ht:.3f}' if ht else 'n/a'} | {ratio(r['read'])} | {ratio(r['summary'])} |")


if __name__ == "__main__":
    main()

