package deploy

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Fixed names of the deployment.
const (
	Namespace = "drakit-system"
	// Name of the DaemonSet, service account, cluster role and binding.
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
	// It must not be "/": it is mounted at the same path inside the pod.
	DriverRoot string
	// APIServerHost and APIServerPort are how the hostNetwork driver pod
	// reaches the apiserver (KUBERNETES_SERVICE_HOST/PORT). An empty host
	// keeps what the kubelet injects (the kubernetes Service).
	APIServerHost string
	APIServerPort int
	// PartitionableAlpha makes the driver publish the alpha fields of
	// partitionable devices (partitionTypeAttribute, KEP-5677, and
	// compatibilityGroups, KEP-5963); the cluster needs the gates
	// DRAPartitionableDevicesType and DRADeviceCompatibilityGroups.
	PartitionableAlpha bool
	// Timeout bounds Apply's and Delete's wait.
	Timeout time.Duration
}

// DefaultOptions returns the options the manifests are written with.
func DefaultOptions() Options {
	return Options{
		DriverName:     "gpu.drakit.dev",
		Image:          "drakit.dev/driver:dev",
		KubeletRootDir: "/var/lib/kubelet",
		CDIDir:         "/var/run/cdi",
		DriverRoot:     "/var/lib/drakit/emulator",
		APIServerHost:  "127.0.0.1",
		APIServerPort:  6443,
		Timeout:        2 * time.Minute,
	}
}

func (o *Options) registrarDir() string { return filepath.Join(o.KubeletRootDir, "plugins_registry") }
func (o *Options) pluginDir() string    { return filepath.Join(o.KubeletRootDir, "plugins", o.DriverName) }

// maxSocketPath is the longest AF_UNIX socket path Linux accepts.
const maxSocketPath = 107

// Validate reports the first invalid field by name, including what the
// driver itself would reject (name, socket path lengths).
func (o *Options) Validate() error {
	if msgs := validation.IsDNS1123Subdomain(o.DriverName); len(msgs) > 0 {
		return fmt.Errorf("%w: DriverName %q: %s", ErrInvalidOptions, o.DriverName, strings.Join(msgs, "; "))
	}
	if len(o.DriverName) > 63 {
		return fmt.Errorf("%w: DriverName %q is longer than 63 characters", ErrInvalidOptions, o.DriverName)
	}
	if o.Image == "" {
		return fmt.Errorf("%w: Image is required", ErrInvalidOptions)
	}
	for _, p := range []struct{ field, value string }{
		{"KubeletRootDir", o.KubeletRootDir},
		{"CDIDir", o.CDIDir},
		{"DriverRoot", o.DriverRoot},
	} {
		if !filepath.IsAbs(p.value) || filepath.Clean(p.value) != p.value {
			return fmt.Errorf("%w: %s %q must be a clean absolute path", ErrInvalidOptions, p.field, p.value)
		}
	}
	if o.DriverRoot == "/" {
		return fmt.Errorf("%w: DriverRoot must not be /: it is mounted at the same path inside the driver pod", ErrInvalidOptions)
	}
	if o.APIServerHost != "" && (o.APIServerPort < 1 || o.APIServerPort > 65535) {
		return fmt.Errorf("%w: APIServerPort %d is not a port", ErrInvalidOptions, o.APIServerPort)
	}
	if o.APIServerHost == "" && o.APIServerPort != 0 {
		return fmt.Errorf("%w: APIServerPort %d is set without APIServerHost", ErrInvalidOptions, o.APIServerPort)
	}
	if o.Timeout <= 0 {
		return fmt.Errorf("%w: Timeout %s must be positive", ErrInvalidOptions, o.Timeout)
	}
	for _, sock := range []string{
		filepath.Join(o.registrarDir(), o.DriverName+"-reg.sock"),
		filepath.Join(o.pluginDir(), "dra.sock"),
	} {
		if len(sock) > maxSocketPath {
			return fmt.Errorf("%w: KubeletRootDir %q: the driver's socket %s is longer than %d bytes (AF_UNIX limit)",
				ErrInvalidOptions, o.KubeletRootDir, sock, maxSocketPath)
		}
	}
	return nil
}
