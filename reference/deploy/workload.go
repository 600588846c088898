package deploy

import (
	"errors"
	"fmt"
	"net"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// What the three drivers' deployments (Options, PlainOptions, NICOptions)
// share: the options every one has, how they are checked, the objects
// every one has and how its driver pod is rendered. Each driver's file
// adds only what differs: its own options and their checks, its extra
// device classes, its flags and host paths.

// driverOptions are the options every driver's deployment has.
type driverOptions struct {
	driverName, image, kubeletRootDir, cdiDir string
	apiServerHost                             string
	apiServerPort                             int
	timeout                                   time.Duration
	// registrar is where the driver registers; empty: the kubelet's
	// plugin registration directory.
	registrar string
	// node pins the deployment to one node (pinToNode); empty: every node.
	node string
	// httpPort is the driver's loopback port for /metrics and /healthz
	// (and the liveness probe); 0: none.
	httpPort int
	// workload is the name of the driver's DaemonSet before pinToNode
	// (Name, NICName, …): with node, pinnedName(workload, node).
	workload string
}

// The default HTTPPort of each driver's deployment: a port of its own on
// the node's loopback, so that the drivers run side by side.
const (
	DefaultHTTPPort      = 9470
	DefaultNICHTTPPort   = 9471
	DefaultCPUHTTPPort   = 9472
	DefaultTPUHTTPPort   = 9473
	DefaultPlainHTTPPort = 9474
)

// NodeLabel labels the pods (and selects them) of a deployment pinned to a
// node: <NodeLabel>=<node name>.
const NodeLabel = "drakit.dev/node"

// pinnedName is the name of a DaemonSet pinned to node: name-<node> with
// dashes for dots (a node name is a DNS subdomain), or name for "".
func pinnedName(name, node string) string {
	if node == "" {
		return name
	}
	return name + "-" + strings.ReplaceAll(node, ".", "-")
}

// pinToNode renames the DaemonSet for node, adds NodeLabel=node to its
// labels, selector and pod labels, and schedules its pods only on node (by
// kubernetes.io/hostname). It leaves the DaemonSet as it is for "".
func pinToNode(ds *appsv1.DaemonSet, node string) {
	if node == "" {
		return
	}
	ds.Name = pinnedName(ds.Name, node)
	for _, set := range []*map[string]string{&ds.Labels, &ds.Spec.Selector.MatchLabels, &ds.Spec.Template.Labels} {
		if *set == nil {
			*set = map[string]string{}
		}
		(*set)[NodeLabel] = node
	}
	if ds.Spec.Template.Spec.NodeSelector == nil {
		ds.Spec.Template.Spec.NodeSelector = map[string]string{}
	}
	ds.Spec.Template.Spec.NodeSelector[corev1.LabelHostname] = node
}

// registrarDir is where the driver registers: the kubelet's plugin
// registration directory unless registrar names another (a driver
// behind drakit interpose).
func (o driverOptions) registrarDir() string {
	if o.registrar != "" {
		return o.registrar
	}
	return filepath.Join(o.kubeletRootDir, "plugins_registry")
}

// pluginDir is the driver's directory below the kubelet's plugins.
func (o driverOptions) pluginDir() string {
	return filepath.Join(o.kubeletRootDir, "plugins", o.driverName)
}

// validate checks o, with the driver's own errors (its other options)
// after the name and image, and its host paths after KubeletRootDir and
// CDIDir (none may overlap another); the error wraps ErrInvalidOptions.
func (o driverOptions) validate(own []error, paths ...hostPathOption) error {
	errs := checkNameAndImage(o.driverName, o.image)
	if o.node != "" {
		if msgs := validation.IsDNS1123Subdomain(o.node); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("Node (--node) %q is not a node name: %s", o.node, strings.Join(msgs, "; ")))
		} else if ds := pinnedName(o.workload, o.node); len(ds) > 63 {
			errs = append(errs, fmt.Errorf("Node (--node) %q is too long to name the driver's DaemonSet after it: %s has %d characters, at most 63", o.node, ds, len(ds)))
		}
	}
	errs = append(errs, own...)
	pathErrs, ok := checkHostPaths(append([]hostPathOption{
		{"KubeletRootDir", "kubelet-root-dir", o.kubeletRootDir},
		{"CDIDir", "cdi-dir", o.cdiDir},
	}, paths...))
	errs = append(errs, pathErrs...)
	if ok[0] {
		errs = append(errs, checkSockets(o.kubeletRootDir, o.registrarDir(), o.pluginDir(), o.driverName)...)
	}
	errs = append(errs, checkAPIServerAndTimeout(o.apiServerHost, o.apiServerPort, o.timeout)...)
	if o.httpPort < 0 || o.httpPort > 65535 {
		errs = append(errs, fmt.Errorf("HTTPPort (--http-port) %d: want 0 (no metrics, health or liveness probe) or a port", o.httpPort))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidOptions, errors.Join(errs...))
	}
	return nil
}

// DriverObjects are the objects every driver's deployment has.
type DriverObjects struct {
	Namespace      *corev1.Namespace
	ServiceAccount *corev1.ServiceAccount
	// ClusterRole has a kubelet plugin's rules (and what else the driver
	// needs).
	ClusterRole        *rbacv1.ClusterRole
	ClusterRoleBinding *rbacv1.ClusterRoleBinding
	// Policy and PolicyBinding limit the service account to the
	// ResourceSlices of the driver on its own node.
	Policy        *admissionregistrationv1.ValidatingAdmissionPolicy
	PolicyBinding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	DaemonSet     *appsv1.DaemonSet
	// DeviceClass is <driver name>.
	DeviceClass *resourceapi.DeviceClass
}

