#!/usr/bin/env bash
# run.sh - wsprof's CUDA checks, on a machine with an NVIDIA GPU.
#
# usage: bash tests/gpu/run.sh [BUILD_DIR]             build the programs, run, compare (BUILD_DIR: build)
#        bash tests/gpu/run.sh --progs DIR [BUILD_DIR]  the same with what --build-only put in DIR
#        bash tests/gpu/run.sh --build-only DIR [BUILD_DIR]  compile the programs and gather wsprof's
#                                                       libraries into DIR (no GPU needed)
#        bash tests/gpu/run.sh --selftest               check the comparison code on fake summaries
#
# Run from the repository root. Compiles tests/gpu/progs with nvcc, runs
# each program under `wsprof record`, and compares `wsprof report summary
# --json` with the books the program kept (compare.py); then, when PyTorch
# is installed, a short training loop whose traced peak must equal
# torch.cuda.max_memory_reserved(), run plain and traced for the overhead.
# Prints one row per check (PASS/FAIL/SKIP and why) and exits 0 only when
# none failed. Needs the built wsprof (BUILD_DIR/analyzer/wsprof,
# BUILD_DIR/preload/libwsprof.so), python3, nvcc or --progs, a GPU; not
# meson, not the network. Every step runs under a timeout, and no step
# starts after BUDGET_S seconds (default 270): a hang costs one step.
#
# Output: the table, results.tsv and env.txt in $OUT (default
# tests/gpu/out), everything else (books, traces, reports, logs) in
# $OUT/files. When OUT is set by the caller, as on a device machine that
# brings back only a few files, $OUT/files is packed into gpu-reports.tar.gz
# and gpu-traces.tar (traces over PACK_LIMIT_MB, default 15 MiB, left out
# and named) instead.
set -u

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PROGS_SRC=$HERE/progs
STEP_S=60
BUDGET_S=${BUDGET_S:-270}
MAX_PACKED=$((${PACK_LIMIT_MB:-15} << 20))

usage() {
	sed -n '3,8p' "${BASH_SOURCE[0]}" | sed 's/^# //' >&2
	exit 2
}

BUILD=build
PREBUILT=
BUILD_ONLY=
while [ $# -gt 0 ]; do
	case $1 in
	--selftest)
		exec env PYTHONDONTWRITEBYTECODE=1 python3 "$HERE/compare.py" --selftest ;;
	--build-only | --progs)
		[ $# -ge 2 ] || usage
		if [ "$1" = --progs ]; then PREBUILT=$2; else BUILD_ONLY=$2; fi
		shift 2 ;;
	-*) usage ;;
	*)
		BUILD=$1
		shift ;;
	esac
done

PACK=0
if [ -n "$BUILD_ONLY" ]; then
	OUT=$BUILD_ONLY
elif [ -n "${OUT:-}" ]; then
	PACK=1
else
	OUT=$HERE/out
fi
mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
FILES=$OUT/files
[ -n "$BUILD_ONLY" ] && FILES=$OUT
rm -rf "$OUT/files"
mkdir -p "$FILES" || exit 2
RESULTS=$OUT/results.tsv
ENV_TXT=$OUT/env.txt
: >"$RESULTS"
: >"$ENV_TXT"
SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/wsprof-gpu.XXXXXX") || exit 2
trap 'rm -rf "$SCRATCH"' EXIT
export PYTHONDONTWRITEBYTECODE=1

# ---- helpers -----------------------------------------------------------------

# result STATUS TITLE REASON: one row of the table.
result() {
	printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$RESULTS"
	printf '  %-4s  %-28s %s\n' "$1" "$2" "$(shorten "$3")"
}

