#!/bin/sh
# helgrind.sh - the recorder's threads under helgrind (valgrind): data races
# and misuse of pthread locks in libwsprof.so while several threads of a
# program allocate, free and annotate at once.
#
#   tests/preload/helgrind.sh BUILD
#
# BUILD is a build directory (gcc or clang, without sanitizers). Two of
# the test programs run under helgrind with BUILD's libwsprof.so preloaded:
# alloc_threads (8 threads freeing each other's blocks) and alloc_annotated
# (4 threads acquiring and releasing one block). Each must run with no
# helgrind error beyond helgrind.supp (which says why each entry is not a
# race), and its trace must still count exactly what the program counted.
# ./dev.sh test runs it (about 10 s). ThreadSanitizer is no alternative:
# its runtime must be linked into the program, and it would intercept
# malloc before libwsprof.so could.
set -eu

if [ $# -ne 1 ]; then
	echo "usage: tests/preload/helgrind.sh BUILD" >&2
	exit 2
fi
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
out=$build/helgrind
rm -rf "$out"
mkdir -p "$out"
status=0

# run NAME PROGRAM ARGS...: PROGRAM writes what it counted to $out/NAME.expect.
run() {
	name=$1
	progname=$2
	prog=$build/tests/progs/$progname
	shift 2
	# The preload goes in through env, so that only the program (followed
	# across the exec) has it, not valgrind's launcher. malloc is left to
	# libwsprof.so (nouserintercepts): helgrind replaces only libc's, under it.
	if ! valgrind --tool=helgrind --error-exitcode=99 --soname-synonyms=somalloc=nouserintercepts \
		--suppressions="$here/helgrind.supp" --trace-children=yes \
		env LD_PRELOAD="$build/preload/libwsprof.so" WSPROF_OUTPUT="$out/$name.%e.%p.wsp" \
		"$prog" "$out/$name.expect" "$@" >"$out/$name.log" 2>&1; then
		tail -n 60 "$out/$name.log"
		echo "helgrind: $name: FAILED: a race or a lock misused (or a new function handling the buffers," \
			"which tests/preload/helgrind.supp must name); the whole report is $out/$name.log"
		status=1
		return
	fi
	# The program's trace (valgrind's launcher, run again at the exec, writes one too).
	trace=$(find "$out" -name "$name.$progname.*.wsp" | head -n 1)
	if [ -z "$trace" ] || ! "$build/analyzer/wsprof" report summary --json --caller "$progname" "$trace" \
		>"$out/$name.json" 2>>"$out/$name.log"; then
		echo "helgrind: $name: FAILED: no readable trace in $out"
		status=1
		return
	fi
	if ! python3 - "$out/$name.expect" "$out/$name.json" <<'EOF'
import json, sys
expect = json.load(open(sys.argv[1]))
kinds = json.load(open(sys.argv[2]))["kinds"]
bad = []
for kind in ("heap", "pool"):
    for field, want in expect.get(kind, {}).items():
        got = kinds.get(kind, {}).get(field)
        if got != want:
            bad.append(f"{kind} {field}: traced {got}, the program counted {want}")
for line in bad:
    print(line)
sys.exit(1 if bad else 0)
EOF
	then
		echo "helgrind: $name: FAILED: the trace does not count what the program counted"
		status=1
		return
	fi
	echo "helgrind: $name: no race beyond helgrind.supp, and the trace counts what the program counted"
}

run threads alloc_threads 8 2 200
run annotated alloc_annotated 4
exit $status