// list returns the objects in the order they are applied: the policy
// before the DaemonSet, so that no driver pod runs unconstrained; extra
// (a driver's other device classes) last.
func (m *DriverObjects) list(extra ...runtime.Object) []runtime.Object {
	return append([]runtime.Object{m.Namespace, m.ServiceAccount, m.ClusterRole, m.ClusterRoleBinding, m.Policy, m.PolicyBinding,
		m.DaemonSet, m.DeviceClass}, extra...)
}

// decodeDriver decodes the manifests in dir (below manifests; "" for the
// GPU driver's) as written: the common objects, and extra, the driver's
// own, by file name.
func decodeDriver(dir string, extra map[string]any) (DriverObjects, error) {
	m := DriverObjects{
		Namespace:          &corev1.Namespace{},
		ServiceAccount:     &corev1.ServiceAccount{},
		ClusterRole:        &rbacv1.ClusterRole{},
		ClusterRoleBinding: &rbacv1.ClusterRoleBinding{},
		Policy:             &admissionregistrationv1.ValidatingAdmissionPolicy{},
		PolicyBinding:      &admissionregistrationv1.ValidatingAdmissionPolicyBinding{},
		DaemonSet:          &appsv1.DaemonSet{},
		DeviceClass:        &resourceapi.DeviceClass{},
	}
	files := map[string]any{
		"namespace.yaml":                        m.Namespace,
		"serviceaccount.yaml":                   m.ServiceAccount,
		"clusterrole.yaml":                      m.ClusterRole,
		"clusterrolebinding.yaml":               m.ClusterRoleBinding,
		"validatingadmissionpolicy.yaml":        m.Policy,
		"validatingadmissionpolicybinding.yaml": m.PolicyBinding,
		"daemonset.yaml":                        m.DaemonSet,
		"deviceclass.yaml":                      m.DeviceClass,
	}
	for file, into := range extra {
		files[file] = into
	}
	for file, into := range files {
		if err := decode(path.Join(dir, file), into); err != nil {
			return DriverObjects{}, err
		}
	}
	return m, nil
}

// deviceClass is one device class of a driver's deployment: the manifest
// it is decoded from, its name and the expression of its one CEL selector.
type deviceClass struct {
	file, name, expression string
	class                  *resourceapi.DeviceClass
}

// renderClasses names each class and sets its selector.
func renderClasses(classes ...deviceClass) error {
	for _, c := range classes {
		c.class.Name = c.name
		if len(c.class.Spec.Selectors) != 1 || c.class.Spec.Selectors[0].CEL == nil {
			return fmt.Errorf("manifest %s: want exactly one CEL selector", c.file)
		}
		c.class.Spec.Selectors[0].CEL.Expression = c.expression
	}
	return nil
}

// renderDriverPod substitutes o into the driver pod, whose one container
// is named driver: the image, the apiserver environment, the flags
// driver-name, cdi-dir, kubelet-registrar-dir and kubelet-plugin-dir and
// the driver's own flags, and the host paths of the volumes plugin-dir,
// registrar-dir and cdi-dir and the driver's own hostPaths (by volume;
// each mounted at its own path). It returns the container.
func renderDriverPod(pod *corev1.PodSpec, o driverOptions, flags, hostPaths map[string]string) (*corev1.Container, error) {
	if len(pod.Containers) != 1 || pod.Containers[0].Name != "driver" {
		return nil, errors.New("want exactly one container named driver")
	}
	c := &pod.Containers[0]
	c.Image = o.image
	allFlags := map[string]string{
		"driver-name":           o.driverName,
		"cdi-dir":               o.cdiDir,
		"kubelet-registrar-dir": o.registrarDir(),
		"kubelet-plugin-dir":    o.pluginDir(),
	}
	for flag, value := range flags {
		allFlags[flag] = value
	}
	for flag, value := range allFlags {
		if err := setFlag(c, flag, value); err != nil {
			return nil, err
		}
	}
	if err := setAPIServerEnv(c, o.apiServerHost, o.apiServerPort); err != nil {
		return nil, err
	}
	if err := setHTTPPort(c, o.httpPort); err != nil {
		return nil, err
	}
	allPaths := map[string]string{
		"plugin-dir":    o.pluginDir(),
		"registrar-dir": o.registrarDir(),
		"cdi-dir":       o.cdiDir,
	}
	for volume, hostPath := range hostPaths {
		allPaths[volume] = hostPath
	}
	for volume, hostPath := range allPaths {
		if err := setHostPath(pod, volume, hostPath); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// setHTTPPort points --http-endpoint and the liveness probe at port on the
// loopback, or drops both for 0.
func setHTTPPort(c *corev1.Container, port int) error {
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil {
		return fmt.Errorf("container %s has no HTTP liveness probe", c.Name)
	}
	if port == 0 {
		c.LivenessProbe = nil
		c.Args = slices.DeleteFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--http-endpoint=") })
		return nil
	}
	c.LivenessProbe.HTTPGet.Port = intstr.FromInt(port)
	return setFlag(c, "http-endpoint", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
}
