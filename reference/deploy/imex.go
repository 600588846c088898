package deploy

import (
	"fmt"
	"strconv"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// IMEXName names the IMEX controller's Deployment, service account,
// cluster role and binding.
const IMEXName = "drakit-imex-controller"

// IMEXDeviceClassName is the class of the driver's IMEX channels.
func IMEXDeviceClassName(driverName string) string { return "imex." + driverName }

// IMEXObjects are the IMEX channel controller's objects (Options.IMEXChannels
// > 0): its DeviceClass (the owner of the channel slices), service account,
// cluster role and binding, admission policy and binding (the service
// account may write only the driver's slices without a node name), and its
// one-replica Deployment.
type IMEXObjects struct {
	DeviceClass        *resourceapi.DeviceClass
	ServiceAccount     *corev1.ServiceAccount
	ClusterRole        *rbacv1.ClusterRole
	ClusterRoleBinding *rbacv1.ClusterRoleBinding
	Policy             *admissionregistrationv1.ValidatingAdmissionPolicy
	PolicyBinding      *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	Deployment         *appsv1.Deployment
}

// list is the objects in apply order: the policy before the controller, so
// that it never runs unconstrained, and the class before the controller
// starts (it looks its owner up).
func (m *IMEXObjects) list() []runtime.Object {
	return []runtime.Object{m.ServiceAccount, m.ClusterRole, m.ClusterRoleBinding, m.Policy, m.PolicyBinding, m.DeviceClass, m.Deployment}
}

// imexObjects decodes and renders the IMEX controller's manifests.
func imexObjects(opts Options) (*IMEXObjects, error) {
	m := &IMEXObjects{
		DeviceClass: &resourceapi.DeviceClass{}, ServiceAccount: &corev1.ServiceAccount{},
		ClusterRole: &rbacv1.ClusterRole{}, ClusterRoleBinding: &rbacv1.ClusterRoleBinding{}, Deployment: &appsv1.Deployment{},
	}
	for file, into := range map[string]any{
		"deviceclass.yaml": m.DeviceClass, "serviceaccount.yaml": m.ServiceAccount, "clusterrole.yaml": m.ClusterRole,
		"clusterrolebinding.yaml": m.ClusterRoleBinding, "deployment.yaml": m.Deployment,
	} {
		if err := decode("imex/"+file, into); err != nil {
			return nil, err
		}
	}
	if err := renderClasses(deviceClass{"imex/deviceclass.yaml", IMEXDeviceClassName(opts.DriverName),
		fmt.Sprintf("device.driver == %q && device.attributes[%q].?type.orValue(%q) == %q",
			opts.DriverName, opts.DriverName, "", "imex-channel"), m.DeviceClass}); err != nil {
		return nil, err
	}
	var err error
	if m.Policy, m.PolicyBinding, err = controllerPolicy(m.ServiceAccount, opts.DriverName); err != nil {
		return nil, err
	}
	pod := &m.Deployment.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		return nil, fmt.Errorf("manifest imex/deployment.yaml: want one container")
	}
	c := &pod.Containers[0]
	c.Image = opts.Image
	for flag, value := range map[string]string{
		"driver-name":  opts.DriverName,
		"device-class": IMEXDeviceClassName(opts.DriverName),
		"channels":     strconv.Itoa(opts.IMEXChannels),
	} {
		if err := setFlag(c, flag, value); err != nil {
			return nil, fmt.Errorf("manifest imex/deployment.yaml: %w", err)
		}
	}
	if err := setAPIServerEnv(c, opts.APIServerHost, opts.APIServerPort); err != nil {
		return nil, fmt.Errorf("manifest imex/deployment.yaml: %w", err)
	}
	return m, nil
}
