#!/usr/bin/env bash
# Assembles the local container images (no registry, no Docker) into _output/images: the CRI
# sandbox (pause), the reference drivers (GPU, NIC and TPU, one image) and the in-pod probe, which
# `env up --images-dir` imports; and into _output/images/test the plain test driver, which only make test's
# certification of it needs (it imports it itself: every image costs each `env up` time).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$DRAKIT_REPO"
drakit=_output/bin/drakit
out=_output/images
mkdir -p "$out/test"
log "assembling images into $out"
rm -f "$out/plain-driver.tar" # an earlier layout's
$drakit images build-pause -o "$out/pause.tar"
# The reference drivers' image: the GPU driver (its entrypoint), the NIC, TPU and CPU
# drivers (their DaemonSets' and Deployment's commands), one image so that a cluster imports one.
$drakit images build --name drakit.dev/driver:dev --shared-libs \
  --file /usr/bin/drakit-driver=_output/bin/drakit-driver \
  --file /usr/bin/drakit-nic-driver=_output/bin/drakit-nic-driver \
  --file /usr/bin/drakit-tpu-driver=_output/bin/drakit-tpu-driver \
  --file /usr/bin/drakit-cpu-driver=_output/bin/drakit-cpu-driver \
  --entrypoint /usr/bin/drakit-driver -o "$out/driver.tar"
$drakit images build --name drakit.dev/plain-driver:dev --shared-libs \
  --file /usr/bin/drakit-plain-driver=_output/bin/drakit-plain-driver \
  --entrypoint /usr/bin/drakit-plain-driver -o "$out/test/plain-driver.tar"
$drakit images build --name drakit.dev/probe:dev --shared-libs \
  --file /usr/bin/drakit-probe=_output/bin/drakit-probe \
  --entrypoint /usr/bin/drakit-probe -o "$out/probe.tar"
