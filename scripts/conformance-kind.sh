#!/usr/bin/env bash
# make conformance's feature runs on kind: the same features, emulator and reference drivers in kind
# node containers (package environment's kind provider, sigs.k8s.io/kind's Go library), where Docker
# runs. Two clusters, one after the other, each set up and torn down by drakit env up/down:
#   1. one node rendered from DRAKIT_PROFILE (default dgx-a100-mig) with the GPU, NIC and CPU drivers:
#      the GPU, NIC, CPU, binding-condition and interposer runs of scripts/conformance.sh, with its
#      filters (each declaration's scenarios.tags);
#   2. four nodes (the control plane and three workers) rendered from the cluster profile
#      kind/conformance-fabric.yaml, the GPU driver with its IMEX controller and the TPU driver on every
#      node: @nvlink-fabric, @tpu-torus and @multi-node && @multi-host, as scripts/conformance-fabric.sh.
# Each run is drakit conformance --provider kind --reuse-environment against the cluster as set up;
# every selected scenario must pass (--fail-on-skip). The binding-condition run (KEP-5007) and the
# @interpose run (drakit interpose inside the node) follow on the one-node cluster, the GPU driver
# redeployed for each.
#
# Needs root, Docker (DOCKER_HOST is honoured; kind/README.md runs dockerd in a network namespace)
# and the offline node image (scripts/kind-node-image.sh, or KIND_NODE_IMAGE naming another).
# ARTIFACTS (default artifacts/kind) gets a directory per run, logs/ per cluster and summary.txt;
# DRAKIT_KIND_STATE (default $TMPDIR/drakit-kind-state) holds the kubeconfig and the host
# directories mounted into the nodes. DRAKIT_KIND_CLUSTERS (default "single-node fabric") picks the
# clusters, DRAKIT_KIND_RUNS (default: all) the kit runs on them by name (gpu nic cpu gpu-binding
# interpose fabric tpu multinode; the set-up steps still run); the summary covers the runs made.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$DRAKIT_REPO"
: "${ARTIFACTS:=$DRAKIT_REPO/artifacts/kind}"
: "${KIND_NODE_IMAGE:=drakit.dev/kind-node:v1.37.2}"
: "${DRAKIT_KIND_STATE:=${TMPDIR:-/tmp}/drakit-kind-state}"
: "${DRAKIT_PROFILE:=dgx-a100-mig}"
: "${DRAKIT_CONCURRENCY:=3}"
: "${DRAKIT_KIND_CLUSTERS:=single-node fabric}" # which of the two clusters to run, in this order
: "${DRAKIT_KIND_RUNS:=}" # which kit runs to make on them (empty: all)
started=$SECONDS

scripts/build.sh
scripts/build-images.sh

drakit=_output/bin/drakit
kind=(--provider kind --kind-node-image "$KIND_NODE_IMAGE" --kind-state-dir "$DRAKIT_KIND_STATE")
cluster= # the cluster that is up: its logs go to $ARTIFACTS/$cluster
down() {
  log "tearing the $cluster cluster down (logs: $ARTIFACTS/$cluster/logs)"
  $drakit env down "${kind[@]}" --artifacts "$ARTIFACTS/$cluster"
  cluster=
}
teardown() {
  local rc=$?
  if [ -n "$cluster" ]; then down || rc=1; fi
  log "the kind runs finished in $(( SECONDS - started ))s (exit $rc)"
  exit "$rc"
}
trap teardown EXIT

rm -rf "$ARTIFACTS"
mkdir -p "$ARTIFACTS"
runs=()
kit() { # kit NAME DECLARATION [FLAG...]: certify one driver on the running cluster (its declaration's scenarios, or --tags)
  if [ -n "$DRAKIT_KIND_RUNS" ] && [[ " $DRAKIT_KIND_RUNS " != *" $1 "* ]]; then
    log "not running the $1 features (DRAKIT_KIND_RUNS=$DRAKIT_KIND_RUNS)"
    return 0
  fi
  log "running the conformance features against the $1 driver on kind ($2)"
  runs+=("$ARTIFACTS/$1")
  $drakit conformance "${kind[@]}" --reuse-environment --artifacts "$ARTIFACTS/$1" --driver-config "$2" \
    --no-colors --fail-on-skip --concurrency "$DRAKIT_CONCURRENCY" "${@:3}"
}
wanted() { [[ " $DRAKIT_KIND_CLUSTERS " == *" $1 "* ]]; }

