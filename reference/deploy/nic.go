package deploy

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"drakit.dev/drakit/reference/nicdriver"
)

// Fixed names of the NIC driver's deployment (manifests/nic), apart from
// the reference driver's so that both run side by side.
const (
	NICNamespace = "drakit-nic"
	// NICName is the name of the DaemonSet, service account, cluster role
	// and binding, and of the admission policy and its binding; the
	// driver pods carry AppLabel=NICName.
	NICName = "drakit-nic-driver"
)

// nicWorkload is the NIC driver's.
var nicWorkload = workload{NICNamespace, NICName, ""}

// VFDeviceClassName is the name of the class of the NIC driver's VFs; the
// class named after the driver selects its PFs' bandwidth shares.
func VFDeviceClassName(driverName string) string { return "vf." + driverName }

// NICOptions says how to deploy the NIC driver (reference/nicdriver), which
// runs from the reference driver's image. Paths are host paths on the
// nodes.
type NICOptions struct {
	// DriverName is the DRA driver name, the name of the DeviceClass of
	// its PF shares and, after "vf.", of its VFs' class.
	DriverName string
	// Image is the driver image (the reference driver's, which holds
	// /usr/bin/drakit-nic-driver); it is never pulled.
	Image string
	// KubeletRootDir is the kubelet's --root-dir: plugin sockets go below
	// <KubeletRootDir>/plugins_registry and <KubeletRootDir>/plugins.
	KubeletRootDir string
	// CDIDir is the directory the container runtime reads CDI specs from.
	CDIDir string
	// HostRoot is the emulator root on the node: the driver discovers NICs
	// in <HostRoot>/sys and creates VFs through it (mounted writable, at
	// the same path), and names device nodes below <HostRoot>/dev.
	HostRoot string
	// VFsPerPF is how many VFs of each PF the driver publishes.
	VFsPerPF int
	// APIServerHost and APIServerPort are how the hostNetwork driver pod
	// reaches the apiserver (KUBERNETES_SERVICE_HOST/PORT). An empty host
	// keeps what the kubelet injects (the kubernetes Service).
	APIServerHost string
	APIServerPort int
	// Timeout bounds ApplyNIC's and DeleteNIC's wait.
	Timeout time.Duration
	// Node pins the deployment to one node: its DaemonSet is named
	// <name>-<node with dashes for dots>, selects and labels its pods with
	// NodeLabel=<node> and runs them only on the node whose
	// kubernetes.io/hostname is Node. Deploy once per node (as Options.Node), each with that
	// node's host paths, where the nodes' paths differ (the nodes of a
	// multi-node local cluster). Empty: one DaemonSet for every node.
	Node string
	// HTTPPort is the port on the node's loopback the driver serves
	// Prometheus /metrics and /healthz on (--http-endpoint=127.0.0.1:<port>;
	// the pods are hostNetwork) and the kubelet's liveness probe asks;
	// 0: neither. Pods on one host (the nodes of a multi-node local
	// cluster, deployed with Node) each need a port of their own.
	HTTPPort int
}

// DefaultNICOptions returns the options manifests/nic is written with.
func DefaultNICOptions() NICOptions {
	return NICOptions{
		DriverName:     nicdriver.DefaultDriverName,
		Image:          "drakit.dev/driver:dev",
		KubeletRootDir: "/var/lib/kubelet",
		CDIDir:         nicdriver.DefaultCDIDir,
		HostRoot:       "/var/lib/drakit/emulator",
		VFsPerPF:       nicdriver.DefaultVFsPerPF,
		APIServerHost:  "127.0.0.1",
		APIServerPort:  6443,
		Timeout:        2 * time.Minute,
		HTTPPort:       DefaultNICHTTPPort,
	}
}

// common returns the options every driver's deployment has.
func (o *NICOptions) common() driverOptions {
	return driverOptions{o.DriverName, o.Image, o.KubeletRootDir, o.CDIDir, o.APIServerHost, o.APIServerPort, o.Timeout, "", o.Node, o.HTTPPort, NICName}
}

func (o *NICOptions) sysfsDir() string { return filepath.Join(o.HostRoot, "sys") }

// Validate reports every invalid field by name and flag of drakit
// nic-driver, including what the driver itself would reject (name, number
// of VFs, socket path lengths) and host paths that must not be mounted into
// the driver pod (as Options.Validate; the host root must not be a system
// directory, so a real node's /sys is refused). The error wraps
// ErrInvalidOptions.
func (o *NICOptions) Validate() error {
	var own []error
	if o.VFsPerPF < 0 || o.VFsPerPF > nicdriver.MaxVFsPerPF {
		own = append(own, fmt.Errorf("VFsPerPF (--vfs-per-pf) %d is not between 0 and %d", o.VFsPerPF, nicdriver.MaxVFsPerPF))
	}
	return o.common().validate(own, hostPathOption{"HostRoot", "host-root", o.HostRoot})
}

