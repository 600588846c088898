#!/usr/bin/env bash
# Unit and integration tests of every package (no cluster needed; a few need root and gcc), then
# every fuzz target for a short, fixed time.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$DRAKIT_REPO"
log "go vet"
go vet ./...
log "go test"
go test -count=1 ./...

# Every `func FuzzXxx(` in a _test.go file, as "<package dir> <name>", sorted. `go test -fuzz`
# takes one target of one package per run.
fuzz_targets() {
  grep -rEo --include='*_test.go' --exclude-dir=.git --exclude-dir=_output --exclude-dir=testdata \
    '^func Fuzz[A-Za-z0-9_]*\(' . | sed -E 's|^(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\($|\1 \2|' | sort -u
}

# Each target fuzzes for DRAKIT_FUZZTIME from its seed corpus (and its testdata/fuzz), with a
# corpus cache of its own that is thrown away afterwards, so the step takes the same time on every
# run. Minimising an input, a new one or a failing one, is capped at 10 runs (the default, 60 s,
# would spend a short run on one input). A failing input is written to the package's
# testdata/fuzz/<target>/, where plain `go test` replays it from then on. Targets that need root
# or gcc skip, as in plain `go test`, and are listed as skipped.
: "${DRAKIT_FUZZTIME:=6s}"
fuzz_cache=$(mktemp -d)
trap 'rm -rf "$fuzz_cache"' EXIT
mapfile -t targets < <(fuzz_targets)
log "go test -fuzz: ${#targets[@]} targets, ${DRAKIT_FUZZTIME} each"
failed=()
fuzz_start=$SECONDS
# fuzz_once DIR NAME: one fuzzing run of the target; its output in $out.
fuzz_once() {
  out=$(go test -run '^$' -fuzz "^${2}\$" -fuzztime "$DRAKIT_FUZZTIME" -fuzzminimizetime 10x -v "$1" \
    -args -test.fuzzcachedir="$fuzz_cache/${1#./}" 2>&1)
}
# Go's fuzzing engine sometimes ends a run that found nothing with a bare "context deadline
# exceeded" when -fuzztime runs out while a worker still minimises a new interesting input: no
# failing input is written, and the target failed nothing. Such a run is run once more; a real
# failure writes its input to testdata/fuzz ("Failing input written to") and is never retried.
engine_deadline() {
  grep -q 'context deadline exceeded' <<<"$out" && ! grep -q 'Failing input written to' <<<"$out"
}
for target in "${targets[@]}"; do
  read -r dir name <<<"$target"
  start=$SECONDS
  ok=0
  fuzz_once "$dir" "$name" && ok=1
  if [ "$ok" = 0 ] && engine_deadline; then
    log "  ${dir#./} ${name}: the fuzzing engine stopped at its deadline without a failing input; running it again"
    fuzz_once "$dir" "$name" && ok=1
  fi
  if [ "$ok" = 1 ]; then
    if skip=$(grep -B1 -- "--- SKIP: ${name} " <<<"$out"); then
      log "  ${dir#./} ${name}: skipped ($(head -n1 <<<"$skip" | sed -E 's/^ +[^ ]+: //'))"
    else
      execs=$(grep -Eo 'execs: [0-9]+' <<<"$out" | tail -n1 || true)
      log "  ${dir#./} ${name}: ok in $((SECONDS - start))s (${execs:-no fuzzing progress reported})"
    fi
  else
    printf '%s\n' "$out" | tail -n 40 >&2
    log "  ${dir#./} ${name}: FAILED"
    failed+=("${dir#./} ${name}")
  fi
done
log "go test -fuzz: done in $((SECONDS - fuzz_start))s"
if [ "${#failed[@]}" -gt 0 ]; then die "fuzz targets failed: ${failed[*]}"; fi
