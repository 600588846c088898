//go:build tools

// Package tools pins the Kubernetes commands that scripts/build-components.sh
// builds (and kubeadm, which scripts/kind-node-image.sh builds for the kind
// node image), so that go mod tidy keeps every go.sum entry they need.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubeadm"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
