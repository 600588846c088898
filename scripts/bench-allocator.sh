#!/usr/bin/env bash
# bench-allocator.sh: run the allocator benchmarks (upstream structured
# allocator vs drakit's reference allocator, one core) and print a table:
# instance, upstream time (or TIMEOUT), reference time, ratio
# reference/upstream, and whether the reference meets its target
# (hard families H1–H5: <= 10 ms; easy paths: <= 1.2x upstream).
#
# Usage: scripts/bench-allocator.sh [BENCH_REGEX] [extra go test flags...]
#   BENCH_REGEX defaults to Allocator (every family and size); e.g.
#   'Allocator/H3'. 'Fabric' runs the fabric cases on the 1,000-node
#   scale-1000 cluster profile (make bench-fabric): per case "node" (one
#   Allocate on the case's node) and "filter" (Allocate on each of the
#   1,000 nodes with one allocator, as the scheduler's Filter for one pod).
#   Environment: BENCHTIME (default 300ms), UPSTREAM_TIMEOUT (default 3s),
#   COUNT (default 1: runs of each benchmark; the table shows each one's
#   fastest, which on a loaded machine is the least disturbed).
#   The raw `go test -bench` output is kept in $OUT (default
#   /tmp/bench-allocator.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
regex=${1:-Allocator}
shift || true
out=${OUT:-/tmp/bench-allocator.txt}
# The fabric cases are built with the drivers' code, so their benchmark lives
# beside the simulator (reference/simulate/fabric), not in the oracle.
pkg=./oracle/allocator/bench/
case $regex in Fabric*) pkg=./reference/simulate/fabric/ ;; esac
go test "$pkg" -run '^$' -bench "$regex" -cpu 1 \
	-benchtime "${BENCHTIME:-300ms}" -count "${COUNT:-1}" -upstream-timeout "${UPSTREAM_TIMEOUT:-3s}" "$@" | tee "$out" >&2
awk '
function fmt(ns) {
	if (ns >= 1e9) return sprintf("%.2f s", ns/1e9)
	if (ns >= 1e6) return sprintf("%.2f ms", ns/1e6)
	return sprintf("%.1f µs", ns/1e3)
}
/^Benchmark(Allocator|Fabric)\// {
	name = $1; sub(/^Benchmark(Allocator|Fabric)\//, "", name); sub(/-[0-9]+$/, "", name)
	impl = name; sub(/.*\//, "", impl); inst = name; sub(/\/[^\/]*$/, "", inst)
	ns = ""; to = 0
	for (i = 2; i <= NF; i++) {
		if ($i == "ns/op") ns = $(i-1)
		if ($i == "timeouts/op" && $(i-1) > 0) to = 1
	}
	if (!(inst in seen)) { seen[inst] = 1; order[++n] = inst }
	# The fastest run that finished; TIMEOUT only when every run timed out.
	if (to) { tos[inst, impl] = 1 }
	else if (ns != "" && (!((inst, impl) in t) || ns + 0 < t[inst, impl] + 0)) { t[inst, impl] = ns }
}
END {
	printf "%-26s %12s %12s %9s  %s\n", "instance", "upstream", "reference", "ref/up", "target"
	for (i = 1; i <= n; i++) {
		inst = order[i]; up = t[inst, "upstream"]; ref = t[inst, "reference"]
		upTimeout = (up == "" && ((inst, "upstream") in tos))
		ups = upTimeout ? "TIMEOUT" : (up == "" ? "-" : fmt(up))
		refs = ref == "" ? "-" : fmt(ref)
		ratio = (up != "" && ref != "") ? sprintf("%.2f", ref/up) : "-"
		target = "-"
		if (inst ~ /^H[0-9]/ && ref != "") target = (ref <= 10e6) ? "ok (<=10ms)" : "MISSED (>10ms)"
		if (inst ~ /^(easy|many-nodes)\// && ratio != "-") target = (ref/up <= 1.2) ? "ok (<=1.2x)" : "MISSED (>1.2x)"
		printf "%-26s %12s %12s %9s  %s\n", inst, ups, refs, ratio, target
	}
}' "$out"
