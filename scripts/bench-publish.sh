#!/usr/bin/env bash
# bench-publish.sh: run the reference driver's ResourceSlice publishing
# benchmarks (reference/simulate/bench_test.go) and print a table:
# benchmark, time per op, slices and devices per op, time per device.
#
#   BuildResourcesMIG64        the driver's pool alone, one node with 64
#                              A100-SXM4-40GB in dynamic MIG mode
#   Publish/mig-64gpus/...     that node's pool built and published through
#                              the resourceslice controller until the watch
#                              holds every slice
#   Publish/dgx-h100/...       1000 simulated dgx-h100 nodes (8 H100 each)
#   Publish/mixed-mig/...      1000 simulated mixed-mig nodes (static and
#                              dynamic MIG, 63 devices each)
#
# The publish benchmarks use a fake clientset that serves ResourceSlices as
# the API server does (field-selected watches); starting the publishers is
# not timed. `drakit driver simulate` runs the same path against a cluster.
#
# Usage: scripts/bench-publish.sh [extra go test flags...]
#   Environment: BUILD_BENCHTIME (default 2s), PUBLISH_BENCHTIME (default 3x:
#   every iteration starts 1000 publishers, about 2 s untimed). The raw
#   `go test -bench` output is kept in $OUT (default /tmp/bench-publish.txt).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$DRAKIT_REPO"
out=${OUT:-/tmp/bench-publish.txt}
{
	go test ./reference/simulate/ -run '^$' -bench '^BenchmarkBuildResourcesMIG64$' -benchmem \
		-benchtime "${BUILD_BENCHTIME:-2s}" "$@"
	go test ./reference/simulate/ -run '^$' -bench '^BenchmarkPublish$' -benchmem \
		-benchtime "${PUBLISH_BENCHTIME:-3x}" "$@"
} | tee "$out" >&2
awk '
function fmt(ns) {
	if (ns >= 1e9) return sprintf("%.2f s", ns/1e9)
	if (ns >= 1e6) return sprintf("%.1f ms", ns/1e6)
	return sprintf("%.1f µs", ns/1e3)
}
/^Benchmark/ {
	name = $1; sub(/^Benchmark/, "", name); sub(/-[0-9]+$/, "", name)
	ns = slices = devices = ""
	for (i = 2; i <= NF; i++) {
		if ($i == "ns/op") ns = $(i-1)
		if ($i == "slices/op") slices = $(i-1)
		if ($i == "devices/op") devices = $(i-1)
	}
	rows[++n] = sprintf("%-34s %10s %8d %9d %12s", name, fmt(ns), slices, devices, fmt(ns/devices))
}
END {
	printf "%-34s %10s %8s %9s %12s\n", "benchmark", "time/op", "slices", "devices", "per device"
	for (i = 1; i <= n; i++) print rows[i]
}' "$out"
