package deploy

import (
	"embed"
	"fmt"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

//go:embed manifests/*.yaml manifests/plain/*.yaml manifests/nic/*.yaml manifests/imex/*.yaml manifests/tpu/*.yaml manifests/cpu/*.yaml
var manifests embed.FS

// Manifests are the deployment's objects, rendered for one Options.
type Manifests struct {
	// DriverObjects' DeviceClass is <driver name>: the driver's GPUs.
	DriverObjects
	// MIGDeviceClass is mig.<driver name>: the driver's MIG devices.
	MIGDeviceClass *resourceapi.DeviceClass
	// IMEX is the IMEX channel controller; nil unless
	// Options.IMEXChannels is positive.
	IMEX *IMEXObjects
}

// MIGDeviceClassName is the name of the class of the driver's MIG devices.
func MIGDeviceClassName(driverName string) string { return "mig." + driverName }

// List returns the objects in the order they are applied: the policy before
// the DaemonSet, so that no driver pod runs unconstrained.
// The IMEX controller's objects come last.
func (m *Manifests) List() []runtime.Object {
	objs := m.list(m.MIGDeviceClass)
	if m.IMEX != nil {
		objs = append(objs, m.IMEX.list()...)
	}
	return objs
}

// decode reads one embedded manifest strictly (unknown fields are errors).
func decode(file string, into any) error {
	data, err := manifests.ReadFile(path.Join("manifests", file))
	if err != nil {
		return fmt.Errorf("read manifest %s: %w", file, err)
	}
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		return fmt.Errorf("decode manifest %s: %w", file, err)
	}
	return nil
}

