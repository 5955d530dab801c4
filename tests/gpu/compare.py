"""compare.py - run.sh's judge: a program's books against wsprof's summary.

usage:
  compare.py books BOOKS SUMMARY [--oom] [--incomplete-ok] [--no-devices]
  compare.py torch RESULT SUMMARY
  compare.py overhead PLAIN_RESULT TRACED_RESULT PLAIN_WALL_S TRACED_WALL_S
  compare.py --selftest

Prints one line, "PASS reason" or "FAIL reason", and exits 0 or 1 (2 for
bad usage). `overhead` prints one line and always exits 0.

books: every figure the program wrote must equal the summary's, exactly.
BOOKS holds {"cuda_device": {"allocations": N, ...}, ...}; its
"vmm_mapping" member holds figures the summary reports under cuda_vmm, and
"notes" (a list of strings, when present) is shown in the reason. A
kind missing from the summary counts as all zeros; a CUDA kind in the
summary that the books do not have must show no allocations and no
failures. The summary's "devices" must list at least one device with
total_bytes > 0 (unless --no-devices), and the trace must be complete
(unless --incomplete-ok: a killed program's trace is truncated).
--oom: the books themselves must show one failure and some successes.

torch: the traced peak of cuda_device must equal max_memory_reserved.
"""
import json
import sys

VMM_MAPPING = "vmm_mapping"
NOTES = "notes"


def load(path, what):
    try:
        with open(path) as f:
            return json.load(f), None
    except OSError as e:
        return None, "%s %s unreadable: %s" % (what, path, e.strerror)
    except ValueError as e:
        return None, "%s %s is not JSON: %s" % (what, path, e)


def gib(n):
    return "%.1f GiB" % (n / float(1 << 30))


def check_devices(summary):
    """@return (problem or None, a short description)."""
    devices = summary.get("devices")
    if not isinstance(devices, list) or not devices:
        return "no \"devices\" in the summary", ""
    words = []
    for d in devices:
        if not isinstance(d, dict):
            return "a devices entry is not an object", ""
        total = d.get("total_bytes")
        free_min = d.get("free_min_bytes")
        if not isinstance(total, int) or total <= 0:
            return "device %s: total_bytes %r" % (d.get("device"), total), ""
        if isinstance(free_min, int) and free_min > total:
            return "device %s: free_min_bytes %d > total_bytes %d" % (d.get("device"), free_min, total), ""
        words.append("device %s %s, free min %s, %s samples"
                     % (d.get("device"), gib(total),
                        gib(free_min) if isinstance(free_min, int) else "?", d.get("samples", "?")))
    return None, "; ".join(words)


def compare_books(books, summary, oom=False, incomplete_ok=False, devices=True):
    """@return (ok, reason)."""
    if not isinstance(books, dict):
        return False, "the books are not a JSON object"
    notes = books.get(NOTES) or []
    books = dict((k, v) for k, v in books.items() if k != NOTES)
    if not books:
        return False, "the books are empty"
    ok, reason = _compare_books(books, summary, oom, incomplete_ok, devices)
    if notes:
        reason += "; notes: " + "; ".join(str(n) for n in notes)
    return ok, reason


