#!/usr/bin/env bash
# Fault to health, taint and eviction latency (README "Measured"): starts the local cluster, renders
# dgx-a100-mig, deploys the reference GPU driver and runs `drakit bench fault-latency`: a pod with
# one GPU, an Xid the driver answers with NoSchedule (94: times Unhealthy in the pod's status and the
# taint in the slice), the GPU's reset, an Xid it answers with NoExecute (48: times the taint and the
# eviction), per run; p50/max over DRAKIT_BENCH_ROUNDS runs (default 20). Not a timed test.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$DRAKIT_REPO"
scripts/build.sh
scripts/build-images.sh
drakit=_output/bin/drakit
teardown() {
  local rc=$?
  $drakit env down || rc=1
  exit "$rc"
}
trap teardown EXIT
$drakit env down
$drakit env up --images-dir "$DRAKIT_REPO/_output/images"
eval "$($drakit env status -o env)"
$drakit emulator render --profile dgx-a100-mig --root "$DRAKIT_EMULATOR_ROOT" --shim _output/lib/libnvidia-ml.so
$drakit driver deploy --kubeconfig "$DRAKIT_KUBECONFIG" --kubelet-root-dir "$DRAKIT_KUBELET_ROOT_DIR" \
  --cdi-dir "$DRAKIT_CDI_DIR" --host-root "$DRAKIT_EMULATOR_ROOT" --runtime-class-name drakit-mig-manager
$drakit bench fault-latency --kubeconfig "$DRAKIT_KUBECONFIG" --emulator-root "$DRAKIT_EMULATOR_ROOT" \
  --runs "${DRAKIT_BENCH_ROUNDS:-20}"
