#!/usr/bin/env bash
# bench-cluster-up.sh: time `drakit cluster up` and `down` of the local cluster, warm (components
# and images cached), over RUNS rounds (default 5), and print min / median / max of each with the
# up's own phases from its log (etcd+containerd, apiserver+kubelet, controller-manager+scheduler,
# Node schedulable). Each round starts from an empty run dir, as `make conformance` does, so the
# PKI is generated every time.
#
# Usage: scripts/bench-cluster-up.sh            (needs root; no other local cluster may be up)
#   Environment: RUNS (default 5), RUN_DIR (default /tmp/drakit-bench-up), any drakit cluster
#   flags in UP_FLAGS (for example --images-dir).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$DRAKIT_REPO"
runs=${RUNS:-5}
run_dir=${RUN_DIR:-/tmp/drakit-bench-up}
drakit=_output/bin/drakit
[ -x "$drakit" ] || scripts/build.sh
# shellcheck disable=SC2206
flags=(--run-dir "$run_dir" ${UP_FLAGS:-})

ms() { date +%s%3N; }
stats() { sort -n | awk '{a[NR]=$1} END {printf "%6.2f s %6.2f s %6.2f s", a[1]/1000, a[int((NR+1)/2)]/1000, a[NR]/1000}'; }

"$drakit" cluster down "${flags[@]}" >/dev/null
# One untimed round fills the page cache with the component binaries.
"$drakit" cluster up "${flags[@]}" >/dev/null 2>&1
"$drakit" cluster down "${flags[@]}" >/dev/null 2>&1

ups=() downs=()
for i in $(seq "$runs"); do
  t0=$(ms)
  "$drakit" cluster up "${flags[@]}" >/tmp/bench-up-$i.log 2>&1 || { cat /tmp/bench-up-$i.log; die "cluster up failed"; }
  t1=$(ms)
  "$drakit" cluster down "${flags[@]}" >/dev/null 2>&1 || die "cluster down failed"
  t2=$(ms)
  ups+=($((t1 - t0))) downs+=($((t2 - t1)))
  log "round $i: up $((t1 - t0)) ms, down $((t2 - t1)) ms"
done
printf '%-26s %8s %8s %8s\n' "" min median max
printf '%-26s %s\n' "drakit cluster up (warm)" "$(printf '%s\n' "${ups[@]}" | stats)"
printf '%-26s %s\n' "drakit cluster down" "$(printf '%s\n' "${downs[@]}" | stats)"
echo "last up's phases:"
grep -E '"(Ready|Node schedulable|Cluster up)"' "/tmp/bench-up-$runs.log" | sed -E 's/^.*\] //'
