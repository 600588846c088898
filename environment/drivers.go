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

// nodeFields points at the fields of a driver's deploy options that take
// a node's values.
type nodeFields struct {
	kubeletRootDir, cdiDir, root, node, apiServerHost *string
	apiServerPort, httpPort                           *int
}

// set gives the fields node n's paths, its API server (where the layout
// names one) and its port offset, and pins to pin.
func (f nodeFields) set(n Node, pin string) {
	*f.kubeletRootDir, *f.cdiDir, *f.root, *f.node = n.KubeletRootDir, n.CDIDir, n.EmulatorRoot, pin
	if n.APIServerHost != "" {
		*f.apiServerHost, *f.apiServerPort = n.APIServerHost, n.APIServerPort
	}
	if *f.httpPort != 0 {
		*f.httpPort += n.HTTPPortOffset
	}
}

// referenceDriver is the Driver that applies a copy of opts, its node
// fields (fields) set to the node's, with apply; adjust, when set, changes
// the copy further.
func referenceDriver[O any](name string, opts O, fields func(*O) nodeFields, adjust func(*O, Node),
	apply func(context.Context, kubernetes.Interface, O) error) Driver {
	return Driver{Name: name, Apply: func(ctx context.Context, client kubernetes.Interface, n Node, pin string) error {
		o := opts
		fields(&o).set(n, pin)
		if adjust != nil {
			adjust(&o, n)
		}
		return apply(ctx, client, o)
	}}
}

// GPUDriver is the reference GPU driver (reference/deploy.Apply) with opts,
// its paths and API server the node's.
func GPUDriver(opts deploy.Options) Driver {
	return referenceDriver("gpu", opts, gpuFields, nil, deploy.Apply)
}

// NICDriver is the reference NIC driver (deploy.ApplyNIC) with opts, its
// paths the node's.
func NICDriver(opts deploy.NICOptions) Driver {
	return referenceDriver("nic", opts, nicFields, nil, deploy.ApplyNIC)
}

// CPUDriver is the reference CPU driver (deploy.ApplyCPU) with opts, its
// paths and API server the node's and its checkpoints in <StateDir>/cpu-driver.
func CPUDriver(opts deploy.CPUOptions) Driver {
	return referenceDriver("cpu", opts, cpuFields, cpuStateDir, deploy.ApplyCPU)
}

// cpuStateDir keeps the CPU driver's checkpoints in the node's state dir.
func cpuStateDir(o *deploy.CPUOptions, n Node) {
	if n.StateDir != "" {
		o.StateDir = filepath.Join(n.StateDir, "cpu-driver")
	}
}

// TPUDriver is the reference TPU driver (deploy.ApplyTPU: its kubelet
// plugin and its sub-slice controller) with opts, its paths and API server
// the node's.
func TPUDriver(opts deploy.TPUOptions) Driver {
	return referenceDriver("tpu", opts, tpuFields, nil, deploy.ApplyTPU)
}

// gpuFields and the three below point at each reference driver's node fields.
func gpuFields(o *deploy.Options) nodeFields {
	return nodeFields{&o.KubeletRootDir, &o.CDIDir, &o.DriverRoot, &o.Node, &o.APIServerHost, &o.APIServerPort, &o.HTTPPort}
}

func nicFields(o *deploy.NICOptions) nodeFields {
	return nodeFields{&o.KubeletRootDir, &o.CDIDir, &o.HostRoot, &o.Node, &o.APIServerHost, &o.APIServerPort, &o.HTTPPort}
}

func cpuFields(o *deploy.CPUOptions) nodeFields {
	return nodeFields{&o.KubeletRootDir, &o.CDIDir, &o.HostRoot, &o.Node, &o.APIServerHost, &o.APIServerPort, &o.HTTPPort}
}

func tpuFields(o *deploy.TPUOptions) nodeFields {
	return nodeFields{&o.KubeletRootDir, &o.CDIDir, &o.HostRoot, &o.Node, &o.APIServerHost, &o.APIServerPort, &o.HTTPPort}
}
