#!/usr/bin/env bash
# make conformance: builds what is missing, starts the local cluster, renders the emulated node,
# deploys the reference GPU, NIC and CPU drivers, runs every feature against each (reports in
# $ARTIFACTS/gpu, $ARTIFACTS/nic, $ARTIFACTS/cpu and $ARTIFACTS/interpose) and tears down; then runs
# the fabric features on a 4-node cluster (scripts/conformance-fabric.sh: $ARTIFACTS/fabric,
# $ARTIFACTS/tpu, $ARTIFACTS/multinode). Last, one summary of every run per KEP:
# $ARTIFACTS/summary.txt. Exits non-zero on any failure. Set DRAKIT_KEEP_CLUSTER=1 to leave the cluster running.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$DRAKIT_REPO"
: "${ARTIFACTS:=$DRAKIT_REPO/artifacts}"
# dgx-a100-mig has whole GPUs (KEP-4381), GPUs in MIG mode to partition (KEP-4815) and a ConnectX
# SR-IOV NIC beside each GPU below its PCIe switch (KEP-5075, KEP-4817, GPU/NIC alignment).
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
  # So is drakit interpose (it removes its sockets when stopped).
  if [ -n "${interpose_pid:-}" ] && kill -0 "$interpose_pid" 2>/dev/null; then kill "$interpose_pid" 2>/dev/null || true; wait "$interpose_pid" 2>/dev/null || true; fi
  # The environment's finish (package environment): the emulator's sriov_numvfs watcher stopped, the
  # cluster's logs kept with the reports in $ARTIFACTS/logs (down removes the run dir), the cluster
  # torn down unless DRAKIT_KEEP_CLUSTER.
  if [ -n "${env_up:-}" ]; then
    [ -n "$DRAKIT_KEEP_CLUSTER" ] || log "tearing the local cluster down"
    $drakit env down --provider local --artifacts "$ARTIFACTS" ${DRAKIT_KEEP_CLUSTER:+--keep-cluster} || rc=1
  fi
  log "make conformance finished in $(( SECONDS - started ))s (exit $rc)"
  exit "$rc"
}
trap teardown EXIT

# The environment's setup (package environment, drakit env up): a cluster left behind by an
# interrupted run (killed session, crashed host) would bring its old pods, claims and slices into
# this run, so --recreate tears it down first; then one node comes up with the images, the emulated
# node is rendered into $DRAKIT_EMULATOR_ROOT with the NVML shim, the emulator's sriov_numvfs watcher
# starts (a driver creates VFs by writing sriov_numvfs, as on a real kernel; the watcher applies the
# writes; its log ends in $ARTIFACTS/logs/emulator-watch.log), and the reference GPU driver
# (--partitionable-alpha --list-attributes, RuntimeClass drakit-mig-manager), NIC driver (two VFs per
# PF: 16 VFs, within the 32 devices one claim can hold, so that a claim can still ask for more than
# the node has) and CPU driver (the emulated node's NUMA nodes as cpu and memory devices) are
# deployed, each waited for until it has published its slices.
log "setting up the local cluster: $DRAKIT_PROFILE rendered, the GPU, NIC and CPU drivers deployed"
env_up=1
$drakit env up --provider local --recreate --nodes 1 --images-dir "$DRAKIT_REPO/_output/images" \
  --emulator-profile "$DRAKIT_PROFILE" --shim _output/lib/libnvidia-ml.so --deploy gpu,nic,cpu
eval "$($drakit env status -o env)"   # DRAKIT_RUN_DIR, DRAKIT_KUBECONFIG, DRAKIT_CDI_DIR, DRAKIT_KUBELET_ROOT_DIR, DRAKIT_EMULATOR_ROOT
mkdir -p "$ARTIFACTS/logs"

log "checking the driver's admission policy: its ServiceAccount may write only its own node's slices"
live_check TestIntegrationDriverSliceAdmission ./reference/deploy "the driver's admission policy check"
log "checking the NIC driver's status authorization: its ServiceAccount may write only its own status entries"
live_check TestIntegrationNICStatusAuthorization ./reference/deploy "the NIC driver's status authorization check"

