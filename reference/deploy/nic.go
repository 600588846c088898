package deploy

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"drakit.dev/drakit/reference/nicdriver"
)

//go:embed manifests/nic/*.yaml
var nicManifests embed.FS

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
var nicWorkload = workload{NICNamespace, NICName}

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
	}
}

func (o *NICOptions) registrarDir() string {
	return filepath.Join(o.KubeletRootDir, "plugins_registry")
}
func (o *NICOptions) pluginDir() string {
	return filepath.Join(o.KubeletRootDir, "plugins", o.DriverName)
}
func (o *NICOptions) sysfsDir() string { return filepath.Join(o.HostRoot, "sys") }

// Validate reports every invalid field by name and flag of drakit
// nic-driver, including what the driver itself would reject (name, number
// of VFs, socket path lengths) and host paths that must not be mounted into
// the driver pod (as Options.Validate; the host root must not be a system
// directory, so a real node's /sys is refused). The error wraps
// ErrInvalidOptions.
func (o *NICOptions) Validate() error {
	errs := checkNameAndImage(o.DriverName, o.Image)
	if o.VFsPerPF < 0 || o.VFsPerPF > nicdriver.MaxVFsPerPF {
		errs = append(errs, fmt.Errorf("VFsPerPF (--vfs-per-pf) %d is not between 0 and %d", o.VFsPerPF, nicdriver.MaxVFsPerPF))
	}
	pathErrs, ok := checkHostPaths([]hostPathOption{
		{"KubeletRootDir", "kubelet-root-dir", o.KubeletRootDir},
		{"CDIDir", "cdi-dir", o.CDIDir},
		{"HostRoot", "host-root", o.HostRoot},
	})
	errs = append(errs, pathErrs...)
	if ok[0] {
		errs = append(errs, checkSockets(o.KubeletRootDir, o.registrarDir(), o.pluginDir(), o.DriverName)...)
	}
	errs = append(errs, checkAPIServerAndTimeout(o.APIServerHost, o.APIServerPort, o.Timeout)...)
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidOptions, errors.Join(errs...))
	}
	return nil
}

// NICManifests are the NIC driver's objects, rendered for one NICOptions.
type NICManifests struct {
	Namespace      *corev1.Namespace
	ServiceAccount *corev1.ServiceAccount
	// ClusterRole has a kubelet plugin's rules and, for the device status,
	// patch on resourceclaims/status and associated-node:patch on
	// resourceclaims/driver for the driver's name only.
	ClusterRole        *rbacv1.ClusterRole
	ClusterRoleBinding *rbacv1.ClusterRoleBinding
	// Policy and PolicyBinding limit the service account to the
	// ResourceSlices of the driver on its own node.
	Policy        *admissionregistrationv1.ValidatingAdmissionPolicy
	PolicyBinding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	DaemonSet     *appsv1.DaemonSet
	// DeviceClass is <driver name>: the PFs' bandwidth shares (type pf).
	DeviceClass *resourceapi.DeviceClass
	// VFDeviceClass is vf.<driver name>: the VFs (type vf).
	VFDeviceClass *resourceapi.DeviceClass
}

// List returns the objects in the order they are applied: the policy before
// the DaemonSet, so that no driver pod runs unconstrained.
func (m *NICManifests) List() []runtime.Object {
	return []runtime.Object{m.Namespace, m.ServiceAccount, m.ClusterRole, m.ClusterRoleBinding, m.Policy, m.PolicyBinding,
		m.DaemonSet, m.DeviceClass, m.VFDeviceClass}
}

// decodeNIC decodes manifests/nic as written, strictly.
func decodeNIC() (*NICManifests, error) {
	m := &NICManifests{
		Namespace:          &corev1.Namespace{},
		ServiceAccount:     &corev1.ServiceAccount{},
		ClusterRole:        &rbacv1.ClusterRole{},
		ClusterRoleBinding: &rbacv1.ClusterRoleBinding{},
		Policy:             &admissionregistrationv1.ValidatingAdmissionPolicy{},
		PolicyBinding:      &admissionregistrationv1.ValidatingAdmissionPolicyBinding{},
		DaemonSet:          &appsv1.DaemonSet{},
		DeviceClass:        &resourceapi.DeviceClass{},
		VFDeviceClass:      &resourceapi.DeviceClass{},
	}
	for file, into := range map[string]any{
		"namespace.yaml":                        m.Namespace,
		"serviceaccount.yaml":                   m.ServiceAccount,
		"clusterrole.yaml":                      m.ClusterRole,
		"clusterrolebinding.yaml":               m.ClusterRoleBinding,
		"validatingadmissionpolicy.yaml":        m.Policy,
		"validatingadmissionpolicybinding.yaml": m.PolicyBinding,
		"daemonset.yaml":                        m.DaemonSet,
		"deviceclass.yaml":                      m.DeviceClass,
		"vfdeviceclass.yaml":                    m.VFDeviceClass,
	} {
		name := path.Join("manifests", "nic", file)
		data, err := nicManifests.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("read manifest %s: %w", name, err)
		}
		if err := yaml.UnmarshalStrict(data, into); err != nil {
			return nil, fmt.Errorf("decode manifest %s: %w", name, err)
		}
	}
	return m, nil
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
	for _, c := range []struct {
		file, name, typ string
		class           *resourceapi.DeviceClass
	}{
		{"nic/deviceclass.yaml", opts.DriverName, "pf", m.DeviceClass},
		{"nic/vfdeviceclass.yaml", VFDeviceClassName(opts.DriverName), "vf", m.VFDeviceClass},
	} {
		c.class.Name = c.name
		if len(c.class.Spec.Selectors) != 1 || c.class.Spec.Selectors[0].CEL == nil {
			return nil, fmt.Errorf("manifest %s: want exactly one CEL selector", c.file)
		}
		c.class.Spec.Selectors[0].CEL.Expression = fmt.Sprintf("device.driver == %q && device.attributes[%q].?type.orValue(\"\") == %q",
			opts.DriverName, opts.DriverName, c.typ)
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
	if len(pod.Containers) != 1 || pod.Containers[0].Name != "driver" {
		return errors.New("want exactly one container named driver")
	}
	c := &pod.Containers[0]
	c.Image = opts.Image
	for flag, value := range map[string]string{
		"driver-name":           opts.DriverName,
		"host-root":             opts.HostRoot,
		"vfs-per-pf":            strconv.Itoa(opts.VFsPerPF),
		"cdi-dir":               opts.CDIDir,
		"kubelet-registrar-dir": opts.registrarDir(),
		"kubelet-plugin-dir":    opts.pluginDir(),
	} {
		if err := setFlag(c, flag, value); err != nil {
			return err
		}
	}
	if err := setAPIServerEnv(c, opts.APIServerHost, opts.APIServerPort); err != nil {
		return err
	}
	for volume, hostPath := range map[string]string{
		"plugin-dir":    opts.pluginDir(),
		"registrar-dir": opts.registrarDir(),
		"cdi-dir":       opts.CDIDir,
		"sysfs":         opts.sysfsDir(),
	} {
		if err := setHostPath(pod, volume, hostPath); err != nil {
			return err
		}
	}
	return nil
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
	return waitReady(ctx, client, nicWorkload, opts.DriverName, opts.Timeout, true)
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
	return deleteDriver(ctx, client, nicWorkload, opts.DriverName, []string{opts.DriverName, VFDeviceClassName(opts.DriverName)}, opts.Timeout)
}
