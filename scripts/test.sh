#!/usr/bin/env bash
# make test: unit and integration tests, then the kit certifying the reference driver end to end.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$DRAKIT_REPO"
scripts/install-deps.sh
scripts/unit.sh
scripts/conformance.sh
