#!/usr/bin/env python3
"""compare.py - what recording costs with wsprof and with heaptrack.

    bench/compare.py [--build DIR] [--runs R] [--only NAME,...] [--output FILE]
                     [--no-heaptrack] [--no-install] [--tiny]

Runs the workloads of bench/ (deep with 1, 2 and 4 threads, churn, mix, annotated,
cudaheavy) plain, under `wsprof record`, under `wsprof record --sample-bytes
524288` (heap sampling, "wsprof sampled") and under `heaptrack`, alternating
the order, R times each (default 5), then analyzes one trace of each with
`wsprof report summary` and `heaptrack_print`, R times each. Prints two
tables and writes them, with a description of the machine, to FILE
(default BENCHMARKS.md at the top of the source tree; with --tiny, nothing
unless --output is given).

Figures, each the median of the R runs:
  x plain          wall time over the plain run's
  CPU ns/event     user + system time over the plain run's, per event
                   (the recorder's work, wherever it runs: the program's
                   threads, wsprof's writer thread, heaptrack_interpret)
  B/event          trace file bytes per event (heaptrack: its .zst or .gz)
  extra MiB        peak memory over the plain run's: the larger of the
                   process tree's summed RSS, sampled every 20 ms, and the
                   largest process's max RSS (getrusage), so heaptrack's
                   helper processes count too
  s/M events       analyzer seconds per million events (wall and CPU), and
                   its max RSS
An event is an allocation or a free the program made itself, as it prints
(bench/workload.h), so both recorders are divided by the same number.

heaptrack is installed with apt-get (Debian package `heaptrack`) when it is
missing, unless --no-install; if it is still missing its columns say n/a.
It does not see CUDA driver calls, so cudaheavy is not run under it.
--tiny runs every workload once on tiny inputs, and heaptrack on the
first only (the test suite's check that this script works; its figures
mean nothing). A run that fails, or a
wsprof trace with fewer events than the program made, ends the script
with status 1. Machines are noisy: compare figures of one run of this
script, not across runs.
"""
import argparse
import datetime
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

SOURCE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.sysconf("SC_PAGE_SIZE")
MIB = 1 << 20

# program (bench/NAME), threads, iterations a thread (full, tiny). deep
# keeps its total constant across thread counts, so that cost per event is
# compared on the same work.
WORKLOADS = [
    ("deep", 1, 2_000_000, 2000),
    ("deep", 2, 1_000_000, 1000),
    ("deep", 4, 500_000, 500),
    ("churn", 2, 1_000_000, 1000),
    ("mix", 2, 600_000, 1000),
    ("annotated", 2, 300_000, 1000),
    ("cudaheavy", 1, 200_000, 500),
]
HEAPTRACK_PRINT_ARGS = ["--print-peaks", "0", "--print-allocators", "0", "--print-temporary", "0",
                        "--print-leaks", "0"]
# wsprof sampled: one heap allocation recorded in about this many bytes (jemalloc's rate).
SAMPLE_BYTES = 524288
EVENTS_LINE = re.compile(r"^events (\d+) allocations (\d+) frees (\d+) calls (\d+)$", re.M)


def fail(message):
    """Ends the script that runs (compare.py, or floors.py, which uses its parts)."""
    print(f"{os.path.basename(sys.argv[0])}: {message}", file=sys.stderr)
    sys.exit(1)


def note(message):
    print(f"{os.path.basename(sys.argv[0])}: {message}", file=sys.stderr, flush=True)


