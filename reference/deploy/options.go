package deploy

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"drakit.dev/drakit/internal/unixsocket"
	"drakit.dev/drakit/reference/plaindriver"
	"drakit.dev/drakit/reference/pluginharness"
)

// Kind is a driver of the family: the chart's value kind.
type Kind string

// The kinds of reference driver.
const (
	// KindGPU is gpu.drakit.dev (reference/driver), with its optional
	// IMEX channel controller (reference/imex).
	KindGPU Kind = "gpu"
	// KindNIC is nic.drakit.dev (reference/nicdriver).
	KindNIC Kind = "nic"
	// KindCPU is cpu.drakit.dev (reference/cpudriver).
	KindCPU Kind = "cpu"
	// KindTPU is tpu.drakit.dev (reference/tpudriver), with its
	// sub-slice controller.
	KindTPU Kind = "tpu"
	// KindPlain is plain.drakit.dev (reference/plaindriver), drakit's plain
	// test driver, with its styles, defects and variants.
	KindPlain Kind = "plain"
)

// Kinds returns every kind, in the order they are documented.
func Kinds() []Kind { return []Kind{KindGPU, KindNIC, KindCPU, KindTPU, KindPlain} }

// Validate reports a kind that is not one of Kinds.
func (k Kind) Validate() error {
	if slices.Contains(Kinds(), k) {
		return nil
	}
	return fmt.Errorf("Kind (--kind) %q: want gpu, nic, cpu, tpu or plain", k)
}

// AppLabel selects the driver pods (app.kubernetes.io/name=<name>).
const AppLabel = "app.kubernetes.io/name"

// NodeLabel labels the pods (and selects them) of a deployment pinned to a
// node: <NodeLabel>=<node name>.
const NodeLabel = "drakit.dev/node"

// ErrInvalidOptions classifies every error returned by Options.Validate.
var ErrInvalidOptions = errors.New("invalid deploy options")

