#!/usr/bin/env bash
# Unit and integration tests of every package (no cluster needed; a few need root and gcc).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$DRAKIT_REPO"
log "go vet"
go vet ./...
log "go test"
go test -count=1 ./...
