package deploy

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
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

// plainWorkload is the plain driver's: PlainNamespace and PlainName, or
// for a variant PlainVariantName(variant) for both, so that variants run
// side by side.
func plainWorkload(variant string) workload {
	if variant == "" {
		return workload{PlainNamespace, PlainName, ""}
	}
	n := PlainVariantName(variant)
	return workload{n, n, ""}
}

// PlainVariantName names a variant's namespace, DaemonSet, service
// account, cluster role and binding and admission policy and binding:
// drakit-plain-<variant>.
func PlainVariantName(variant string) string { return "drakit-plain-" + variant }

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
	// Variant, when set, deploys the driver beside other variants: its
	// namespace and objects are named PlainVariantName(Variant) instead of
	// PlainNamespace and PlainName. The driver name, state directory and
	// HTTP port must then be the variant's own too (drakit plain-driver
	// derives the driver name from it). A DNS label of at most
	// plaindriver.MaxVariantName characters.
	Variant string
	// Style is how the driver publishes devices and hands them to
	// containers; empty for plaindriver.StyleMounts.
	Style plaindriver.Style
	// Defect is the deliberate bug the driver runs with; empty for none.
	Defect plaindriver.Defect
	// APIServerHost and APIServerPort are how the hostNetwork driver pod
	// reaches the apiserver (KUBERNETES_SERVICE_HOST/PORT). An empty host
	// keeps what the kubelet injects (the kubernetes Service).
	APIServerHost string
	APIServerPort int
	// Timeout bounds ApplyPlain's and DeletePlain's wait.
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
		HTTPPort:       DefaultPlainHTTPPort,
	}
}

// common returns the options every driver's deployment has.
func (o *PlainOptions) common() driverOptions {
	return driverOptions{o.DriverName, o.Image, o.KubeletRootDir, o.CDIDir, o.APIServerHost, o.APIServerPort, o.Timeout, "", o.Node, o.HTTPPort, plainWorkload(o.Variant).name}
}

// Validate reports every invalid field by name and flag of drakit
// plain-driver, including what the driver itself would reject (name,
// defect, number of devices, socket path lengths) and host paths that must
// not be mounted into the driver pod (as Options.Validate). The error wraps
// ErrInvalidOptions.
func (o *PlainOptions) Validate() error {
	var own []error
	if err := plaindriver.ValidateVariantName(o.Variant); err != nil {
		own = append(own, fmt.Errorf("Variant (--variant): %w", err))
	}
	styleErr, defectErr := o.Style.Validate(), o.Defect.Validate()
	if styleErr != nil {
		own = append(own, fmt.Errorf("Style (--style): %w", styleErr))
	}
	if defectErr != nil {
		own = append(own, fmt.Errorf("Defect (--defect): %w", defectErr))
	}
	if styleErr == nil && defectErr == nil {
		if err := o.Defect.ValidateStyle(o.Style); err != nil {
			own = append(own, fmt.Errorf("Defect (--defect): %w", err))
		} else if err := plaindriver.ValidateDevices(o.Devices, o.Style, o.Defect); err != nil {
			own = append(own, fmt.Errorf("Devices (--devices): %w", err))
		}
	}
	return o.common().validate(own, hostPathOption{"StateDir", "state-dir", o.StateDir})
}

// PlainManifests are the plain driver's objects, rendered for one
// PlainOptions.
type PlainManifests struct {
	// DriverObjects' DeviceClass is <driver name>: every device of the
	// driver, or its whole devices in a style with more kinds.
	DriverObjects
	// KindClasses are the classes of the style's other kinds
	// (plaindriver.DeviceClasses): partition.<driver name>,
	// shared.<driver name>.
	KindClasses []*resourceapi.DeviceClass
}

// List returns the objects in the order they are applied: the policy before
// the DaemonSet, so that no driver pod runs unconstrained.
func (m *PlainManifests) List() []runtime.Object {
	extra := make([]runtime.Object, len(m.KindClasses))
	for i, c := range m.KindClasses {
		extra[i] = c
	}
	return m.list(extra...)
}

// decodePlain decodes manifests/plain as written.
func decodePlain() (*PlainManifests, error) {
	m, err := decodeDriver("plain", nil)
	if err != nil {
		return nil, err
	}
	return &PlainManifests{DriverObjects: m}, nil
}

