#!/bin/sh
# access_overhead.sh - what access sampling costs a memory-bound program.
#
#   bench/access_overhead.sh [BUILD_DIR [MIB [SWEEPS [RUNS]]]]
#
# Runs bench/membound plain, under wsprof with access sampling off
# (WSPROF_ACCESS=0) and on (the defaults: written pages, 100 ms windows),
# alternating, RUNS times each, and prints the median seconds of the sweeps
# and the ratio to the plain run. Not a test: machines are noisy.
set -eu
build=${1:-build}
mib=${2:-256}
sweeps=${3:-20}
runs=${4:-3}
prog="$build/bench/membound"
wsprof="$build/analyzer/wsprof"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

for i in $(seq "$runs"); do
	"$prog" "$mib" "$sweeps" >>"$tmp/plain"
	WSPROF_ACCESS=0 "$wsprof" record -o "$tmp/off$i.wsp" -- "$prog" "$mib" "$sweeps" 2>/dev/null >>"$tmp/off"
	"$wsprof" record -o "$tmp/on$i.wsp" -- "$prog" "$mib" "$sweeps" 2>/dev/null >>"$tmp/on"
done
plain=$(median <"$tmp/plain")
off=$(median <"$tmp/off")
on=$(median <"$tmp/on")
echo "membound $mib MiB x $sweeps sweeps, median of $runs runs (seconds of the sweeps)"
printf '  %-34s %8s %8s\n' "run" "seconds" "ratio"
printf '  %-34s %8.3f %8s\n' "plain" "$plain" "1.00"
printf '  %-34s %8.3f %8.2f\n' "wsprof, access sampling off" "$off" "$(echo "$off $plain" | awk '{ print $1 / $2 }')"
printf '  %-34s %8.3f %8.2f\n' "wsprof, written pages (100 ms)" "$on" "$(echo "$on $plain" | awk '{ print $1 / $2 }')"
size=$(stat -c %s "$tmp/on1.wsp")
echo "  trace of one sampled run: $size bytes"
