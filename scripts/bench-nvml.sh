#!/usr/bin/env bash
# bench-nvml.sh: time drakit's NVML shim against a mock NVML in the same run,
# with the same C client (bench/nvml/nvmlbench.c, which dlopen()s each
# libnvidia-ml.so.1), and print the medians and the ratios shim/mock.
#
# The mock is bench/mocknvml: go-nvml's dgxa100 mock behind cgo exports,
# built as a c-shared library the way NVIDIA/k8s-test-infra's mocknvml is
# (see its doc.go). The shim answers from an emulator root rendered from the
# dgx-h100 profile (8 GPUs, as the mock's 8); rendering creates device nodes,
# so this needs root or CAP_MKNOD.
#
# Usage: scripts/bench-nvml.sh [LIB...]
#   LIB: more libnvidia-ml.so.1 files to time against the same root, e.g. a
#   shim built from an older commit; each gets a column.
#   Environment: ITERATIONS (samples per measurement, default 2000), WORK
#   (build directory, default a new one under /tmp, removed at the end
#   unless WORK is given), CC (default gcc).
set -euo pipefail
cd "$(dirname "$0")/.."
iters=${ITERATIONS:-2000}
if [[ -n ${WORK:-} ]]; then
	work=$WORK
	mkdir -p "$work"
else
	work=$(mktemp -d /tmp/bench-nvml.XXXXXX)
	trap 'rm -rf "$work"' EXIT
fi

echo "building in $work" >&2
go build -o "$work/drakit" ./cmd/drakit
mkdir -p "$work/shim" "$work/mock"
"$work/drakit" emulator build-shim -o "$work/shim/libnvidia-ml.so.1" >&2
# go-nvml's cgo warns about deprecated declarations; keep the log for errors.
if ! (cd bench/mocknvml && go build -buildmode=c-shared -o "$work/mock/libnvidia-ml.so.1" .) >"$work/mock-build.log" 2>&1; then
	cat "$work/mock-build.log" >&2
	exit 1
fi
"${CC:-gcc}" -O2 -std=gnu11 -Wall -Wextra -Werror -o "$work/nvmlbench" bench/nvml/nvmlbench.c -ldl
rm -rf "$work/root"
"$work/drakit" emulator render --profile dgx-h100 --root "$work/root" >&2

names=(shim mock)
libs=("$work/shim/libnvidia-ml.so.1" "$work/mock/libnvidia-ml.so.1")
for lib in "$@"; do
	names+=("$(basename "$(dirname "$(realpath "$lib")")")")
	libs+=("$(realpath "$lib")")
done
for i in "${!libs[@]}"; do
	echo "timing ${names[$i]} (${libs[$i]})" >&2
	(cd "$work" && DRAKIT_EMULATOR_ROOT="$work/root" ./nvmlbench "${libs[$i]}" "$iters") >"$work/result.$i"
done

# One row per measurement: the medians, then shim/mock.
{
	printf '%s' "measurement"
	for n in "${names[@]}"; do printf ' %s' "$n"; done
	printf ' shim/mock\n'
	for m in init count uuid enumerate gpus; do
		printf '%s' "$m"
		for i in "${!libs[@]}"; do printf ' %s' "$(awk -v m="$m" '$1 == m {print $2}' "$work/result.$i")"; done
		printf '\n'
	done
} | awk '
function fmt(ns) {
	if (ns >= 1e6) return sprintf("%.2f ms", ns/1e6)
	if (ns >= 1e3) return sprintf("%.2f µs", ns/1e3)
	return sprintf("%d ns", ns)
}
NR == 1 { printf "%-11s", $1; for (i = 2; i <= NF; i++) printf " %12s", $i; printf "\n"; next }
{
	printf "%-11s", $1
	for (i = 2; i <= NF; i++) printf " %12s", ($1 == "gpus" ? $i : fmt($i))
	if ($1 != "gpus") printf " %12s", ($3 > 0 ? sprintf("%.2f", $2 / $3) : "-")
	printf "\n"
}'
echo "(medians; init: dlopen + nvmlInit_v2 in a fresh process; count, uuid: one call; enumerate: count + 8 × (handle, UUID, name, memory, PCI))" >&2
