#!/usr/bin/env bash
# verdict-matrix.sh: the proof that the kit's verdict can be trusted. Every variant of drakit's
# plain test driver (reference/plaindriver, `drakit driver matrix list`) runs side by side in
# one local cluster, each under its own driver name <variant>.plain.drakit.dev, namespace
# drakit-plain-<variant>, state directory and HTTP port; the kit certifies them concurrently, each
# with its style's declaration renamed for it (docs/examples/matrix) and the tag filter that
# targets it. A correct style must exit 0 (Conformant); a defect must exit 1 (Not conformant) with
# its finding in summary.txt. Writes $ARTIFACTS/matrix/<variant>/ (the run's reports, console.log,
# exit-code) and $ARTIFACTS/matrix/table.md (`drakit driver matrix table`: rows, sensitivity
# and specificity); with MATRIX_README=<file> it also puts the table between that file's
# <!-- matrix:begin --> and <!-- matrix:end --> markers. Exits non-zero when a verdict is not the
# expected one or a variant could not be deployed.
#   MATRIX_PARALLEL  kit runs at once (default 9). The styles start first (each runs the whole of
#                    Core), then the defects that wait out a timeout (a pod that never starts, an
#                    unprepare that never succeeds: they hold a slot but little CPU), then the rest.
#   MATRIX_NODES     nodes of the local cluster (default 2). Every variant runs on node 1, pinned to it
#                    (--node) with node 1's paths; a variant that needs n nodes (the multi-node style)
#                    is deployed once per node 1..n, each with that node's paths and HTTP port, as
#                    conformance-fabric.sh deploys its drivers. With fewer nodes than a variant
#                    needs it is listed, not run, and not counted.
#   MATRIX_ONLY      variants to run, separated by spaces (default: all)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$DRAKIT_REPO"
: "${ARTIFACTS:=$DRAKIT_REPO/artifacts}"
: "${MATRIX_PARALLEL:=9}"
: "${MATRIX_NODES:=2}"
: "${MATRIX_ONLY:=}"
: "${MATRIX_README:=}"
out="$ARTIFACTS/matrix"
started=$SECONDS
[[ "$MATRIX_NODES" =~ ^[1-9][0-9]*$ ]] || die "MATRIX_NODES=$MATRIX_NODES: want a number of nodes, 1 or more"

scripts/install-deps.sh
scripts/build-components.sh
scripts/build.sh
scripts/build-images.sh

drakit=_output/bin/drakit
teardown() {
  local rc=$?
  log "tearing the local cluster down"
  # The defects that break unprepare leave pods the kubelet never finishes deleting: force them
  # after 15 s instead of down's minute.
  $drakit env down --pod-delete-timeout 15s || rc=1
  log "verdict-matrix finished in $(( SECONDS - started ))s (exit $rc)"
  exit "$rc"
}
trap teardown EXIT
$drakit env down
$drakit env up --nodes "$MATRIX_NODES" --images-dir "$DRAKIT_REPO/_output/images"
eval "$($drakit env status -o env)"
rm -rf "$out"
mkdir -p "$out"

# The matrix, one variant a line, fields separated by the unit separator (empty fields stay).
declare -a names=()
declare -A style defect nodes access tags finding flags
while IFS=$'\x1f' read -r n _kind s d k a t f x; do
  if [ -n "$MATRIX_ONLY" ] && [[ " $MATRIX_ONLY " != *" $n "* ]]; then
    continue
  fi
  names+=("$n")
  style[$n]=$s defect[$n]=$d nodes[$n]=$k access[$n]=$a tags[$n]=$t finding[$n]=$f flags[$n]=$x
done < <($drakit driver matrix list)
[ "${#names[@]}" -gt 0 ] || die "no variant selected (MATRIX_ONLY=$MATRIX_ONLY)"

throttle() { # throttle: wait until fewer than MATRIX_PARALLEL background jobs run
  while [ "$(jobs -rp | wc -l)" -ge "$MATRIX_PARALLEL" ]; do
    wait -n || true
  done
}

deploy() { # deploy VARIANT PORT: the variant beside the others on each node it needs (node i's HTTP port
  # 1000*(i-1) above PORT); a failure is recorded, not fatal here
  local n=$1 port=$2 args=() i name root cdi state
  [ -z "${defect[$n]}" ] || args+=(--defect "${defect[$n]}")
  for (( i = 1; i <= nodes[$n]; i++ )); do
    name=DRAKIT_NODE_${i}_NAME root=DRAKIT_NODE_${i}_KUBELET_ROOT_DIR cdi=DRAKIT_NODE_${i}_CDI_DIR
    # The nodes share the host: each instance keeps its state apart.
    state=$DRAKIT_RUN_DIR/plain-$n
    [ "$i" = 1 ] || state+=-$i
    if ! $drakit driver deploy --kind plain --kubeconfig "$DRAKIT_KUBECONFIG" --node "${!name}" --kubelet-root-dir "${!root}" \
        --cdi-dir "${!cdi}" --state-dir "$state" --variant "$n" --style "${style[$n]}" \
        --http-port $(( port + 1000 * (i - 1) )) "${args[@]}" >>"$out/$n/deploy.log" 2>&1; then
      echo "deploy on node ${!name} failed (see deploy.log)" >"$out/$n/not-run"
      log "variant $n: DEPLOY FAILED on node ${!name} (see $out/$n/deploy.log)"
      return
    fi
  done
  log "variant $n: deployed (${style[$n]}${defect[$n]:+, defect ${defect[$n]}}; $(( nodes[$n] )) node(s))"
}