// Options says how to deploy a driver of the family: which kind, the
// options every kind has, and each kind's own (ignored by the others, and
// refused when set for another kind). Paths are host paths on the nodes.
// Each field is a value of the chart (deployments/helm/drakit-driver) and a
// flag of drakit driver.
type Options struct {
	// Kind is the driver.
	Kind Kind
	// DriverName is the DRA driver name and the name of the kind's first
	// DeviceClass.
	DriverName string
	// Image is the driver image, whose drakit-driver (the family's one
	// binary) runs with --kind; it is never pulled (imagePullPolicy Never).
	Image string
	// KubeletRootDir is the kubelet's --root-dir: plugin sockets go below
	// <KubeletRootDir>/plugins_registry and <KubeletRootDir>/plugins.
	KubeletRootDir string
	// RegistrarDir is where the driver registers its plugin; empty: the
	// kubelet's (<KubeletRootDir>/plugins_registry). Another directory
	// (below KubeletRootDir, created on the node) hides the driver from
	// the kubelet, for drakit interpose to register in its place.
	RegistrarDir string
	// CDIDir is the directory the container runtime reads CDI specs from.
	CDIDir string
	// HostRoot is the emulator root on the node: the GPU driver's NVIDIA
	// driver root (mounted read-only, but for the three directories dynamic
	// MIG writes), the root of the NIC driver's sysfs (<HostRoot>/sys,
	// writable: VFs are created through it), of the CPU driver's NUMA
	// nodes and of the TPU driver's sysfs and tpu-env (read-only). The plain
	// driver mounts none of it.
	HostRoot string
	// StateDir is the CPU and plain drivers' state directory (checkpoint;
	// the plain driver's device directories, which the CDI specs mount).
	StateDir string
	// APIServerHost and APIServerPort are how the hostNetwork driver pod
	// (and controller) reach the apiserver (KUBERNETES_SERVICE_HOST/PORT).
	// An empty host keeps what the kubelet injects (the kubernetes Service).
	APIServerHost string
	APIServerPort int
	// Timeout bounds Apply's and Delete's wait.
	Timeout time.Duration
	// Node pins the deployment to one node: its DaemonSet is named
	// <name>-<node with dashes for dots>, selects and labels its pods with
	// NodeLabel=<node> and runs them only on the node whose
	// kubernetes.io/hostname is Node. Deploy once per node, each with that
	// node's host paths, where the nodes' paths differ (the nodes of a
	// multi-node local cluster). A controller is one Deployment for the
	// cluster whatever Node says. Empty: one DaemonSet for every node.
	Node string
	// HTTPPort is the port on the node's loopback the driver serves
	// Prometheus /metrics and /healthz on (--http-endpoint=127.0.0.1:<port>;
	// the pods are hostNetwork) and the kubelet's liveness probe asks;
	// 0: neither. Pods on one host (the nodes of a multi-node local
	// cluster, deployed with Node) each need a port of their own; each
	// kind's default is its own.
	HTTPPort int

	// The GPU driver's (KindGPU).

	// PartitionableAlpha makes the driver publish the alpha fields of
	// partitionable devices (partitionTypeAttribute, KEP-4815's gate
	// DRAPartitionableDevicesType, and compatibilityGroups, KEP-5963, gate
	// DRADeviceCompatibilityGroups); the cluster needs both gates.
	PartitionableAlpha bool
	// DeviceMetadata makes the driver write device metadata files
	// (KEP-5304) with CDI specs in CDIDir. Default true.
	DeviceMetadata bool
	// BindingConditions makes the driver publish every device with the
	// binding conditions of KEP-5007: pods with its devices bind only once
	// an attach controller sets them, such as the conformance kit's.
	BindingConditions bool
	// ListAttributes makes the driver publish the list attribute
	// closeNUMANodes (KEP-5491, alpha gate DRAListTypeAttributes).
	ListAttributes bool
	// DeviceNodesOnly makes the driver's CDI edits only device nodes:
	// containers get NVML from the node's container stack, on the local
	// cluster from the emulator's NRI plugin.
	DeviceNodesOnly bool
	// RuntimeClassName is the driver pods' RuntimeClass; empty means the
	// node's default runtime. Dynamic MIG reads the MIG config capability, a
	// character device that a container's device cgroup (runc's) refuses
	// unless the runtime grants it: the local cluster's RuntimeClass
	// drakit-mig-manager grants exactly the two MIG management capability
	// devices for reading, so the driver changes MIG devices unprivileged.
	RuntimeClassName string
	// Privileged runs the driver container privileged instead of with least
	// privilege, for nodes whose runtime has no RuntimeClass that grants
	// the MIG capability devices.
	Privileged bool
	// IMEXChannels, when positive, deploys the driver's IMEX channel
	// controller (a one-replica Deployment, drakit-imex-controller)
	// publishing that many channels per multi-node NVLink clique, and the
	// DeviceClass imex.<driver name>; 0: none. At most 2048.
	IMEXChannels int

	// The NIC driver's (KindNIC).

	// VFsPerPF is how many VFs of each PF the driver publishes.
	VFsPerPF int

	// The TPU driver's (KindTPU).

	// Shapes are the sub-slice shapes the controller publishes
	// (tpudriver.ParseShapes).
	Shapes string

	// The plain driver's (KindPlain).

	// Devices is how many devices the driver publishes.
	Devices int
	// Variant, when set, deploys the driver beside other variants: its
	// namespace and objects are named PlainVariantName(Variant). The
	// driver name, state directory and HTTP port must then be the
	// variant's own too (drakit driver derives the driver name and state
	// directory from it). A DNS label of at most
	// plaindriver.MaxVariantName characters.
	Variant string
	// Style is how the driver publishes devices and hands them to
	// containers; empty for plaindriver.StyleMounts.
	Style plaindriver.Style
	// Defect is the deliberate bug the driver runs with; empty for none.
	Defect plaindriver.Defect
}

// DefaultOptions returns the options of kind that the chart has by default
// (deployments/helm's test renders each kind and compares): the kind's
// driver name, image, HTTP port and state directory, the emulator's root
// at /var/lib/drakit/emulator and the apiserver at 127.0.0.1:6443. An
// unknown kind has the options every kind has.
func DefaultOptions(kind Kind) Options {
	o := Options{
		Kind:           kind,
		Image:          "drakit.dev/driver:dev",
		KubeletRootDir: "/var/lib/kubelet",
		CDIDir:         pluginharness.DefaultCDIDir,
		HostRoot:       "/var/lib/drakit/emulator",
		APIServerHost:  "127.0.0.1",
		APIServerPort:  6443,
		Timeout:        2 * time.Minute,
	}
	if s, ok := kinds[kind]; ok {
		o.DriverName, o.HTTPPort = s.driverName, s.httpPort
		s.defaults(&o)
	}
	return o
}

// name is the name of the deployment's objects and of the app label of its
// pods: the kind's, or a plain variant's.
func (o *Options) name() string {
	if o.Kind == KindPlain && o.Variant != "" {
		return PlainVariantName(o.Variant)
	}
	return kinds[o.Kind].name
}