# drakit explain's end-to-end test needs only a claim nobody allocates: it runs beside the features.
log "explaining a claim that cannot be allocated on the live cluster (drakit explain), beside the features"
explain_out=$(mktemp)
DRAKIT_KUBECONFIG="$DRAKIT_KUBECONFIG" go test -count=1 -v -run '^TestIntegrationExplain$' ./cmd/drakit/internal/explain >"$explain_out" 2>&1 &
explain_pid=$!

kit() { # kit NAME DECLARATION: certify one driver with the scenarios its declaration selects, every one must pass
  log "running the conformance features against the $1 driver ($2)"
  $drakit conformance --kubeconfig "$DRAKIT_KUBECONFIG" --probe-host-network --artifacts "$ARTIFACTS/$1" --node-cdi-dir "$DRAKIT_CDI_DIR" \
    --node-emulator-root "$DRAKIT_EMULATOR_ROOT" --node-kubelet-root-dir "$DRAKIT_KUBELET_ROOT_DIR" --node-sysfs "$DRAKIT_EMULATOR_ROOT/sys" \
    --node-cgroup-root /sys/fs/cgroup --driver-config "$2" --no-colors --fail-on-skip --concurrency "$DRAKIT_CONCURRENCY"
}
# The GPU driver claims neither consumable capacity nor device status; the NIC driver has no
# partitions, and publishes VFs before they exist (the inventory rule compares with the PCI functions
# that exist). Both get the PodGroup claims of KEP-5729, which every driver must pass, the Core
# scenarios of KEP-4816 (prioritized lists of the driver's class) and KEP-5018 (the admin-access
# namespace label), extended resources (KEP-5004) and the kubelet's PodResources API (KEP-3695); the
# Extended ones need partitions or the adminAccess capability, which only the GPU driver claims. The
# scenarios of the kit's own test driver (pool status, attributes) run once, in the GPU run; those of
# binding conditions (KEP-5007) with the GPU driver publishing binding conditions, below. Node
# allocatable resources (KEP-5517) are the CPU driver's (each declaration's scenarios.tags, which
# scripts/conformance-kind.sh runs on kind too). This cluster has one node:
# the @multi-node, @nvlink-fabric and @tpu-torus scenarios run on 4 nodes below
# (scripts/conformance-fabric.sh).
kit gpu docs/examples/reference-driver.yaml
# The same steps as Ginkgo specs (conformance/ginkgo, the package a driver's own Ginkgo suite imports):
# the example suite runs the GPU driver's KEP-4815 scenarios selected by --ginkgo.label-filter; any
# failure, a skip, or no spec run fails the run. Its reports stay out of the summary (the GPU run
# above already counts these scenarios).
log "running the KEP-4815 scenarios as Ginkgo specs (conformance/ginkgo/example)"
ginkgo_out=$(go test -count=1 -v -timeout 30m -run '^TestIntegrationGinkgoExample$' ./conformance/ginkgo/example -args \
  --ginkgo.label-filter='kep-4815 && !multi-node && !tpu-torus' --ginkgo.no-color --ginkgo.junit-report="$ARTIFACTS/ginkgo/ginkgo-junit.xml" \
  --drakit.kubeconfig="$DRAKIT_KUBECONFIG" --drakit.node-cdi-dir="$DRAKIT_CDI_DIR" --drakit.node-emulator-root="$DRAKIT_EMULATOR_ROOT" \
  --drakit.node-kubelet-root-dir="$DRAKIT_KUBELET_ROOT_DIR" --drakit.artifacts="$ARTIFACTS/ginkgo" --drakit.fail-on-skip --drakit.probe-host-network 2>&1) ||
  { printf '%s\n' "$ginkgo_out"; die "the Ginkgo example suite failed"; }
grep -q -- '--- PASS: TestIntegrationGinkgoExample' <<<"$ginkgo_out" && grep -Eq '^Ran [1-9][0-9]* of [0-9]+ Specs' <<<"$ginkgo_out" ||
  { printf '%s\n' "$ginkgo_out"; die "the Ginkgo example suite ran no spec (skipped, or the label filter selected none)"; }
