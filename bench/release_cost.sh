#!/bin/sh
# release_cost.sh - what reading released memory costs (preload/access/sampler.c,
# "memory given back"): a workload freeing many large blocks.
#
#   bench/release_cost.sh [BUILD_DIR [THREADS [BLOCKS [RUNS]]]]
#
# Runs bench/bigfree plain, under wsprof with released memory not read
# (WSPROF_RELEASE_PAGES=0), read within the default budget, and read
# without a budget (WSPROF_RELEASE_PAGES=16777216), alternating, RUNS
# times each, for blocks written in every page, in every 16th page, and
# not at all; prints the median seconds, the ratios to the plain run, and
# the nanoseconds reading cost per page read without a budget. Not a
# test: machines are noisy.
set -eu
build=${1:-build}
threads=${2:-2}
blocks=${3:-2000}
runs=${4:-5}
prog="$build/bench/bigfree"
wsprof="$build/analyzer/wsprof"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() { echo "$1 $2" | awk '{ printf "%.2f", $1 / $2 }'; }

echo "bigfree: $threads threads x $blocks blocks of 64 KiB-8 MiB, median of $runs runs (seconds)"
record() { # OUT RELEASE_PAGES TOUCH: one run's seconds into OUT, its trace into $tmp/t.wsp
	rm -f "$tmp/t.wsp"
	WSPROF_RELEASE_PAGES=$2 "$wsprof" record -o "$tmp/t.wsp" -- "$prog" "$threads" "$blocks" "$3" 2>/dev/null >>"$1"
}
# The pages of the blocks freed, as the recorder reads them: every block's
# page span, from the trace of a run without a budget.
pages_read() {
	"$wsprof" report summary --json "$tmp/t.wsp" |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["kinds"]["heap"]["total_bytes"] // 4096)'
}
printf '  %-18s %7s %9s %6s %9s %6s %11s %6s %9s\n' "pages written" "plain" "not read" "ratio" "budget" "ratio" "no budget" \
	"ratio" "ns/page"
for touch in 1 16 0; do
	: >"$tmp/plain"; : >"$tmp/off"; : >"$tmp/on"; : >"$tmp/all"
	for i in $(seq "$runs"); do
		"$prog" "$threads" "$blocks" "$touch" >>"$tmp/plain"
		record "$tmp/off" 0 "$touch"
		record "$tmp/on" "" "$touch"
		record "$tmp/all" 16777216 "$touch"
	done
	plain=$(median <"$tmp/plain"); off=$(median <"$tmp/off"); on=$(median <"$tmp/on"); all=$(median <"$tmp/all")
	pages=$(pages_read)
	per_page=$(echo "$all $off $pages $threads" | awk '{ printf "%.1f", ($1 - $2) * $4 * 1e9 / $3 }')
	case $touch in 0) what="none" ;; 1) what="every page" ;; *) what="every ${touch}th page" ;; esac
	printf '  %-18s %7.3f %9.3f %6s %9.3f %6s %11.3f %6s %9s\n' "$what" "$plain" "$off" "$(ratio "$off" "$plain")" \
		"$on" "$(ratio "$on" "$plain")" "$all" "$(ratio "$all" "$plain")" "$per_page"
done
echo "  (ns/page: the extra seconds without a budget, times the threads, over the pages the blocks span)"
