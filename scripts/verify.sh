#!/usr/bin/env bash
# Static checks; reports every failure before exiting non-zero.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
cd "$DRAKIT_REPO"
failed=0
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then log "gofmt would change: $unformatted"; failed=1; fi
go vet ./... || failed=1
if command -v shellcheck >/dev/null; then shellcheck scripts/*.sh .ci/run || failed=1; fi
exit "$failed"