grep -E '^Ran [0-9]+ of [0-9]+ Specs' <<<"$ginkgo_out" | while read -r line; do log "ginkgo: $line"; done
kit nic docs/examples/reference-nic-driver.yaml
kit cpu docs/examples/reference-cpu-driver.yaml

# --- a GPU driver whose CDI edits are device nodes alone (a third-party driver's shape) ------------
# The GPU driver redeployed with --device-nodes-only gives its containers no NVML library, no NVML
# state and no variables: NVML comes from the node, the emulator's NRI plugin in every node's
# containerd (emulator/nri), as a real node's container stack gives it. Its declaration observes NVML
# and /dev only (docs/examples/reference-driver-device-nodes.yaml); the driver checks of Core and the
# profiles this driver claims must all pass on what NVML shows inside the containers.
log "redeploying the reference GPU driver with CDI edits of device nodes alone"
$drakit driver delete --kubeconfig "$DRAKIT_KUBECONFIG"
$drakit driver deploy --kubeconfig "$DRAKIT_KUBECONFIG" --kubelet-root-dir "$DRAKIT_KUBELET_ROOT_DIR" \
  --cdi-dir "$DRAKIT_CDI_DIR" --host-root "$DRAKIT_EMULATOR_ROOT" --partitionable-alpha --list-attributes --runtime-class-name drakit-mig-manager \
  --device-nodes-only
kit gpu-device-nodes docs/examples/reference-driver-device-nodes.yaml
# --- end of device nodes alone --------------------------------------------------------------------

# --- binding conditions (KEP-5007) on the GPU driver's own devices --------------------------------
# With --binding-conditions every GPU device waits for gpu.drakit.dev/attached, which the kit's attach
# controller sets (docs/examples/reference-driver-binding-conditions.yaml: setBy: kit); no other run
# could bind a pod with those devices, so the driver is redeployed with the flag for the KEP-5007 run
# (its Core scenarios on the kit's test driver too), and back without it afterwards. Deleted first, so
# that the kit sees the new slices.
log "redeploying the reference GPU driver with binding conditions"
$drakit driver delete --kubeconfig "$DRAKIT_KUBECONFIG"
$drakit driver deploy --kubeconfig "$DRAKIT_KUBECONFIG" --kubelet-root-dir "$DRAKIT_KUBELET_ROOT_DIR" \
  --cdi-dir "$DRAKIT_CDI_DIR" --host-root "$DRAKIT_EMULATOR_ROOT" --partitionable-alpha --list-attributes --runtime-class-name drakit-mig-manager \
  --binding-conditions
kit gpu-binding docs/examples/reference-driver-binding-conditions.yaml
$drakit driver delete --kubeconfig "$DRAKIT_KUBECONFIG"
$drakit driver deploy --kubeconfig "$DRAKIT_KUBECONFIG" --kubelet-root-dir "$DRAKIT_KUBELET_ROOT_DIR" \
  --cdi-dir "$DRAKIT_CDI_DIR" --host-root "$DRAKIT_EMULATOR_ROOT" --partitionable-alpha --list-attributes --runtime-class-name drakit-mig-manager
# --- end of binding conditions --------------------------------------------------------------------

# --- drakit interpose: the kubelet's contract with the GPU driver (@interpose) ---------------------
# The GPU driver is redeployed to register in a directory of its own; drakit interpose, a process on
# the host, registers in its place with the kubelet, forwards and records every call (records in
# $ARTIFACTS/interpose) and injects the faults the scenarios arm through its control socket. The
# interposer starts first: it waits for the driver's registration socket.
interpose_dir="$DRAKIT_KUBELET_ROOT_DIR/plugins/interposed"
interpose_control="$DRAKIT_RUN_DIR/interpose.sock"
mkdir -p "$interpose_dir" "$ARTIFACTS/interpose"
log "deploying the reference GPU driver behind drakit interpose"
$drakit interpose --driver-registration-socket "$interpose_dir/gpu.drakit.dev-reg.sock" \
  --kubelet-registrar-dir "$DRAKIT_KUBELET_ROOT_DIR/plugins_registry" --control "$interpose_control" \
  --records "$ARTIFACTS/interpose/records.jsonl" >"$ARTIFACTS/logs/interpose.log" 2>&1 &
