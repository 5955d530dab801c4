#!/bin/sh
# run.sh - fuzz the trace reader and the model for a while (fuzz_reader.c).
#
#   tests/fuzz/run.sh BUILD SECONDS [LIBFUZZER-OPTION...]
#
# BUILD is a build directory configured with clang, which has
# tests/fuzz/fuzz_reader (./dev.sh test makes build-checked). The inputs
# found worth keeping go to BUILD/fuzz/corpus and are kept from run to run;
# tests/fuzz/corpus holds the seeds. A crash, a hang over 10 s or a run
# over 2 GiB stops the run: its input is kept under BUILD/fuzz/ and this
# prints how to replay it, and exits 1. Extra options go to libFuzzer, e.g.
# -fork=8 for eight fuzzers at once (README.md, "Checked builds
# and fuzzing").
set -eu

if [ $# -lt 2 ]; then
	echo "usage: tests/fuzz/run.sh BUILD SECONDS [LIBFUZZER-OPTION...]" >&2
	exit 2
fi
build=$1
seconds=$2
shift 2
seeds=$(cd "$(dirname "$0")" && pwd)/corpus
fuzzer=$build/tests/fuzz/fuzz_reader
if [ ! -x "$fuzzer" ]; then
	echo "run.sh: no $fuzzer: configure $build with clang (CC=clang meson setup $build) and build it" >&2
	exit 2
fi
out=$build/fuzz
mkdir -p "$out/corpus"
log=$out/fuzz.log
# A smaller quarantine than ASan's 256 MiB: each input allocates afresh,
# and recycled pages make a run half again as fast; a use after free is
# still caught within the last 16 MiB freed, many inputs' worth.
status=0
ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=16} \
	"$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
	-artifact_prefix="$out/" "$@" "$out/corpus" "$seeds" >"$log" 2>&1 || status=$?
# libFuzzer's last status line: "#RUNS ... cov: N ... exec/s[:] N ..." (-fork too).
last=$(grep '^#[0-9]' "$log" | tail -n 1)
runs=$(echo "$last" | sed -n 's/^#\([0-9]*\).*/\1/p')
rate=$(echo "$last" | sed -n 's/.*exec\/s:* \([0-9]*\).*/\1/p')
cov=$(echo "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
# Exact figures where libFuzzer gives them (not with -fork).
final=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
runs=${final:-$runs}
final=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
rate=${final:-$rate}
inputs=$(find "$out/corpus" -type f | wc -l)
if [ "$status" -eq 0 ]; then
	echo "fuzz: ${runs:-?} inputs in $seconds s (${rate:-?}/s), coverage ${cov:-?}, $inputs inputs kept in $out/corpus: no crash"
	exit 0
fi
tail -n 40 "$log"
crash=$(sed -n "s/.*Test unit written to //p" "$log" | tail -n 1)
if [ -n "$crash" ]; then
	echo "fuzz: FAILED: the input is $crash; replay it with: $fuzzer $crash"
else
	echo "fuzz: FAILED (exit status $status); the whole log is $log"
fi
exit 1