// PlainVariantName names a plain variant's namespace, DaemonSet, service
// account, cluster role and binding and admission policy and binding:
// drakit-plain-<variant>.
func PlainVariantName(variant string) string { return "drakit-plain-" + variant }

// namespace is the deployment's namespace: the kind's, or a plain
// variant's.
func (o *Options) namespace() string {
	if o.Kind == KindPlain && o.Variant != "" {
		return PlainVariantName(o.Variant)
	}
	return kinds[o.Kind].namespace
}

// registrarDir is where the driver registers: the kubelet's plugin
// registration directory unless RegistrarDir names another.
func (o *Options) registrarDir() string {
	if o.RegistrarDir != "" {
		return o.RegistrarDir
	}
	return filepath.Join(o.KubeletRootDir, "plugins_registry")
}

// pluginDir is the driver's directory below the kubelet's plugins.
func (o *Options) pluginDir() string {
	return filepath.Join(o.KubeletRootDir, "plugins", o.DriverName)
}

// Validate reports every invalid field by name and flag of drakit driver:
// an unknown kind, another kind's options set, what the driver itself
// would reject (name, the kind's own options, socket path lengths) and
// host paths that must not be mounted into the driver pod (systemDirs and
// systemTrees; the kind's host paths must not overlap, since each is
// mounted with its own access). The error wraps ErrInvalidOptions.
func (o *Options) Validate() error {
	if err := o.Kind.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	s := kinds[o.Kind]
	errs := checkNameAndImage(o.DriverName, o.Image)
	if o.Node != "" {
		if msgs := validation.IsDNS1123Subdomain(o.Node); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("Node (--node) %q is not a node name: %s", o.Node, strings.Join(msgs, "; ")))
		} else if ds := pinnedName(o.name(), o.Node); len(ds) > 63 {
			errs = append(errs, fmt.Errorf("Node (--node) %q is too long to name the driver's DaemonSet after it: %s has %d characters, at most 63", o.Node, ds, len(ds)))
		}
	}
	for _, f := range kindFields(o) {
		if f.set && !slices.Contains(f.kinds, o.Kind) {
			errs = append(errs, fmt.Errorf("%s (--%s) is an option of kind %s, not of %s", f.field, f.flag, kindList(f.kinds), o.Kind))
		}
	}
	errs = append(errs, s.validate(o)...)
	if o.RegistrarDir != "" && (!filepath.IsAbs(o.RegistrarDir) || !within(filepath.Clean(o.RegistrarDir), filepath.Clean(o.KubeletRootDir))) {
		errs = append(errs, fmt.Errorf("RegistrarDir (--registrar-dir) %q: want an absolute directory below KubeletRootDir %q", o.RegistrarDir, o.KubeletRootDir))
	}
	pathErrs, ok := checkHostPaths(append([]hostPathOption{
		{"KubeletRootDir", "kubelet-root-dir", o.KubeletRootDir},
		{"CDIDir", "cdi-dir", o.CDIDir},
	}, s.hostPaths(o)...))
	errs = append(errs, pathErrs...)
	if ok[0] {
		errs = append(errs, checkSockets(o.KubeletRootDir, o.registrarDir(), o.pluginDir(), o.DriverName)...)
	}
	errs = append(errs, checkAPIServerAndTimeout(o.APIServerHost, o.APIServerPort, o.Timeout)...)
	if o.HTTPPort < 0 || o.HTTPPort > 65535 {
		errs = append(errs, fmt.Errorf("HTTPPort (--http-port) %d: want 0 (no metrics, health or liveness probe) or a port", o.HTTPPort))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidOptions, errors.Join(errs...))
	}
	return nil
}

// kindList is ks as "a", "a or b".
func kindList(ks []Kind) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return strings.Join(s, " or ")
}

// pinnedName is the name of a DaemonSet pinned to node: name-<node> with
// dashes for dots (a node name is a DNS subdomain), or name for "".
func pinnedName(name, node string) string {
	if node == "" {
		return name
	}
	return name + "-" + strings.ReplaceAll(node, ".", "-")
}

