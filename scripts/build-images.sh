#!/usr/bin/env bash
# Assembles the local container images (no registry, no Docker) into _output/images:
# the CRI sandbox (pause), the reference driver, the plain driver and the in-pod probe.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$DRAKIT_REPO"
drakit=_output/bin/drakit
out=_output/images
mkdir -p "$out"
log "assembling images into $out"
$drakit images build-pause -o "$out/pause.tar"
$drakit images build --name drakit.dev/driver:dev --shared-libs \
  --file /usr/bin/drakit-driver=_output/bin/drakit-driver \
  --entrypoint /usr/bin/drakit-driver -o "$out/driver.tar"
$drakit images build --name drakit.dev/plain-driver:dev --shared-libs \
  --file /usr/bin/drakit-plain-driver=_output/bin/drakit-plain-driver \
  --entrypoint /usr/bin/drakit-plain-driver -o "$out/plain-driver.tar"
$drakit images build --name drakit.dev/probe:dev --shared-libs \
  --file /usr/bin/drakit-probe=_output/bin/drakit-probe \
  --entrypoint /usr/bin/drakit-probe -o "$out/probe.tar"
