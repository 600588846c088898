package deploy

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"drakit.dev/drakit/internal/nvidiahw"
	"drakit.dev/drakit/internal/unixsocket"
	"drakit.dev/drakit/reference/pluginharness"
)

// Fixed names of the deployment.
const (
	Namespace = "drakit-system"
	// Name of the DaemonSet, service account, cluster role and binding,
	// and of the ValidatingAdmissionPolicy and its binding.
	Name = "drakit-driver"
	// AppLabel selects the driver pods (app.kubernetes.io/name=drakit-driver).
	AppLabel = "app.kubernetes.io/name"
)

// ErrInvalidOptions classifies every error returned by Options.Validate.
var ErrInvalidOptions = errors.New("invalid deploy options")

// Options says how to deploy the driver. Paths are host paths on the nodes.
type Options struct {
	// DriverName is the DRA driver name and the DeviceClass name.
	DriverName string
	// Image is the driver image; it is never pulled (imagePullPolicy Never).
	Image string
	// KubeletRootDir is the kubelet's --root-dir: plugin sockets go below
	// <KubeletRootDir>/plugins_registry and <KubeletRootDir>/plugins.
	KubeletRootDir string
	// CDIDir is the directory the container runtime reads CDI specs from.
	CDIDir string
	// DriverRoot is the NVIDIA driver root on the node (the emulator root).
	// It is mounted read-only at the same path inside the pod, and the three
	// directories below it that dynamic MIG writes writable (the NVML state,
	// the capability nodes and files; see manifests/daemonset.yaml).
	DriverRoot string
	// APIServerHost and APIServerPort are how the hostNetwork driver pod
	// reaches the apiserver (KUBERNETES_SERVICE_HOST/PORT). An empty host
	// keeps what the kubelet injects (the kubernetes Service).
	APIServerHost string
	APIServerPort int
	// PartitionableAlpha makes the driver publish the alpha fields of
	// partitionable devices (partitionTypeAttribute, KEP-4815's gate
	// DRAPartitionableDevicesType, and
	// compatibilityGroups, KEP-5963, gate DRADeviceCompatibilityGroups);
	// the cluster needs both gates.
	PartitionableAlpha bool
	// DeviceMetadata makes the driver write device metadata files
	// (KEP-5304, kubeletplugin's EnableDeviceMetadata) with CDI specs in
	// CDIDir. Default true.
	DeviceMetadata bool
	// BindingConditions makes the driver publish every device with the
	// binding conditions of KEP-5007 (driver.BindingConditionTypes): pods
	// with its devices bind only once an attach controller sets them, such
	// as the conformance kit's. Default false.
	BindingConditions bool
	// ListAttributes makes the driver publish the list attribute
	// closeNUMANodes (--list-attributes; KEP-5491, the cluster needs the
	// alpha gate DRAListTypeAttributes). Default false.
	ListAttributes bool
	// DeviceNodesOnly makes the driver's CDI edits only device nodes
	// (--device-nodes-only): containers get NVML from the node's container
	// stack, on the local cluster from the emulator's NRI plugin.
	DeviceNodesOnly bool
	// RuntimeClassName is the driver pods' RuntimeClass; empty means the
	// node's default runtime. Dynamic MIG reads the MIG config capability, a
	// character device that a container's device cgroup (runc's) refuses
	// unless the runtime grants it: the local cluster's RuntimeClass
	// drakit-mig-manager grants exactly the two MIG management capability
	// devices for reading, so the driver changes MIG devices unprivileged.
	RuntimeClassName string
	// Privileged runs the driver container privileged instead of with least
	// privilege (see manifests/daemonset.yaml), for nodes whose runtime has
	// no RuntimeClass that grants the MIG capability devices.
	Privileged bool
	// Timeout bounds Apply's and Delete's wait.
	Timeout time.Duration
	// IMEXChannels, when positive, deploys the driver's IMEX channel
	// controller (a one-replica Deployment, drakit-driver imex-controller)
	// publishing that many channels per multi-node NVLink clique, and the
	// DeviceClass imex.<driver name>; 0: none. At most 2048.
	IMEXChannels int
	// RegistrarDir is where the driver registers its plugin; empty: the
	// kubelet's (<KubeletRootDir>/plugins_registry). Another directory
	// (below KubeletRootDir, created on the node) hides the driver from
	// the kubelet, for drakit interpose to register in its place.
	RegistrarDir string
	// Node pins the deployment to one node: its DaemonSet is named
	// <name>-<node with dashes for dots>, selects and labels its pods with
	// NodeLabel=<node> and runs them only on the node whose
	// kubernetes.io/hostname is Node. Deploy once per node, each with that
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

// DefaultOptions returns the options the manifests are written with.
func DefaultOptions() Options {
	return Options{
		DriverName:     "gpu.drakit.dev",
		Image:          "drakit.dev/driver:dev",
		KubeletRootDir: "/var/lib/kubelet",
		CDIDir:         pluginharness.DefaultCDIDir,
		DriverRoot:     "/var/lib/drakit/emulator",
		DeviceMetadata: true,
		APIServerHost:  "127.0.0.1",
		APIServerPort:  6443,
		Timeout:        2 * time.Minute,
		HTTPPort:       DefaultHTTPPort,
	}
}

// common returns the options every driver's deployment has.
func (o *Options) common() driverOptions {
	return driverOptions{o.DriverName, o.Image, o.KubeletRootDir, o.CDIDir, o.APIServerHost, o.APIServerPort, o.Timeout, o.RegistrarDir, o.Node, o.HTTPPort, Name}
}

// driverRootWritable are the directories below the driver root that the
// emulator's NVML writes when dynamic MIG creates or destroys an instance
// (emulator/nvml/shim/mig.c), by the volume that mounts each writable: the
// state file with its lock and temporary file, the capability nodes, and
// the capability access files with their directories.
var driverRootWritable = []struct{ volume, dir string }{
	{"driver-root-state", "run/drakit-emulator"},
	{"driver-root-caps", "dev/nvidia-caps"},
	{"driver-root-capabilities", "proc/driver/nvidia/capabilities"},
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

// Validate reports every invalid field by name and flag of drakit driver,
// including what the driver itself would reject (name, socket path lengths)
// and host paths that must not be mounted into the driver pod (see
// systemDirs and systemTrees; the three must not overlap, since each is
// mounted with its own access). The error wraps ErrInvalidOptions.
func (o *Options) Validate() error {
	var own []error
	if o.RuntimeClassName != "" {
		if msgs := validation.IsDNS1123Subdomain(o.RuntimeClassName); len(msgs) > 0 {
			own = append(own, fmt.Errorf("RuntimeClassName (--runtime-class-name) %q: %s", o.RuntimeClassName, strings.Join(msgs, "; ")))
		}
	}
	if o.IMEXChannels < 0 || o.IMEXChannels > nvidiahw.IMEXMaxChannels {
		own = append(own, fmt.Errorf("IMEXChannels (--imex-channels) %d: want 0 (no IMEX controller) to %d", o.IMEXChannels, nvidiahw.IMEXMaxChannels))
	}
	if o.RegistrarDir != "" && (!filepath.IsAbs(o.RegistrarDir) || !within(filepath.Clean(o.RegistrarDir), filepath.Clean(o.KubeletRootDir))) {
		own = append(own, fmt.Errorf("RegistrarDir (--registrar-dir) %q: want an absolute directory below KubeletRootDir %q", o.RegistrarDir, o.KubeletRootDir))
	}
	return o.common().validate(own, hostPathOption{"DriverRoot", "driver-root", o.DriverRoot})
}
