#!/usr/bin/env bash
# Proves a multi-node local cluster end to end: brings up NODES (default 4) nodes, runs a hostNetwork
# probe pod pinned to each node, renders the emulated node (DRAKIT_PROFILE, default dgx-h100) into every
# node's emulator root with the node name as UUID seed, deploys the reference GPU driver once per node
# (drakit driver deploy --node), waits for a ResourceSlice per node, runs a pod with a GPU claim on the
# third node (or the last) and checks that it sees one of that node's GPUs, then takes the cluster down
# and checks that nothing is left: no process using the run dir, no mount below it or the kubelet
# root dirs (/run/drakit/k<i>), no cgroup root, no run dir, no kubelet root dir.
#
# Needs root, scripts/build.sh and scripts/build-images.sh (or DRAKIT_IMAGES_DIR naming a dir with
# probe.tar and driver.tar). Takes the cluster lock (/tmp/drakit-cluster.lock) itself.
set -euo pipefail
cd "$(dirname "$0")/.."
NODES=${NODES:-4}
DRAKIT_PROFILE=${DRAKIT_PROFILE:-dgx-h100}
DRAKIT_IMAGES_DIR=${DRAKIT_IMAGES_DIR:-$PWD/_output/images}
drakit=$PWD/_output/bin/drakit
log() { printf '=== %s %s\n' "$(date -u +%H:%M:%S)" "$*"; }
die() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

if [ "${DRAKIT_CLUSTER_LOCKED:-}" != 1 ]; then
  exec env DRAKIT_CLUSTER_LOCKED=1 flock /tmp/drakit-cluster.lock "$0" "$@"
fi
(( NODES >= 2 )) || die "NODES=$NODES: the check needs at least 2 nodes"
gpu_node=$(( NODES >= 3 ? 3 : NODES ))