# A reason as the table shows it: results.tsv keeps it whole.
shorten() {
	if [ ${#1} -gt 400 ]; then
		echo "${1:0:400}... (whole in results.tsv)"
	else
		echo "$1"
	fi
}

say_env() {
	echo "$*" | tee -a "$ENV_TXT"
}

# The seconds a step may take: $1 (default STEP_S), less near the end of
# the budget, 0 when no step should start any more.
step_limit() {
	local want=${1:-$STEP_S} left=$((BUDGET_S - SECONDS))
	if [ "$left" -lt 10 ]; then
		echo 0
	elif [ "$left" -lt "$want" ]; then
		echo "$left"
	else
		echo "$want"
	fi
}

# limited SECONDS CMD...: timeout signals the command's whole process group,
# so a traced program under `wsprof record` goes too.
limited() {
	local s=$1
	shift
	timeout --kill-after=5 "$s" "$@"
}

# " (the last line FILE holds)", or nothing when it is empty.
last_line() {
	[ -s "$1" ] && echo " ($(tail -n 1 "$1" | cut -c1-160))"
}

# ---- the machine ---------------------------------------------------------------

find_nvcc() {
	local c
	for c in "${CUDA_HOME:+$CUDA_HOME/bin/nvcc}" "$(command -v nvcc 2>/dev/null)" /usr/local/cuda/bin/nvcc; do
		if [ -n "$c" ] && [ -x "$c" ]; then
			echo "$c"
			return 0
		fi
	done
	return 1
}

NVCC=$(find_nvcc) || NVCC=
WSPROF=$BUILD/analyzer/wsprof
PRELOAD=$BUILD/preload/libwsprof.so
HAVE_GPU=0

describe_machine() {
	say_env "wsprof GPU checks, $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(uname -n), $(uname -r)"
	if command -v nvidia-smi >/dev/null 2>&1 &&
		limited 30 nvidia-smi --query-gpu=index,name,driver_version,memory.total,memory.used \
			--format=csv,noheader >"$FILES/gpus.txt" 2>&1; then
		HAVE_GPU=1
		while IFS= read -r line; do say_env "gpu:     $line"; done <"$FILES/gpus.txt"
		say_env "driver:  CUDA $(limited 30 nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -n 1)"
	else
		say_env "gpu:     none (nvidia-smi$(last_line "$FILES/gpus.txt" || echo ' not found'))"
	fi
	if [ -n "$NVCC" ]; then
		say_env "nvcc:    $NVCC, $("$NVCC" --version | sed -n 's/.*release \([^,]*\),.*/\1/p')"
	else
		say_env "nvcc:    not found"
	fi
	say_env "python:  $(command -v python3) $(python3 --version 2>&1)"
	say_env "wsprof:  $WSPROF"
}

# ---- building ------------------------------------------------------------------

# The programs: NAME SOURCE NVCC-FLAGS (beyond the common ones). The .c
# ones call the driver only (a .cu file always brings cudart in).
PROGRAMS=(
	"runtime_static runtime.cu"
	"runtime_shared runtime.cu -cudart shared -Xlinker -rpath -Xlinker \$ORIGIN"
	"pool pool.cu"
	"oom oom.cu"
	"driver driver.c -cudart none -lcuda"
	"vmm vmm.c -cudart none -lcuda"
	"attach_static attach_service.cu"
	"attach_shared attach_service.cu -cudart shared -Xlinker -rpath -Xlinker \$ORIGIN"
)

# The GPU's own code (-arch=native, when nvcc finds a GPU), else Hopper
# (the H200) with PTX for anything newer, else nvcc's default.
pick_arch() {
	local bin=$1 flags
	for flags in "-arch=native" "-gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90" ""; do
		# shellcheck disable=SC2086
		if limited 90 "$NVCC" -O2 $flags -I"$PROGS_SRC" -o "$SCRATCH/arch_probe" "$PROGS_SRC/oom.cu" \
			>"$FILES/arch_probe.log" 2>&1 && ! grep -q "Cannot find valid GPU" "$FILES/arch_probe.log"; then
			echo "$flags"
			return 0
		fi
	done
	return 1
}

# build_programs DIR: compile every program into DIR, in parallel, with the
# shared cudart beside them ($ORIGIN), so that DIR also runs where no
# toolkit is installed. One FAIL row per program not built. @return 0 when
# all were built.
build_programs() {
	local bin=$1 arch arch_flags entry name src extra need dir failed=0
	if [ -z "$NVCC" ]; then
		result FAIL "build" "nvcc not found: set CUDA_HOME, or build elsewhere with --build-only DIR and pass --progs DIR"
		return 1
	fi
	if ! arch=$(pick_arch "$bin"); then
		result FAIL "build" "nvcc cannot compile oom.cu$(last_line "$FILES/arch_probe.log")"
		return 1
	fi
	say_env "arch:    ${arch:-nvcc default}"
	for entry in "${PROGRAMS[@]}"; do
		read -r name src extra <<<"$entry"
		case $src in *.c) arch_flags= ;; *) arch_flags=$arch ;; esac
		rm -f "$bin/$name"
		# shellcheck disable=SC2086
		limited 90 "$NVCC" -O2 -Xcompiler -Wall $arch_flags -I"$PROGS_SRC" -o "$bin/$name" \
			"$PROGS_SRC/$src" $extra >"$FILES/$name.build.log" 2>&1 &
	done
	wait
	for entry in "${PROGRAMS[@]}"; do
		read -r name src extra <<<"$entry"
		if [ ! -x "$bin/$name" ]; then
			result FAIL "build $name" "nvcc failed$(last_line "$FILES/$name.build.log")"
			failed=1
		fi
	done
	# The name runtime_shared asks for (libcudart.so.MAJOR); without
	# readelf, whatever libcudart.so.MAJOR the toolkit has.
	need=$(readelf -d "$bin/runtime_shared" 2>/dev/null | sed -n 's/.*NEEDED.*\[\(libcudart[^]]*\)\].*/\1/p')
	for dir in "$(dirname "$NVCC")/../lib64" "$(dirname "$NVCC")/../targets/x86_64-linux/lib"; do
		[ -n "$need" ] || need=$(cd "$dir" 2>/dev/null && find . -maxdepth 1 -name 'libcudart.so.[0-9]*' ! -name '*.*.*.*' -printf '%f\n' | head -n 1)
		if [ -n "$need" ] && [ -e "$dir/$need" ]; then
			cp -L "$dir/$need" "$bin/$need"
			break
		fi
	done
	return $failed
}

