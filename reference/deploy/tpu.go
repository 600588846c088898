package deploy

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"drakit.dev/drakit/internal/tpuhw"
	"drakit.dev/drakit/reference/tpudriver"
)

// Fixed names of the TPU driver's deployment (manifests/tpu).
const (
	TPUNamespace = "drakit-tpu"
	// TPUName names the kubelet plugin's DaemonSet, service account,
	// cluster role and binding and admission policy and binding.
	TPUName = "drakit-tpu-driver"
	// TPUControllerName names the controller's Deployment, service
	// account, cluster role and binding and admission policy and binding.
	TPUControllerName = "drakit-tpu-controller"
)

var (
	tpuWorkload           = workload{TPUNamespace, TPUName, ""}
	tpuControllerWorkload = workload{TPUNamespace, TPUControllerName, ""}
)

// SubsliceDeviceClassName is the name of the class of the driver's
// multi-host sub-slices; the class named after the driver selects its
// node-local chips.
func SubsliceDeviceClassName(driverName string) string { return "subslice." + driverName }

// TPUOptions says how to deploy the TPU driver (reference/tpudriver): its
// kubelet plugin on every node and its controller. Paths are host paths on
// the nodes.
type TPUOptions struct {
	// DriverName is the DRA driver name, the name of its chips' class
	// and, after "subslice.", of its sub-slices' class.
	DriverName string
	// Image is the reference driver's image (which holds
	// /usr/bin/drakit-tpu-driver); it is never pulled.
	Image          string
	KubeletRootDir string
	CDIDir         string
	// HostRoot is the emulator root on the node: the plugin reads
	// <HostRoot>/sys and the tpu-env below it (both mounted read-only)
	// and names device nodes below <HostRoot>/dev.
	HostRoot string
	// Shapes are the sub-slice shapes the controller publishes
	// (tpudriver.ParseShapes).
	Shapes        string
	APIServerHost string
	APIServerPort int
	Timeout       time.Duration
	// Node pins the kubelet plugin's DaemonSet to one node, as
	// NICOptions.Node: deploy once per node of a multi-node local cluster,
	// each with its host paths. The controller is one Deployment for the
	// cluster whatever Node says (every deploy applies the same one).
	Node string
	// HTTPPort is the port on the node's loopback the driver serves
	// Prometheus /metrics and /healthz on (--http-endpoint=127.0.0.1:<port>;
	// the pods are hostNetwork) and the kubelet's liveness probe asks;
	// 0: neither. Pods on one host (the nodes of a multi-node local
	// cluster, deployed with Node) each need a port of their own.
	HTTPPort int
}

// DefaultTPUOptions returns the options manifests/tpu is written with.
func DefaultTPUOptions() TPUOptions {
	return TPUOptions{
		DriverName:     tpudriver.DefaultDriverName,
		Image:          "drakit.dev/driver:dev",
		KubeletRootDir: "/var/lib/kubelet",
		CDIDir:         tpudriver.DefaultCDIDir,
		HostRoot:       "/var/lib/drakit/emulator",
		Shapes:         tpudriver.DefaultShapes,
		APIServerHost:  "127.0.0.1",
		APIServerPort:  6443,
		Timeout:        2 * time.Minute,
		HTTPPort:       DefaultTPUHTTPPort,
	}
}

func (o *TPUOptions) common() driverOptions {
	return driverOptions{o.DriverName, o.Image, o.KubeletRootDir, o.CDIDir, o.APIServerHost, o.APIServerPort, o.Timeout, "", o.Node, o.HTTPPort, TPUName}
}

func (o *TPUOptions) metadataDir() string {
	return filepath.Join(o.HostRoot, filepath.Dir(tpuhw.MetadataTPUEnvRelativePath))
}

// Validate reports every invalid field by name and flag of drakit
// tpu-driver deploy; the error wraps ErrInvalidOptions.
func (o *TPUOptions) Validate() error {
	var own []error
	if _, err := tpudriver.ParseShapes(o.Shapes); err != nil {
		own = append(own, fmt.Errorf("Shapes (--shapes): %w", err))
	}
	return o.common().validate(own, hostPathOption{"HostRoot", "host-root", o.HostRoot})
}

