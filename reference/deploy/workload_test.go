package deploy

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// The checks the three drivers' deployment tests share.

// checkGolden compares objs, as YAML documents separated by "---", with
// testdata/<golden>; -update rewrites the file.
func checkGolden(t *testing.T, objs []runtime.Object, golden string) {
	t.Helper()
	var docs []string
	for _, obj := range objs {
		data, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(data))
	}
	got := strings.Join(docs, "---\n")
	path := filepath.Join("testdata", golden)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("objects differ from %s (-want +got; run with -update if intended):\n%s", path, diff)
	}
}

// hostMount is how the driver container mounts a hostPath volume.
type hostMount struct {
	HostPath, MountPath string
	Type                corev1.HostPathType
	ReadOnly            bool
}

// hostMounts returns container c's mounts of pod's volumes by volume name.
// It reports a volume that is not a hostPath volume with a type, one
// mounted twice or not at all, and a mount with a sub-path, propagation or
// recursive read-only setting.
func hostMounts(t *testing.T, pod corev1.PodSpec, c corev1.Container) map[string]hostMount {
	t.Helper()
	volumes := map[string]corev1.HostPathVolumeSource{}
	for _, v := range pod.Volumes {
		if v.HostPath == nil || v.HostPath.Type == nil {
			t.Errorf("volume %s is not a hostPath volume with a type", v.Name)
			continue
		}
		volumes[v.Name] = *v.HostPath
	}
	got := map[string]hostMount{}
	for _, vm := range c.VolumeMounts {
		if _, dup := got[vm.Name]; dup {
			t.Errorf("volume %s is mounted twice", vm.Name)
		}
		if vm.SubPath != "" || vm.SubPathExpr != "" || vm.MountPropagation != nil || vm.RecursiveReadOnly != nil {
			t.Errorf("mount of %s has a sub-path, propagation or recursive read-only setting: %+v", vm.Name, vm)
		}
		v := volumes[vm.Name]
		got[vm.Name] = hostMount{v.Path, vm.MountPath, ptr.Deref(v.Type, ""), vm.ReadOnly}
	}
	if len(volumes) != len(got) {
		t.Errorf("pod has %d volumes, %d of them mounted", len(volumes), len(got))
	}
	return got
}

// sameHostPath is a host mount at its own path.
func sameHostPath(p string, typ corev1.HostPathType, readOnly bool) hostMount {
	return hostMount{p, p, typ, readOnly}
}

// checkValidateErrors checks the error of an options' Validate: nil when
// wantErrs is, else ErrInvalidOptions with exactly wantErrs, one a line;
// objectsErr, the error of rendering the same options, must agree.
func checkValidateErrors(t *testing.T, err error, wantErrs []string, objectsErr error) {
	t.Helper()
	switch {
	case wantErrs == nil && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case wantErrs != nil && err == nil:
		t.Fatalf("no error, want %q", wantErrs)
	case err != nil && !errors.Is(err, ErrInvalidOptions):
		t.Fatalf("error %v is not ErrInvalidOptions", err)
	case err != nil:
		got := strings.Split(strings.TrimPrefix(err.Error(), ErrInvalidOptions.Error()+": "), "\n")
		if diff := cmp.Diff(wantErrs, got); diff != "" {
			t.Errorf("errors (-want +got):\n%s", diff)
		}
	}
	if (objectsErr == nil) != (err == nil) {
		t.Errorf("rendering error %v disagrees with Validate error %v", objectsErr, err)
	}
}

// besideTheReferenceDriver is a driver deployment that
// checkBesideTheReferenceDriver applies and deletes next to the reference
// driver's.
type besideTheReferenceDriver struct {
	// w and driverName are the deployment's, classes its DeviceClasses.
	w          workload
	driverName string
	classes    []string
	// apply and remove are its Apply and Delete, applyName and
	// removeName their names; objects its Objects.
	apply, remove         func(ctx context.Context, client kubernetes.Interface) error
	applyName, removeName string
	objects               func() (*DriverObjects, error)
}

