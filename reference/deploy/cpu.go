package deploy

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"drakit.dev/drakit/reference/cpudriver"
)

// Fixed names of the CPU driver's deployment (manifests/cpu), apart from
// the other drivers' so that all run side by side.
const (
	CPUNamespace = "drakit-cpu"
	// CPUName is the name of the DaemonSet, service account, cluster role
	// and binding, and of the admission policy and its binding; the
	// driver pods carry AppLabel=CPUName.
	CPUName = "drakit-cpu-driver"
)

var cpuWorkload = workload{CPUNamespace, CPUName, ""}

// CPUOptions says how to deploy the CPU driver (reference/cpudriver). Paths
// are host paths on the nodes.
type CPUOptions struct {
	// DriverName is the DRA driver name and the DeviceClass name.
	DriverName string
	// Image is the driver image (the reference drivers', which holds
	// /usr/bin/drakit-cpu-driver); it is never pulled.
	Image string
	// KubeletRootDir is the kubelet's --root-dir.
	KubeletRootDir string
	// CDIDir is the directory the container runtime reads CDI specs from.
	CDIDir string
	// HostRoot is the root below which the driver reads
	// sys/devices/system/node (mounted read-only at the same path): the
	// emulator root on drakit's node.
	HostRoot string
	// StateDir is the driver's checkpoint directory.
	StateDir string
	// APIServerHost and APIServerPort are how the hostNetwork driver pod
	// reaches the apiserver; an empty host keeps what the kubelet injects.
	APIServerHost string
	APIServerPort int
	// Timeout bounds ApplyCPU's and DeleteCPU's wait.
	Timeout time.Duration
	// Node pins the deployment to one node, as PlainOptions.Node.
	Node string
	// HTTPPort is the port on the node's loopback the driver serves
	// Prometheus /metrics and /healthz on (--http-endpoint=127.0.0.1:<port>;
	// the pods are hostNetwork) and the kubelet's liveness probe asks;
	// 0: neither. Pods on one host (the nodes of a multi-node local
	// cluster, deployed with Node) each need a port of their own.
	HTTPPort int
}

// DefaultCPUOptions returns the options manifests/cpu is written with.
func DefaultCPUOptions() CPUOptions {
	return CPUOptions{
		DriverName:     cpudriver.DefaultDriverName,
		Image:          "drakit.dev/driver:dev",
		KubeletRootDir: "/var/lib/kubelet",
		CDIDir:         cpudriver.DefaultCDIDir,
		HostRoot:       "/var/lib/drakit/emulator",
		StateDir:       cpudriver.DefaultStateDir,
		APIServerHost:  "127.0.0.1",
		APIServerPort:  6443,
		Timeout:        2 * time.Minute,
		HTTPPort:       DefaultCPUHTTPPort,
	}
}

func (o *CPUOptions) common() driverOptions {
	return driverOptions{o.DriverName, o.Image, o.KubeletRootDir, o.CDIDir, o.APIServerHost, o.APIServerPort, o.Timeout, "", o.Node, o.HTTPPort, CPUName}
}

// numaDir is the host directory the driver pod mounts read-only.
func (o *CPUOptions) numaDir() string { return filepath.Join(o.HostRoot, "sys/devices/system/node") }

// Validate reports every invalid field by name and flag of drakit
// cpu-driver, as Options.Validate does. The error wraps ErrInvalidOptions.
func (o *CPUOptions) Validate() error {
	return o.common().validate(nil, hostPathOption{"HostRoot", "host-root", o.HostRoot}, hostPathOption{"StateDir", "state-dir", o.StateDir})
}

// CPUManifests are the CPU driver's objects, rendered for one CPUOptions.
type CPUManifests struct {
	// DriverObjects' DeviceClass is <driver name>: every NUMA node.
	DriverObjects
}

// List returns the objects in the order they are applied.
func (m *CPUManifests) List() []runtime.Object { return m.list() }

// CPUObjects validates opts and renders manifests/cpu for them: the driver
// name (DeviceClass, flag, plugin directory, the policy's driver), the
// image, every host path and the apiserver's address.
func CPUObjects(opts CPUOptions) (*CPUManifests, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	m, err := decodeDriver("cpu", nil)
	if err != nil {
		return nil, err
	}
	if err := renderClasses(deviceClass{"cpu/deviceclass.yaml", opts.DriverName, fmt.Sprintf("device.driver == %q", opts.DriverName), m.DeviceClass}); err != nil {
		return nil, err
	}
	if err := renderPolicy(m.Policy, opts.DriverName); err != nil {
		return nil, fmt.Errorf("manifest cpu/validatingadmissionpolicy.yaml: %w", err)
	}
	if err := renderCPUPod(&m.DaemonSet.Spec.Template.Spec, opts); err != nil {
		return nil, fmt.Errorf("manifest cpu/daemonset.yaml: %w", err)
	}
	pinToNode(m.DaemonSet, opts.Node)
	return &CPUManifests{m}, nil
}

func renderCPUPod(pod *corev1.PodSpec, opts CPUOptions) error {
	_, err := renderDriverPod(pod, opts.common(), map[string]string{
		"host-root": opts.HostRoot,
		"state-dir": opts.StateDir,
	}, map[string]string{"state-dir": opts.StateDir, "numa-dir": opts.numaDir()})
	return err
}

// ApplyCPU creates or updates the CPU driver's deployment and waits until
// its DaemonSet is rolled out, its pods are Ready and every node with a
// Ready pod has a ResourceSlice of the driver.
func ApplyCPU(ctx context.Context, client kubernetes.Interface, opts CPUOptions) error {
	m, err := CPUObjects(opts)
	if err != nil {
		return err
	}
	if err := applyObjects(ctx, client, m.List()); err != nil {
		return fmt.Errorf("apply driver %s: %w", opts.DriverName, err)
	}
	return waitReady(ctx, client, cpuWorkload.on(opts.Node), opts.DriverName, opts.Timeout, true)
}

// DeleteCPU removes what ApplyCPU created and the driver's ResourceSlices;
// deleting what does not exist succeeds.
func DeleteCPU(ctx context.Context, client kubernetes.Interface, opts CPUOptions) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	return deleteDriver(ctx, client, cpuWorkload.on(opts.Node), opts.DriverName, []string{opts.DriverName}, opts.Timeout)
}