kit() { # kit VARIANT: certify the variant; its exit code goes to exit-code
  local n=$1 rc=0 args=() extra=()
  $drakit driver matrix declaration "$n" >"$out/$n/declaration.yaml"
  args=(--kubeconfig "$DRAKIT_KUBECONFIG" --artifacts "$out/$n" --driver-config "$out/$n/declaration.yaml"
    --tags "${tags[$n]}" --no-colors --format progress --concurrency 2 --probe-host-network --node-name "$DRAKIT_NODE_1_NAME")
  if [ "${access[$n]}" = yes ]; then
    args+=(--node-cdi-dir "$DRAKIT_CDI_DIR" --node-kubelet-root-dir "$DRAKIT_KUBELET_ROOT_DIR")
  fi
  read -ra extra <<<"${flags[$n]}"
  log "variant $n: certifying (tags ${tags[$n]}${extra[*]:+, ${extra[*]}}; node directories: ${access[$n]})"
  $drakit conformance "${args[@]}" "${extra[@]}" >"$out/$n/console.log" 2>&1 || rc=$?
  echo "$rc" >"$out/$n/exit-code"
  local verdict
  case $rc in
    0) verdict=Conformant ;; 1) verdict="Not conformant" ;; 2) verdict="usage error" ;; 3) verdict="Could not certify" ;; *) verdict="exit $rc" ;;
  esac
  if [ -n "${defect[$n]}" ]; then
    if [ "$rc" = 1 ] && grep -qF -- "${finding[$n]}" "$out/$n/summary.txt" 2>/dev/null; then
      log "variant $n: $verdict, with the finding \"${finding[$n]}\", as expected"
    else
      log "variant $n: $verdict; UNEXPECTED (want Not conformant with \"${finding[$n]}\"; see $out/$n/summary.txt)"
    fi
  elif [ "$rc" = 0 ]; then
    log "variant $n: Conformant, as expected"
  else
    log "variant $n: $verdict; UNEXPECTED (want Conformant; see $out/$n/summary.txt)"
  fi
}

log "deploying ${#names[@]} variants side by side"
port=9500
runnable=()
for n in "${names[@]}"; do
  mkdir -p "$out/$n"
  port=$(( port + 1 ))
  if [ "${nodes[$n]}" -gt "$MATRIX_NODES" ]; then
    echo "needs ${nodes[$n]} nodes, the cluster has $MATRIX_NODES" >"$out/$n/not-run"
    log "variant $n: not run (needs ${nodes[$n]} nodes, the cluster has $MATRIX_NODES)"
    continue
  fi
  throttle
  deploy "$n" "$port" &
  runnable+=("$n")
done
wait
deploy_failed=0
for n in "${runnable[@]}"; do
  if [ -e "$out/$n/not-run" ]; then
    deploy_failed=1
  fi
done

# The order: styles, then the defects that wait out a timeout (their flags set one), then the rest.
ordered=()
for n in "${runnable[@]}"; do [ -n "${defect[$n]}" ] || ordered+=("$n"); done
for n in "${runnable[@]}"; do [ -z "${defect[$n]}" ] || [[ "${flags[$n]}" != *timeout* ]] || ordered+=("$n"); done
for n in "${runnable[@]}"; do [ -z "${defect[$n]}" ] || [[ "${flags[$n]}" == *timeout* ]] || ordered+=("$n"); done
log "certifying the variants, $MATRIX_PARALLEL at a time"
for n in "${ordered[@]}"; do
  [ ! -e "$out/$n/not-run" ] || continue
  throttle
  kit "$n" &
done
wait

readme=()
[ -z "$MATRIX_README" ] || readme=(--readme "$MATRIX_README")
table_rc=0
$drakit driver matrix table --results "$out" "${readme[@]}" || table_rc=$?
log "the matrix: $out/table.md"
[ "$deploy_failed" = 0 ] || die "a variant could not be deployed (see $out/<variant>/deploy.log)"
[ "$table_rc" = 0 ] || die "the verdict matrix has unexpected verdicts (see $out/table.md)"