class TreeSampler(threading.Thread):
    """Sums the RSS of every process of one session (the command and all
    it starts) every `interval` seconds and keeps the peak. Each pid's
    session is read once; after that only members' statm files are read,
    so a sample costs little however busy the machine is."""

    def __init__(self, session, interval=0.02):
        super().__init__(daemon=True)
        self.session, self.interval = session, interval
        self.peak = 0
        self.members, self.others = set(), set()
        self.stop = threading.Event()

    def classify(self, pid):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return int(fields[3]) == self.session  # field 6: session id
        except (OSError, IndexError, ValueError):
            return False

    def sample(self):
        total = 0
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            pid = int(name)
            if pid in self.others:
                continue
            if pid not in self.members:
                if self.classify(pid):
                    self.members.add(pid)
                else:
                    self.others.add(pid)
                    continue
            try:
                with open(f"/proc/{pid}/statm") as f:
                    total += int(f.read().split()[1]) * PAGE
            except (OSError, IndexError, ValueError):
                self.members.discard(pid)
        self.peak = max(self.peak, total)

    def run(self):
        while not self.stop.wait(self.interval):
            self.sample()


class Run:
    """One command, timed: wall seconds, CPU seconds of the whole tree,
    peak memory in bytes, its stdout and its exit status."""

    def __init__(self, argv, env, workdir, sample=True):
        out_path, err_path = os.path.join(workdir, "stdout"), os.path.join(workdir, "stderr")
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            start = time.perf_counter()
            child = subprocess.Popen(argv, env=env, cwd=workdir, stdout=out, stderr=err,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
            sampler = TreeSampler(child.pid) if sample else None
            if sampler:
                sampler.start()
            _, status, usage = os.wait4(child.pid, 0)
            self.wall = time.perf_counter() - start
            child.returncode = os.waitstatus_to_exitcode(status)
            if sampler:
                sampler.stop.set()
                sampler.join()
        self.status = child.returncode
        self.cpu = usage.ru_utime + usage.ru_stime
        self.peak = max(usage.ru_maxrss * 1024, sampler.peak if sampler else 0)
        with open(out_path, errors="replace") as f:
            self.stdout = f.read()
        with open(err_path, errors="replace") as f:
            self.stderr = f.read()
        if self.status != 0:
            fail(f"{' '.join(argv)} exited with status {self.status}:\n{self.stderr[-2000:]}")


def files_bytes(directory, pattern):
    return sum(os.path.getsize(os.path.join(directory, n)) for n in os.listdir(directory) if re.match(pattern, n))


def program_events(run, what):
    m = EVENTS_LINE.search(run.stdout)
    if not m:
        fail(f"{what} did not print its 'events N ...' line")
    return int(m.group(1)), int(m.group(4))


def find_heaptrack(allow_install):
    if shutil.which("heaptrack") and shutil.which("heaptrack_print"):
        return True, None
    if not allow_install:
        return False, "heaptrack is not installed (the `heaptrack` Debian package); its columns are n/a"
    note("heaptrack is not installed: installing the Debian package `heaptrack` with apt-get "
         "(--no-heaptrack skips it)")
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "heaptrack"]):
        if subprocess.run(sudo + cmd, env=env).returncode != 0:
            return False, "heaptrack could not be installed with apt-get; its columns are n/a"
    ok = bool(shutil.which("heaptrack") and shutil.which("heaptrack_print"))
    return ok, None if ok else "heaptrack is still missing after apt-get; its columns are n/a"


def command_line(tool, program, threads, iterations, workdir, wsprof):
    argv = [program, str(threads), str(iterations)]
    if tool == "wsprof":
        return [wsprof, "record", "-o", os.path.join(workdir, "trace.wsp"), "--"] + argv
    if tool == "sampled":
        return [wsprof, "record", "--sample-bytes", str(SAMPLE_BYTES), "-o", os.path.join(workdir, "trace.wsp"),
                "--"] + argv
    if tool == "heaptrack":
        return ["heaptrack", "-o", os.path.join(workdir, "heaptrack")] + argv
    return argv


