#!/bin/bash
# short_procs.sh - what a short process costs under wsprof: a shell loop
# running COUNT short programs (/bin/true, and bench/shortproc: 200 blocks
# allocated, written and freed), as a build's tree of compiler passes is,
# timed plain, traced (`wsprof record`: every process writes a trace) and
# with `--follow` matching none of them (the library loaded in every
# process, nothing recorded, no file written).
#
# usage: bench/short_procs.sh [BUILD_DIR [COUNT [RUNS]]]   (default build 200 5)
#
# Each figure is the median of RUNS runs of the whole loop, the three
# modes in turn: CPU (user + system of the whole process tree, wsprof
# record's own threads included, /usr/bin/time) and wall time per
# process, and for the traced runs how many traces were written and their
# mean size. "+" columns are the cost over the plain run, per process.
set -euo pipefail
build=${1:-build}
count=${2:-200}
runs=${3:-5}
wsprof="$build/analyzer/wsprof"
shortproc="$build/bench/shortproc"
for f in "$wsprof" "$shortproc"; do
	[ -x "$f" ] || { echo "short_procs.sh: no $f: build first (ninja -C $build)" >&2; exit 1; }
done
shortproc=$(cd "$(dirname "$shortproc")" && pwd)/shortproc
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

timed() { # command... -> "cpu wall" seconds
	/usr/bin/time -f "%U %S %e" -o "$tmp/time" "$@" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
	awk '{ printf "%.4f %.4f\n", $1 + $2, $3 }' "$tmp/time"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

row() { # name, program
	local name=$1 prog=$2 loop
	loop="i=0; while [ \$i -lt $count ]; do $prog; i=\$((i + 1)); done"
	: >"$tmp/plain"
	: >"$tmp/traced"
	: >"$tmp/none"
	: >"$tmp/files"
	: >"$tmp/bytes"
	for _ in $(seq "$runs"); do
		timed sh -c "$loop" >>"$tmp/plain"
		rm -rf "$tmp/t" && mkdir "$tmp/t"
		timed "$wsprof" record -o "$tmp/t/t.wsp" -- sh -c "$loop" >>"$tmp/traced"
		find "$tmp/t" -type f | wc -l >>"$tmp/files"
		du -sb "$tmp/t" | cut -f1 >>"$tmp/bytes"
		rm -rf "$tmp/t" && mkdir "$tmp/t"
		timed "$wsprof" record -o "$tmp/t/t.wsp" --follow no-such-program -- sh -c "$loop" >>"$tmp/none"
		[ -z "$(ls -A "$tmp/t")" ] || { echo "short_procs.sh: --follow matching nothing wrote a trace" >&2; exit 1; }
	done
	local pc pw tc tw nc nw files bytes
	pc=$(cut -d' ' -f1 "$tmp/plain" | median)
	pw=$(cut -d' ' -f2 "$tmp/plain" | median)
	tc=$(cut -d' ' -f1 "$tmp/traced" | median)
	tw=$(cut -d' ' -f2 "$tmp/traced" | median)
	nc=$(cut -d' ' -f1 "$tmp/none" | median)
	nw=$(cut -d' ' -f2 "$tmp/none" | median)
	files=$(median <"$tmp/files")
	bytes=$(median <"$tmp/bytes")
	awk -v n="$name" -v c="$count" -v pc="$pc" -v pw="$pw" -v tc="$tc" -v tw="$tw" -v nc="$nc" -v nw="$nw" \
		-v files="$files" -v bytes="$bytes" 'BEGIN {
		k = 1000 / c
		printf "| %s | %.2f | %.2f | %.2f (+%.2f) | %.2f (+%.2f) | %.2f (+%.2f) | %.2f (+%.2f) | %d | %.1f |\n", n,
			pc * k, pw * k, tc * k, (tc - pc) * k, tw * k, (tw - pw) * k, nc * k, (nc - pc) * k, nw * k, (nw - pw) * k,
			files, bytes / files / 1024
	}'
}

echo "Short processes: a shell loop of $count runs, $runs times each (medians; $(nproc) cores); ms per process"
echo
echo "| program | plain CPU | plain wall | traced CPU | traced wall | --follow none CPU | --follow none wall | traces | KiB/trace |"
echo "|---|---|---|---|---|---|---|---|---|"
row "/bin/true" /bin/true
row "bench/shortproc" "$shortproc"
