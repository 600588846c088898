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

// GPUDriver is the reference GPU driver (reference/deploy.Apply) with opts,
// its paths and API server the node's.
func GPUDriver(opts deploy.Options) Driver {
	return Driver{Name: "gpu", Apply: func(ctx context.Context, client kubernetes.Interface, n Node, pin string) error {
		o := opts
		o.KubeletRootDir, o.CDIDir, o.DriverRoot, o.Node = n.KubeletRootDir, n.CDIDir, n.EmulatorRoot, pin
		if n.APIServerHost != "" {
			o.APIServerHost, o.APIServerPort = n.APIServerHost, n.APIServerPort
		}
		return deploy.Apply(ctx, client, o)
	}}
}

// NICDriver is the reference NIC driver (deploy.ApplyNIC) with opts, its
// paths the node's.
func NICDriver(opts deploy.NICOptions) Driver {
	return Driver{Name: "nic", Apply: func(ctx context.Context, client kubernetes.Interface, n Node, pin string) error {
		o := opts
		o.KubeletRootDir, o.CDIDir, o.HostRoot, o.Node = n.KubeletRootDir, n.CDIDir, n.EmulatorRoot, pin
		if n.APIServerHost != "" {
			o.APIServerHost, o.APIServerPort = n.APIServerHost, n.APIServerPort
		}
		return deploy.ApplyNIC(ctx, client, o)
	}}
}

// CPUDriver is the reference CPU driver (deploy.ApplyCPU) with opts, its
// paths and API server the node's and its checkpoints in <StateDir>/cpu-driver.
func CPUDriver(opts deploy.CPUOptions) Driver {
	return Driver{Name: "cpu", Apply: func(ctx context.Context, client kubernetes.Interface, n Node, pin string) error {
		o := opts
		o.KubeletRootDir, o.CDIDir, o.HostRoot, o.Node = n.KubeletRootDir, n.CDIDir, n.EmulatorRoot, pin
		if n.APIServerHost != "" {
			o.APIServerHost, o.APIServerPort = n.APIServerHost, n.APIServerPort
		}
		if n.StateDir != "" {
			o.StateDir = filepath.Join(n.StateDir, "cpu-driver")
		}
		return deploy.ApplyCPU(ctx, client, o)
	}}
}