# The libraries wsprof needs beyond the C and C++ runtimes, as this machine
# has them (for a machine that lacks some: see find_libraries).
gather_libraries() {
	local dir=$1 lib
	mkdir -p "$dir" || return 1
	for lib in $(ldd "$WSPROF" "$PRELOAD" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u); do
		case $(basename "$lib") in
		libc.so* | libm.so* | libstdc++.so* | libgcc_s.so* | libpthread.so* | libdl.so* | librt.so* | ld-linux*) ;;
		*) cp -L "$lib" "$dir/" ;;
		esac
	done
}

if [ -n "$BUILD_ONLY" ]; then
	describe_machine >/dev/null
	status=0
	build_programs "$OUT" || status=1
	if [ -x "$WSPROF" ] && [ -f "$PRELOAD" ]; then
		gather_libraries "$OUT/libs" || status=1
	else
		echo "run.sh: no wsprof in $BUILD: its libraries were not gathered" >&2
		status=1
	fi
	echo "built into $OUT: ${PROGRAMS[*]%% *}; libraries: $(cd "$OUT/libs" 2>/dev/null && echo *)"
	exit $status
fi

# Supply, from DIR/libs of --progs, the libraries wsprof needs and this
# machine lacks, and only those: through LD_LIBRARY_PATH they reach the
# traced programs too. @return 0 when nothing is missing any more.
find_libraries() {
	local missing lib round
	for round in 1 2 3 4; do
		missing=$(ldd "$WSPROF" "$WSPROF_PRELOAD" 2>/dev/null | awk '/not found/ {print $1}' | sort -u)
		[ -z "$missing" ] && return 0
		if [ -z "$PREBUILT" ] || [ ! -d "$PREBUILT/libs" ]; then
			break
		fi
		mkdir -p "$SCRATCH/libs"
		for lib in $missing; do
			[ -e "$PREBUILT/libs/$lib" ] && ln -sf "$PREBUILT/libs/$lib" "$SCRATCH/libs/$lib"
		done
		case ":${LD_LIBRARY_PATH:-}:" in
		*":$SCRATCH/libs:"*) ;;
		*) export LD_LIBRARY_PATH=$SCRATCH/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ;;
		esac
		say_env "libs:    from $PREBUILT/libs: $(cd "$SCRATCH/libs" && echo *)"
		[ "$round" -eq 4 ] && break
	done
	MISSING_LIBS=$(echo "$missing" | tr '\n' ' ')
	return 1
}

# ---- the checks ----------------------------------------------------------------

describe_machine
if ! command -v python3 >/dev/null 2>&1; then
	echo "run.sh: python3 is needed to compare the figures" >&2
	exit 2
