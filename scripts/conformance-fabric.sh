#!/usr/bin/env bash
# The fabric features on a 4-node local cluster rendered from the cluster profile conformance-fabric
# (emulator/clusterprofile): each node a GB200 NVL72-like compute tray (4 GPUs, NVLink 5, 8 IMEX
# channels) that is also a TPU v5p host of 2x2x1 chips. All GPUs are in one NVLink domain, nodes 1-2
# in clique 1 and nodes 3-4 in clique 2; the TPU hosts form slice torus-a, a 2x2x4 torus, stacked
# along z (worker = node index - 1). On every node the reference GPU driver (with its IMEX channel
# controller) and the reference TPU driver (with its sub-slice controller) are pinned to the node
# with its own host paths. Then:
#   @nvlink-fabric against the GPU driver (cliques judged by what NVML reports in the containers),
#   @tpu-torus against the TPU driver (sub-tori judged by each host's emulator ground truth),
#   @multi-node && @multi-host against the TPU driver: one sub-slice two nodes share, allocated
#   once, a pod on each of its nodes (what each sees judged by its host's ground truth).
# Every selected scenario must pass (--fail-on-skip). make conformance runs this after the
# single-node runs; alone: flock /tmp/drakit-cluster.lock scripts/conformance-fabric.sh.
# ARTIFACTS (default artifacts) gets $ARTIFACTS/fabric, $ARTIFACTS/tpu and $ARTIFACTS/multinode; DRAKIT_KEEP_CLUSTER=1 keeps
# the cluster.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$DRAKIT_REPO"
: "${ARTIFACTS:=$DRAKIT_REPO/artifacts}"
: "${DRAKIT_KEEP_CLUSTER:=}"
: "${DRAKIT_FABRIC_PROFILE:=conformance-fabric}"
nodes=4
started=$SECONDS

scripts/install-deps.sh
scripts/build-components.sh
scripts/build.sh
scripts/build-images.sh

