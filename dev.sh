#!/bin/sh
# dev.sh - set up wsprof on a Debian 12 machine and use it.
#
#   ./dev.sh demo   install what is missing, build, record the bundled
#                   example workload (examples/taskrt) and write its report
#                   (prints where)
#   ./dev.sh test   install what is missing, build, run the whole test suite
#
# Install steps live here and nowhere else: a fresh machine needs only this.
set -eu

cd "$(dirname "$0")"
BUILD=${WSPROF_BUILD_DIR:-build}

packages="meson ninja-build pkgconf gcc g++ python3 libunwind-dev libzstd-dev zlib1g-dev libdw-dev libcriterion-dev libcairo2-dev libjemalloc-dev libgoogle-perftools-dev libmimalloc-dev rustc openjdk-17-jdk-headless nodejs golang-go fonts-dejavu-core poppler-utils git sqlite3 zstd libpython3.11-testsuite libpython3.11-dev clang libclang-rt-14-dev llvm valgrind make openmpi-bin libopenmpi-dev"

install_missing() {
	missing=""
	for p in $packages; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	echo "dev.sh: installing:$missing"
	sudo=""
	[ "$(id -u)" -ne 0 ] && sudo="sudo"
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	# shellcheck disable=SC2086
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
}

build() {
	if [ -f "$BUILD/build.ninja" ]; then
		meson setup --reconfigure "$BUILD" >/dev/null
	else
		meson setup "$BUILD" >/dev/null
	fi
	ninja -C "$BUILD"
}

# The checked build: clang with ASan and UBSan (stopping at the first
# finding) and the invariant checks live (WSP_ASSERT, src/check.h; -Dchecks,
# given again on a reconfigure so that an older checked build gets it),
# where the fuzz target is built too (tests/fuzz). It runs what
# reads traces: the unit tests, the golden reports and the fuzz seeds. Not
# the preload library and what records with it (suites preload, cuda,
# nvtx, access, reports): ASan's runtime must come first in a process,
# which a library preloaded into uninstrumented programs cannot be.
CHECKED=${BUILD%/}-checked
checked() {
	if [ -f "$CHECKED/build.ninja" ]; then
		meson setup --reconfigure "$CHECKED" -Dchecks=enabled >/dev/null || return 1
	else
		CC=clang CXX=clang++ meson setup "$CHECKED" -Db_sanitize=address,undefined -Db_lundef=false -Dchecks=enabled \
			>/dev/null || return 1
	fi
	rm -f "$CHECKED/meson-logs/testlog.txt"
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		meson test -C "$CHECKED" --suite unit --suite golden --suite fuzz --no-suite preload --print-errorlogs
}

# counted COMMAND...: a check outside meson test, one pass or one failure.
counted() {
	if "$@"; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		status=1
	fi
}

demo() {
	out="$BUILD/demo"
	mkdir -p "$out"
	rm -f "$out/example.wsp" "$out"/example.wsp.*
	w="$BUILD/analyzer/wsprof"
	# A small task runtime (examples/taskrt.c): caches climb, truly-in-use memory does not.
	"$w" record -o "$out/example.wsp" -- "$BUILD/examples/taskrt"
	"$w" report summary "$out/example.wsp" >"$out/summary.txt"
	{
		cat "$out/summary.txt"
		echo
		"$w" report callsites --top 10 "$out/example.wsp"
		echo
		"$w" report leaks --top 5 "$out/example.wsp"
		echo
		"$w" report state --at peak "$out/example.wsp"
	} >"$out/report.txt"
	"$w" report summary --json "$out/example.wsp" >"$out/report.json"
	"$w" report flame "$out/example.wsp" -o "$out/flame.svg" 2>/dev/null
	# The pictures: one PDF, and the same pages as PNG files.
	rm -f "$out"/report.pdf "$out"/report-*.png
	"$w" report "$out/example.wsp" -o "$out/report.pdf" 2>/dev/null
	"$w" report "$out/example.wsp" -o "$out/report.png" 2>/dev/null
	cat "$out/summary.txt"
	echo
	case $out in /*) ;; *) out="$(pwd)/$out" ;; esac # where to look, from anywhere
	echo "dev.sh: trace    $out/example.wsp"
	echo "dev.sh: report   $out/report.pdf (summary, memory over time, working set, heatmaps,"
	echo "                 memory state, top sites, flame graph; the same pages as report-N.png)"
	echo "dev.sh: text     $out/report.txt (summary, call sites, leaks, memory state at the peak;"
	echo "                 also report.json and the flame graph flame.svg)"
}

case "${1:-}" in
demo) install_missing; build; demo ;;
test)
	install_missing
	build
	status=0
	meson test -C "$BUILD" --print-errorlogs || status=$?
	set -- "$BUILD/meson-logs/testlog.txt"
	passed=0 failed=0
	checked || status=1
	if [ -f "$CHECKED/meson-logs/testlog.txt" ]; then
		set -- "$@" "$CHECKED/meson-logs/testlog.txt"
	else
		failed=1 # the checked build did not even build
	fi
	# The reader and the model fuzzed for a minute (tests/fuzz), the
	# recorder's threads under helgrind (tests/preload/helgrind.sh).
	counted tests/fuzz/run.sh "$CHECKED" 60
	counted tests/preload/helgrind.sh "$BUILD"
	# One closing line over every criterion test case of every suite of both
	# builds, with the fuzz and helgrind runs (and a checked build that
	# failed to build) as one each; a test program that died before its own
	# synthesis counts as one failure; skipped cases (criterion's [SKIP],
	# and whole programs meson skipped) are counted apart, so a suite that
	# cannot run here is seen, not lost.
	awk -v p="$passed" -v f0="$failed" 'FNR == 1 { f0 += dead > f ? dead : f; dead = f = 0 }
	     /Synthesis: Tested:/ { p += $7; f += $10 + $13 }
	     /^(Fail|Timeout):/ { dead += $2 }
	     /^\[SKIP\] / && !/Test is disabled/ { s++ } # not "disabled": filtered out by --filter
	     /^Skipped:/ { s += $2 }
	     END { f0 += dead > f ? dead : f; printf "%d passed, %d failed, %d skipped\n", p, f0, s }' "$@"
	exit $status
	;;
*) echo "usage: ./dev.sh demo | test" >&2; exit 2 ;;
esac
