package deploy

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strconv"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"drakit.dev/drakit/reference/plaindriver"
)

// Fixed names of the plain driver's deployment (manifests/plain), apart
// from the reference driver's so that both run side by side.
const (
	PlainNamespace = "drakit-plain"
	// PlainName is the name of the DaemonSet, service account, cluster
	// role and binding, and of the admission policy and its binding; the
	// driver pods carry AppLabel=PlainName.
	PlainName = "drakit-plain-driver"
)

// plainWorkload is the plain driver's.
var plainWorkload = workload{PlainNamespace, PlainName}

// PlainOptions says how to deploy the plain driver (reference/plaindriver).
// Paths are host paths on the nodes.
type PlainOptions struct {
	// DriverName is the DRA driver name and the DeviceClass name.
	DriverName string
	// Image is the driver image; it is never pulled (imagePullPolicy Never).
	Image string
	// KubeletRootDir is the kubelet's --root-dir: plugin sockets go below
	// <KubeletRootDir>/plugins_registry and <KubeletRootDir>/plugins.
	KubeletRootDir string
	// CDIDir is the directory the container runtime reads CDI specs from.
	CDIDir string
	// StateDir is the driver's state directory (checkpoint, the device
	// directories that the CDI specs mount into containers).
	StateDir string
	// Devices is how many devices the driver publishes.
	Devices int
	// Defect is the deliberate bug the driver runs with; empty for none.
	Defect plaindriver.Defect
	// APIServerHost and APIServerPort are how the hostNetwork driver pod
	// reaches the apiserver (KUBERNETES_SERVICE_HOST/PORT). An empty host
	// keeps what the kubelet injects (the kubernetes Service).
	APIServerHost string
	APIServerPort int
	// Timeout bounds ApplyPlain's and DeletePlain's wait.
	Timeout time.Duration
}

// DefaultPlainOptions returns the options manifests/plain is written with.
func DefaultPlainOptions() PlainOptions {
	return PlainOptions{
		DriverName:     plaindriver.DefaultDriverName,
		Image:          "drakit.dev/plain-driver:dev",
		KubeletRootDir: "/var/lib/kubelet",
		CDIDir:         plaindriver.DefaultCDIDir,
		StateDir:       plaindriver.DefaultStateDir,
		Devices:        plaindriver.DefaultDevices,
		APIServerHost:  "127.0.0.1",
		APIServerPort:  6443,
		Timeout:        2 * time.Minute,
	}
}

func (o *PlainOptions) registrarDir() string {
	return filepath.Join(o.KubeletRootDir, "plugins_registry")
}

func (o *PlainOptions) pluginDir() string {
	return filepath.Join(o.KubeletRootDir, "plugins", o.DriverName)
}

