package deploy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/engine"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"drakit.dev/drakit/deployments/helm"
)

// DriverObjects are the objects every kind's deployment has.
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

// ControllerObjects are a kind's cluster-level controller's objects: the
// GPU driver's IMEX channel controller (Options.IMEXChannels > 0), the TPU
// driver's sub-slice controller. Its policy and binding limit its service
// account to the driver's ResourceSlices without a node name.
type ControllerObjects struct {
	ServiceAccount     *corev1.ServiceAccount
	ClusterRole        *rbacv1.ClusterRole
	ClusterRoleBinding *rbacv1.ClusterRoleBinding
	Policy             *admissionregistrationv1.ValidatingAdmissionPolicy
	PolicyBinding      *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	Deployment         *appsv1.Deployment
}

// Manifests are a deployment's objects, the chart rendered for one Options.
type Manifests struct {
	DriverObjects
	// Classes are the kind's other DeviceClasses, in the chart's order:
	// mig.<driver> (and imex.<driver> with the IMEX controller),
	// vf.<driver>, subslice.<driver>, the plain style's partition.<driver>
	// or shared.<driver>.
	Classes []*resourceapi.DeviceClass
	// Controller is the kind's controller; nil without one.
	Controller *ControllerObjects
}

// List returns the objects in the order they are applied: the policy before
// the DaemonSet, so that no driver pod runs unconstrained, the classes
// before the controller (the IMEX controller looks its owner up), and the
// controller's policy before its Deployment.
func (m *Manifests) List() []runtime.Object {
	objs := []runtime.Object{m.Namespace, m.ServiceAccount, m.ClusterRole, m.ClusterRoleBinding, m.Policy, m.PolicyBinding,
		m.DaemonSet, m.DeviceClass}
	for _, c := range m.Classes {
		objs = append(objs, c)
	}
	if c := m.Controller; c != nil {
		objs = append(objs, c.ServiceAccount, c.ClusterRole, c.ClusterRoleBinding, c.Policy, c.PolicyBinding, c.Deployment)
	}
	return objs
}

// Objects validates opts and renders the chart for them (Values).
func Objects(opts Options) (*Manifests, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	objs, err := render(opts)
	if err != nil {
		return nil, err
	}
	return sortObjects(objs)
}

// Values are the chart's values for opts: every option set, so that
// nothing is left to the chart's defaults but the verbosities and the
// controllers' names.
func Values(opts Options) map[string]any {
	repository, tag := splitImage(opts.Image)
	vals := map[string]any{
		"kind":           string(opts.Kind),
		"driverName":     opts.DriverName,
		"image":          map[string]any{"repository": repository, "tag": tag},
		"kubeletRootDir": opts.KubeletRootDir,
		"registrarDir":   opts.RegistrarDir,
		"cdiDir":         opts.CDIDir,
		"apiServer":      map[string]any{"host": opts.APIServerHost, "port": opts.APIServerPort},
		"httpPort":       opts.HTTPPort,
		"node":           opts.Node,
	}
	s := kinds[opts.Kind]
	for _, p := range s.hostPaths(&opts) {
		switch p.field {
		case "HostRoot":
			vals["hostRoot"] = p.value
		case "StateDir":
			vals["stateDir"] = p.value
		}
	}
	for k, v := range s.values(&opts) {
		vals[k] = v
	}
	return vals
}

// splitImage splits image into the chart's repository and tag: at its last
// colon after its last slash, or with tag latest when it has none (what
// the runtime takes it for).
func splitImage(image string) (repository, tag string) {
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		return image[:i], image[i+1:]
	}
	return image, "latest"
}

// releaseService is the managed-by label of what drakit applies.
const releaseService = "drakit"

// render renders the chart for opts as a release named after the
// deployment's objects (so that the chart names them so) and decodes every
// object strictly, by template file.
func render(opts Options) (map[string][]runtime.Object, error) {
	return renderValues(Values(opts), opts.name(), opts.namespace())
}

// renderValues renders the chart with vals as the release named release in
// namespace.
func renderValues(vals map[string]any, release, namespace string) (map[string][]runtime.Object, error) {
	chrt, err := helm.Chart()
	if err != nil {
		return nil, err
	}
	top, err := chartutil.ToRenderValues(chrt, vals,
		common.ReleaseOptions{Name: release, Namespace: namespace, IsInstall: true, Revision: 1}, nil)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", helm.ChartName, err)
	}
	top["Release"].(map[string]any)["Service"] = releaseService
	rendered, err := engine.Render(chrt, top)
	if err != nil {
		return nil, fmt.Errorf("render chart %s: %w", helm.ChartName, err)
	}
	out := map[string][]runtime.Object{}
	for name, manifest := range rendered {
		if path.Ext(name) != ".yaml" {
			continue
		}
		objs, err := decodeManifest(manifest)
		if err != nil {
			return nil, fmt.Errorf("chart %s, %s: %w", helm.ChartName, name, err)
		}
		if len(objs) > 0 {
			out[path.Base(name)] = objs
		}
	}
	return out, nil
}

