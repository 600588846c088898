# shellcheck shell=bash
# Shared settings for drakit's scripts. Every value can be overridden from the environment.

: "${DRAKIT_CACHE:=${XDG_CACHE_HOME:-$HOME/.cache}/drakit}"
: "${KUBERNETES_VERSION:=v1.37.2}"
: "${ETCD_VERSION:=v3.7.0}"
: "${CONTAINERD_VERSION:=v2.4.2}"
: "${CRICTL_VERSION:=v1.37.0}"

DRAKIT_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export DRAKIT_CACHE DRAKIT_REPO

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# with_heartbeat LABEL CMD...: runs CMD and prints a progress line every 30 s,
# because a cold Kubernetes build is silent for many minutes.
with_heartbeat() {
  local label=$1; shift
  local start=$SECONDS
  "$@" &
  local pid=$!
  while ! wait_for "$pid" 30; do
    log "  still ${label} ($(( (SECONDS - start) / 60 ))m$(( (SECONDS - start) % 60 ))s)"
  done
  wait "$pid"
  local rc=$?
  if [ "$rc" -eq 0 ]; then log "  ${label}: done in $(( SECONDS - start ))s"; fi
  return "$rc"
}

# wait_for PID SECONDS: true once PID has exited, false if it still runs after SECONDS.
wait_for() {
  local pid=$1 n=$(( $2 * 10 ))
  while [ "$n" -gt 0 ]; do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
    n=$(( n - 1 ))
  done
  ! kill -0 "$pid" 2>/dev/null
}

# wait_for_imex_pools KUBECONFIG OUT: a claim's allocation keeps the node selector its device's pool
# had, so the fabric runs wait until the IMEX controller's channel pool of each clique names both
# its nodes (at most 2 minutes); the pools are written to OUT. Fails when they do not.
wait_for_imex_pools() {
  local kubectl=$DRAKIT_CACHE/components/kubernetes-$KUBERNETES_VERSION/bin/kubectl pools
  log "waiting for the IMEX controller's pools to name both nodes of each clique"
  for _ in $(seq 1 60); do
    pools=$("$kubectl" --kubeconfig "$1" get resourceslices -o jsonpath='{range .items[?(@.spec.nodeSelector)]}{.spec.pool.name}={.spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values}{"\n"}{end}')
    [ "$(grep -c '","' <<<"$pools" || true)" -ge 2 ] && break
    sleep 2
  done
  printf '%s\n' "$pools" | tee "$2"
  [ "$(grep -c '","' <<<"$pools" || true)" -ge 2 ] || die "the IMEX controller did not publish a two-node pool per clique"
}

# live_check TEST PACKAGE WHAT: runs the Go integration test TEST of PACKAGE against the cluster of
# $DRAKIT_KUBECONFIG; dies, with its output, when it fails or when it did not run (it skips without
# a cluster, and a skip must not pass for a check).
live_check() {
  local out
  out=$(DRAKIT_KUBECONFIG="$DRAKIT_KUBECONFIG" go test -count=1 -v -run "^$1\$" "$2") ||
    { printf '%s\n' "$out"; die "$3 failed"; }
  grep -q -- "--- PASS: $1" <<<"$out" ||
    { printf '%s\n' "$out"; die "$3 did not run (skipped)"; }
}

# go-nvml's cgo preamble calls NVML functions its own header marks deprecated; the warnings
# (hundreds of lines on a cold build) say nothing about drakit.
export CGO_CFLAGS="${CGO_CFLAGS:--O2 -g} -Wno-deprecated-declarations"
