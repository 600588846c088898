#!/usr/bin/env bash
# Builds kind's node image offline, from what drakit already builds, and
# docker-imports it (default drakit.dev/kind-node:$KUBERNETES_VERSION):
#   1. the components: scripts/build-components.sh (kubelet, kubectl, the
#      control plane, etcd, containerd, crictl), plus kubeadm from the same
#      Kubernetes module (cluster/components/kubernetes);
#   2. a Debian root filesystem: debootstrap --variant=minbase with the
#      packages of kind's base image (environment/kind/nodeimage.Packages),
#      from the apt mirror of /etc/apt/sources.list.d;
#   3. the pause image: drakit images build-pause (gcc -static);
#   4. drakit images build-kind-node: kind's base files from the kind module
#      (entrypoint, containerd and kubelet units), the binaries, the
#      control-plane images as archives in /kind/images (imported by a unit
#      at boot), the static CNI configuration, then tar | docker import.
# Needs root, debootstrap, gcc and a running Docker daemon (DOCKER_HOST).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

: "${KIND_NODE_IMAGE:=drakit.dev/kind-node:$KUBERNETES_VERSION}"
: "${DEBIAN_SUITE:=bookworm}"
: "${DEBIAN_MIRROR:=http://deb.debian.org/debian}"
work="$DRAKIT_CACHE/kind"
components="$DRAKIT_CACHE/components"
mkdir -p "$work"

"$DRAKIT_REPO/scripts/build-components.sh"
"$DRAKIT_REPO/scripts/build.sh"
drakit="$DRAKIT_REPO/_output/bin/drakit"
go mod download sigs.k8s.io/kind

kubeadm_dir="$components/kubeadm-$KUBERNETES_VERSION"
if [ ! -f "$kubeadm_dir/.complete" ]; then
  log "kubeadm $KUBERNETES_VERSION: building"
  minor=${KUBERNETES_VERSION#v1.}; minor=${minor%%.*}
  mkdir -p "$kubeadm_dir/bin"
  (cd "$DRAKIT_REPO/cluster/components/kubernetes" &&
    GOFLAGS=-trimpath with_heartbeat "building kubeadm" go build \
      -ldflags "-X k8s.io/component-base/version.gitVersion=$KUBERNETES_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean" \
      -o "$kubeadm_dir/bin/kubeadm" k8s.io/kubernetes/cmd/kubeadm)
  touch "$kubeadm_dir/.complete"
fi

# debootstrap once into a cached base; each build assembles on a fresh copy.
base="$work/rootfs-$DEBIAN_SUITE"
if [ ! -f "$base.complete" ]; then
  packages=$("$drakit" images kind-node-packages)
  log "debootstrap $DEBIAN_SUITE with $packages (about 5-10 min)"
  rm -rf "$base"
  with_heartbeat "debootstrap" debootstrap --variant=minbase --include="$packages" "$DEBIAN_SUITE" "$base" "$DEBIAN_MIRROR"
  touch "$base.complete"
fi
rootfs="$work/rootfs-assemble"
rm -rf "$rootfs"
cp -a "$base" "$rootfs"

"$drakit" images build-pause -o "$work/pause.tar"

"$drakit" images build-kind-node --rootfs "$rootfs" --image "$KIND_NODE_IMAGE" \
  --kubernetes-bin "$components/kubernetes-$KUBERNETES_VERSION/bin" \
  --kubeadm-bin "$kubeadm_dir/bin" \
  --containerd-bin "$components/containerd-$CONTAINERD_VERSION/bin" \
  --crictl-bin "$components/crictl-$CRICTL_VERSION/bin" \
  --etcd-bin "$components/etcd-$ETCD_VERSION/bin" \
  --kind-base-files "$(go env GOMODCACHE)/sigs.k8s.io/kind@v0.33.0/images/base/files" \
  --pause-archive "$work/pause.tar" \
  --kubernetes-version "$KUBERNETES_VERSION"
rm -rf "$rootfs"
log "node image $KIND_NODE_IMAGE imported"
