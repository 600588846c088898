#!/usr/bin/env bash
# bench-cluster-up.sh: time `drakit env up --nodes NODES` and `down` of the local cluster, warm
# (components and images cached), over RUNS rounds (default 5), and print min / median / max of each,
# and of the memory the cluster takes once up (the RSS sum, from /proc, of every process using the run
# dir: the control plane, every node's containerd and kubelet, shims), with the up's own phases from
# its log (etcd+containerds, apiserver+kubelets, controller-manager+scheduler, Nodes schedulable).
# Each round starts from an empty run dir, as `make conformance` does, so the PKI is generated every
# time.
#
# Usage: flock /tmp/drakit-cluster.lock scripts/bench-cluster-up.sh   (needs root; no other local
#   cluster may be up). Environment: NODES (default 1), RUNS (default 5), RUN_DIR (default
#   /tmp/drakit-bench-up), any drakit env flags of the local cluster in UP_FLAGS (for example --images-dir).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$DRAKIT_REPO"
runs=${RUNS:-5}
nodes=${NODES:-1}
run_dir=${RUN_DIR:-/tmp/drakit-bench-up}
drakit=_output/bin/drakit
[ -x "$drakit" ] || scripts/build.sh
# shellcheck disable=SC2206
flags=(--run-dir "$run_dir" ${UP_FLAGS:-})
up_flags=(--nodes "$nodes")

ms() { date +%s%3N; }
stats() { sort -n | awk '{a[NR]=$1} END {printf "%6.2f s %6.2f s %6.2f s", a[1]/1000, a[int((NR+1)/2)]/1000, a[NR]/1000}'; }
mib_stats() { sort -n | awk '{a[NR]=$1} END {printf "%6d MiB %6d MiB %6d MiB", a[1]/1024, a[int((NR+1)/2)]/1024, a[NR]/1024}'; }
# rss_kib: the RSS sum (KiB) of every process whose command line names the run dir.
rss_kib() {
  local total=0 p rss
  for p in /proc/[0-9]*; do
    { tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null | grep -qF -- "$run_dir" || continue
    rss=$(awk '/^VmRSS:/ {print $2}' "$p/status" 2>/dev/null) || continue
    total=$((total + ${rss:-0}))
  done
  echo "$total"
}

"$drakit" env down "${flags[@]}" >/dev/null
# One untimed round fills the page cache with the component binaries.
"$drakit" env up "${flags[@]}" "${up_flags[@]}" >/dev/null 2>&1
"$drakit" env down "${flags[@]}" >/dev/null 2>&1

ups=() downs=() rss=()
for i in $(seq "$runs"); do
  t0=$(ms)
  "$drakit" env up "${flags[@]}" "${up_flags[@]}" >/tmp/bench-up-$i.log 2>&1 || { cat /tmp/bench-up-$i.log; die "env up failed"; }
  t1=$(ms)
  kib=$(rss_kib)
  t1b=$(ms)
  "$drakit" env down "${flags[@]}" >/dev/null 2>&1 || die "env down failed"
  t2=$(ms)
  ups+=($((t1 - t0))) downs+=($((t2 - t1b))) rss+=("$kib")
  log "round $i: up $((t1 - t0)) ms, down $((t2 - t1b)) ms, RSS after up $((kib / 1024)) MiB"
done
printf '%-32s %10s %10s %10s\n' "$nodes node(s), $runs rounds" min median max
printf '%-32s %s\n' "drakit env up (warm)" "$(printf '%s\n' "${ups[@]}" | stats)"
printf '%-32s %s\n' "drakit env down" "$(printf '%s\n' "${downs[@]}" | stats)"
printf '%-32s %s\n' "RSS of the cluster after up" "$(printf '%s\n' "${rss[@]}" | mib_stats)"
echo "last up's phases:"
grep -E '"(Ready|Node schedulable|Cluster up)"' "/tmp/bench-up-$runs.log" | sed -E 's/^.*\] //'