// TPUManifests are the TPU driver's objects, rendered for one TPUOptions.
type TPUManifests struct {
	// DriverObjects are the kubelet plugin's; its DeviceClass is <driver
	// name>: the chips (type chip).
	DriverObjects
	// SubsliceDeviceClass is subslice.<driver name> (type subslice).
	SubsliceDeviceClass *resourceapi.DeviceClass
	// The controller's objects.
	ControllerServiceAccount     *corev1.ServiceAccount
	ControllerClusterRole        *rbacv1.ClusterRole
	ControllerClusterRoleBinding *rbacv1.ClusterRoleBinding
	// ControllerPolicy and ControllerPolicyBinding limit the controller's
	// service account to the driver's ResourceSlices without a node name.
	ControllerPolicy        *admissionregistrationv1.ValidatingAdmissionPolicy
	ControllerPolicyBinding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	Controller              *appsv1.Deployment
}

// List returns the objects in the order they are applied: the plugin's,
// the sub-slice class, then the controller's, its policy before its
// Deployment.
func (m *TPUManifests) List() []runtime.Object {
	return m.list(m.SubsliceDeviceClass, m.ControllerServiceAccount, m.ControllerClusterRole, m.ControllerClusterRoleBinding,
		m.ControllerPolicy, m.ControllerPolicyBinding, m.Controller)
}

// TPUObjects validates opts and renders manifests/tpu for them.
func TPUObjects(opts TPUOptions) (*TPUManifests, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	m := &TPUManifests{SubsliceDeviceClass: &resourceapi.DeviceClass{}, ControllerServiceAccount: &corev1.ServiceAccount{},
		ControllerClusterRole: &rbacv1.ClusterRole{}, ControllerClusterRoleBinding: &rbacv1.ClusterRoleBinding{}, Controller: &appsv1.Deployment{}}
	var err error
	m.DriverObjects, err = decodeDriver("tpu", map[string]any{
		"subslicedeviceclass.yaml":           m.SubsliceDeviceClass,
		"controller-serviceaccount.yaml":     m.ControllerServiceAccount,
		"controller-clusterrole.yaml":        m.ControllerClusterRole,
		"controller-clusterrolebinding.yaml": m.ControllerClusterRoleBinding,
		"controller-deployment.yaml":         m.Controller,
	})
	if err != nil {
		return nil, err
	}
	tpuClass := func(file, name, typ string, class *resourceapi.DeviceClass) deviceClass {
		return deviceClass{file, name, fmt.Sprintf("device.driver == %q && device.attributes[%q].?type.orValue(\"\") == %q",
			opts.DriverName, opts.DriverName, typ), class}
	}
	if err := renderClasses(
		tpuClass("tpu/deviceclass.yaml", opts.DriverName, tpudriver.TypeChip, m.DeviceClass),
		tpuClass("tpu/subslicedeviceclass.yaml", SubsliceDeviceClassName(opts.DriverName), tpudriver.TypeSubslice, m.SubsliceDeviceClass),
	); err != nil {
		return nil, err
	}
	if err := renderPolicy(m.Policy, opts.DriverName); err != nil {
		return nil, fmt.Errorf("manifest tpu/validatingadmissionpolicy.yaml: %w", err)
	}
	if m.ControllerPolicy, m.ControllerPolicyBinding, err = controllerPolicy(m.ControllerServiceAccount, opts.DriverName); err != nil {
		return nil, err
	}
	o := opts.common()
	if _, err := renderDriverPod(&m.DaemonSet.Spec.Template.Spec, o, map[string]string{
		"host-root": opts.HostRoot,
		"state-dir": o.pluginDir(),
	}, map[string]string{"sysfs": filepath.Join(opts.HostRoot, "sys"), "metadata": opts.metadataDir()}); err != nil {
		return nil, fmt.Errorf("manifest tpu/daemonset.yaml: %w", err)
	}
	if err := renderController(&m.Controller.Spec.Template.Spec, opts); err != nil {
		return nil, fmt.Errorf("manifest tpu/controller-deployment.yaml: %w", err)
	}
	pinToNode(m.DaemonSet, opts.Node)
	return m, nil
}