// systemDirs are host directories that no host path option may name: the
// root, the top-level directories of the Filesystem Hierarchy Standard, the
// system-wide directories below /var, and where the node keeps the
// Kubernetes and container runtime configuration and state. The parent of
// every entry is an entry too, or lies in a systemTree, so that no option
// names a directory that contains one. Their other subdirectories are fine:
// /etc/cdi and /var/run/cdi are where CDI specs live, /var/lib/kubelet is
// the kubelet's root.
var systemDirs = []string{
	"/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32", "/media", "/mnt",
	"/opt", "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var",
	"/var/cache", "/var/lib", "/var/local", "/var/lock", "/var/log", "/var/mail", "/var/opt", "/var/run",
	"/var/spool", "/var/tmp",
	"/etc/containerd", "/etc/kubernetes", "/run/containerd", "/var/lib/containerd", "/var/lib/etcd",
}

// systemTrees are host directories below which no host path option may
// lie: the system's programs and libraries, boot files, and the kernel's
// device, process and sysfs filesystems.
var systemTrees = []string{"/bin", "/boot", "/dev", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/sbin", "/sys", "/usr"}

// checkHostPath reports why host path p of the option named field (flag
// --flag) must not be mounted into the driver pod, or nil.
func checkHostPath(field, flag, p string) error {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return fmt.Errorf("%s (--%s) %q must be a clean absolute path", field, flag, p)
	}
	if slices.Contains(systemDirs, p) {
		return fmt.Errorf("%s (--%s) %q is a system directory: the driver pod would mount it from the host", field, flag, p)
	}
	for _, tree := range systemTrees {
		if within(p, tree) {
			return fmt.Errorf("%s (--%s) %q lies in %s, a system directory: the driver pod would mount it from the host",
				field, flag, p, tree)
		}
	}
	return nil
}

// checkNameAndImage checks the options DriverName and Image.
func checkNameAndImage(driverName, image string) []error {
	var errs []error
	if msgs := validation.IsDNS1123Subdomain(driverName); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("DriverName (--driver-name) %q: %s", driverName, strings.Join(msgs, "; ")))
	} else if len(driverName) > 63 {
		errs = append(errs, fmt.Errorf("DriverName (--driver-name) %q is longer than 63 characters", driverName))
	}
	if image == "" {
		errs = append(errs, errors.New("Image (--image) is required"))
	}
	return errs
}

// checkAPIServerAndTimeout checks the options APIServerHost, APIServerPort
// and Timeout.
func checkAPIServerAndTimeout(host string, port int, timeout time.Duration) []error {
	var errs []error
	if host != "" && (port < 1 || port > 65535) {
		errs = append(errs, fmt.Errorf("APIServerPort (--apiserver-port) %d is not a port", port))
	}
	if host == "" && port != 0 {
		errs = append(errs, fmt.Errorf("APIServerPort (--apiserver-port) %d is set without APIServerHost (--apiserver-host)", port))
	}
	if timeout <= 0 {
		errs = append(errs, fmt.Errorf("Timeout (--timeout) %s must be positive", timeout))
	}
	return errs
}

// hostPathOption is a host path option with its field and flag names.
type hostPathOption struct{ field, flag, value string }

// checkHostPaths checks every path (checkHostPath) and that no two of the
// valid ones overlap: each is mounted with its own access. ok[i] reports
// whether paths[i] is valid by itself.
func checkHostPaths(paths []hostPathOption) (errs []error, ok []bool) {
	ok = make([]bool, len(paths))
	for i, p := range paths {
		if err := checkHostPath(p.field, p.flag, p.value); err != nil {
			errs = append(errs, err)
		} else {
			ok[i] = true
		}
	}
	for i, a := range paths {
		for j, b := range paths[i+1:] {
			if ok[i] && ok[i+1+j] && (a.value == b.value || within(a.value, b.value) || within(b.value, a.value)) {
				errs = append(errs, fmt.Errorf("%s (--%s) %q and %s (--%s) %q overlap: each is mounted with its own access, so neither may contain the other",
					a.field, a.flag, a.value, b.field, b.flag, b.value))
			}
		}
	}
	return errs, ok
}

// checkSockets reports the driver's sockets (registration in registrarDir,
// DRA in pluginDir, both below kubeletRootDir) that are too long for
// AF_UNIX.
func checkSockets(kubeletRootDir, registrarDir, pluginDir, driverName string) []error {
	var errs []error
	registration, dra := pluginharness.Sockets(registrarDir, pluginDir, driverName)
	for _, sock := range []string{registration, dra} {
		if err := unixsocket.CheckSocketPath(sock); err != nil {
			errs = append(errs, fmt.Errorf("KubeletRootDir (--kubelet-root-dir) %q: the driver's %w", kubeletRootDir, err))
		}
	}
	return errs
}

// within reports whether clean absolute path p lies below dir.
func within(p, dir string) bool {
	return strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}
