#!/usr/bin/env bash
# The TPU driver's conformance run: a 4-node local cluster rendered from the cluster profile
# conformance-fabric (each node a GB200 + TPU v5p host of 2x2x1 chips; slice torus-a, a 2x2x4
# torus, hosts stacked along z, worker = node index - 1), the TPU driver deployed on every node
# (pinned per node, each with its own host paths) with its sub-slice controller, the API-server
# check of the planned sub-slice pools, then the @tpu-torus features with each node's emulator
# root for the ground truth. Reports in $ARTIFACTS/tpu.
# Run inside the cluster lock: flock /tmp/drakit-cluster.lock scripts/conformance-tpu.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$DRAKIT_REPO"
: "${ARTIFACTS:=$DRAKIT_REPO/artifacts}"
: "${DRAKIT_KEEP_CLUSTER:=}"
started=$SECONDS

scripts/build.sh
scripts/build-images.sh

drakit=_output/bin/drakit
teardown() {
  local rc=$?
  if [ -n "${DRAKIT_RUN_DIR:-}" ] && [ -d "$DRAKIT_RUN_DIR/logs" ]; then
    mkdir -p "$ARTIFACTS/tpu/logs" && cp -r "$DRAKIT_RUN_DIR/logs/." "$ARTIFACTS/tpu/logs/" || true
  fi
  if [ -z "$DRAKIT_KEEP_CLUSTER" ]; then
    $drakit cluster down || rc=1
  fi
  log "TPU conformance finished in $(( SECONDS - started ))s (exit $rc)"
  exit "$rc"
}
trap teardown EXIT

$drakit cluster down
$drakit cluster up --nodes 4 --images-dir "$DRAKIT_REPO/_output/images"
eval "$($drakit cluster status -o env)"

roots=""
for i in 1 2 3 4; do
  name_v="DRAKIT_NODE_${i}_NAME" root_v="DRAKIT_NODE_${i}_EMULATOR_ROOT"
  kubelet_v="DRAKIT_NODE_${i}_KUBELET_ROOT_DIR" cdi_v="DRAKIT_NODE_${i}_CDI_DIR"
  roots="$roots${roots:+,}${!name_v}=${!root_v}"
  log "node ${!name_v}: conformance-fabric's node, TPU driver pinned to it"
  $drakit emulator render --cluster-profile conformance-fabric --node "${!name_v}" --root "${!root_v}"
  $drakit tpu-driver deploy --kubeconfig "$DRAKIT_KUBECONFIG" --kubelet-root-dir "${!kubelet_v}" \
    --cdi-dir "${!cdi_v}" --host-root "${!root_v}" --node "${!name_v}"
done

log "checking the planned sub-slice pools against the API server's validation"
check=$(DRAKIT_KUBECONFIG="$DRAKIT_KUBECONFIG" go test -count=1 -v -run '^TestIntegrationSubslicePoolValidates$' ./reference/tpudriver) ||
  { printf '%s\n' "$check"; die "the sub-slice pool validation check failed"; }
grep -q -- '--- PASS: TestIntegrationSubslicePoolValidates' <<<"$check" ||
  { printf '%s\n' "$check"; die "the sub-slice pool validation check did not run (skipped)"; }

log "running @tpu-torus"
$drakit conformance --kubeconfig "$DRAKIT_KUBECONFIG" --artifacts "$ARTIFACTS/tpu" --node-emulator-roots "$roots" \
  --driver-config docs/examples/reference-tpu-driver.yaml --tags '@tpu-torus' --no-colors --fail-on-skip --concurrency 1