def _compare_books(books, summary, oom, incomplete_ok, devices):
    kinds = summary.get("kinds")
    if not isinstance(kinds, dict):
        return False, "no \"kinds\" in the summary"
    problems = []
    if not incomplete_ok and summary.get("complete") is not True:
        problems.append("trace not complete (status %s)" % summary.get("status"))
    if oom:
        dev = books.get("cuda_device", {})
        if dev.get("failed") != 1 or not dev.get("allocations"):
            problems.append("the program's books show %s allocations, %s failed: expected some and exactly 1"
                            % (dev.get("allocations"), dev.get("failed")))
    figures = 0
    for name, expected in books.items():
        kind = "cuda_vmm" if name == VMM_MAPPING else name
        if not isinstance(expected, dict):
            problems.append("the books' %s is not an object" % name)
            continue
        got = kinds.get(kind)
        figures += len(expected)
        if got is None:
            nonzero = ["%s %s" % (want, figure) for figure, want in expected.items() if want != 0]
            if nonzero:
                problems.append("%s missing from the summary (expected %s)" % (kind, ", ".join(nonzero[:3])))
            continue
        for figure, want in expected.items():
            have = got.get(figure) if isinstance(got, dict) else None
            if isinstance(got, dict) and figure not in got:
                problems.append("%s.%s: missing from the summary, expected %s" % (kind, figure, want))
            elif have != want:
                problems.append("%s.%s = %s, expected %s" % (kind, figure, have, want))
    for kind, got in sorted(kinds.items()):
        if kind.startswith("cuda") and kind not in books and isinstance(got, dict):
            if got.get("allocations", 0) or got.get("failed", 0):
                problems.append("unexpected %s: %s allocations, %s failed"
                                % (kind, got.get("allocations", 0), got.get("failed", 0)))
    dev_words = ""
    if devices:
        problem, dev_words = check_devices(summary)
        if problem:
            problems.append(problem)
    if problems:
        return False, "; ".join(problems)
    n_kinds = len([k for k in books if k != VMM_MAPPING])
    reason = "%d kind%s, %d figures equal" % (n_kinds, "" if n_kinds == 1 else "s", figures)
    if oom:
        dev = books["cuda_device"]
        reason += " (%d allocations, %s, then 1 failure)" % (dev["allocations"], gib(dev.get("total_bytes", 0)))
    if not summary.get("complete"):
        reason += "; trace %s" % summary.get("status", "incomplete")
    return True, reason + ("; " + dev_words if dev_words else "")


def compare_torch(result, summary):
    """@return (ok, reason)."""
    kinds = summary.get("kinds")
    if not isinstance(kinds, dict):
        return False, "no \"kinds\" in the summary"
    dev = kinds.get("cuda_device")
    if not isinstance(dev, dict):
        return False, "no cuda_device kind in the summary"
    want = result.get("max_memory_reserved")
    peak = dev.get("peak_bytes")
    problems = []
    if summary.get("complete") is not True:
        problems.append("trace not complete (status %s)" % summary.get("status"))
    if peak != want:
        diff = peak - want if isinstance(peak, int) and isinstance(want, int) else "?"
        problems.append("cuda_device peak %s != max_memory_reserved %s (traced - torch = %s; see torch.callsites.txt)"
                        % (peak, want, diff))
    problem, dev_words = check_devices(summary)
    if problem:
        problems.append(problem)
    info = ("%s cudaMalloc calls, %s frees; leaked %s (torch reserved at end %s)"
            % (dev.get("allocations"), dev.get("frees"), dev.get("leaked_bytes"), result.get("memory_reserved")))
    if problems:
        return False, "; ".join(problems) + "; " + info
    return True, "peak %s = max_memory_reserved; %s; %s" % (peak, info, dev_words)


def overhead(plain, traced, plain_wall, traced_wall):
    def ratio(a, b):
        return "%.2fx" % (b / a) if a and b is not None else "?"
    return ("overhead: training loop %.2f s plain, %.2f s traced (%s); whole run %.2f s plain, %.2f s traced (%s)"
            % (plain["loop_s"], traced["loop_s"], ratio(plain["loop_s"], traced["loop_s"]),
               plain_wall, traced_wall, ratio(plain_wall, traced_wall)))


def verdict(ok, reason):
    print(("PASS " if ok else "FAIL ") + reason)
    return 0 if ok else 1


