#!/usr/bin/env bash
# The fabric features on a 4-node local cluster rendered from the cluster profile conformance-fabric
# (emulator/clusterprofile): each node a GB200 NVL72-like compute tray (4 GPUs, NVLink 5, 8 IMEX
# channels) that is also a TPU v5p host of 2x2x1 chips. All GPUs are in one NVLink domain, nodes 1-2
# in clique 1 and nodes 3-4 in clique 2; the TPU hosts form slice torus-a, a 2x2x4 torus, stacked
# along z (worker = node index - 1). The environment's lifecycle (drakit env up/down:
# package environment on e2e-framework) brings the cluster up, renders every node and deploys on
# every node the reference GPU driver (with its IMEX channel controller) and the reference TPU driver
# (with its sub-slice controller), pinned to the node with its own host paths. Then:
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
  if [ -n "${DRAKIT_KUBECONFIG:-}" ]; then
    "$kubectl" --kubeconfig "$DRAKIT_KUBECONFIG" -n drakit-system logs deploy/drakit-imex-controller >"$ARTIFACTS/fabric/logs/imex-controller.log" 2>&1 || true
    "$kubectl" --kubeconfig "$DRAKIT_KUBECONFIG" -n drakit-tpu logs deploy/drakit-tpu-controller >"$ARTIFACTS/fabric/logs/tpu-controller.log" 2>&1 || true
  fi
  # The environment's finish (package environment): every node's watcher stopped, the cluster's
  # logs exported to $ARTIFACTS/fabric/logs (node i > 1 in node-<i>), the cluster torn down.
  [ -n "$DRAKIT_KEEP_CLUSTER" ] || log "tearing the $nodes-node cluster down"
  $drakit env down --provider local --artifacts "$ARTIFACTS/fabric" ${DRAKIT_KEEP_CLUSTER:+--keep-cluster} || rc=1
  log "the fabric features finished in $(( SECONDS - started ))s (exit $rc)"
  exit "$rc"
}
trap teardown EXIT

rm -rf "$ARTIFACTS/fabric" "$ARTIFACTS/tpu" "$ARTIFACTS/multinode"
mkdir -p "$ARTIFACTS/fabric/logs"
# The environment's setup (package environment, drakit env up): --recreate tears down a
# cluster an interrupted run left behind; $nodes nodes come up with the images; each node's node of
# the cluster profile is rendered into its emulator root with the NVML shim and its watcher started;
# the reference GPU driver (its IMEX controller publishing 8 channels per clique) and TPU driver (its
# sub-slice controller) are deployed once per node, pinned to it with its host paths. The nodes share
# the host's loopback: node i's drivers serve /metrics and /healthz 10*(i-1) ports above the defaults.
log "setting up a $nodes-node local cluster: $DRAKIT_FABRIC_PROFILE rendered, the GPU and TPU drivers deployed on every node"
$drakit env up --provider local --recreate --nodes "$nodes" --images-dir "$DRAKIT_REPO/_output/images" \
  --cluster-profile "$DRAKIT_FABRIC_PROFILE" --shim _output/lib/libnvidia-ml.so --deploy gpu,tpu --imex-channels 8
eval "$($drakit env status -o env)" # DRAKIT_KUBECONFIG, DRAKIT_NODE_<i>_*, node 1's DRAKIT_* paths

roots=""
for i in $(seq 1 "$nodes"); do
  name_v=DRAKIT_NODE_${i}_NAME root_v=DRAKIT_NODE_${i}_EMULATOR_ROOT
  roots="$roots${roots:+,}${!name_v}=${!root_v}"
done

wait_for_imex_pools "$DRAKIT_KUBECONFIG" "$ARTIFACTS/fabric/imex-pools.txt"

log "checking the TPU controller's planned sub-slice pools against the API server's validation"
live_check TestIntegrationSubslicePoolValidates ./reference/tpudriver "the sub-slice pool validation check"

log "checking the controllers' admission policies: the IMEX and TPU controllers may write only their slices without a node"
live_check TestIntegrationControllerSliceAdmission ./reference/deploy "the controllers' admission check"

# The scenarios use whole cliques and whole hosts: one at a time.
log "running the @nvlink-fabric features against the GPU driver"
$drakit conformance --kubeconfig "$DRAKIT_KUBECONFIG" --probe-host-network --artifacts "$ARTIFACTS/fabric/kit" --node-cdi-dir "$DRAKIT_CDI_DIR" \
  --node-emulator-root "$DRAKIT_EMULATOR_ROOT" --node-kubelet-root-dir "$DRAKIT_KUBELET_ROOT_DIR" --node-sysfs "$DRAKIT_EMULATOR_ROOT/sys" \
  --node-emulator-roots "$roots" \
  --driver-config docs/examples/reference-driver.yaml --tags '@nvlink-fabric' --no-colors --fail-on-skip --concurrency 1
log "running the @tpu-torus features against the TPU driver"
$drakit conformance --kubeconfig "$DRAKIT_KUBECONFIG" --probe-host-network --artifacts "$ARTIFACTS/tpu" --node-emulator-roots "$roots" \
  --driver-config docs/examples/reference-tpu-driver.yaml --tags '@tpu-torus' --no-colors --fail-on-skip --concurrency 1
log "running the @multi-node features against the TPU driver's sub-slices"
$drakit conformance --kubeconfig "$DRAKIT_KUBECONFIG" --probe-host-network --artifacts "$ARTIFACTS/multinode" --node-emulator-roots "$roots" \
  --driver-config docs/examples/reference-tpu-driver.yaml --tags '@multi-node && @multi-host' --no-colors --fail-on-skip --concurrency 1