fi
# PyTorch's segments must come from cudaMalloc (expandable_segments would
# map them with cuMemCreate): the allocator's defaults, whatever was set.
if [ -n "${PYTORCH_CUDA_ALLOC_CONF+set}" ]; then
	say_env "note:    PYTORCH_CUDA_ALLOC_CONF=$PYTORCH_CUDA_ALLOC_CONF unset for the checks"
	unset PYTORCH_CUDA_ALLOC_CONF
fi
echo

finish() {
	local fails passes skips
	{
		echo
		echo "wsprof GPU checks ($(sed -n 's/^gpu: *//p' "$ENV_TXT" | head -n 1)), ${SECONDS} s:"
		printf '  %-28s %-6s %s\n' "check" "result" "reason"
		while IFS=$'\t' read -r status title reason; do
			printf '  %-28s %-6s %s\n' "$title" "$status" "$(shorten "$reason")"
		done <"$RESULTS"
		echo "$OVERHEAD"
		[ "$PACK" = 1 ] && pack_files
		echo "results: $OUT/table.txt; books, traces, reports, logs: $([ "$PACK" = 1 ] && echo "$OUT/gpu-reports.tar.gz, $OUT/gpu-traces.tar" || echo "$FILES")"
	} | tee "$OUT/table.txt"
	fails=$(grep -c '^FAIL' "$RESULTS")
	passes=$(grep -c '^PASS' "$RESULTS")
	skips=$(grep -c '^SKIP' "$RESULTS")
	if [ "$fails" -ne 0 ] || [ "$passes" -eq 0 ]; then
		echo "FAILED: $fails failed, $passes passed, $skips skipped" | tee -a "$OUT/table.txt"
		exit 1
	fi
	echo "OK: $passes passed, $skips skipped" | tee -a "$OUT/table.txt"
	exit 0
}

# Few files come back from a device machine: the text in one archive, the
# traces in another (already compressed), each under MAX_PACKED.
pack_files() {
	local t size
	(cd "$FILES" && find . -type f ! -name '*.wsp*' -print0 | tar -czf "$OUT/gpu-reports.tar.gz" --null -T -)
	# Smallest first, so that as many traces as can fit do.
	(cd "$FILES" && find . -maxdepth 1 -type f -name '*.wsp*' -printf '%s %p\n' | sort -n |
		while read -r size t; do
			if [ "$size" -gt "$MAX_PACKED" ]; then
				echo "left out: ${t#./} ($((size >> 20)) MiB, over $((MAX_PACKED >> 20)) MiB)"
				continue
			fi
			tar -rf "$OUT/gpu-traces.tar" "$t"
			if [ "$(stat -c %s "$OUT/gpu-traces.tar")" -gt "$MAX_PACKED" ]; then
				echo "left out: ${t#./} (the traces archive would pass $((MAX_PACKED >> 20)) MiB)"
				tar -f "$OUT/gpu-traces.tar" --delete "$t"
			fi
		done)
	rm -rf "$FILES"
}

OVERHEAD="overhead: not measured"
if [ ! -x "$WSPROF" ] || [ ! -f "$PRELOAD" ]; then
	result FAIL "wsprof" "$WSPROF or $PRELOAD missing: build wsprof first (ninja -C $BUILD)"
	finish
fi
WSPROF=$(cd "$(dirname "$WSPROF")" && pwd)/wsprof
export WSPROF_PRELOAD
WSPROF_PRELOAD=$(cd "$(dirname "$PRELOAD")" && pwd)/libwsprof.so
if ! find_libraries; then
	result FAIL "wsprof" "libraries missing here: $MISSING_LIBS(bring them: --build-only DIR elsewhere, then --progs DIR)"
	finish
fi
if ! limited 30 "$WSPROF" --version >"$FILES/wsprof.version" 2>&1; then
	result FAIL "wsprof" "$WSPROF does not start$(last_line "$FILES/wsprof.version")"
	finish
fi
say_env "version: $(head -n 1 "$FILES/wsprof.version")"
[ "$HAVE_GPU" = 1 ] || result FAIL "gpu" "nvidia-smi found no GPU: every run below will fail"

if [ -n "$PREBUILT" ]; then
	BIN=$(cd "$PREBUILT" && pwd) || exit 2
