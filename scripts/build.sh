#!/usr/bin/env bash
# Builds drakit's own binaries and the NVML shim into _output/ (seconds when warm).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$DRAKIT_REPO"
out=_output
mkdir -p "$out/bin" "$out/lib"
# The binaries of an earlier layout, one per reference driver (drakit-driver --kind now).
rm -f "$out/bin/drakit-nic-driver" "$out/bin/drakit-tpu-driver" "$out/bin/drakit-cpu-driver" "$out/bin/drakit-plain-driver"
log "building drakit, drakit-driver (the reference drivers, every --kind), drakit-probe"
# Without the symbol table and DWARF (-s -w): a third smaller, and the images that carry them are
# imported into the local cluster's containerd on every `env up`. Stack traces keep their names.
# drakit version prints the tree's git describe (the version stamp below; "unknown" outside a git checkout).
version=$(git describe --always --dirty 2>/dev/null || echo unknown)
go build -trimpath -ldflags "-s -w -X main.gitVersion=$version" -o "$out/bin/" ./cmd/drakit ./cmd/drakit-driver ./cmd/drakit-probe
log "building the NVML shim"
"$out/bin/drakit" emulator build-shim -o "$out/lib/libnvidia-ml.so"