// decodeManifest decodes every document of a rendered manifest strictly
// (an unknown field is an error) into the typed object of its kind.
func decodeManifest(manifest string) ([]runtime.Object, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifest)))
	var objs []runtime.Object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read manifest: %w", err)
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return nil, fmt.Errorf("decode the type of %s: %w", doc, err)
		}
		if tm.Kind == "" {
			continue // a document of comments only
		}
		obj, err := scheme.Scheme.New(tm.GroupVersionKind())
		if err != nil {
			return nil, fmt.Errorf("new %s: %w", tm.GroupVersionKind(), err)
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			return nil, fmt.Errorf("decode %s: %w", tm.GroupVersionKind(), err)
		}
		objs = append(objs, obj)
	}
}

// sortObjects puts the rendered objects, by template file, in their
// places; an object of a kind the deployment does not have, or one
// missing, is an error.
func sortObjects(byFile map[string][]runtime.Object) (*Manifests, error) {
	m := &Manifests{}
	var c ControllerObjects
	for _, file := range slices.Sorted(func(yield func(string) bool) {
		for f := range byFile {
			if !yield(f) {
				return
			}
		}
	}) {
		for _, obj := range byFile[file] {
			ok := true
			switch o := obj.(type) {
			case *corev1.Namespace:
				ok = set(&m.Namespace, o)
			case *corev1.ServiceAccount:
				ok = place(file, &c.ServiceAccount, &m.ServiceAccount, o)
			case *rbacv1.ClusterRole:
				ok = place(file, &c.ClusterRole, &m.ClusterRole, o)
			case *rbacv1.ClusterRoleBinding:
				ok = place(file, &c.ClusterRoleBinding, &m.ClusterRoleBinding, o)
			case *admissionregistrationv1.ValidatingAdmissionPolicy:
				ok = place(file, &c.Policy, &m.Policy, o)
			case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
				ok = place(file, &c.PolicyBinding, &m.PolicyBinding, o)
			case *appsv1.DaemonSet:
				ok = set(&m.DaemonSet, o)
			case *appsv1.Deployment:
				ok = file == controllerFile && set(&c.Deployment, o)
			case *resourceapi.DeviceClass:
				if m.DeviceClass == nil {
					m.DeviceClass = o
				} else {
					m.Classes = append(m.Classes, o)
				}
			default:
				ok = false
			}
			if !ok {
				return nil, fmt.Errorf("chart %s, %s: %T %s: not an object of the deployment, or twice", helm.ChartName, file, obj, name(obj))
			}
		}
	}
	if c != (ControllerObjects{}) {
		if c.ServiceAccount == nil || c.ClusterRole == nil || c.ClusterRoleBinding == nil || c.Policy == nil || c.PolicyBinding == nil || c.Deployment == nil {
			return nil, fmt.Errorf("chart %s: the controller's objects are not all there", helm.ChartName)
		}
		m.Controller = &c
	}
	for what, missing := range map[string]bool{
		"Namespace": m.Namespace == nil, "ServiceAccount": m.ServiceAccount == nil, "ClusterRole": m.ClusterRole == nil,
		"ClusterRoleBinding": m.ClusterRoleBinding == nil, "ValidatingAdmissionPolicy": m.Policy == nil,
		"ValidatingAdmissionPolicyBinding": m.PolicyBinding == nil, "DaemonSet": m.DaemonSet == nil, "DeviceClass": m.DeviceClass == nil,
	} {
		if missing {
			return nil, fmt.Errorf("chart %s rendered no %s", helm.ChartName, what)
		}
	}
	return m, nil
}

// controllerFile is the chart's template of a kind's controller.
const controllerFile = "controller.yaml"

// set sets *p to o unless it is set already.
func set[T any](p **T, o *T) bool {
	if *p != nil {
		return false
	}
	*p = o
	return true
}

// place sets the controller's (from controllerFile) or else the driver's.
func place[T any](file string, controller, driver **T, o *T) bool {
	if file == controllerFile {
		return set(controller, o)
	}
	return set(driver, o)
}

// name is obj's name.
func name(obj runtime.Object) string {
	if o, ok := obj.(metav1.Object); ok {
		return o.GetName()
	}
	return ""
}