else
	BIN=$SCRATCH/bin
	mkdir -p "$BIN"
	build_programs "$BIN"
fi

# summaries NAME: the summary of the trace NAME.wsp, as text and JSON.
# @return 0, or 1 with the reason in REPORT_PROBLEM.
summaries() {
	local name=$1 t=$FILES/$1.wsp s rc
	REPORT_PROBLEM=
	s=$(step_limit)
	limited "$s" "$WSPROF" report summary "$t" >"$FILES/$name.summary.txt" 2>"$FILES/$name.report.log"
	limited "$s" "$WSPROF" report summary --json "$t" >"$FILES/$name.summary.json" 2>>"$FILES/$name.report.log"
	rc=$?
	if [ $rc -ne 0 ]; then
		REPORT_PROBLEM="report summary --json: exit $rc$([ $rc -eq 124 ] && echo ", timed out")$(last_line "$FILES/$name.report.log")"
		return 1
	fi
	return 0
}

# callsites NAME KIND...: the call sites of each kind, one after the other
# in NAME.callsites.txt. What fails goes to the "call sites" row.
CALLSITES_DONE=0
CALLSITES_FAILED=()
callsites() {
	local name=$1 t=$FILES/$1.wsp kind s rc
	shift
	: >"$FILES/$name.callsites.txt"
	for kind in "$@"; do
		s=$(step_limit)
		[ "$s" -gt 0 ] || return
		echo "== wsprof report callsites --kind $kind" >>"$FILES/$name.callsites.txt"
		limited "$s" "$WSPROF" report callsites --top 20 --kind "$kind" "$t" \
			>>"$FILES/$name.callsites.txt" 2>"$FILES/$name.callsites.log"
		rc=$?
		if [ $rc -eq 0 ]; then
			CALLSITES_DONE=$((CALLSITES_DONE + 1))
		else
			CALLSITES_FAILED+=("$name --kind $kind: $([ $rc -eq 124 ] && echo "timed out after $s s" || echo "exit $rc")$(last_line "$FILES/$name.callsites.log")")
		fi
		cat "$FILES/$name.callsites.log" >>"$FILES/$name.callsites.txt"
	done
}

# The CUDA kinds a program's books hold.
book_kinds() {
	python3 -c 'import json, sys
print(" ".join(k for k, v in json.load(open(sys.argv[1])).items() if k.startswith("cuda") and isinstance(v, dict)))' "$1" 2>/dev/null
}

# check NAME TITLE WANT_RC RECORD_FLAGS COMPARE_FLAGS -- PROG ARGS...: record
# `PROG BOOKS ARGS`, make its reports, compare the books with the summary.
check() {
	local name=$1 title=$2 want_rc=$3 record_flags=$4 compare_flags=$5 s rc verdict
	shift 6
	local prog=$1
	shift
	if [ ! -x "$BIN/$prog" ]; then
		result FAIL "$title" "$BIN/$prog not built"
		return
	fi
	s=$(step_limit)
	if [ "$s" -eq 0 ]; then
		result SKIP "$title" "out of time (budget $BUDGET_S s)"
		return
	fi
	rm -f "$FILES/$name".*
	# shellcheck disable=SC2086
	limited "$s" "$WSPROF" record -o "$FILES/$name.wsp" $record_flags -- "$BIN/$prog" "$FILES/$name.books.json" "$@" \
		>"$FILES/$name.stdout" 2>"$FILES/$name.stderr"
	rc=$?
	if [ $rc -eq 124 ] || { [ $rc -eq 137 ] && [ "$want_rc" -ne 137 ]; }; then
		result FAIL "$title" "timed out after $s s (exit $rc)"
		return
	fi
	if [ $rc -ne "$want_rc" ]; then
		result FAIL "$title" "exit status $rc, expected $want_rc$(last_line "$FILES/$name.stderr")"
		return
	fi
	if [ ! -s "$FILES/$name.wsp" ]; then
		result FAIL "$title" "no trace written$(last_line "$FILES/$name.stderr")"
		return
	fi
	if ! summaries "$name"; then
		result FAIL "$title" "$REPORT_PROBLEM"
		return
	fi
	# shellcheck disable=SC2086
	verdict=$(python3 "$HERE/compare.py" books "$FILES/$name.books.json" "$FILES/$name.summary.json" $compare_flags 2>&1)
	result "${verdict%% *}" "$title" "${verdict#* }"
	# shellcheck disable=SC2046
	callsites "$name" $(book_kinds "$FILES/$name.books.json")
}

