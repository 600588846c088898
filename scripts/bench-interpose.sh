#!/usr/bin/env bash
# NodePrepareResources latency through drakit interpose (README "Measured"): starts the local
# cluster, renders dgx-h100 (8 whole GPUs), deploys the reference GPU driver behind drakit
# interpose and runs conformance/interpose.TestIntegrationPrepareLatency (pods with a claim for 1
# and for 8 GPUs, one after the other; p50/p99 of the driver's prepare as the interposer timed the
# kubelet's calls). Not a timed test. DRAKIT_BENCH_ROUNDS pods per size (default 20).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$DRAKIT_REPO"
scripts/build.sh
scripts/build-images.sh
drakit=_output/bin/drakit
teardown() {
  local rc=$?
  if [ -n "${interpose_pid:-}" ] && kill -0 "$interpose_pid" 2>/dev/null; then kill "$interpose_pid" 2>/dev/null || true; wait "$interpose_pid" 2>/dev/null || true; fi
  $drakit env down || rc=1
  exit "$rc"
}
trap teardown EXIT
$drakit env down
$drakit env up --images-dir "$DRAKIT_REPO/_output/images"
eval "$($drakit env status -o env)"
$drakit emulator render --profile dgx-h100 --root "$DRAKIT_EMULATOR_ROOT" --shim _output/lib/libnvidia-ml.so
interpose_dir="$DRAKIT_KUBELET_ROOT_DIR/plugins/interposed"
mkdir -p "$interpose_dir"
$drakit interpose --driver-registration-socket "$interpose_dir/gpu.drakit.dev-reg.sock" \
  --kubelet-registrar-dir "$DRAKIT_KUBELET_ROOT_DIR/plugins_registry" --control "$DRAKIT_RUN_DIR/interpose.sock" \
  --records "$DRAKIT_RUN_DIR/interpose-records.jsonl" &
interpose_pid=$!
$drakit driver deploy --kubeconfig "$DRAKIT_KUBECONFIG" --kubelet-root-dir "$DRAKIT_KUBELET_ROOT_DIR" \
  --cdi-dir "$DRAKIT_CDI_DIR" --host-root "$DRAKIT_EMULATOR_ROOT" --runtime-class-name drakit-mig-manager --registrar-dir "$interpose_dir"
DRAKIT_KUBECONFIG="$DRAKIT_KUBECONFIG" DRAKIT_INTERPOSE="$DRAKIT_RUN_DIR/interpose.sock" \
  go test -count=1 -v -run '^TestIntegrationPrepareLatency$' ./conformance/interpose/ | grep -v '^I[0-9]'