drakit=_output/bin/drakit
kubectl=$DRAKIT_CACHE/components/kubernetes-$KUBERNETES_VERSION/bin/kubectl
teardown() {
  local rc=$?
  mkdir -p "$ARTIFACTS/fabric/logs"
  if [ -n "${DRAKIT_RUN_DIR:-}" ] && [ -d "$DRAKIT_RUN_DIR" ]; then
    cp -r "$DRAKIT_RUN_DIR/logs/." "$ARTIFACTS/fabric/logs/" 2>/dev/null || true
    for d in "$DRAKIT_RUN_DIR"/nodes/*/logs; do
      [ -d "$d" ] && mkdir -p "$ARTIFACTS/fabric/logs/node-$(basename "$(dirname "$d")")" &&
        cp -r "$d/." "$ARTIFACTS/fabric/logs/node-$(basename "$(dirname "$d")")/" || true
    done
  fi
  if [ -n "${DRAKIT_KUBECONFIG:-}" ]; then
    "$kubectl" --kubeconfig "$DRAKIT_KUBECONFIG" -n drakit-system logs deploy/drakit-imex-controller >"$ARTIFACTS/fabric/logs/imex-controller.log" 2>&1 || true
    "$kubectl" --kubeconfig "$DRAKIT_KUBECONFIG" -n drakit-tpu logs deploy/drakit-tpu-controller >"$ARTIFACTS/fabric/logs/tpu-controller.log" 2>&1 || true
  fi
  if [ -z "$DRAKIT_KEEP_CLUSTER" ]; then
    log "tearing the $nodes-node cluster down"
    $drakit cluster down || rc=1
  fi
  log "the fabric features finished in $(( SECONDS - started ))s (exit $rc)"
  exit "$rc"
}
trap teardown EXIT

rm -rf "$ARTIFACTS/fabric" "$ARTIFACTS/tpu" "$ARTIFACTS/multinode"
mkdir -p "$ARTIFACTS/fabric/logs"
$drakit cluster down
log "starting a $nodes-node local cluster"
$drakit cluster up --nodes "$nodes" --images-dir "$DRAKIT_REPO/_output/images"
eval "$($drakit cluster status -o env)" # DRAKIT_KUBECONFIG, DRAKIT_NODE_<i>_*, node 1's DRAKIT_* paths

roots=""
for i in $(seq 1 "$nodes"); do
  name_v=DRAKIT_NODE_${i}_NAME root_v=DRAKIT_NODE_${i}_EMULATOR_ROOT
  krd_v=DRAKIT_NODE_${i}_KUBELET_ROOT_DIR cdi_v=DRAKIT_NODE_${i}_CDI_DIR
  roots="$roots${roots:+,}${!name_v}=${!root_v}"
  # The nodes share the host's loopback: each node's drivers serve /metrics and /healthz on ports of their own.
  log "node ${!name_v}: rendering $DRAKIT_FABRIC_PROFILE's node into ${!root_v}, deploying the GPU and TPU drivers pinned to it"
  $drakit emulator render --cluster-profile "$DRAKIT_FABRIC_PROFILE" --node "${!name_v}" --root "${!root_v}" \
    --shim "$DRAKIT_REPO/_output/lib/libnvidia-ml.so"
  $drakit driver deploy --kubeconfig "$DRAKIT_KUBECONFIG" --kubelet-root-dir "${!krd_v}" --cdi-dir "${!cdi_v}" \
    --driver-root "${!root_v}" --node "${!name_v}" --imex-channels 8 --http-port $((9470 + 10 * i))
  $drakit tpu-driver deploy --kubeconfig "$DRAKIT_KUBECONFIG" --kubelet-root-dir "${!krd_v}" --cdi-dir "${!cdi_v}" \
    --host-root "${!root_v}" --node "${!name_v}" --http-port $((9473 + 10 * i))
done

# A claim's allocation keeps the node selector its device's pool had: wait until each clique's
# channel pool names both its nodes.
log "waiting for the IMEX controller's pools to name both nodes of each clique"
for _ in $(seq 1 60); do
  pools=$("$kubectl" --kubeconfig "$DRAKIT_KUBECONFIG" get resourceslices -o jsonpath='{range .items[?(@.spec.nodeSelector)]}{.spec.pool.name}={.spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values}{"\n"}{end}')
  [ "$(grep -c '","' <<<"$pools" || true)" -ge 2 ] && break
  sleep 2
done
printf '%s\n' "$pools" | tee "$ARTIFACTS/fabric/imex-pools.txt"
[ "$(grep -c '","' <<<"$pools" || true)" -ge 2 ] || die "the IMEX controller did not publish a two-node pool per clique"

log "checking the TPU controller's planned sub-slice pools against the API server's validation"
check=$(DRAKIT_KUBECONFIG="$DRAKIT_KUBECONFIG" go test -count=1 -v -run '^TestIntegrationSubslicePoolValidates$' ./reference/tpudriver) ||
  { printf '%s\n' "$check"; die "the sub-slice pool validation check failed"; }
grep -q -- '--- PASS: TestIntegrationSubslicePoolValidates' <<<"$check" ||
  { printf '%s\n' "$check"; die "the sub-slice pool validation check did not run (skipped)"; }

# The scenarios use whole cliques and whole hosts: one at a time.
log "running the @nvlink-fabric features against the GPU driver"
$drakit conformance --kubeconfig "$DRAKIT_KUBECONFIG" --artifacts "$ARTIFACTS/fabric/kit" --node-cdi-dir "$DRAKIT_CDI_DIR" \
  --node-emulator-root "$DRAKIT_EMULATOR_ROOT" --node-kubelet-root-dir "$DRAKIT_KUBELET_ROOT_DIR" --node-sysfs "$DRAKIT_EMULATOR_ROOT/sys" \
  --node-emulator-roots "$roots" \
  --driver-config docs/examples/reference-driver.yaml --tags '@nvlink-fabric' --no-colors --fail-on-skip --concurrency 1
log "running the @tpu-torus features against the TPU driver"
$drakit conformance --kubeconfig "$DRAKIT_KUBECONFIG" --artifacts "$ARTIFACTS/tpu" --node-emulator-roots "$roots" \
  --driver-config docs/examples/reference-tpu-driver.yaml --tags '@tpu-torus' --no-colors --fail-on-skip --concurrency 1
log "running the @multi-node features against the TPU driver's sub-slices"
$drakit conformance --kubeconfig "$DRAKIT_KUBECONFIG" --artifacts "$ARTIFACTS/multinode" --node-emulator-roots "$roots" \
  --driver-config docs/examples/reference-tpu-driver.yaml --tags '@multi-node && @multi-host' --no-colors --fail-on-skip --concurrency 1
