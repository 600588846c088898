#!/usr/bin/env bash
# Assembles the local container images (no registry, no Docker) into _output/images: the CRI
# sandbox (pause), the reference drivers (drakit-driver, every --kind: GPU, NIC, CPU, TPU and the
# plain test driver, one binary in one image) and the in-pod probe, which `env up --images-dir`
# imports.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$DRAKIT_REPO"
drakit=_output/bin/drakit
out=_output/images
mkdir -p "$out"
log "assembling images into $out"
rm -rf "$out/plain-driver.tar" "$out/test" # earlier layouts' (the plain driver had an image of its own)
$drakit images build-pause -o "$out/pause.tar"
# The reference drivers' image: drakit-driver, the family's one binary, its entrypoint; the chart's
# DaemonSets run it with --kind <kind>, its controllers with controller --kind gpu|tpu.
$drakit images build --name drakit.dev/driver:dev --shared-libs \
  --file /usr/bin/drakit-driver=_output/bin/drakit-driver \
  --entrypoint /usr/bin/drakit-driver -o "$out/driver.tar"
$drakit images build --name drakit.dev/probe:dev --shared-libs \
  --file /usr/bin/drakit-probe=_output/bin/drakit-probe \
  --entrypoint /usr/bin/drakit-probe -o "$out/probe.tar"