def measure(workload, args, tools, env, scratch):
    """Record one workload R times with each tool, then analyze the last
    traces. Returns a dict of medians."""
    prog, threads, full, tiny = workload
    iterations = tiny if args.tiny else full
    program = os.path.join(args.build, "bench", prog)
    wsprof = os.path.join(args.build, "analyzer", "wsprof")
    runs = {t: [] for t in tools}
    kept = {}
    if not args.tiny:  # the first run of a program pays for a cold page cache
        warm = tempfile.mkdtemp(dir=scratch)
        Run([program, str(threads), str(iterations)], env, warm, sample=False)
        shutil.rmtree(warm)
    events = calls = None
    for r in range(args.runs):
        order = tools[r % len(tools):] + tools[:r % len(tools)]
        for tool in order:
            workdir = tempfile.mkdtemp(dir=scratch)
            run = Run(command_line(tool, program, threads, iterations, workdir, wsprof), env, workdir)
            e, c = program_events(run, f"{prog} under {tool}")
            if events is None:
                events, calls = e, c
            elif (e, c) != (events, calls):
                fail(f"{prog} made {e} events this time, {events} before: it must do the same work every run")
            run.bytes = (files_bytes(workdir, r"trace\.wsp") if tool in ("wsprof", "sampled")
                         else files_bytes(workdir, r"heaptrack\.(zst|gz)$") if tool == "heaptrack" else 0)
            runs[tool].append(run)
            if tool != "plain":
                if tool in kept:
                    shutil.rmtree(kept[tool])
                kept[tool] = workdir
            else:
                shutil.rmtree(workdir)

    med = lambda tool, f: statistics.median(f(x) for x in runs[tool])
    row = {"name": prog, "threads": threads, "iterations": iterations, "events": events, "calls": calls,
           "plain_s": med("plain", lambda x: x.wall)}
    for tool in tools:
        if tool == "plain":
            continue
        row[tool] = {
            "ratio": med(tool, lambda x: x.wall) / row["plain_s"],
            "cpu_ns_per_event": (med(tool, lambda x: x.cpu) - med("plain", lambda x: x.cpu)) / events * 1e9,
            "bytes_per_event": med(tool, lambda x: x.bytes) / events,
            "extra_mib": (med(tool, lambda x: x.peak) - med("plain", lambda x: x.peak)) / MIB,
        }
    if "sampled" in tools:
        check_sampled(wsprof, os.path.join(kept["sampled"], "trace.wsp"), prog)
    if "wsprof" in tools:
        row["wsprof"].update(analyze([wsprof, "report", "summary", os.path.join(kept["wsprof"], "trace.wsp")],
                                     args, env, scratch, events))
        check_recorded(wsprof, os.path.join(kept["wsprof"], "trace.wsp"), events, prog)
    if "heaptrack" in tools:
        trace = [n for n in os.listdir(kept["heaptrack"]) if re.match(r"heaptrack\.(zst|gz)$", n)]
        if not trace:
            fail(f"heaptrack wrote no trace for {prog}")
        row["heaptrack"].update(analyze(["heaptrack_print"] + HEAPTRACK_PRINT_ARGS +
                                        ["-f", os.path.join(kept["heaptrack"], trace[0])],
                                        args, env, scratch, events))
    for d in kept.values():
        shutil.rmtree(d)
    return row


def analyze(argv, args, env, scratch, events):
    runs = []
    for _ in range(args.runs):
        workdir = tempfile.mkdtemp(dir=scratch)
        runs.append(Run(argv, env, workdir, sample=False))
        shutil.rmtree(workdir)
    return {"analyze_s_per_mevent": statistics.median(r.wall for r in runs) / events * 1e6,
            "analyze_cpu_s_per_mevent": statistics.median(r.cpu for r in runs) / events * 1e6,
            "analyze_mib": statistics.median(r.peak for r in runs) / MIB}