interpose_pid=$!
$drakit driver deploy --kubeconfig "$DRAKIT_KUBECONFIG" --kubelet-root-dir "$DRAKIT_KUBELET_ROOT_DIR" \
  --cdi-dir "$DRAKIT_CDI_DIR" --host-root "$DRAKIT_EMULATOR_ROOT" --partitionable-alpha --list-attributes --runtime-class-name drakit-mig-manager \
  --registrar-dir "$interpose_dir"
log "running the kubelet-contract features against the GPU driver through drakit interpose"
$drakit conformance --kubeconfig "$DRAKIT_KUBECONFIG" --probe-host-network --artifacts "$ARTIFACTS/interpose" --node-cdi-dir "$DRAKIT_CDI_DIR" \
  --node-emulator-root "$DRAKIT_EMULATOR_ROOT" --node-kubelet-root-dir "$DRAKIT_KUBELET_ROOT_DIR" --node-sysfs "$DRAKIT_EMULATOR_ROOT/sys" \
  --driver-config docs/examples/reference-driver.yaml --tags '@interpose' --interpose "$interpose_control" \
  --no-colors --fail-on-skip --concurrency "$DRAKIT_CONCURRENCY"
# The driver registers with the kubelet itself again for whatever follows.
kill "$interpose_pid" && wait "$interpose_pid" || die "drakit interpose did not stop cleanly (see $ARTIFACTS/logs/interpose.log)"
interpose_pid=
$drakit driver deploy --kubeconfig "$DRAKIT_KUBECONFIG" --kubelet-root-dir "$DRAKIT_KUBELET_ROOT_DIR" \
  --cdi-dir "$DRAKIT_CDI_DIR" --host-root "$DRAKIT_EMULATOR_ROOT" --partitionable-alpha --list-attributes --runtime-class-name drakit-mig-manager
# --- end of drakit interpose ---------------------------------------------------------------------

wait "$explain_pid" || { cat "$explain_out"; die "drakit explain's end-to-end test failed"; }
grep -q -- '--- PASS: TestIntegrationExplain' "$explain_out" ||
  { cat "$explain_out"; die "drakit explain's end-to-end test did not run (skipped)"; }
rm -f "$explain_out"

# --- many nodes: NVLink cliques, IMEX channels and a TPU torus -----------------------------------
# The runs above need one node's hardware; the fabric features need several nodes. The single-node
# cluster goes (its logs kept with the reports) and scripts/conformance-fabric.sh brings up 4 nodes
# rendered from the cluster profile conformance-fabric, runs @nvlink-fabric, @tpu-torus and the
# @multi-node scenario on the TPU driver's sub-slices and tears them down (reports in
# $ARTIFACTS/fabric, $ARTIFACTS/tpu and $ARTIFACTS/multinode).
log "tearing the single-node cluster down for the multi-node fabric run"
$drakit env down --provider local --artifacts "$ARTIFACTS"
env_up=
ARTIFACTS="$ARTIFACTS" DRAKIT_KEEP_CLUSTER="$DRAKIT_KEEP_CLUSTER" scripts/conformance-fabric.sh

# --- one summary of every run, per KEP ----------------------------------------------------------
log "summarizing every run per KEP into $ARTIFACTS/summary.txt"
$drakit conformance summarize --out "$ARTIFACTS/summary.txt" --fail-on-skip \
  "$ARTIFACTS/gpu" "$ARTIFACTS/gpu-device-nodes" "$ARTIFACTS/nic" "$ARTIFACTS/cpu" "$ARTIFACTS/gpu-binding" "$ARTIFACTS/interpose" fabric="$ARTIFACTS/fabric/kit" "$ARTIFACTS/tpu" "$ARTIFACTS/multinode"