// checkBesideTheReferenceDriver applies d next to a deployed reference
// driver and checks what it created, deletes it twice (the second time
// there is nothing to delete) and checks that it is gone, slices
// included, and that the reference driver is not.
func checkBesideTheReferenceDriver(t *testing.T, d besideTheReferenceDriver) {
	t.Helper()
	client := fake.NewClientset()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	gpuOpts := DefaultOptions(KindGPU)
	gpuOpts.Timeout = 10 * time.Second
	simulateNode(ctx, t, client, gpuOpts.DriverName)
	if err := Apply(ctx, client, gpuOpts); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	simCtx, cancelSim := context.WithCancel(ctx)
	simulated := simulateWorkload(simCtx, t, client, d.w, d.driverName, true)
	if err := d.apply(ctx, client); err != nil {
		t.Fatalf("%s: %v", d.applyName, err)
	}
	want, err := d.objects()
	if err != nil {
		t.Fatal(err)
	}
	ds, err := client.AppsV1().DaemonSets(d.w.namespace).Get(ctx, d.w.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.DaemonSet.Spec, ds.Spec); diff != "" {
		t.Errorf("applied DaemonSet spec (-want +got):\n%s", diff)
	}
	role, err := client.RbacV1().ClusterRoles().Get(ctx, d.w.name, metav1.GetOptions{})
	if err != nil || !cmp.Equal(want.ClusterRole.Rules, role.Rules) {
		t.Errorf("applied cluster role %v (error %v), want the rendered rules", role, err)
	}
	created := map[string]error{
		"service account": get(client.CoreV1().ServiceAccounts(d.w.namespace).Get(ctx, d.w.name, metav1.GetOptions{})),
		"policy":          get(client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, d.w.name, metav1.GetOptions{})),
		"policy binding":  get(client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Get(ctx, d.w.name, metav1.GetOptions{})),
	}
	for _, class := range d.classes {
		created["device class "+class] = get(client.ResourceV1().DeviceClasses().Get(ctx, class, metav1.GetOptions{}))
	}
	for what, err := range created {
		if err != nil {
			t.Errorf("%s missing after %s: %v", what, d.applyName, err)
		}
	}

	cancelSim()
	<-simulated // it could create the pod again after the delete
	if err := client.CoreV1().Pods(d.w.namespace).Delete(ctx, d.w.name+"-abcde", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := d.remove(ctx, client); err != nil {
			t.Fatalf("%s #%d: %v", d.removeName, i+1, err)
		}
	}
	gone := map[string]error{
		"namespace":      get(client.CoreV1().Namespaces().Get(ctx, d.w.namespace, metav1.GetOptions{})),
		"daemon set":     get(client.AppsV1().DaemonSets(d.w.namespace).Get(ctx, d.w.name, metav1.GetOptions{})),
		"cluster role":   get(client.RbacV1().ClusterRoles().Get(ctx, d.w.name, metav1.GetOptions{})),
		"policy":         get(client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, d.w.name, metav1.GetOptions{})),
		"policy binding": get(client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Get(ctx, d.w.name, metav1.GetOptions{})),
	}
	for _, class := range d.classes {
		gone["device class "+class] = get(client.ResourceV1().DeviceClasses().Get(ctx, class, metav1.GetOptions{}))
	}
	for what, err := range gone {
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s still exists after %s (get: %v)", what, d.removeName, err)
		}
	}
	slices, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var drivers []string
	for _, s := range slices.Items {
		drivers = append(drivers, s.Spec.Driver)
	}
	if diff := cmp.Diff([]string{gpuOpts.DriverName}, drivers); diff != "" {
		t.Errorf("slices after %s (-want +got):\n%s", d.removeName, diff)
	}
	for what, err := range map[string]error{
		"reference driver namespace":    get(client.CoreV1().Namespaces().Get(ctx, Namespace, metav1.GetOptions{})),
		"reference driver daemon set":   get(client.AppsV1().DaemonSets(Namespace).Get(ctx, Name, metav1.GetOptions{})),
		"reference driver policy":       get(client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, Name, metav1.GetOptions{})),
		"reference driver device class": get(client.ResourceV1().DeviceClasses().Get(ctx, gpuOpts.DriverName, metav1.GetOptions{})),
	} {
		if err != nil {
			t.Errorf("%s gone after %s: %v", what, d.removeName, err)
		}
	}
}

// leastPrivilegePod checks what every driver's pod has: exactly one
// container, not privileged, no escalation, RuntimeDefault seccomp, a
// read-only root filesystem, uid and gid 0, every capability dropped but
// add; no pod security context (the container's says it all), no host
// namespace but the network (the apiserver is on 127.0.0.1), the node's
// default runtime, and the manifests' service account. It returns the pod
// and its container.
func leastPrivilegePod(t *testing.T, m *DriverObjects, add ...corev1.Capability) (corev1.PodSpec, corev1.Container) {
	t.Helper()
	pod := m.DaemonSet.Spec.Template.Spec
	if len(pod.Containers) != 1 || len(pod.InitContainers) != 0 || len(pod.EphemeralContainers) != 0 {
		t.Fatalf("driver pod has %d containers, %d init containers, %d ephemeral ones; want exactly one container",
			len(pod.Containers), len(pod.InitContainers), len(pod.EphemeralContainers))
	}
	c := pod.Containers[0]
	want := &corev1.SecurityContext{
		Privileged:               ptr.To(false),
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		RunAsUser:                ptr.To[int64](0),
		RunAsGroup:               ptr.To[int64](0),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: add},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if diff := cmp.Diff(want, c.SecurityContext); diff != "" {
		t.Errorf("driver container security context (-want +got):\n%s", diff)
	}
	if pod.SecurityContext != nil && !cmp.Equal(*pod.SecurityContext, corev1.PodSecurityContext{}) {
		t.Errorf("driver pod security context %+v: want none (the container's says it all)", *pod.SecurityContext)
	}
	if pod.HostPID || pod.HostIPC || !pod.HostNetwork || pod.RuntimeClassName != nil {
		t.Errorf("driver pod hostPID=%v hostIPC=%v hostNetwork=%v runtimeClassName=%v, want only hostNetwork (the apiserver is on 127.0.0.1)",
			pod.HostPID, pod.HostIPC, pod.HostNetwork, pod.RuntimeClassName)
	}
	if pod.ServiceAccountName != m.ServiceAccount.Name || m.ServiceAccount.Namespace != m.DaemonSet.Namespace {
		t.Errorf("DaemonSet runs as %s/%s, the manifests create service account %s/%s",
			m.DaemonSet.Namespace, pod.ServiceAccountName, m.ServiceAccount.Namespace, m.ServiceAccount.Name)
	}
	return pod, c
}
