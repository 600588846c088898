#!/usr/bin/env bash
# The @nvlink-fabric features on a 4-node local cluster rendered from the
# cluster profile conformance-fabric (emulator/clusterprofile): each node a
# GB200 NVL72-like compute tray (4 GPUs, NVLink 5, 8 IMEX channels), all in
# one NVLink domain, nodes 1-2 in clique 1 and nodes 3-4 in clique 2; the
# reference GPU driver pinned to each node (--node) and its IMEX channel
# controller (--imex-channels 8). Every selected scenario must pass
# (--fail-on-skip). Hold /tmp/drakit-cluster.lock around it where several
# runs share the machine. ARTIFACTS (default artifacts/fabric) gets the kit's
# reports, the IMEX pools and the logs.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$DRAKIT_REPO"
: "${ARTIFACTS:=$DRAKIT_REPO/artifacts/fabric}"
: "${DRAKIT_KEEP_CLUSTER:=}"
started=$SECONDS

scripts/install-deps.sh
scripts/build-components.sh
scripts/build.sh
scripts/build-images.sh

drakit=_output/bin/drakit
kubectl=$DRAKIT_CACHE/components/kubernetes-$KUBERNETES_VERSION/bin/kubectl
teardown() {
  local rc=$?
  if [ -n "${DRAKIT_RUN_DIR:-}" ] && [ -d "$DRAKIT_RUN_DIR/logs" ]; then
    mkdir -p "$ARTIFACTS/logs" && cp -r "$DRAKIT_RUN_DIR/logs/." "$ARTIFACTS/logs/" || true
  fi
  if [ -n "${DRAKIT_KUBECONFIG:-}" ]; then
    "$kubectl" --kubeconfig "$DRAKIT_KUBECONFIG" -n drakit-system logs deploy/drakit-imex-controller >"$ARTIFACTS/logs/imex-controller.log" 2>&1 || true
  fi
  [ -n "$DRAKIT_KEEP_CLUSTER" ] || $drakit cluster down || rc=1
  log "the fabric features finished in $(( SECONDS - started ))s (exit $rc)"
  exit "$rc"
}
trap teardown EXIT

rm -rf "$ARTIFACTS" && mkdir -p "$ARTIFACTS/logs"
$drakit cluster down
log "starting a 4-node local cluster"
$drakit cluster up --nodes 4 --images-dir "$DRAKIT_REPO/_output/images"
eval "$($drakit cluster status -o env)" # DRAKIT_KUBECONFIG, DRAKIT_NODE_<i>_*, node 1's DRAKIT_* paths

for i in 1 2 3 4; do
  name_v=DRAKIT_NODE_${i}_NAME root_v=DRAKIT_NODE_${i}_EMULATOR_ROOT
  krd_v=DRAKIT_NODE_${i}_KUBELET_ROOT_DIR cdi_v=DRAKIT_NODE_${i}_CDI_DIR
  log "rendering node ${!name_v} of cluster profile conformance-fabric into ${!root_v}"
  $drakit emulator render --cluster-profile conformance-fabric --node "${!name_v}" --root "${!root_v}" \
    --shim "$DRAKIT_REPO/_output/lib/libnvidia-ml.so"
  $drakit driver deploy --kubeconfig "$DRAKIT_KUBECONFIG" --kubelet-root-dir "${!krd_v}" --cdi-dir "${!cdi_v}" \
    --driver-root "${!root_v}" --node "${!name_v}" --imex-channels 8
done

# A claim's allocation keeps the node selector its device's pool had: wait
# until each clique's channel pool names both its nodes.
log "waiting for the IMEX controller's pools to name both nodes of each clique"
for _ in $(seq 1 60); do
  pools=$("$kubectl" --kubeconfig "$DRAKIT_KUBECONFIG" get resourceslices -o jsonpath='{range .items[?(@.spec.nodeSelector)]}{.spec.pool.name}={.spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values}{"\n"}{end}')
  [ "$(grep -c '","' <<<"$pools" || true)" -ge 2 ] && break
  sleep 2
done
printf '%s\n' "$pools" | tee "$ARTIFACTS/imex-pools.txt"
[ "$(grep -c '","' <<<"$pools" || true)" -ge 2 ] || die "the IMEX controller did not publish a two-node pool per clique"

log "running the @nvlink-fabric features"
$drakit conformance --kubeconfig "$DRAKIT_KUBECONFIG" --artifacts "$ARTIFACTS/kit" --node-cdi-dir "$DRAKIT_CDI_DIR" \
  --node-emulator-root "$DRAKIT_EMULATOR_ROOT" --node-kubelet-root-dir "$DRAKIT_KUBELET_ROOT_DIR" --node-sysfs "$DRAKIT_EMULATOR_ROOT/sys" \
  --driver-config docs/examples/reference-driver.yaml --tags '@nvlink-fabric' --no-colors --fail-on-skip --concurrency 1
