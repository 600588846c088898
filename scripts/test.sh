#!/usr/bin/env bash
# make test: unit and integration tests, then the kit certifying the reference driver end to end,
# then the verdict matrix: the plain test driver's correct styles Conformant and its defects Not conformant.
# The cluster components are built first, so the integration tests that start a real cluster
# (cluster.TestUpDownLeavesNothingBehind) run instead of skipping on a fresh machine.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$DRAKIT_REPO"
scripts/install-deps.sh
scripts/build-components.sh
scripts/unit.sh
scripts/conformance.sh
scripts/verdict-matrix.sh