// NICManifests are the NIC driver's objects, rendered for one NICOptions.
type NICManifests struct {
	// DriverObjects' ClusterRole has a kubelet plugin's rules and, for
	// the device status, patch on resourceclaims/status and
	// associated-node:patch on resourceclaims/driver for the driver's name
	// only; its DeviceClass is <driver name>: the PFs' bandwidth shares
	// (type pf).
	DriverObjects
	// VFDeviceClass is vf.<driver name>: the VFs (type vf).
	VFDeviceClass *resourceapi.DeviceClass
}

// List returns the objects in the order they are applied: the policy before
// the DaemonSet, so that no driver pod runs unconstrained.
func (m *NICManifests) List() []runtime.Object { return m.list(m.VFDeviceClass) }

// decodeNIC decodes manifests/nic as written.
func decodeNIC() (*NICManifests, error) {
	vf := &resourceapi.DeviceClass{}
	m, err := decodeDriver("nic", map[string]any{"vfdeviceclass.yaml": vf})
	if err != nil {
		return nil, err
	}
	return &NICManifests{m, vf}, nil
}

// NICObjects validates opts and renders manifests/nic for them: the driver
// name (DeviceClass names and selectors, the cluster role's driver, the
// driver flag, plugin directory, the policy's driver), the image, the
// number of VFs, every host path and the apiserver's address.
func NICObjects(opts NICOptions) (*NICManifests, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	m, err := decodeNIC()
	if err != nil {
		return nil, err
	}
	nicClass := func(file, name, typ string, class *resourceapi.DeviceClass) deviceClass {
		return deviceClass{file, name, fmt.Sprintf("device.driver == %q && device.attributes[%q].?type.orValue(\"\") == %q",
			opts.DriverName, opts.DriverName, typ), class}
	}
	if err := renderClasses(
		nicClass("nic/deviceclass.yaml", opts.DriverName, "pf", m.DeviceClass),
		nicClass("nic/vfdeviceclass.yaml", VFDeviceClassName(opts.DriverName), "vf", m.VFDeviceClass),
	); err != nil {
		return nil, err
	}
	if err := renderStatusRule(m.ClusterRole, opts.DriverName); err != nil {
		return nil, fmt.Errorf("manifest nic/clusterrole.yaml: %w", err)
	}
	if err := renderPolicy(m.Policy, opts.DriverName); err != nil {
		return nil, fmt.Errorf("manifest nic/validatingadmissionpolicy.yaml: %w", err)
	}
	if err := renderNICPod(&m.DaemonSet.Spec.Template.Spec, opts); err != nil {
		return nil, fmt.Errorf("manifest nic/daemonset.yaml: %w", err)
	}
	pinToNode(m.DaemonSet, opts.Node)
	return m, nil
}

// renderStatusRule names the driver in the role's rule on
// resourceclaims/driver.
func renderStatusRule(role *rbacv1.ClusterRole, driverName string) error {
	for i := range role.Rules {
		if r := &role.Rules[i]; slices.Equal(r.Resources, []string{"resourceclaims/driver"}) {
			r.ResourceNames = []string{driverName}
			return nil
		}
	}
	return errors.New("no rule on resourceclaims/driver")
}

// renderNICPod substitutes opts into the driver pod: image, flags,
// apiserver environment and host paths (each mounted at its own path).
func renderNICPod(pod *corev1.PodSpec, opts NICOptions) error {
	_, err := renderDriverPod(pod, opts.common(), map[string]string{
		"host-root":  opts.HostRoot,
		"vfs-per-pf": strconv.Itoa(opts.VFsPerPF),
	}, map[string]string{"sysfs": opts.sysfsDir()})
	return err
}

// ApplyNIC creates or updates the NIC driver's deployment and waits until
// its DaemonSet is rolled out, its pods are Ready and every node with a
// Ready pod has a ResourceSlice of the driver (one without NICs publishes
// an empty one). On timeout the error carries the pods' diagnostics.
func ApplyNIC(ctx context.Context, client kubernetes.Interface, opts NICOptions) error {
	m, err := NICObjects(opts)
	if err != nil {
		return err
	}
	if err := applyObjects(ctx, client, m.List()); err != nil {
		return fmt.Errorf("apply driver %s: %w", opts.DriverName, err)
	}
	return waitReady(ctx, client, nicWorkload.on(opts.Node), opts.DriverName, opts.Timeout, true)
}

// DeleteNIC removes what ApplyNIC created, waits for the driver pods to go,
// then deletes the admission policy and its binding and the driver's
// ResourceSlices, and waits for the namespace to go. Deleting what does not
// exist succeeds. VFs the driver created for claims still prepared stay:
// unprepare removes them.
func DeleteNIC(ctx context.Context, client kubernetes.Interface, opts NICOptions) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	return deleteDriver(ctx, client, nicWorkload.on(opts.Node), opts.DriverName, []string{opts.DriverName, VFDeviceClassName(opts.DriverName)}, opts.Timeout)
}