$drakit env down
trap '$drakit env down >/dev/null 2>&1 || true' EXIT
log "env up --nodes $NODES"
$drakit env up --nodes "$NODES" --images-dir "$DRAKIT_IMAGES_DIR"
eval "$($drakit env status -o env)"
k() { "$DRAKIT_KUBECTL" --kubeconfig "$DRAKIT_KUBECONFIG" "$@"; }
read -r -a nodes <<<"$DRAKIT_NODES"
(( ${#nodes[@]} == NODES )) || die "DRAKIT_NODES=$DRAKIT_NODES, want $NODES nodes"
ready=$(k get nodes -o jsonpath='{range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}')
printf '%s\n' "$ready"
for n in "${nodes[@]}"; do grep -qx "$n=True" <<<"$ready" || die "node $n is not Ready"; done

pod() { # pod NAME NODE [CLAIM]: a hostNetwork probe pod pinned to NODE, with CLAIM's GPU
  local claims="" resources=""
  if [ -n "${3:-}" ]; then
    claims="  resourceClaims: [{name: gpu, resourceClaimName: $3}]"
    resources="    resources: {claims: [{name: gpu}]}"
  fi
  k apply -f - <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: default}
spec:
  hostNetwork: true
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  automountServiceAccountToken: false
  nodeSelector: {kubernetes.io/hostname: "$2"}
$claims
  containers:
  - name: probe
    image: drakit.dev/probe:dev
    imagePullPolicy: Never
    command: [/usr/bin/drakit-probe, --hold]
$resources
EOF
}

log "a hostNetwork probe pod on each node"
for i in "${!nodes[@]}"; do pod "probe-$((i + 1))" "${nodes[$i]}"; done
for i in "${!nodes[@]}"; do
  k wait --for=condition=Ready --timeout=60s "pod/probe-$((i + 1))" >/dev/null
  got=$(k get pod "probe-$((i + 1))" -o jsonpath='{.spec.nodeName} {.status.hostIP} {.status.podIP}')
  [ "$got" = "${nodes[$i]} ${nodes[$i]} ${nodes[$i]}" ] || die "probe-$((i + 1)): node, host IP, pod IP = $got, want ${nodes[$i]}"
  log "probe-$((i + 1)) runs on $got"
done

log "rendering $DRAKIT_PROFILE into every node's emulator root and deploying the GPU driver per node"
for i in "${!nodes[@]}"; do
  idx=$((i + 1))
  root_var=DRAKIT_NODE_${idx}_EMULATOR_ROOT kubelet_var=DRAKIT_NODE_${idx}_KUBELET_ROOT_DIR cdi_var=DRAKIT_NODE_${idx}_CDI_DIR
  $drakit emulator render --profile "$DRAKIT_PROFILE" --root "${!root_var}" --shim _output/lib/libnvidia-ml.so --uuid-seed "${nodes[$i]}"
  $drakit driver deploy --kubeconfig "$DRAKIT_KUBECONFIG" --node "${nodes[$i]}" --kubelet-root-dir "${!kubelet_var}" \
    --cdi-dir "${!cdi_var}" --host-root "${!root_var}" --http-port $((9470 + 10 * idx)) & # the nodes share the host's loopback
done
wait_all() { local rc=0 p; for p in $(jobs -p); do wait "$p" || rc=1; done; return $rc; }
wait_all || die "a driver deploy failed"
slices=$(k get resourceslices -o jsonpath='{range .items[?(@.spec.driver=="gpu.drakit.dev")]}{.spec.nodeName}{"\n"}{end}' | sort | uniq -c)
printf '%s\n' "$slices"
for n in "${nodes[@]}"; do grep -q " $n\$" <<<"$slices" || die "no ResourceSlice of gpu.drakit.dev for node $n"; done
uuids() { # uuids NODE: the GPU UUIDs of NODE's slices
  k get resourceslices -o json | python3 -c '
import json, sys
for s in json.load(sys.stdin)["items"]:
    if s["spec"].get("driver") == "gpu.drakit.dev" and s["spec"].get("nodeName") == sys.argv[1]:
        for d in s["spec"].get("devices", []):
            u = d.get("attributes", {}).get("uuid", {}).get("string")
            if u: print(u)' "$1" | sort
}
[ -n "$(uuids "${nodes[0]}")" ] || die "node ${nodes[0]}'s slice has no device with a uuid attribute"
if [ -n "$(comm -12 <(uuids "${nodes[0]}") <(uuids "${nodes[$((gpu_node - 1))]}"))" ]; then
  die "nodes ${nodes[0]} and ${nodes[$((gpu_node - 1))]} publish the same GPU UUIDs"
fi

target=${nodes[$((gpu_node - 1))]}
log "a pod with a GPU claim on node $target"
k apply -f - <<EOF
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: gpu, namespace: default}
spec:
  devices:
    requests: [{name: gpu, exactly: {deviceClassName: gpu.drakit.dev}}]
EOF
pod gpu-pod "$target" gpu
k wait --for=condition=Ready --timeout=90s pod/gpu-pod >/dev/null || { k describe pod gpu-pod; die "the GPU pod is not Ready"; }
report=$(k logs gpu-pod | grep '^DRAKIT-PROBE-REPORT ')
seen=$(sed 's/^DRAKIT-PROBE-REPORT //' <<<"$report" | grep -o 'GPU-[0-9a-f-]*' | sort -u)
[ -n "$seen" ] || die "the GPU pod sees no GPU: $report"
log "the GPU pod on $target sees $seen"
for u in $seen; do
  grep -qx "$u" <(uuids "$target") || die "the GPU pod sees $u, which is not one of $target's GPUs"
done
k get pods -o wide

log "env down"
run_dir=$DRAKIT_RUN_DIR
kubelet_roots=()
for i in $(seq 1 "$NODES"); do
  root=DRAKIT_NODE_${i}_KUBELET_ROOT_DIR
  kubelet_roots+=("${!root}")
done
$drakit env down
trap - EXIT
left=""
for p in /proc/[0-9]*; do
  if grep -qs -- "$run_dir" "$p/cmdline" 2>/dev/null; then left+=" ${p#/proc/}"; fi
done
[ -z "$left" ] || die "processes still use $run_dir:$left"
! grep -q -- "$run_dir" /proc/self/mountinfo || die "mounts left below $run_dir: $(grep -- "$run_dir" /proc/self/mountinfo)"
for root in "${kubelet_roots[@]}"; do
  ! grep -qE -- " $root( |/)" /proc/self/mountinfo || die "mounts left at or below $root: $(grep -E -- " $root( |/)" /proc/self/mountinfo)"
  [ ! -e "$root" ] || die "kubelet root dir $root left"
done
cgroups=$(find /sys/fs/cgroup -maxdepth 2 -name 'drakit-kubelet*' 2>/dev/null)
[ -z "$cgroups" ] || die "cgroups left: $cgroups"
[ ! -e "$run_dir" ] || die "run dir $run_dir left"
log "PASS: $NODES nodes up, a pod on each, a ResourceSlice per node, a GPU on $target; nothing left after down"