// PlainObjects validates opts and renders manifests/plain for them: the
// driver name (DeviceClass name and selector, driver flag, plugin
// directory, the policy's driver), the style's device classes, the image,
// the number of devices, the style and the defect, every host path, the
// apiserver's address and, for a variant, its namespace and names.
func PlainObjects(opts PlainOptions) (*PlainManifests, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	m, err := decodePlain()
	if err != nil {
		return nil, err
	}
	var classes []deviceClass
	for i, c := range plaindriver.DeviceClasses(opts.DriverName, opts.Style) {
		class := m.DeviceClass
		if i > 0 {
			class = m.DeviceClass.DeepCopy()
			m.KindClasses = append(m.KindClasses, class)
		}
		classes = append(classes, deviceClass{"plain/deviceclass.yaml", c.Name, c.Expression, class})
	}
	if err := renderClasses(classes...); err != nil {
		return nil, err
	}
	if err := renderPolicy(m.Policy, opts.DriverName); err != nil {
		return nil, fmt.Errorf("manifest plain/validatingadmissionpolicy.yaml: %w", err)
	}
	if opts.Variant != "" {
		if err := renamePlain(m, plainWorkload(opts.Variant)); err != nil {
			return nil, err
		}
	}
	if err := renderPlainPod(&m.DaemonSet.Spec.Template.Spec, opts); err != nil {
		return nil, fmt.Errorf("manifest plain/daemonset.yaml: %w", err)
	}
	pinToNode(m.DaemonSet, opts.Node)
	return m, nil
}

// renderPlainPod substitutes opts into the driver pod: image, flags,
// apiserver environment and host paths (each mounted at its own path).
func renderPlainPod(pod *corev1.PodSpec, opts PlainOptions) error {
	_, err := renderDriverPod(pod, opts.common(), map[string]string{
		"devices":   strconv.Itoa(opts.Devices),
		"style":     string(opts.Style),
		"defect":    string(opts.Defect),
		"state-dir": opts.StateDir,
	}, map[string]string{"state-dir": opts.StateDir})
	return err
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
	if err := waitReady(ctx, client, plainWorkload(opts.Variant).on(opts.Node), opts.DriverName, opts.Timeout, publishes); err != nil || publishes {
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
	var classes []string
	for _, c := range plaindriver.DeviceClasses(opts.DriverName, opts.Style) {
		classes = append(classes, c.Name)
	}
	return deleteDriver(ctx, client, plainWorkload(opts.Variant).on(opts.Node), opts.DriverName, classes, opts.Timeout)
}

// plainAccountCondition is the plain policy's matchCondition that matches
// the driver's service account.
const plainAccountCondition = "driver-service-account"

// renamePlain moves the deployment to w's namespace and names: the
// namespace, the service account and the objects named after it, the
// subject of the role binding, the username the policy matches, and the
// app label of every object and the DaemonSet's selector.
func renamePlain(m *PlainManifests, w workload) error {
	matched := false
	for i := range m.Policy.Spec.MatchConditions {
		if c := &m.Policy.Spec.MatchConditions[i]; c.Name == plainAccountCondition {
			c.Expression = fmt.Sprintf("request.userInfo.username == %q", serviceaccount.MakeUsername(w.namespace, w.name))
			matched = true
		}
	}
	if !matched {
		return fmt.Errorf("manifest plain/validatingadmissionpolicy.yaml: no matchCondition %s", plainAccountCondition)
	}
	if len(m.ClusterRoleBinding.Subjects) != 1 {
		return errors.New("manifest plain/clusterrolebinding.yaml: want exactly one subject")
	}
	m.Namespace.Name = w.namespace
	m.ServiceAccount.Name, m.ServiceAccount.Namespace = w.name, w.namespace
	m.ClusterRole.Name = w.name
	m.ClusterRoleBinding.Name, m.ClusterRoleBinding.RoleRef.Name = w.name, w.name
	m.ClusterRoleBinding.Subjects[0].Name, m.ClusterRoleBinding.Subjects[0].Namespace = w.name, w.namespace
	m.Policy.Name, m.PolicyBinding.Name, m.PolicyBinding.Spec.PolicyName = w.name, w.name, w.name
	ds := m.DaemonSet
	ds.Name, ds.Namespace, ds.Spec.Template.Spec.ServiceAccountName = w.name, w.namespace, w.name
	for _, set := range []map[string]string{
		m.ServiceAccount.Labels, m.ClusterRole.Labels, m.ClusterRoleBinding.Labels, m.Policy.Labels, m.PolicyBinding.Labels,
		ds.Labels, ds.Spec.Selector.MatchLabels, ds.Spec.Template.Labels,
	} {
		if _, ok := set[AppLabel]; !ok {
			return fmt.Errorf("manifests plain: an object has no label %s", AppLabel)
		}
		set[AppLabel] = w.name
	}
	return nil
}
