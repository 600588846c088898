#!/usr/bin/env bash
# Builds the local cluster's components once per version into $DRAKIT_CACHE/components:
# Kubernetes (from cluster/components/kubernetes, a module apart from drakit's own), etcd,
# containerd + ctr + shim, crictl (runc comes from Debian: scripts/install-deps.sh).
# A component whose binaries are already cached is never rebuilt.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

export GOFLAGS=-trimpath
components="$DRAKIT_CACHE/components"
mkdir -p "$components"

# done_marker DIR: a build counts only once this file exists, so an interrupted
# build is redone instead of leaving half a component behind.
cached() { [ -f "$1/.complete" ]; }

build_kubernetes() {
  local dir="$components/kubernetes-$KUBERNETES_VERSION"
  if cached "$dir"; then log "kubernetes $KUBERNETES_VERSION: cached in $dir"; return; fi
  log "kubernetes $KUBERNETES_VERSION: building (cold: ~25 min on 2 cores; later builds reuse the Go build cache)"
  local minor=${KUBERNETES_VERSION#v1.}; minor=${minor%%.*}
  local ldflags="-X k8s.io/component-base/version.gitVersion=$KUBERNETES_VERSION \
    -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor \
    -X k8s.io/component-base/version.gitTreeState=clean \
    -X k8s.io/component-base/version.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  mkdir -p "$dir/bin"
  local c
  for c in kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl; do
    (cd "$DRAKIT_REPO/cluster/components/kubernetes" &&
      with_heartbeat "building $c" go build -ldflags "$ldflags" -o "$dir/bin/$c" "k8s.io/kubernetes/cmd/$c")
  done
  touch "$dir/.complete"
}

build_etcd() {
  local dir="$components/etcd-$ETCD_VERSION"
  if cached "$dir"; then log "etcd $ETCD_VERSION: cached in $dir"; return; fi
  log "etcd $ETCD_VERSION: building"
  mkdir -p "$dir/bin"
  (cd "$DRAKIT_REPO/cluster/components/etcd" &&
    with_heartbeat "building etcd" go build -o "$dir/bin/etcd" go.etcd.io/etcd/server/v3)
  touch "$dir/.complete"
}

build_containerd() {
  local dir="$components/containerd-$CONTAINERD_VERSION"
  if cached "$dir"; then log "containerd $CONTAINERD_VERSION: cached in $dir"; return; fi
  log "containerd $CONTAINERD_VERSION: building containerd, ctr, containerd-shim-runc-v2"
  mkdir -p "$dir/bin"
  local c
  for c in containerd ctr containerd-shim-runc-v2; do
    GOBIN="$dir/bin" with_heartbeat "building $c" \
      go install -tags "no_btrfs no_devmapper no_zfs" "github.com/containerd/containerd/v2/cmd/$c@$CONTAINERD_VERSION"
  done
  touch "$dir/.complete"
}

build_crictl() {
  local dir="$components/crictl-$CRICTL_VERSION"
  if cached "$dir"; then log "crictl $CRICTL_VERSION: cached in $dir"; return; fi
  log "crictl $CRICTL_VERSION: building"
  mkdir -p "$dir/bin"
  GOBIN="$dir/bin" CGO_ENABLED=0 with_heartbeat "building crictl" \
    go install "sigs.k8s.io/cri-tools/cmd/crictl@$CRICTL_VERSION"
  touch "$dir/.complete"
}

start=$SECONDS
build_kubernetes
build_etcd
build_containerd
build_crictl
log "components ready in $components ($(( SECONDS - start ))s)"