// Validate reports every invalid field by name and flag of drakit
// plain-driver, including what the driver itself would reject (name,
// defect, number of devices, socket path lengths) and host paths that must
// not be mounted into the driver pod (as Options.Validate). The error wraps
// ErrInvalidOptions.
func (o *PlainOptions) Validate() error {
	errs := checkNameAndImage(o.DriverName, o.Image)
	if err := o.Defect.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("Defect (--defect): %w", err))
	} else if err := plaindriver.ValidateDevices(o.Devices, o.Defect); err != nil {
		errs = append(errs, fmt.Errorf("Devices (--devices): %w", err))
	}
	pathErrs, ok := checkHostPaths([]hostPathOption{
		{"KubeletRootDir", "kubelet-root-dir", o.KubeletRootDir},
		{"CDIDir", "cdi-dir", o.CDIDir},
		{"StateDir", "state-dir", o.StateDir},
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

// PlainManifests are the plain driver's objects, rendered for one
// PlainOptions.
type PlainManifests struct {
	Namespace          *corev1.Namespace
	ServiceAccount     *corev1.ServiceAccount
	ClusterRole        *rbacv1.ClusterRole
	ClusterRoleBinding *rbacv1.ClusterRoleBinding
	// Policy and PolicyBinding limit the service account to the
	// ResourceSlices of the driver on its own node.
	Policy        *admissionregistrationv1.ValidatingAdmissionPolicy
	PolicyBinding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	DaemonSet     *appsv1.DaemonSet
	// DeviceClass is <driver name>: every device of the driver.
	DeviceClass *resourceapi.DeviceClass
}

// List returns the objects in the order they are applied: the policy before
// the DaemonSet, so that no driver pod runs unconstrained.
func (m *PlainManifests) List() []runtime.Object {
	return []runtime.Object{m.Namespace, m.ServiceAccount, m.ClusterRole, m.ClusterRoleBinding, m.Policy, m.PolicyBinding,
		m.DaemonSet, m.DeviceClass}
}

// decodePlain decodes manifests/plain as written.
func decodePlain() (*PlainManifests, error) {
	m := &PlainManifests{
		Namespace:          &corev1.Namespace{},
		ServiceAccount:     &corev1.ServiceAccount{},
		ClusterRole:        &rbacv1.ClusterRole{},
		ClusterRoleBinding: &rbacv1.ClusterRoleBinding{},
		Policy:             &admissionregistrationv1.ValidatingAdmissionPolicy{},
		PolicyBinding:      &admissionregistrationv1.ValidatingAdmissionPolicyBinding{},
		DaemonSet:          &appsv1.DaemonSet{},
		DeviceClass:        &resourceapi.DeviceClass{},
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
	} {
		if err := decode(path.Join("plain", file), into); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// PlainObjects validates opts and renders manifests/plain for them: the
// driver name (DeviceClass name and selector, driver flag, plugin
// directory, the policy's driver), the image, the number of devices, the
// defect, every host path and the apiserver's address.
func PlainObjects(opts PlainOptions) (*PlainManifests, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	m, err := decodePlain()
	if err != nil {
		return nil, err
	}
	m.DeviceClass.Name = opts.DriverName
	if len(m.DeviceClass.Spec.Selectors) != 1 || m.DeviceClass.Spec.Selectors[0].CEL == nil {
		return nil, errors.New("manifest plain/deviceclass.yaml: want exactly one CEL selector")
	}
	m.DeviceClass.Spec.Selectors[0].CEL.Expression = fmt.Sprintf("device.driver == %q", opts.DriverName)
	if err := renderPolicy(m.Policy, opts.DriverName); err != nil {
		return nil, fmt.Errorf("manifest plain/validatingadmissionpolicy.yaml: %w", err)
	}
	if err := renderPlainPod(&m.DaemonSet.Spec.Template.Spec, opts); err != nil {
		return nil, fmt.Errorf("manifest plain/daemonset.yaml: %w", err)
	}
	return m, nil
}

// renderPlainPod substitutes opts into the driver pod: image, flags,
// apiserver environment and host paths (each mounted at its own path).
func renderPlainPod(pod *corev1.PodSpec, opts PlainOptions) error {
	if len(pod.Containers) != 1 || pod.Containers[0].Name != "driver" {
		return errors.New("want exactly one container named driver")
	}
	c := &pod.Containers[0]
	c.Image = opts.Image
	for flag, value := range map[string]string{
		"driver-name":           opts.DriverName,
		"devices":               strconv.Itoa(opts.Devices),
		"defect":                string(opts.Defect),
		"state-dir":             opts.StateDir,
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
		"state-dir":     opts.StateDir,
	} {
		if err := setHostPath(pod, volume, hostPath); err != nil {
			return err
		}
	}
	return nil
}

// ApplyPlain creates or updates the plain driver's deployment and waits
// until its DaemonSet is rolled out, its pods are Ready and every node with
// a Ready pod has a ResourceSlice of the driver — except with defect
// duplicate-device-names, which by design publishes none: then it waits
// for the pods only and deletes the driver's ResourceSlices that an earlier,
// correct run left (the driver's controller, refusing its pool, neither
// updates nor removes them), so that no node has one. On timeout the error
// carries the pods' diagnostics.
func ApplyPlain(ctx context.Context, client kubernetes.Interface, opts PlainOptions) error {
	m, err := PlainObjects(opts)
	if err != nil {
		return err
	}
	if err := applyObjects(ctx, client, m.List()); err != nil {
		return fmt.Errorf("apply driver %s: %w", opts.DriverName, err)
	}
	publishes := opts.Defect != plaindriver.DefectDuplicateDeviceNames
	if err := waitReady(ctx, client, plainWorkload, opts.DriverName, opts.Timeout, publishes); err != nil || publishes {
		return err
	}
	n, err := deleteSlices(ctx, client, opts.DriverName)
	if err != nil {
		return fmt.Errorf("apply driver %s: %w", opts.DriverName, err)
	}
	klog.FromContext(ctx).Info("Deleted the ResourceSlices of an earlier run: the driver publishes none with its defect",
		"driver", opts.DriverName, "defect", opts.Defect, "slicesDeleted", n)
	return nil
}

// DeletePlain removes what ApplyPlain created, waits for the driver pods to
// go, then deletes the admission policy and its binding and the driver's
// ResourceSlices, and waits for the namespace to go. Deleting what does not
// exist succeeds.
func DeletePlain(ctx context.Context, client kubernetes.Interface, opts PlainOptions) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	return deleteDriver(ctx, client, plainWorkload, opts.DriverName, []string{opts.DriverName}, opts.Timeout)
}
