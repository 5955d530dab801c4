#!/bin/sh
# billion.sh - the analyzer's memory is bounded by live blocks and distinct
# stacks, not by the length of the trace.
#
#   bench/billion.sh [-o FILE] [BUILD_DIR [EVENTS [LIVE [STACKS]]]]
#
# Generates a trace of EVENTS/100 events and one of EVENTS events (default
# 10^9), both with LIVE blocks live at a time (default 100,000) and STACKS
# distinct call stacks (default 10,000), with bench/gentrace, and runs
# `wsprof report summary` on each under /usr/bin/time: the two max RSS
# figures should be alike while the second trace is a hundred times
# longer (the first should be past the live set's fill-up, about ten
# times LIVE events). Prints a table (events, trace bytes, bytes per event,
# seconds to generate, summary seconds, CPU seconds, max RSS) and deletes
# each trace once read. With -o, also writes the table into FILE (such as
# BENCHMARKS.md) between the lines <!-- billion.sh --> and
# <!-- /billion.sh -->, replacing what was there or appending.
# The traces go to $TMPDIR (default /tmp), which needs about 8 bytes per
# event free (a trace takes about 6); the script says so and stops when
# there is less. Not a test: 10^9 events take about an hour on a small,
# busy machine.
set -eu
doc=""
if [ "${1:-}" = "-o" ]; then
	[ $# -ge 2 ] || { echo "usage: bench/billion.sh [-o FILE] [BUILD_DIR [EVENTS [LIVE [STACKS]]]]" >&2; exit 2; }
	doc=$2
	shift 2
fi
build=${1:-build}
events=${2:-1000000000}
live=${3:-100000}
stacks=${4:-10000}
dir=${TMPDIR:-/tmp}
gen="$build/bench/gentrace"
wsprof="$build/analyzer/wsprof"

for f in "$gen" "$wsprof"; do
	[ -x "$f" ] || { echo "billion.sh: $f is missing: build first (ninja -C $build)" >&2; exit 1; }
done
[ -x /usr/bin/time ] || { echo "billion.sh: /usr/bin/time is missing: apt-get install time" >&2; exit 1; }
need_kib=$(awk -v n="$events" 'BEGIN { printf "%.0f", n * 8 / 1024 }')
free_kib=$(df -Pk "$dir" | awk 'NR == 2 { print $4 }')
if [ "$free_kib" -lt "$need_kib" ]; then
	echo "billion.sh: $dir has $((free_kib / 1048576)) GiB free, the trace needs about $((need_kib / 1048576)) GiB:" \
		"set TMPDIR to a larger disk or give fewer EVENTS" >&2
	exit 1
fi

trace="$dir/wsprof-billion.$$.wsp"
out="$dir/wsprof-billion.$$.out"
trap 'rm -f "$trace" "$out" "$out.time" "$out.rows"' EXIT
: >"$out.rows"
started=$(date -u '+%Y-%m-%d %H:%M')

echo "wsprof report summary on generated traces: $live live blocks, $stacks distinct stacks"
printf '  %15s %16s %8s %10s %10s %12s %14s\n' events "trace bytes" B/event "gen s" "summary s" "summary CPU s" "max RSS MiB"
for n in $((events / 100)) "$events"; do
	[ "$n" -gt 0 ] || continue
	start=$(date +%s.%N)
	"$gen" "$trace" "$n" "$live" "$stacks" >/dev/null
	gen_s=$(echo "$start $(date +%s.%N)" | awk '{ printf "%.0f", $2 - $1 }')
	bytes=$(stat -c %s "$trace")
	/usr/bin/time -o "$out.time" -f '%e %U %S %M' "$wsprof" report summary "$trace" >"$out"
	# The summary must have read every event: "N events" with thousands separators.
	read_events=$(sed -n 's/.* \([0-9,]*\) events$/\1/p' "$out" | tr -d ,)
	if [ "$read_events" != "$n" ]; then
		echo "billion.sh: the summary read ${read_events:-no} events of $n:" >&2
		cat "$out" >&2
		exit 1
	fi
	read -r wall user sys rss_kib <"$out.time"
	echo "$n $bytes $gen_s $wall $user $sys $rss_kib" | awk '{
		printf "  %15.0f %16.0f %8.2f %10.0f %10.1f %12.1f %14.1f\n", $1, $2, $2 / $1, $3, $4, $5 + $6, $7 / 1024
	}'
	echo "$n $bytes $gen_s $wall $user $sys $rss_kib" | awk '{
		printf "| %.0f | %.0f | %.2f | %.0f | %.1f | %.1f | %.1f |\n", $1, $2, $2 / $1, $3, $4, $5 + $6, $7 / 1024
	}' >>"$out.rows"
	rm -f "$trace"
done

[ -n "$doc" ] || exit 0
{
	echo "<!-- billion.sh -->"
	echo "## The analyzer on long traces (bench/billion.sh)"
	echo
	echo "\`bench/billion.sh -o $doc $build $events $live $stacks\` on $started UTC, on the machine above:"
	echo "generated traces (bench/gentrace.c: two threads, $live blocks live at a time, $stacks distinct"
	echo "12-frame stacks) read by \`wsprof report summary\` under \`/usr/bin/time\`, which read every event."
	echo "Memory is bounded when both rows' max RSS are alike. Each chunk of these traces ends with a SYNC"
	echo "covering all its events, so the reader never holds more than one chunk (256 Ki events) pending; a"
	echo "recorded trace holds what its recorder's SYNC marks leave pending (the analysis table's max RSS)."
	echo
	echo "| events | trace bytes | B/event | generate s | summary s | summary CPU s | max RSS MiB |"
	echo "|--:|--:|--:|--:|--:|--:|--:|"
	cat "$out.rows"
	echo "<!-- /billion.sh -->"
} >"$out"
python3 - "$doc" "$out" <<'PY'
import re, sys
doc, block = sys.argv[1], open(sys.argv[2]).read()
try:
    text = open(doc).read()
except FileNotFoundError:
    text = ""
pattern = re.compile(r"<!-- billion\.sh -->.*?<!-- /billion\.sh -->\n", re.S)
text = pattern.sub(lambda m: block, text, count=1) if pattern.search(text) else text + ("\n" if text else "") + block
open(doc, "w").write(text)
PY
echo "written: $doc"
