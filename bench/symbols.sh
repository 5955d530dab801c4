#!/bin/sh
# symbols.sh - what naming the frames of a large program costs: a CPU
# PyTorch training loop (bench/torch_cpu_loop.py, Debian's python3-torch,
# installed here when missing), recorded once, then `report summary`,
# `report callsites` and the full report (PDF) of its trace, each timed
# (wall seconds, max RSS) RUNS times, with the medians and the ratios to
# the summary (issue 18's targets: callsites within 10x, the full report
# within 25x and under 300 MB, the second report at most the summary's
# time plus drawing). Cold: no names kept from an earlier report (the
# trace's .symbols file removed before each run); cached: kept.
# `wsprof symbolize` is timed cold too. Side by side, where heaptrack is
# installed: the same program recorded by heaptrack and heaptrack_print's
# default analysis of it. Not a test: machines are noisy.
#
#   bench/symbols.sh [BUILD_DIR [STEPS [RUNS]]]
set -eu
build=${1:-build}
steps=${2:-20}
runs=${3:-3}
wsprof="$build/analyzer/wsprof"
here=$(dirname "$0")
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
	echo "symbols.sh: installing python3-torch (Debian's CPU PyTorch)"
	sudo=; [ "$(id -u)" = 0 ] || sudo=sudo
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-torch >/dev/null
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$wsprof" record -o "$tmp/t.wsp" -- /usr/bin/python3 "$here/torch_cpu_loop.py" "$steps" >/dev/null 2>&1
events=$("$wsprof" report summary --json "$tmp/t.wsp" | /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["events"])')
size=$(stat -c %s "$tmp/t.wsp")
echo "torch_cpu_loop.py, $steps steps: $events events, a $((size / 1024)) KiB trace; median of $runs runs"
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
measure() { # NAME PREP COMMAND...: "NAME|median wall seconds|median max RSS (KiB)"; PREP (or -) runs before each run
	name=$1
	prep=$2
	shift 2
	: >"$tmp/w"
	: >"$tmp/m"
	i=0
	while [ $i -lt "$runs" ]; do
		[ "$prep" = - ] || $prep
		/usr/bin/time -f '%e %M' -o "$tmp/one" "$@" >/dev/null 2>&1 || true
		cut -d' ' -f1 "$tmp/one" >>"$tmp/w"
		cut -d' ' -f2 "$tmp/one" >>"$tmp/m"
		i=$((i + 1))
	done
	w=$(median <"$tmp/w")
	m=$(median <"$tmp/m")
	echo "$name|$w|$m"
}
cold() { rm -f "$tmp/t.wsp.symbols"; }
summary=$(measure summary - "$wsprof" report summary "$tmp/t.wsp")
callsites_cold=$(measure "callsites, cold" cold "$wsprof" report callsites "$tmp/t.wsp")
callsites=$(measure "callsites, cached" - "$wsprof" report callsites "$tmp/t.wsp")
full_cold=$(measure "full report, cold" cold "$wsprof" report "$tmp/t.wsp" -o "$tmp/r.pdf")
full=$(measure "full report, cached" - "$wsprof" report "$tmp/t.wsp" -o "$tmp/r.pdf")
symbolize=$(measure "symbolize, cold" cold "$wsprof" symbolize "$tmp/t.wsp")
s=$(echo "$summary" | cut -d'|' -f2)
printf '  %-24s %10s %10s %12s\n' "" "seconds" "max MiB" "x summary"
for row in "$summary" "$callsites_cold" "$callsites" "$full_cold" "$full" "$symbolize"; do
	name=$(echo "$row" | cut -d'|' -f1)
	w=$(echo "$row" | cut -d'|' -f2)
	m=$(echo "$row" | cut -d'|' -f3)
	printf '  %-24s %10s %10d %12s\n' "$name" "$w" $((m / 1024)) "$(echo "$w $s" | awk '{ printf "%.1f", $1 / $2 }')"
done
if command -v heaptrack >/dev/null && command -v heaptrack_print >/dev/null; then
	heaptrack -o "$tmp/ht" /usr/bin/python3 "$here/torch_cpu_loop.py" "$steps" >/dev/null 2>&1 || true
	ht=$(ls "$tmp"/ht*.zst 2>/dev/null | head -n 1)
	if [ -n "$ht" ]; then
		row=$(measure heaptrack_print - heaptrack_print -f "$ht")
		w=$(echo "$row" | cut -d'|' -f2)
		m=$(echo "$row" | cut -d'|' -f3)
		printf '  %-24s %10s %10d %12s   (heaptrack'"'"'s trace: %d KiB)\n' "heaptrack_print" "$w" $((m / 1024)) \
			"$(echo "$w $s" | awk '{ printf "%.1f", $1 / $2 }')" $(($(stat -c %s "$ht") / 1024))
	fi
fi
