#!/bin/bash
# python_cost.sh - what Python frames cost: CPU per recorded event and
# trace bytes, with Python frames (the default) against the same program
# recorded native-only (WSPROF_PYTHON=0), on the shapes of
# bench/python_alloc.py (flat, deep, many, grow) and on the CPU PyTorch
# training loop (bench/torch_cpu_loop.py) when python3-torch is here.
#
# usage: bench/python_cost.sh [BUILD_DIR [RUNS [SCALE]]]   (default build 5 5)
#
# Each run of each shape is timed (user + system CPU of the whole process
# tree, /usr/bin/time) plain, native-only and with Python frames, in
# turn; the cost of an event is (traced CPU - plain CPU) / events, events
# from the trace's summary. Prints medians and the issue's targets: CPU
# per event with Python frames at most 1.3 x native-only, trace bytes at
# most 1.15 x.
set -euo pipefail
build=${1:-build}
runs=${2:-5}
scale=${3:-5}
here=$(cd "$(dirname "$0")" && pwd)
wsprof="$build/analyzer/wsprof"
py=/usr/bin/python3
[ -x "$wsprof" ] || { echo "python_cost.sh: no $wsprof: build first (ninja -C $build)" >&2; exit 1; }
[ -x "$py" ] || { echo "python_cost.sh: no $py: apt-get install python3" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cpu() { # command... -> user+sys seconds
	/usr/bin/time -f "%U %S" -o "$tmp/time" "$@" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
	awk '{ printf "%.3f\n", $1 + $2 }' "$tmp/time"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
events() { "$wsprof" report summary --json "$1" | "$py" -c 'import json, sys; print(json.load(sys.stdin)["events"])'; }

shape() { # name, then the program and its arguments
	local name=$1
	shift
	: >"$tmp/plain"
	: >"$tmp/native"
	: >"$tmp/python"
	for _ in $(seq "$runs"); do
		cpu "$@" >>"$tmp/plain"
		rm -f "$tmp/n.wsp" "$tmp/p.wsp"
		WSPROF_PYTHON=0 cpu "$wsprof" record -o "$tmp/n.wsp" -- "$@" >>"$tmp/native"
		cpu "$wsprof" record -o "$tmp/p.wsp" -- "$@" >>"$tmp/python"
	done
	local plain native python ev nb pb
	plain=$(median <"$tmp/plain")
	native=$(median <"$tmp/native")
	python=$(median <"$tmp/python")
	ev=$(events "$tmp/p.wsp")
	nb=$(stat -c %s "$tmp/n.wsp")
	pb=$(stat -c %s "$tmp/p.wsp")
	awk -v n="$name" -v pl="$plain" -v na="$native" -v py="$python" -v ev="$ev" -v nb="$nb" -v pb="$pb" 'BEGIN {
		cn = (na - pl) * 1e9 / ev; cp = (py - pl) * 1e9 / ev
		printf "| %s | %d | %.2f | %.2f | %.2f | %.0f | %.0f | %.2f | %.3f | %.3f | %.2f |\n", n, ev, pl, na, py, cn, cp, cp / cn, nb / ev, pb / ev, pb / nb
	}'
}

echo "Python frames against native-only recording ($runs runs each, medians; $(nproc) cores, $($py --version))"
echo
echo "| shape | events | plain s | native-only s | python s | ns/event native | ns/event python | ratio (<= 1.3) | bytes/event native | bytes/event python | ratio (<= 1.15) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for s in flat deep many grow; do
	shape "$s" "$py" "$here/python_alloc.py" "$s" "$scale"
done
if "$py" -c 'import torch' 2>/dev/null; then
	shape "torch loop" "$py" "$here/torch_cpu_loop.py" 20
fi