echo
echo "checks:"
check runtime_static "runtime (static cudart)" 0 "" "" -- runtime_static
check runtime_shared "runtime (shared cudart)" 0 "" "" -- runtime_shared
check driver "driver API" 0 "" "" -- driver
check pool "memory pools" 0 "" "" -- pool
check vmm "virtual memory (VMM)" 0 "" "" -- vmm
check oom "out of memory, freed" 0 "" "--oom" -- oom free
check oom_abort "out of memory, exit 1" 1 "" "--oom" -- oom abort
# The longest flush interval: only the flush on failure can save the events.
check oom_kill "out of memory, SIGKILL" 137 "--flush-ms 60000" "--oom --incomplete-ok --no-devices" -- oom kill

# attach_check NAME TITLE PROG: start PROG (100 ticks of 50 ms, cudart set
# up first), `wsprof attach --duration 2` to it once it is ready; the trace
# must hold about 40 device allocations (2 s of ticks), all tick's, and the
# program must end as it would have: 100 ticks, no failure, exit 0.
attach_check() {
	local name=$1 title=$2 prog=$3 s pid rc n i site
	if [ ! -x "$BIN/$prog" ]; then
		result FAIL "$title" "$BIN/$prog not built"
		return
	fi
	s=$(step_limit 30)
	if [ "$s" -lt 15 ]; then
		result SKIP "$title" "out of time (budget $BUDGET_S s)"
		return
	fi
	rm -f "$FILES/$name".*
	limited "$s" "$BIN/$prog" 100 50 >"$FILES/$name.stdout" 2>"$FILES/$name.stderr" &
	pid=$!
	for i in $(seq 100); do
		grep -q '^ready' "$FILES/$name.stdout" 2>/dev/null && break
		sleep 0.1
	done
	if ! grep -q '^ready' "$FILES/$name.stdout" 2>/dev/null; then
		kill "$pid" 2>/dev/null
		wait
		result FAIL "$title" "the program did not get CUDA ready$(last_line "$FILES/$name.stderr")"
		return
	fi
	pid=$(pgrep -n -f "$BIN/$prog 100 50" || echo "$pid")
	limited 20 "$WSPROF" attach --duration 2 -o "$FILES/$name.wsp" "$pid" >"$FILES/$name.attach.log" 2>&1
	rc=$?
	wait
	if [ $rc -ne 0 ]; then
		result FAIL "$title" "wsprof attach: exit $rc$(last_line "$FILES/$name.attach.log")"
		return
	fi
	if ! grep -q '^ticks 100 failures 0$' "$FILES/$name.stdout"; then
		result FAIL "$title" "the program did not end as it would have: $(tail -n 1 "$FILES/$name.stdout")$(last_line "$FILES/$name.stderr")"
		return
	fi
	if ! summaries "$name"; then
		result FAIL "$title" "$REPORT_PROBLEM"
		return
	fi
	n=$(python3 -c 'import json, sys
k = json.load(open(sys.argv[1])).get("kinds", {}).get("cuda_device", {})
print(k.get("allocations", 0))' "$FILES/$name.summary.json" 2>/dev/null || echo 0)
	if [ "${n:-0}" -lt 25 ] || [ "${n:-0}" -gt 50 ]; then
		result FAIL "$title" "$n device allocations in the attached 2 s, about 40 expected"
		return
	fi
	site=$(limited 30 "$WSPROF" report callsites --json --kind cuda_device "$FILES/$name.wsp" 2>/dev/null |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["sites"][0]["function"])' 2>/dev/null)
	case $site in
	tick*) ;;
	*)
		result FAIL "$title" "the device allocations' first call site is ${site:-none}, not tick"
		return
		;;
	esac
	result PASS "$title" "$n device allocations in the attached 2 s of 50 ms ticks, at $site; the program ended as it would have"
	callsites "$name" cuda_device
}
attach_check attach_static "attach (static cudart)" attach_static
attach_check attach_shared "attach (shared cudart)" attach_shared

# ---- PyTorch ---------------------------------------------------------------------