def check_recorded(wsprof, trace, events, prog):
    """A recorder that drops events looks fast: wsprof must have recorded
    at least every event the program made (it also sees libc's own)."""
    out = subprocess.run([wsprof, "report", "summary", "--json", trace], capture_output=True, text=True)
    m = re.search(r'"events":(\d+)', out.stdout)
    if out.returncode != 0 or not m or '"complete":true' not in out.stdout:
        fail(f"wsprof report summary could not read the trace of {prog}: {out.stderr.strip()}")
    if int(m.group(1)) < events:
        fail(f"wsprof recorded {m.group(1)} events of {prog}, which made {events}")


def check_sampled(wsprof, trace, prog):
    """The sampled trace must read to its end and say it is sampled."""
    out = subprocess.run([wsprof, "report", "summary", "--json", trace], capture_output=True, text=True)
    if out.returncode != 0 or '"complete":true' not in out.stdout or \
            f'"sample_bytes":{SAMPLE_BYTES}' not in out.stdout:
        fail(f"wsprof report summary could not read the sampled trace of {prog}: {out.stderr.strip()}")


def fmt(v, digits=2):
    return "n/a" if v is None else f"{v:,.{digits}f}"


def tables(rows):
    """The two tables, as markdown."""
    def get(row, tool, key):
        return row.get(tool, {}).get(key)

    rec = ["| workload | threads | events | plain s | wsprof × | wsprof sampled × | heaptrack × | wsprof CPU ns/event | "
           "sampled CPU ns/event | heaptrack CPU ns/event | wsprof B/event | heaptrack B/event | wsprof extra MiB | "
           "heaptrack extra MiB |",
           "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    ana = ["| workload | threads | events | `wsprof report summary` s/M events | CPU s/M events | max RSS MiB | "
           "`heaptrack_print` s/M events | CPU s/M events | max RSS MiB | summary faster by |",
           "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for r in rows:
        name = r["name"] + (f" ({r['calls'] - r['events']:,} other calls)" if r["calls"] != r["events"] else "")
        rec.append(f"| {name} | {r['threads']} | {r['events']:,} | {fmt(r['plain_s'], 3)} | "
                   f"{fmt(get(r, 'wsprof', 'ratio'))} | {fmt(get(r, 'sampled', 'ratio'))} | "
                   f"{fmt(get(r, 'heaptrack', 'ratio'))} | {fmt(get(r, 'wsprof', 'cpu_ns_per_event'), 0)} | "
                   f"{fmt(get(r, 'sampled', 'cpu_ns_per_event'), 0)} | {fmt(get(r, 'heaptrack', 'cpu_ns_per_event'), 0)} | "
                   f"{fmt(get(r, 'wsprof', 'bytes_per_event'))} | {fmt(get(r, 'heaptrack', 'bytes_per_event'))} | "
                   f"{fmt(get(r, 'wsprof', 'extra_mib'), 1)} | {fmt(get(r, 'heaptrack', 'extra_mib'), 1)} |")
        ws, ht = get(r, "wsprof", "analyze_s_per_mevent"), get(r, "heaptrack", "analyze_s_per_mevent")
        ana.append(f"| {r['name']} | {r['threads']} | {r['events']:,} | {fmt(ws, 3)} | "
                   f"{fmt(get(r, 'wsprof', 'analyze_cpu_s_per_mevent'), 3)} | "
                   f"{fmt(get(r, 'wsprof', 'analyze_mib'), 1)} | {fmt(ht, 3)} | "
                   f"{fmt(get(r, 'heaptrack', 'analyze_cpu_s_per_mevent'), 3)} | "
                   f"{fmt(get(r, 'heaptrack', 'analyze_mib'), 1)} | "
                   f"{fmt(ht / ws if ws and ht else None, 1) + '×' if ws and ht else 'n/a'} |")
    return "\n".join(rec), "\n".join(ana)


def targets(rows):
    """The issue's targets, against this run's figures."""
    def deep(threads):
        return next((r for r in rows if r["name"] == "deep" and r["threads"] == threads and "wsprof" in r), None)

    lines = []

    def check(what, value, goal, ok):
        verdict = "n/a" if value is None else ("met" if ok else "NOT met")
        lines.append(f"- {what}: {value if value is not None else 'n/a'} (target {goal}): {verdict}")

    d1, d2, d4 = deep(1), deep(2), deep(4)
    if d2 and "sampled" in d2:
        v = d2["sampled"]["ratio"]
        check(f"sampled wsprof/plain (--sample-bytes {SAMPLE_BYTES}), deep, 2 threads", f"{v:.2f}×", "≤ 1.2×",
              v <= 1.2)
    for r in rows:  # issue 23: sampled, counting the heap's totals whole, on every workload
        if r["name"] in ("deep", "churn", "mix") and "sampled" in r:
            v = r["sampled"]["ratio"]
            check(f"sampled wsprof/plain, {r['name']}, {r['threads']} thread(s)", f"{v:.2f}×", "≤ 1.1×", v <= 1.1)
    costs = [d["wsprof"]["cpu_ns_per_event"] for d in (d1, d2, d4) if d]
    if len(costs) == 3:
        spread = max(costs) / min(costs) if min(costs) > 0 else float("inf")
        check("CPU cost per event, deep, 1 / 2 / 4 threads", " / ".join(f"{c:.0f} ns" for c in costs)
              + f" (largest / smallest {spread:.2f})", "flat", spread <= 1.5)
    if d2:
        v = d2["wsprof"]["bytes_per_event"]
        check("trace bytes per event, deep, 2 threads", f"{v:.2f}", "≤ 2.0", v <= 2.0)
        if "heaptrack" in d2:
            v = d2["heaptrack"]["analyze_s_per_mevent"] / d2["wsprof"]["analyze_s_per_mevent"]
            check("`wsprof report summary` over `heaptrack_print`, deep, 2 threads", f"{v:.1f}× faster", "≥ 5×",
                  v >= 5)
    # Issue 23: cheap on every workload.
    for r in rows:
        if "wsprof" not in r:
            continue
        w, name, n = r["wsprof"], r["name"], r["threads"]
        goal = {("churn", 2): 2.5, ("deep", 1): 1.5, ("deep", 2): 1.5, ("deep", 4): 1.5, ("mix", 2): 3.0,
                ("cudaheavy", 1): 2.0}.get((name, n))
        if goal:
            check(f"wsprof/plain, {name}, {n} thread(s)", f"{w['ratio']:.2f}×", f"≤ {goal}×", w["ratio"] <= goal)
        if name in ("deep", "churn", "mix"):
            check(f"CPU cost per event, {name}, {n} thread(s)", f"{w['cpu_ns_per_event']:.0f} ns", "≤ 150 ns",
                  w["cpu_ns_per_event"] <= 150)
        if name in ("churn", "mix"):
            check(f"trace bytes per event, {name}", f"{w['bytes_per_event']:.2f}", "≤ 2.0", w["bytes_per_event"] <= 2.0)
        if name in ("churn", "mix") and "heaptrack" in r:
            v = r["heaptrack"]["analyze_s_per_mevent"] / w["analyze_s_per_mevent"]
            check(f"`wsprof report summary` over `heaptrack_print`, {name}", f"{v:.1f}× faster", "≥ 5×", v >= 5)
        if name == "annotated" and r["calls"]:
            per_call = w["cpu_ns_per_event"] * r["events"] / r["calls"]
            check("recorder CPU per annotation call (annotated; its pool sub-allocations included)",
                  f"{per_call:.0f} ns", "≤ 40 ns", per_call <= 40)
            per_record = w["bytes_per_event"] * r["events"] / r["calls"]
            check("trace bytes per annotation record (annotated, the whole trace over its calls)",
                  f"{per_record:.2f}", "≤ 3", per_record <= 3)
            if "heaptrack" in r:
                v = r["heaptrack"]["analyze_s_per_mevent"] / w["analyze_s_per_mevent"]
                check("`wsprof report summary` over `heaptrack_print`, annotated", f"{v:.2f}×", "≥ 1× (no slower)",
                      v >= 1)
    worst = max((r["wsprof"]["extra_mib"] for r in rows if "wsprof" in r), default=None)
    if worst is not None:
        check("recorder's extra memory, largest of all workloads", f"{worst:.1f} MiB", "≤ 64 MiB + the stack table",
              worst <= 64)
    return "\n".join(lines)


def machine():
    def first(cmd, pattern=None):
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.TimeoutExpired):
            return "unknown"
        if pattern:
            m = re.search(pattern, out, re.M)
            return m.group(1).strip() if m else "unknown"
        return out.strip().splitlines()[0] if out.strip() else "unknown"

    mem = first(["cat", "/proc/meminfo"], r"^MemTotal:\s+(\d+)")
    os_name = first(["cat", "/etc/os-release"], r'^PRETTY_NAME="?([^"\n]*)')
    debian = first(["cat", "/etc/debian_version"])
    commit = first(["git", "-C", SOURCE_ROOT, "rev-parse", "--short", "HEAD"])
    dirty = subprocess.run(["git", "-C", SOURCE_ROOT, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return [
        ("CPU", f"{first(['lscpu'], r'^Model name:(.*)')} ({os.cpu_count()} CPUs online)"),
        ("memory", f"{int(mem) / (1 << 20):.1f} GiB" if mem.isdigit() else "unknown"),
        ("kernel", platform.release()),
        ("system", f"{os_name} (debian_version {debian})"),
        ("compiler", first(["cc", "--version"])),
        ("heaptrack", first(["heaptrack", "--version"]) if shutil.which("heaptrack") else "not installed"),
        ("wsprof", f"{first([os.path.join(ARGS.build, 'analyzer', 'wsprof'), '--version'])}, commit {commit}"
         + (" with uncommitted changes" if dirty else "")),
    ]


def kept_block(path, name, missing):
    """A section of the output file that another hand owns, between
    <!-- name --> and <!-- /name -->, kept as it is: billion.sh writes
    its own (bench/billion.sh -o) and sampled_accuracy.py its (-o); the
    profiles and release_cost.sh's, symbols.sh's, python_cost.sh's,
    short_procs.sh's, floors.py's, the reports on a compile's trace and
    the moments of one (moments.sh) are written by hand."""
    try:
        with open(path) as f:
            m = re.search(r"<!-- " + re.escape(name) + r" -->.*?<!-- /" + re.escape(name) + r" -->\n", f.read(), re.S)
    except OSError:
        m = None
    return m.group(0) if m else f"<!-- {name} -->\n{missing}<!-- /{name} -->\n"


def document(rows, notes, args, started):
    rec, ana = tables(rows)
    desc = "\n".join(f"- {k}: {v}" for k, v in machine())
    notes_text = "".join(f"\n> {n}\n" for n in notes)
    cmd = "bench/compare.py --build " + os.path.relpath(args.build, SOURCE_ROOT) + f" --runs {args.runs}"
    profiles = kept_block(args.output, "profiles", "## Profiles\n\nNot written yet (perf, callgrind).\n")
    billion = kept_block(args.output, "billion.sh", "## The analyzer on long traces (bench/billion.sh)\n\n"
                         "Not measured yet: `bench/billion.sh -o BENCHMARKS.md build`.\n")
    release = kept_block(args.output, "release_cost.sh", "## Reading released memory (bench/release_cost.sh)\n\n"
                         "Not measured yet: `bench/release_cost.sh build`.\n")
    symbols = kept_block(args.output, "symbols.sh", "## Naming the frames of a large program (bench/symbols.sh)\n\n"
                         "Not measured yet: `bench/symbols.sh build 20 3`.\n")
    python = kept_block(args.output, "python_cost.sh", "## Python frames (bench/python_cost.sh)\n\n"
                        "Not measured yet: `bench/python_cost.sh build 5 5`.\n")
    short_procs = kept_block(args.output, "short_procs.sh", "## Short processes (bench/short_procs.sh)\n\n"
                             "Not measured yet: `bench/short_procs.sh build 200 5`.\n")
    floors = kept_block(args.output, "floors.py", "## What each part of recording costs (bench/floors.py)\n\n"
                        "Not measured yet: `bench/floors.py --build build --runs 9`.\n")
    compile_reports = kept_block(args.output, "compile_reports", "## Reports on a compile's trace\n\n"
                                 "Not measured yet (by hand: see the section's own text).\n")
    moments = kept_block(args.output, "moments.sh", "## Any moment of a trace (bench/moments.sh, bench/moment)\n\n"
                         "Not measured yet: `bench/moments.sh build TRACE 3`.\n")
    accuracy = kept_block(args.output, "sampled_accuracy.py", "## Sampled recording's accuracy "
                          "(bench/sampled_accuracy.py)\n\nNot measured yet: `bench/sampled_accuracy.py --build build "
                          "-o BENCHMARKS.md`.\n")
    return f"""# Benchmarks: wsprof and heaptrack

Written by `{cmd}{" --tiny" if args.tiny else ""}` on {started} UTC{" (tiny inputs: the figures mean nothing)" if args.tiny else ""}.
Each figure is the median of {args.runs} run(s); plain, wsprof, wsprof sampled and heaptrack runs alternate.
Machines are noisy, this one is shared: compare figures within one table, not across runs.

## Machine

{desc}
{notes_text}
## Recording

`×` is wall time over the plain run's; CPU ns/event is the user + system time the recorder added
(all threads and helper processes), per event; B/event is trace bytes per event; extra MiB is peak
memory over the plain run's (the process tree's summed RSS). An event is an allocation or a free
the program made (a realloc is both); "other calls" are annotations (annotated) or kernel
launches (cudaheavy), which wsprof records and heaptrack does not see. Both recorders run with
their defaults: wsprof samples written pages too (WSPROF_ACCESS=0 in the environment of
compare.py turns that off), heaptrack records every allocation's stack. "wsprof sampled" is
`wsprof record --sample-bytes {SAMPLE_BYTES}`: about one heap allocation in {SAMPLE_BYTES:,} bytes
recorded, with its stack, and its free; the rest of what wsprof records as by default.

{rec}

## Analysis

Seconds per million events (wall and CPU) to read the trace of the same run and print a summary
(`heaptrack_print {' '.join(HEAPTRACK_PRINT_ARGS)}`: its totals only), and the analyzer's max RSS.
"faster by" compares wall times.

{ana}

## Targets (from the issue)

{targets(rows)}

{profiles}
{billion}
{release}
{symbols}
{python}
{short_procs}
{accuracy}
{floors}
{compile_reports}
{moments}
## Reproduce

```sh
meson setup build && ninja -C build
bench/compare.py --build build --runs 5        # about 15 minutes; writes BENCHMARKS.md
bench/compare.py --only deep --runs 3 --output /tmp/deep.md
bench/billion.sh -o BENCHMARKS.md build        # the analyzer on a generated trace of 10^9 events
bench/symbols.sh build 20 3                    # naming a PyTorch program's frames (installs python3-torch)
bench/python_cost.sh build 5 5                 # what Python frames cost against native-only recording
bench/short_procs.sh build 200 5               # what a short process costs: plain, traced, --follow matching none
bench/sampled_accuracy.py --build build -o BENCHMARKS.md  # a sampled recording's heap figures against full ones
bench/floors.py --build build --runs 9         # recording without stacks, without the writer, without both; reading alone
bench/moments.sh build TRACE 3                 # report state at eleven moments through the index, beside the summary
```

The workloads are `bench/deep.c`, `bench/churn.c`, `bench/mix.c`, `bench/annotated.c` and `bench/cudaheavy.c`
(see bench/README.md); cudaheavy runs against the test driver `build/tests/cuda/libcuda.so.1`.
"""


def main():
    global ARGS
    p = argparse.ArgumentParser(description="Compare wsprof's recording and analysis costs with heaptrack's.")
    p.add_argument("--build", default=os.path.join(SOURCE_ROOT, "build"), help="the build directory (default build)")
    p.add_argument("--runs", type=int, default=None, help="runs of each tool per workload (default 5; --tiny 1)")
    p.add_argument("--only", default="", help="workloads to run, by name, comma-separated")
    p.add_argument("--output", default=None, help="where to write the tables (default BENCHMARKS.md)")
    p.add_argument("--no-heaptrack", action="store_true", help="do not run heaptrack")
    p.add_argument("--no-install", action="store_true", help="do not install heaptrack when it is missing")
    p.add_argument("--tiny", action="store_true", help="tiny inputs, once: checks that everything runs")
    args = ARGS = p.parse_args()
    args.build = os.path.abspath(args.build)
    if args.runs is None:
        args.runs = 1 if args.tiny else 5
    if args.runs < 1:
        fail("--runs must be at least 1")
    if args.output is None and not args.tiny:
        args.output = os.path.join(SOURCE_ROOT, "BENCHMARKS.md")
    wanted = {w for w in args.only.split(",") if w}
    unknown = wanted - {w[0] for w in WORKLOADS}
    if unknown:
        fail(f"no workload named {', '.join(sorted(unknown))}; the workloads are "
             + ", ".join(sorted({w[0] for w in WORKLOADS})))
    for prog in ["analyzer/wsprof"] + [f"bench/{w[0]}" for w in WORKLOADS]:
        if not os.access(os.path.join(args.build, prog), os.X_OK):
            fail(f"{os.path.join(args.build, prog)} is missing: build first (ninja -C {args.build})")

    notes = []
    heaptrack = False
    if args.no_heaptrack:
        notes.append("heaptrack was not run (--no-heaptrack); its columns are n/a.")
    else:
        heaptrack, why = find_heaptrack(not args.no_install)
        if why:
            note(why)
            notes.append(why + ".")
    driver_dir = os.path.join(args.build, "tests", "cuda")
    has_driver = os.path.exists(os.path.join(driver_dir, "libcuda.so.1"))
    if not has_driver:
        notes.append(f"cudaheavy was skipped: the test driver {driver_dir}/libcuda.so.1 is not built "
                     "(configure with -Dtests=true).")

    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
    rows = []
    scratch = tempfile.mkdtemp(prefix="wsprof-compare-")
    try:
        for w in WORKLOADS:
            if wanted and w[0] not in wanted:
                continue
            env = dict(os.environ)
            # heaptrack takes seconds to start on a busy machine: --tiny runs
            # it once, on the first workload, which is enough to check it.
            tools = ["plain", "wsprof", "sampled"] + (["heaptrack"] if heaptrack and not (args.tiny and rows) else [])
            if w[0] == "cudaheavy":
                if not has_driver:
                    note("cudaheavy skipped: no test driver")
                    continue
                env["LD_LIBRARY_PATH"] = driver_dir + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
                tools = ["plain", "wsprof", "sampled"]  # heaptrack does not see the CUDA driver
            note(f"{w[0]}, {w[1]} thread(s): {args.runs} run(s) of {', '.join(tools)}")
            rows.append(measure(w, args, tools, env, scratch))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if not rows:
        fail("no workload ran")

    rec, ana = tables(rows)
    print(rec + "\n\n" + ana + "\n\n" + targets(rows))
    for n in notes:
        print("note: " + n)
    if args.output:
        text = document(rows, notes, args, started)  # before opening: it keeps billion.sh's part of the file
        with open(args.output, "w") as f:
            f.write(text)
        print(f"written: {args.output}")


if __name__ == "__main__":
    main()
