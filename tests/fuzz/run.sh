#!/bin/sh
# run.sh - fuzz the trace reader and the model (fuzz_reader.c), then the
# record decoder alone (fuzz_decode.c), for a while: half the time each.
#
#   tests/fuzz/run.sh BUILD SECONDS [LIBFUZZER-OPTION...]
#
# BUILD is a build directory configured with clang, which has
# tests/fuzz/fuzz_reader and fuzz_decode (./dev.sh test makes
# build-checked). The inputs found worth keeping go to BUILD/fuzz/corpus
# and BUILD/fuzz/corpus-decode and are kept from run to run;
# tests/fuzz/corpus and corpus-decode hold the seeds. A crash, a hang over
# 10 s or a run over 2 GiB stops the run: its input is kept under
# BUILD/fuzz/ and this prints how to replay it, and exits 1. Extra options
# go to libFuzzer, e.g. -fork=8 for eight fuzzers at once (README.md,
# "Checked builds and fuzzing").
set -eu

if [ $# -lt 2 ]; then
	echo "usage: tests/fuzz/run.sh BUILD SECONDS [LIBFUZZER-OPTION...]" >&2
	exit 2
fi
build=$1
seconds=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
out=$build/fuzz
for target in fuzz_reader fuzz_decode; do
	if [ ! -x "$build/tests/fuzz/$target" ]; then
		echo "run.sh: no $build/tests/fuzz/$target: configure $build with clang (CC=clang meson setup $build) and build it" >&2
		exit 2
	fi
done

# fuzz_one TARGET CORPUS SECONDS [OPTION...]: one target, its seeds in
# tests/fuzz/CORPUS, what it keeps in BUILD/fuzz/CORPUS. @return its status.
fuzz_one() {
	target=$1 corpus=$2 secs=$3
	shift 3
	fuzzer=$build/tests/fuzz/$target
	mkdir -p "$out/$corpus"
	log=$out/$target.log
	# A smaller quarantine than ASan's 256 MiB: each input allocates afresh,
	# and recycled pages make a run half again as fast; a use after free is
	# still caught within the last 16 MiB freed, many inputs' worth.
	status=0
	ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=16} \
		"$fuzzer" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
		-artifact_prefix="$out/$target-" "$@" "$out/$corpus" "$here/$corpus" >"$log" 2>&1 || status=$?
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
	inputs=$(find "$out/$corpus" -type f | wc -l)
	if [ "$status" -eq 0 ]; then
		echo "fuzz: $target: ${runs:-?} inputs in $secs s (${rate:-?}/s), coverage ${cov:-?}, $inputs inputs kept in $out/$corpus: no crash"
		return 0
	fi
	tail -n 40 "$log"
	crash=$(sed -n "s/.*Test unit written to //p" "$log" | tail -n 1)
	if [ -n "$crash" ]; then
		echo "fuzz: $target: FAILED: the input is $crash; replay it with: $fuzzer $crash"
	else
		echo "fuzz: $target: FAILED (exit status $status); the whole log is $log"
	fi
	return 1
}

half=$((seconds / 2))
result=0
fuzz_one fuzz_reader corpus $((seconds - half)) "$@" || result=1
fuzz_one fuzz_decode corpus-decode "$half" "$@" || result=1
exit $result