func renderController(pod *corev1.PodSpec, opts TPUOptions) error {
	if len(pod.Containers) != 1 {
		return fmt.Errorf("want exactly one container")
	}
	c := &pod.Containers[0]
	c.Image = opts.Image
	for flag, value := range map[string]string{"driver-name": opts.DriverName, "shapes": opts.Shapes} {
		if err := setFlag(c, flag, value); err != nil {
			return err
		}
	}
	return setAPIServerEnv(c, opts.APIServerHost, opts.APIServerPort)
}

// ApplyTPU creates or updates the TPU driver's deployment and waits until
// the plugin's DaemonSet is rolled out with a ResourceSlice per node and
// the controller's Deployment has an available replica.
func ApplyTPU(ctx context.Context, client kubernetes.Interface, opts TPUOptions) error {
	m, err := TPUObjects(opts)
	if err != nil {
		return err
	}
	if err := applyObjects(ctx, client, m.List()); err != nil {
		return fmt.Errorf("apply driver %s: %w", opts.DriverName, err)
	}
	if err := waitReady(ctx, client, tpuWorkload.on(opts.Node), opts.DriverName, opts.Timeout, true); err != nil {
		return err
	}
	var status string
	err = wait.PollUntilContextTimeout(ctx, pollInterval, opts.Timeout, true, func(ctx context.Context) (bool, error) {
		d, err := client.AppsV1().Deployments(TPUNamespace).Get(ctx, TPUControllerName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		status = fmt.Sprintf("%d of %d replicas available", d.Status.AvailableReplicas, ptrOr(d.Spec.Replicas, 1))
		return d.Status.ObservedGeneration >= d.Generation && d.Status.AvailableReplicas >= ptrOr(d.Spec.Replicas, 1), nil
	})
	if err != nil {
		return fmt.Errorf("%w: controller of driver %s: %s: %v\n%s", ErrNotReady, opts.DriverName, status, err,
			diagnostics(context.WithoutCancel(ctx), client, tpuControllerWorkload))
	}
	return nil
}

func ptrOr(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

// DeleteTPU removes what ApplyTPU created: the controller first (and waits
// for its pods to go, so it publishes nothing after; then its policy), then the plugin's
// deployment, its classes and every ResourceSlice of the driver. With
// opts.Node it removes only that node's DaemonSet (as DeleteNIC).
func DeleteTPU(ctx context.Context, client kubernetes.Interface, opts TPUOptions) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	if opts.Node != "" {
		return deleteDriver(ctx, client, tpuWorkload.on(opts.Node), opts.DriverName, nil, opts.Timeout)
	}
	del := metav1.DeleteOptions{}
	for what, fn := range map[string]func() error{
		"deployment " + TPUControllerName: func() error {
			return client.AppsV1().Deployments(TPUNamespace).Delete(ctx, TPUControllerName, del)
		},
		"cluster role binding " + TPUControllerName: func() error {
			return client.RbacV1().ClusterRoleBindings().Delete(ctx, TPUControllerName, del)
		},
		"cluster role " + TPUControllerName: func() error { return client.RbacV1().ClusterRoles().Delete(ctx, TPUControllerName, del) },
	} {
		if err := fn(); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete %s: %w", what, err)
		}
	}
	err := wait.PollUntilContextTimeout(ctx, pollInterval, opts.Timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := driverPods(ctx, client, tpuControllerWorkload)
		return err == nil && len(pods) == 0, err
	})
	if err != nil {
		return fmt.Errorf("wait for the controller pods to go: %w", err)
	}
	if err := deletePolicy(ctx, client, TPUControllerName); err != nil {
		return err
	}
	return deleteDriver(ctx, client, tpuWorkload, opts.DriverName,
		[]string{opts.DriverName, SubsliceDeviceClassName(opts.DriverName)}, opts.Timeout)
}