# A program killed with all of the device's memory may leave the driver
# some seconds of cleaning up: wait (20 s at most) until less than a tenth
# of the memory is in use.
wait_for_device_memory() {
	local i used total
	[ "$HAVE_GPU" = 1 ] || return 0
	for i in $(seq 20); do
		read -r used total < <(limited 10 nvidia-smi -i 0 --query-gpu=memory.used,memory.total \
			--format=csv,noheader,nounits 2>/dev/null | tr -d ',')
		[ -n "${used:-}" ] && [ -n "${total:-}" ] || return 0
		[ "$used" -lt $((total / 10)) ] && return 0
		[ "$i" -eq 1 ] && say_env "note:    waiting for the device's memory to come back ($used of $total MiB in use)"
		sleep 1
	done
}

torch_check() {
	local title="PyTorch training loop" s rc t0 t1 t2 t3 py verdict
	s=$(step_limit)
	if [ "$s" -eq 0 ]; then
		result SKIP "$title" "out of time (budget $BUDGET_S s)"
		return
	fi
	# Found without importing it (that takes seconds); and the interpreter
	# itself, not a launcher that would exec it and leave its own trace.
	limited "$s" python3 -c 'import importlib.util, sys
print(sys.executable)
print("yes" if importlib.util.find_spec("torch") else "no")' >"$FILES/torch.probe.log" 2>&1
	if [ "$(sed -n 2p "$FILES/torch.probe.log")" != yes ]; then
		result SKIP "$title" "PyTorch not installed"
		OVERHEAD="overhead: not measured (no PyTorch)"
		return
	fi
	py=$(head -n 1 "$FILES/torch.probe.log")
	[ -x "$py" ] || py=python3
	wait_for_device_memory

	s=$(step_limit 90)
	t0=$(date +%s.%N)
	limited "$s" "$py" "$HERE/torch_loop.py" "$FILES/torch.plain.json" >"$FILES/torch.plain.stdout" 2>"$FILES/torch.plain.stderr"
	rc=$?
	t1=$(date +%s.%N)
	if [ $rc -ne 0 ]; then
		result FAIL "$title" "plain run: exit $rc$(last_line "$FILES/torch.plain.stderr")"
		return
	fi
	say_env "torch:   $(python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
print(r["torch"], "CUDA", r["cuda"], "cuDNN", r["cudnn"], "on", r["device"])' "$FILES/torch.plain.json" 2>&1) ($py)"
	s=$(step_limit 150)
	if [ "$s" -eq 0 ]; then
		result SKIP "$title" "out of time for the traced run"
		return
	fi
	t2=$(date +%s.%N)
	limited "$s" "$WSPROF" record -o "$FILES/torch.wsp" -- "$py" "$HERE/torch_loop.py" "$FILES/torch.traced.json" \
		>"$FILES/torch.traced.stdout" 2>"$FILES/torch.traced.stderr"
	rc=$?
	t3=$(date +%s.%N)
	OVERHEAD=$(python3 "$HERE/compare.py" overhead "$FILES/torch.plain.json" "$FILES/torch.traced.json" \
		"$(echo "$t0 $t1" | awk '{printf "%.3f", $2 - $1}')" "$(echo "$t2 $t3" | awk '{printf "%.3f", $2 - $1}')")
	if [ $rc -ne 0 ]; then
		result FAIL "$title" "traced run: exit $rc$([ $rc -eq 124 ] && echo ", timed out after $s s")$(last_line "$FILES/torch.traced.stderr")"
		return
	fi
	if ! summaries torch; then
		result FAIL "$title" "$REPORT_PROBLEM"
		return
	fi
	verdict=$(python3 "$HERE/compare.py" torch "$FILES/torch.traced.json" "$FILES/torch.summary.json" 2>&1)
	result "${verdict%% *}" "$title" "${verdict#* }"
	callsites torch cuda_device
}
torch_check

if [ ${#CALLSITES_FAILED[@]} -gt 0 ]; then
	result FAIL "call sites" "$(printf '%s; ' "${CALLSITES_FAILED[@]}" | sed 's/; $//')"
elif [ "$CALLSITES_DONE" -gt 0 ]; then
	result PASS "call sites" "$CALLSITES_DONE reports (callsites --kind cuda_*), kept beside the traces"
fi

finish