def selftest():
    """Fake summaries written by hand against the contract run.sh relies on."""
    G = 1 << 30
    books = {
        "cuda_device": {"allocations": 3, "frees": 2, "failed": 1, "peak_bytes": 300,
                        "leaked_bytes": 100, "leaked_blocks": 1, "total_bytes": 400},
        "cuda_host": {"allocations": 1, "frees": 1, "failed": 0, "peak_bytes": 64,
                      "leaked_bytes": 0, "leaked_blocks": 0, "total_bytes": 64},
    }

    def summary(**over):
        s = {
            "complete": True, "status": "complete",
            "kinds": {
                "heap": {"allocations": 999, "frees": 990, "failed": 0, "peak_bytes": 12345,
                         "leaked_bytes": 5, "leaked_blocks": 1, "total_bytes": 77777},
                "cuda_device": {"allocations": 3, "frees": 2, "failed": 1, "peak_bytes": 300, "peak_time_s": 0.5,
                                "leaked_bytes": 100, "leaked_blocks": 1, "total_bytes": 400},
                "cuda_host": {"allocations": 1, "frees": 1, "failed": 0, "peak_bytes": 64, "peak_time_s": 0.1,
                              "leaked_bytes": 0, "leaked_blocks": 0, "total_bytes": 64},
            },
            "devices": [{"device": 0, "free_min_bytes": 100 * G, "total_bytes": 140 * G, "samples": 12}],
        }
        s.update(over)
        return s

    failures = []

    def expect(name, got, ok, contains=""):
        if got[0] != ok or contains not in got[1]:
            failures.append("%s: got %r, expected %s containing %r" % (name, got, ok, contains))

    expect("equal", compare_books(books, summary()), True, "2 kinds, 14 figures equal; device 0 140.0 GiB")
    s = summary()
    s["kinds"]["cuda_device"]["peak_bytes"] = 301
    expect("peak differs", compare_books(books, s), False, "cuda_device.peak_bytes = 301, expected 300")
    s = summary()
    del s["kinds"]["cuda_host"]
    expect("kind missing", compare_books(books, s), False,
           "cuda_host missing from the summary (expected 1 allocations, 1 frees, 64 peak_bytes)")
    zero = {"cuda_host": dict((k, 0) for k in books["cuda_host"])}
    expect("zero kind missing", compare_books(dict(books, **zero), s), True)
    s = summary()
    del s["kinds"]["cuda_host"]["total_bytes"]
    expect("figure missing", compare_books(books, s), False, "cuda_host.total_bytes: missing from the summary")
    s = summary()
    s["kinds"]["cuda_managed"] = {"allocations": 2, "failed": 0}
    expect("unexpected kind", compare_books(books, s), False, "unexpected cuda_managed: 2 allocations")
    s = summary()
    s["kinds"]["cuda_managed"] = {"allocations": 0, "failed": 0}
    expect("empty extra kind", compare_books(books, s), True)
    expect("kind the books lack", compare_books({"cuda_host": books["cuda_host"]}, summary()), False,
           "unexpected cuda_device")
    expect("no devices", compare_books(books, summary(devices=[])), False, "no \"devices\"")
    s = summary()
    del s["devices"]
    expect("devices absent", compare_books(books, s), False, "no \"devices\"")
    expect("devices not needed", compare_books(books, s, devices=False), True)
    expect("zero total", compare_books(books, summary(devices=[{"device": 0, "total_bytes": 0}])), False,
           "total_bytes 0")
    expect("free above total", compare_books(books, summary(devices=[{"device": 0, "total_bytes": 5,
                                                                      "free_min_bytes": 6}])), False,
           "free_min_bytes 6 > total_bytes 5")
    expect("truncated", compare_books(books, summary(complete=False, status="truncated")), False,
           "trace not complete (status truncated)")
    expect("truncated allowed", compare_books(books, summary(complete=False, status="truncated"),
                                              incomplete_ok=True), True, "trace truncated")
    expect("no kinds", compare_books(books, {"complete": True}), False, "no \"kinds\"")
    expect("empty books", compare_books({}, summary()), False, "books are empty")
    expect("only notes", compare_books({NOTES: ["x"]}, summary()), False, "books are empty")
    noted = dict(books, notes=["cudaHostRegister failed here: counted as failed"])
    expect("notes shown", compare_books(noted, summary()), True,
           "figures equal; device 0 140.0 GiB, free min 100.0 GiB, 12 samples; notes: cudaHostRegister failed")
    s = summary()
    s["kinds"]["cuda_host"]["failed"] = 1
    expect("notes on failure", compare_books(noted, s), False, "expected 0; notes: cudaHostRegister")
    expect("bad member", compare_books(dict(books, cuda_host=3), summary()), False, "cuda_host is not an object")

    vmm_books = {
        "cuda_vmm": {"allocations": 4, "frees": 3, "failed": 1, "peak_bytes": 9 * G,
                     "leaked_bytes": 3 * G, "leaked_blocks": 1, "total_bytes": 10 * G},
        VMM_MAPPING: {"mapped_peak_bytes": 9 * G, "mapped_bytes_at_end": 3 * G,
                      "reserved_peak_bytes": 12 * G, "reserved_bytes_at_end": 8 * G},
    }
    vmm_kind = dict(vmm_books["cuda_vmm"], **vmm_books[VMM_MAPPING])
    s = summary(kinds={"heap": {"allocations": 1}, "cuda_vmm": dict(vmm_kind)})
    expect("vmm equal", compare_books(vmm_books, s), True, "1 kind, 11 figures equal")
    s["kinds"]["cuda_vmm"]["reserved_bytes_at_end"] = 0
    expect("vmm mapping differs", compare_books(vmm_books, s), False,
           "cuda_vmm.reserved_bytes_at_end = 0, expected %d" % (8 * G))

    oom_books = {"cuda_device": {"allocations": 139, "frees": 139, "failed": 1, "peak_bytes": 139 * G,
                                 "leaked_bytes": 0, "leaked_blocks": 0, "total_bytes": 139 * G}}
    s = summary(kinds={"cuda_device": dict(oom_books["cuda_device"])})
    expect("oom", compare_books(oom_books, s, oom=True), True, "(139 allocations, 139.0 GiB, then 1 failure)")
    s["kinds"]["cuda_device"]["failed"] = 0
    expect("oom failure lost", compare_books(oom_books, s, oom=True), False, "cuda_device.failed = 0, expected 1")
    no_fail = {"cuda_device": dict(oom_books["cuda_device"], failed=0)}
    expect("oom never failed", compare_books(no_fail, summary(kinds={"cuda_device": no_fail["cuda_device"]}),
                                             oom=True), False, "expected some and exactly 1")

    result = {"max_memory_reserved": 700 * (1 << 20), "memory_reserved": 680 * (1 << 20), "loop_s": 2.0}
    s = summary(kinds={"cuda_device": {"allocations": 20, "frees": 1, "peak_bytes": 700 * (1 << 20),
                                       "leaked_bytes": 680 * (1 << 20)}})
    expect("torch equal", compare_torch(result, s), True, "peak 734003200 = max_memory_reserved")
    s["kinds"]["cuda_device"]["peak_bytes"] += 4096
    expect("torch differs", compare_torch(result, s), False, "traced - torch = 4096")
    expect("torch no kind", compare_torch(result, summary(kinds={"heap": {}})), False, "no cuda_device")

    line = overhead({"loop_s": 2.0}, {"loop_s": 3.0}, 10.0, 25.0)
    if "2.00 s plain, 3.00 s traced (1.50x)" not in line or "(2.50x)" not in line:
        failures.append("overhead: %s" % line)

    for f in failures:
        print("selftest: " + f)
    print("compare.py selftest: %s" % ("FAIL" if failures else "PASS"))
    return 1 if failures else 0


def main(argv):
    if argv[1:] == ["--selftest"]:
        return selftest()
    if len(argv) >= 4 and argv[1] == "books":
        flags = set(argv[4:])
        if flags - {"--oom", "--incomplete-ok", "--no-devices"}:
            print(__doc__, file=sys.stderr)
            return 2
        books, err = load(argv[2], "books")
        if err:
            return verdict(False, err)
        summary, err = load(argv[3], "summary")
        if err:
            return verdict(False, err)
        return verdict(*compare_books(books, summary, oom="--oom" in flags,
                                      incomplete_ok="--incomplete-ok" in flags,
                                      devices="--no-devices" not in flags))
    if len(argv) == 4 and argv[1] == "torch":
        result, err = load(argv[2], "torch result")
        if err:
            return verdict(False, err)
        summary, err = load(argv[3], "summary")
        if err:
            return verdict(False, err)
        return verdict(*compare_torch(result, summary))
    if len(argv) == 6 and argv[1] == "overhead":
        plain, err1 = load(argv[2], "plain result")
        traced, err2 = load(argv[3], "traced result")
        if err1 or err2:
            print("overhead: unknown (%s)" % (err1 or err2))
            return 0
        print(overhead(plain, traced, float(argv[4]), float(argv[5])))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
