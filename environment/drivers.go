package environment

import (
	"context"
	"path/filepath"

	"k8s.io/client-go/kubernetes"

	"drakit.dev/drakit/reference/deploy"
)

// Driver is a DRA driver the environment deploys.
type Driver struct {
	// Name names it in logs and errors.
	Name string
	// Apply deploys it with node n's paths and waits until it is ready;
	// pin, when set, pins the deployment to that node.
	Apply func(ctx context.Context, client kubernetes.Interface, n Node, pin string) error
}

// ReferenceDriver is a reference driver of the family (reference/deploy,
// named after opts.Kind) deployed with opts, its paths the node's (the
// emulator root as the host root; the state directory, for the kinds with
// one, <node state dir>/<kind>-driver), its API server the node's where
// the layout names one, and its HTTP port the node's offset above opts'.
func ReferenceDriver(opts deploy.Options) Driver {
	return Driver{Name: string(opts.Kind), Apply: func(ctx context.Context, client kubernetes.Interface, n Node, pin string) error {
		return deploy.Apply(ctx, client, onNode(opts, n, pin))
	}}
}

// onNode is opts with node n's paths, API server and port offset, pinned
// to pin.
func onNode(o deploy.Options, n Node, pin string) deploy.Options {
	o.KubeletRootDir, o.CDIDir, o.HostRoot, o.Node = n.KubeletRootDir, n.CDIDir, n.EmulatorRoot, pin
	if n.APIServerHost != "" {
		o.APIServerHost, o.APIServerPort = n.APIServerHost, n.APIServerPort
	}
	if o.HTTPPort != 0 {
		o.HTTPPort += n.HTTPPortOffset
	}
	if o.StateDir != "" && n.StateDir != "" {
		o.StateDir = filepath.Join(n.StateDir, string(o.Kind)+"-driver")
	}
	return o
}
