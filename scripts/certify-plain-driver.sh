#!/usr/bin/env bash
# certify-plain-driver.sh: the kit certifies a driver that is not GPU-shaped. drakit's plain test
# driver (reference/plaindriver: devices that reach a container only through CDI environment
# variables and a read-only mount each) must pass the @core scenarios of the core profile, a run
# of every scenario must find nothing failed (the profiles it does not claim reported unclaimed;
# those every driver must pass, and those whose Core scenarios are the cluster's part with the kit's
# own devices, success),
# and each of its deliberately broken variants (--defect) must fail with the finding that names the
# defect. Starts the local cluster, deploys the variants one after the other, tears down.
# Reports: $ARTIFACTS/plain-driver/<variant>/. Exits non-zero when a verdict is not the expected one.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$DRAKIT_REPO"
: "${ARTIFACTS:=$DRAKIT_REPO/artifacts}"
out="$ARTIFACTS/plain-driver"
started=$SECONDS

scripts/install-deps.sh
scripts/build-components.sh
scripts/build.sh
scripts/build-images.sh

drakit=_output/bin/drakit
teardown() {
  local rc=$?
  log "tearing the local cluster down"
  $drakit cluster down || rc=1
  log "certify-plain-driver finished in $(( SECONDS - started ))s (exit $rc)"
  exit "$rc"
}
trap teardown EXIT
$drakit cluster down
$drakit cluster up --images-dir "$DRAKIT_REPO/_output/images"
eval "$($drakit cluster status -o env)"
$drakit images import --run-dir "$DRAKIT_RUN_DIR" "$DRAKIT_REPO/_output/images/test/plain-driver.tar"

deploy() { # deploy VARIANT [FLAGS...]: the plain driver alone, with its own state dir
  local variant=$1; shift
  $drakit plain-driver delete --kubeconfig "$DRAKIT_KUBECONFIG" >/dev/null
  $drakit plain-driver deploy --kubeconfig "$DRAKIT_KUBECONFIG" --kubelet-root-dir "$DRAKIT_KUBELET_ROOT_DIR" \
    --cdi-dir "$DRAKIT_CDI_DIR" --state-dir "$DRAKIT_RUN_DIR/plain-driver-$variant" "$@"
}
kit() { # kit VARIANT [FLAGS...]: the conformance run against the plain driver's declaration
  local variant=$1; shift
  $drakit conformance --kubeconfig "$DRAKIT_KUBECONFIG" --probe-host-network --artifacts "$out/$variant" --node-cdi-dir "$DRAKIT_CDI_DIR" \
    --node-kubelet-root-dir "$DRAKIT_KUBELET_ROOT_DIR" --driver-config docs/examples/plain-driver.yaml \
    --no-colors --format progress --concurrency 3 "$@"
}
expect_failure() { # expect_failure VARIANT FINDING [FLAGS...]: the run fails and names FINDING
  local variant=$1 finding=$2; shift 2
  deploy "$variant" --defect "$variant"
  if kit "$variant" "$@"; then
    die "plain driver with defect $variant: the kit passed it"
  fi
  grep -qF -- "$finding" "$out/$variant/summary.txt" ||
    die "plain driver with defect $variant: the kit failed it, but no finding says \"$finding\" (see $out/$variant/summary.txt)"
  log "defect $variant: failed, as it must, with the finding \"$finding\""
}

profile_result() { # profile_result REPORT PROFILE: the profile's result in a conformance-report.yaml
  awk -v name="$2" '$0 == "  name: " name { getline; sub(/^  result: /, ""); print; exit }' "$1"
}
expect_profile() { # expect_profile VARIANT PROFILE RESULT
  local got
  got=$(profile_result "$out/$1/conformance-report.yaml" "$2")
  [ "$got" = "$3" ] || die "plain driver ($1): profile $2 is \"$got\" in $out/$1/conformance-report.yaml, expected $3"
  log "plain driver ($1): profile $2 is $3"
}

log "the plain driver must pass the @core scenarios of the core profile"
deploy correct
kit correct-core --profile core --tags @core --fail-on-skip
log "every scenario against the plain driver but the @interpose ones (they need drakit interpose in front of it) and those of several nodes' fabrics (one node): none may fail; the profiles it does not claim are unclaimed"
kit correct --tags '~@interpose && ~@multi-node && ~@nvlink-fabric && ~@tpu-torus'
# The core profile's Core scenarios pass (correct-core above); its Extended @interpose scenarios
# did not run, so the profile is partial, not success.
expect_profile correct core partial
expect_profile correct device-taints success
# Prioritized lists of its class pass; those of partitions, and admin access to its devices, it does not claim.
expect_profile correct prioritized-list success
expect_profile correct admin-access success
expect_profile correct workload-claims success
expect_profile correct extended-resources success
expect_profile correct pool-status success
expect_profile correct pod-resources success
# Their Core scenarios the plain driver does not claim do not apply; the API server's, the
# scheduler's and the kubelet's part, checked with the kit's own devices or any driver's, passes.
expect_profile correct consumable-capacity success
expect_profile correct device-metadata success
expect_profile correct binding-conditions success
expect_profile correct node-allocatable success
expect_profile correct numa-node success
expect_profile correct alpha success
expect_profile correct partitionable unclaimed
expect_profile correct device-status unclaimed
expect_profile correct device-health unclaimed

expect_failure extra-device "which is not allocated to the pod's claims" --tags @kep-4381
expect_failure duplicate-device-names "to publish at least 1 devices in ResourceSlices" --tags '@core && ~@kep-5055 && ~@kep-5729' --publish-timeout 10s
# Last: the specs it leaves behind stay in the node's CDI directory.
expect_failure leave-cdi-spec "to be removed from $DRAKIT_CDI_DIR" --tags @kep-4381 --cleanup-timeout 20s
