#!/bin/sh
# release_cost.sh - what reading released memory costs (preload/sampler.c,
# "memory given back"): a workload freeing many large blocks.
#
#   bench/release_cost.sh [BUILD_DIR [THREADS [BLOCKS [RUNS]]]]
#
# Runs bench/bigfree plain, under wsprof with released memory not read
# (WSPROF_RELEASE_PAGES=0) and read (the default budget), alternating,
# RUNS times each, for blocks written in every page, in every 16th page,
# and not at all; prints the median seconds and the ratios. Not a test:
# machines are noisy.
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
printf '  %-22s %8s %10s %8s %10s %8s %12s\n' "pages written" "plain" "not read" "ratio" "read" "ratio" "read/not read"
for touch in 1 16 0; do
	: >"$tmp/plain"; : >"$tmp/off"; : >"$tmp/on"
	for i in $(seq "$runs"); do
		"$prog" "$threads" "$blocks" "$touch" >>"$tmp/plain"
		WSPROF_RELEASE_PAGES=0 "$wsprof" record -o "$tmp/off.wsp" -- "$prog" "$threads" "$blocks" "$touch" 2>/dev/null >>"$tmp/off"
		"$wsprof" record -o "$tmp/on.wsp" -- "$prog" "$threads" "$blocks" "$touch" 2>/dev/null >>"$tmp/on"
		rm -f "$tmp/off.wsp" "$tmp/on.wsp"
	done
	plain=$(median <"$tmp/plain"); off=$(median <"$tmp/off"); on=$(median <"$tmp/on")
	case $touch in 0) what="none" ;; 1) what="every page" ;; *) what="every ${touch}th page" ;; esac
	printf '  %-22s %8.3f %10.3f %8s %10.3f %8s %12s\n' "$what" "$plain" "$off" "$(ratio "$off" "$plain")" "$on" \
		"$(ratio "$on" "$plain")" "$(ratio "$on" "$off")"
done