// Objects validates opts and renders the manifests for them.
func Objects(opts Options) (*Manifests, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	m, err := decodeAll()
	if err != nil {
		return nil, err
	}
	gpuClass := func(file, name, typ, orValue string, class *resourceapi.DeviceClass) deviceClass {
		return deviceClass{file, name, fmt.Sprintf("device.driver == %q && device.attributes[%q].?type.orValue(%q) == %q",
			opts.DriverName, opts.DriverName, orValue, typ), class}
	}
	if err := renderClasses(
		gpuClass("deviceclass.yaml", opts.DriverName, "gpu", "gpu", m.DeviceClass),
		gpuClass("migdeviceclass.yaml", MIGDeviceClassName(opts.DriverName), "mig", "", m.MIGDeviceClass),
	); err != nil {
		return nil, err
	}

	if err := renderPolicy(m.Policy, opts.DriverName); err != nil {
		return nil, fmt.Errorf("manifest validatingadmissionpolicy.yaml: %w", err)
	}
	if err := renderPod(&m.DaemonSet.Spec.Template.Spec, opts); err != nil {
		return nil, fmt.Errorf("manifest daemonset.yaml: %w", err)
	}
	pinToNode(m.DaemonSet, opts.Node)
	if opts.IMEXChannels > 0 {
		if m.IMEX, err = imexObjects(opts); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// renderPolicy sets the policy's driverName variable to the driver name (a
// DNS subdomain: a CEL string literal needs no escapes).
func renderPolicy(p *admissionregistrationv1.ValidatingAdmissionPolicy, driverName string) error {
	for i := range p.Spec.Variables {
		if v := &p.Spec.Variables[i]; v.Name == "driverName" {
			v.Expression = strconv.Quote(driverName)
			return nil
		}
	}
	return fmt.Errorf("no variable driverName")
}

// decodeAll decodes the manifests as written.
func decodeAll() (*Manifests, error) {
	mig := &resourceapi.DeviceClass{}
	m, err := decodeDriver("", map[string]any{"migdeviceclass.yaml": mig})
	if err != nil {
		return nil, err
	}
	return &Manifests{DriverObjects: m, MIGDeviceClass: mig}, nil
}

// renderPod substitutes opts into the driver pod: image, flags, apiserver
// environment, host paths (each mounted at its own path) and, with
// opts.RuntimeClassName, the pod's RuntimeClass; opts.Privileged, a
// privileged security context.
func renderPod(pod *corev1.PodSpec, opts Options) error {
	hostPaths := map[string]string{"driver-root": opts.DriverRoot}
	for _, w := range driverRootWritable {
		hostPaths[w.volume] = filepath.Join(opts.DriverRoot, w.dir)
	}
	c, err := renderDriverPod(pod, opts.common(), map[string]string{
		"driver-root":         opts.DriverRoot,
		"partitionable-alpha": strconv.FormatBool(opts.PartitionableAlpha),
		"device-metadata":     strconv.FormatBool(opts.DeviceMetadata),
		"binding-conditions":  strconv.FormatBool(opts.BindingConditions),
	}, hostPaths)
	if err != nil {
		return err
	}
	if opts.ListAttributes {
		c.Args = append(c.Args, "--list-attributes=true")
	}
	if opts.DeviceNodesOnly {
		c.Args = append(c.Args, "--device-nodes-only=true")
	}
	if opts.RuntimeClassName != "" {
		pod.RuntimeClassName = ptr.To(opts.RuntimeClassName)
	}
	if opts.Privileged {
		sc := c.SecurityContext
		if sc == nil {
			return fmt.Errorf("container %s has no security context", c.Name)
		}
		// Privileged is all capabilities, unconfined by seccomp, and
		// escalation allowed (false is invalid with privileged).
		sc.Privileged = ptr.To(true)
		sc.AllowPrivilegeEscalation, sc.Capabilities, sc.SeccompProfile = nil, nil, nil
	}
	return nil
}

// setAPIServerEnv sets KUBERNETES_SERVICE_HOST and _PORT of the hostNetwork
// driver container, or drops both with an empty host (the kubelet's stay).
func setAPIServerEnv(c *corev1.Container, host string, port int) error {
	if host == "" {
		c.Env = dropEnv(c.Env, "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT")
		return nil
	}
	if err := setEnv(c, "KUBERNETES_SERVICE_HOST", host); err != nil {
		return err
	}
	return setEnv(c, "KUBERNETES_SERVICE_PORT", strconv.Itoa(port))
}

func setFlag(c *corev1.Container, flag, value string) error {
	prefix := "--" + flag + "="
	for i, a := range c.Args {
		if strings.HasPrefix(a, prefix) {
			c.Args[i] = prefix + value
			return nil
		}
	}
	return fmt.Errorf("container %s has no argument %s…", c.Name, prefix)
}

func setEnv(c *corev1.Container, name, value string) error {
	for i := range c.Env {
		if c.Env[i].Name == name {
			c.Env[i].Value = value
			return nil
		}
	}
	return fmt.Errorf("container %s has no environment variable %s", c.Name, name)
}

func dropEnv(env []corev1.EnvVar, names ...string) []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, e := range env {
		drop := false
		for _, n := range names {
			drop = drop || e.Name == n
		}
		if !drop {
			out = append(out, e)
		}
	}
	return out
}

// setHostPath points the hostPath volume at p and mounts it at p in every
// container that mounts it.
func setHostPath(pod *corev1.PodSpec, volume, p string) error {
	found := false
	for i := range pod.Volumes {
		if v := &pod.Volumes[i]; v.Name == volume {
			if v.HostPath == nil {
				return fmt.Errorf("volume %s is not a hostPath volume", volume)
			}
			v.HostPath.Path = p
			found = true
		}
	}
	if !found {
		return fmt.Errorf("no volume %s", volume)
	}
	mounted := false
	for i := range pod.Containers {
		for j := range pod.Containers[i].VolumeMounts {
			if m := &pod.Containers[i].VolumeMounts[j]; m.Name == volume {
				m.MountPath = p
				mounted = true
			}
		}
	}
	if !mounted {
		return fmt.Errorf("volume %s is not mounted", volume)
	}
	return nil
}
