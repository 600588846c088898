// Package nodeimage assembles kind's node image offline from what drakit
// already builds, instead of pulling kindest/node: a Debian root
// filesystem from debootstrap with the packages of kind's base image
// (Packages), kind's base files from the kind module (entrypoint, the
// containerd and kubelet units, kind's scripts), drakit's cached components
// (kubeadm, kubelet, kubectl, containerd, ctr, the runc shim, crictl) and
// the control-plane images (kube-apiserver, kube-controller-manager,
// kube-scheduler, etcd, pause) as single-layer image archives in
// /kind/images, which a unit imports into containerd when the node boots.
// Without kindnetd and kube-proxy images, a static ptp CNI configuration
// serves the pods (environment/kind's ConfigOptions.Offline disables
// kind's default CNI and kube-proxy to match).
//
// NewPlan lists the assembly, Apply carries it out on a root filesystem,
// and ImportArgs is the docker import that turns the tarred root into the
// image; scripts/kind-node-image.sh runs the steps.
package nodeimage
