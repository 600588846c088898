#!/usr/bin/env bash
# make conformance: builds what is missing, starts the local cluster, renders the emulated node,
# deploys the reference driver, runs every feature, writes reports to $ARTIFACTS and tears down.
# Exits non-zero on any failure. Set DRAKIT_KEEP_CLUSTER=1 to leave the cluster running.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$DRAKIT_REPO"
: "${ARTIFACTS:=$DRAKIT_REPO/artifacts}"
# dgx-a100-mig has whole GPUs (KEP-4381) and GPUs in MIG mode to partition (KEP-4815).
: "${DRAKIT_PROFILE:=dgx-a100-mig}"
: "${DRAKIT_KEEP_CLUSTER:=}"
# Scenarios run this many at a time, each on the devices it leases (3 is where this 2-core
# machine's CPU saturates).
: "${DRAKIT_CONCURRENCY:=3}"
started=$SECONDS

scripts/install-deps.sh
scripts/build-components.sh
scripts/build.sh
scripts/build-images.sh

drakit=_output/bin/drakit
teardown() {
  local rc=$?
  # A background check still running when the run fails is stopped (by its PID) before the cluster goes.
  if [ -n "${explain_pid:-}" ] && kill -0 "$explain_pid" 2>/dev/null; then kill "$explain_pid" 2>/dev/null || true; fi
  # down removes the run dir, logs included: keep the components' logs with the reports.
  if [ -n "${DRAKIT_RUN_DIR:-}" ] && [ -d "$DRAKIT_RUN_DIR/logs" ]; then
    mkdir -p "$ARTIFACTS/logs" && cp -r "$DRAKIT_RUN_DIR/logs/." "$ARTIFACTS/logs/" || true
  fi
  if [ -z "$DRAKIT_KEEP_CLUSTER" ]; then
    log "tearing the local cluster down"
    $drakit cluster down || rc=1
  fi
  log "make conformance finished in $(( SECONDS - started ))s (exit $rc)"
  exit "$rc"
}
trap teardown EXIT

# A cluster left behind by an interrupted run (killed session, crashed host) would bring its old
# pods, claims and slices into this run: tear it down first; down is a no-op without one.
$drakit cluster down
log "starting the local cluster"
$drakit cluster up --images-dir "$DRAKIT_REPO/_output/images"
eval "$($drakit cluster status -o env)"   # DRAKIT_RUN_DIR, DRAKIT_KUBECONFIG, DRAKIT_CDI_DIR, DRAKIT_KUBELET_ROOT_DIR, DRAKIT_EMULATOR_ROOT

log "rendering the emulated node ($DRAKIT_PROFILE) into $DRAKIT_EMULATOR_ROOT"
$drakit emulator render --profile "$DRAKIT_PROFILE" --root "$DRAKIT_EMULATOR_ROOT" --shim _output/lib/libnvidia-ml.so

log "deploying the reference driver"
$drakit driver deploy --kubeconfig "$DRAKIT_KUBECONFIG" --kubelet-root-dir "$DRAKIT_KUBELET_ROOT_DIR" \
  --cdi-dir "$DRAKIT_CDI_DIR" --driver-root "$DRAKIT_EMULATOR_ROOT" --partitionable-alpha --runtime-class-name drakit-mig-manager

log "checking the driver's admission policy: its ServiceAccount may write only its own node's slices"
admission=$(DRAKIT_KUBECONFIG="$DRAKIT_KUBECONFIG" go test -count=1 -v -run '^TestIntegrationDriverSliceAdmission$' ./reference/deploy) ||
  { printf '%s\n' "$admission"; die "the driver's admission policy check failed"; }
grep -q -- '--- PASS: TestIntegrationDriverSliceAdmission' <<<"$admission" ||
  { printf '%s\n' "$admission"; die "the driver's admission policy check did not run (skipped)"; }

# drakit explain's end-to-end test needs only a claim nobody allocates: it runs beside the features.
log "explaining a claim that cannot be allocated on the live cluster (drakit explain), beside the features"
explain_out=$(mktemp)
DRAKIT_KUBECONFIG="$DRAKIT_KUBECONFIG" go test -count=1 -v -run '^TestIntegrationExplain$' ./cmd/drakit >"$explain_out" 2>&1 &
explain_pid=$!

log "running the conformance features"
$drakit conformance --kubeconfig "$DRAKIT_KUBECONFIG" --artifacts "$ARTIFACTS" --node-cdi-dir "$DRAKIT_CDI_DIR" \
  --node-emulator-root "$DRAKIT_EMULATOR_ROOT" --node-kubelet-root-dir "$DRAKIT_KUBELET_ROOT_DIR" --node-sysfs "$DRAKIT_EMULATOR_ROOT/sys" \
  --driver-config docs/examples/reference-driver.yaml --no-colors --fail-on-skip --concurrency "$DRAKIT_CONCURRENCY"

wait "$explain_pid" || { cat "$explain_out"; die "drakit explain's end-to-end test failed"; }
grep -q -- '--- PASS: TestIntegrationExplain' "$explain_out" ||
  { cat "$explain_out"; die "drakit explain's end-to-end test did not run (skipped)"; }
rm -f "$explain_out"