if wanted single-node; then
cluster=single-node
log "setting up a one-node kind cluster: $DRAKIT_PROFILE rendered, the GPU, NIC and CPU drivers deployed"
$drakit env up "${kind[@]}" --recreate --kind-workers 0 --images-dir "$DRAKIT_REPO/_output/images" \
  --emulator-profile "$DRAKIT_PROFILE" --shim _output/lib/libnvidia-ml.so --deploy gpu,nic,cpu
kit gpu docs/examples/reference-driver.yaml
kit nic docs/examples/reference-nic-driver.yaml
kit cpu docs/examples/reference-cpu-driver.yaml
# Binding conditions (KEP-5007), as scripts/conformance.sh runs them: the GPU driver redeployed with
# --binding-conditions (deleted first, so that the kit sees the new slices), with the paths and
# privileges the environment gave it on kind: the kind node's default paths, privileged, the API
# server at the control plane's address on the kind network.
apiserver=$(docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' drakit-control-plane)
[ -n "$apiserver" ] || die "no address of drakit-control-plane on the kind network"
log "redeploying the reference GPU driver with binding conditions (API server $apiserver:6443)"
$drakit driver delete --kubeconfig "$DRAKIT_KIND_STATE/kubeconfig"
$drakit driver deploy --kubeconfig "$DRAKIT_KIND_STATE/kubeconfig" --privileged --apiserver-host "$apiserver" \
  --apiserver-port 6443 --partitionable-alpha --list-attributes --binding-conditions
kit gpu-binding docs/examples/reference-driver-binding-conditions.yaml

# drakit interpose (@interpose), as scripts/conformance.sh runs it, but inside the node: the kubelet
# dials the sockets the interposer registers by the node's paths, so it runs in the node container
# (the drakit the render installed there), in the background of a docker exec. Its control socket
# and records are in the node's kubelet root dir, which this host sees below the state dir; the
# GPU driver registers in a directory of its own, and back with the kubelet afterwards.
node=drakit-control-plane
node_dir=/var/lib/kubelet/plugins/interposed
host_dir=$DRAKIT_KIND_STATE/$node/kubelet/plugins/interposed
log "starting drakit interpose in node $node, deploying the reference GPU driver behind it"
docker exec "$node" mkdir -p "$node_dir"
docker exec -d "$node" sh -c "echo \$\$ >$node_dir/interpose.pid; exec /opt/drakit/bin/drakit interpose \
  --driver-registration-socket $node_dir/gpu.drakit.dev-reg.sock --kubelet-registrar-dir /var/lib/kubelet/plugins_registry \
  --control $node_dir/control.sock --records $node_dir/records.jsonl >$node_dir/interpose.log 2>&1"
$drakit driver delete --kubeconfig "$DRAKIT_KIND_STATE/kubeconfig"
$drakit driver deploy --kubeconfig "$DRAKIT_KIND_STATE/kubeconfig" --privileged --apiserver-host "$apiserver" \
  --apiserver-port 6443 --partitionable-alpha --list-attributes --registrar-dir "$node_dir"
kit interpose docs/examples/reference-driver.yaml --tags '@interpose' --interpose "$host_dir/control.sock"
docker exec "$node" sh -c "kill \$(cat $node_dir/interpose.pid)"
[ ! -d "$ARTIFACTS/interpose" ] || cp "$host_dir/records.jsonl" "$host_dir/interpose.log" "$ARTIFACTS/interpose/" || true
down
fi

if wanted fabric; then
cluster=fabric
log "setting up a four-node kind cluster: kind/conformance-fabric.yaml rendered, the GPU and TPU drivers on every node"
$drakit env up "${kind[@]}" --recreate --kind-workers 3 --images-dir "$DRAKIT_REPO/_output/images" \
  --cluster-profile kind/conformance-fabric.yaml --shim _output/lib/libnvidia-ml.so --deploy gpu,tpu --imex-channels 8
wait_for_imex_pools "$DRAKIT_KIND_STATE/kubeconfig" "$ARTIFACTS/imex-pools.txt"
# The scenarios use whole cliques and whole hosts: one at a time.
kit fabric docs/examples/reference-driver.yaml --tags '@nvlink-fabric' --concurrency 1
kit tpu docs/examples/reference-tpu-driver.yaml --tags '@tpu-torus' --concurrency 1
kit multinode docs/examples/reference-tpu-driver.yaml --tags '@multi-node && @multi-host' --concurrency 1
down
fi

log "summarizing every kind run per KEP into $ARTIFACTS/summary.txt"
(( ${#runs[@]} > 0 )) || die "DRAKIT_KIND_CLUSTERS=$DRAKIT_KIND_CLUSTERS: no cluster ran (want single-node and/or fabric)"
$drakit conformance summarize --out "$ARTIFACTS/summary.txt" --fail-on-skip "${runs[@]}"
