#!/bin/sh
# moments.sh - what a moment of a trace costs once it is indexed
# (analyzer/model/timeindex.c): for a trace (or one recorded of a command),
# `report summary` timed, then the index built (the first `report state`,
# timed, with the index's size and checkpoints), then `report state --at`
# at the peak, the end and at tenths of the run, each timed RUNS times
# with the index kept: wall seconds and max RSS, medians, and each
# moment's time as a share of the summary's (issue 39's target: at most a
# tenth). Not a test: machines are noisy.
#
#   bench/moments.sh BUILD_DIR TRACE [RUNS]
#   bench/moments.sh BUILD_DIR --record 'COMMAND' [RUNS]
set -eu
build=$1
wsprof="$build/analyzer/wsprof"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ "$2" = --record ]; then
	trace="$tmp/t.wsp"
	# shellcheck disable=SC2086
	"$wsprof" record -o "$trace" -- $3 >/dev/null 2>&1
	shift
else
	trace=$2
fi
runs=${3:-3}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# NAME COMMAND...: "NAME wall rss" medians over RUNS runs
measure() {
	name=$1
	shift
	: >"$tmp/w"
	: >"$tmp/m"
	i=0
	while [ $i -lt "$runs" ]; do
		/usr/bin/time -f '%e %M' -o "$tmp/one" "$@" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
		awk '{ print $1 >> "'"$tmp/w"'"; print $2 >> "'"$tmp/m"'" }' "$tmp/one"
		i=$((i + 1))
	done
	echo "$name $(median <"$tmp/w") $(median <"$tmp/m")"
}
events=$("$wsprof" report summary --json "$trace" | python3 -c 'import json, sys; print(json.load(sys.stdin)["events"])')
end=$("$wsprof" report summary --json "$trace" | python3 -c 'import json, sys; print(json.load(sys.stdin)["duration_s"])' 2>/dev/null || echo 0)
echo "trace: $trace, $events events, $(($(stat -c %s "$trace") / 1024)) KiB"
index="$trace.index"
rm -f "$index"
set -- $(measure summary "$wsprof" report summary "$trace")
summary=$2
echo "| what | wall s | max RSS MiB | share of the summary |"
echo "|---|--:|--:|--:|"
echo "| report summary | $2 | $(($3 / 1024)) | 1 |"
rm -f "$index"
/usr/bin/time -f '%e %M' -o "$tmp/one" "$wsprof" report state --at end "$trace" >/dev/null 2>&1
read -r w m <"$tmp/one"
echo "| index built (first report state --at end) | $w | $((m / 1024)) | $(echo "$w $summary" | awk '{ printf "%.2f", $1 / $2 }') |"
for at in peak end $(echo "$end" | awk '{ for (i = 1; i < 10; i++) printf "%.3f ", $1 * i / 10 }'); do
	set -- $(measure "$at" "$wsprof" report state --at "$at" "$trace")
	echo "| report state --at $at | $2 | $(($3 / 1024)) | $(echo "$2 $summary" | awk '{ printf "%.3f", $1 / $2 }') |"
done
echo "index: $(($(stat -c %s "$index") / 1024)) KiB ($(echo "$(stat -c %s "$index") $(stat -c %s "$trace")" | awk '{ printf "%.2f", $1 / $2 }') of the trace's size)"
