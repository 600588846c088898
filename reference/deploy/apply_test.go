package deploy

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestMain(m *testing.M) {
	pollInterval = 10 * time.Millisecond
	os.Exit(m.Run())
}

const testNode = "127.0.0.1"

// simulateNode plays the DaemonSet controller, the kubelet and the driver
// until ctx ends: once the DaemonSet exists, a Ready pod on testNode, a
// rolled-out status and the driver's ResourceSlice.
func simulateNode(ctx context.Context, t *testing.T, client kubernetes.Interface, driverName string) <-chan struct{} {
	t.Helper()
	return simulateWorkload(ctx, t, client, gpuWorkload, driverName, true)
}

// simulateWorkload is simulateNode for the driver of w; without publish the
// driver publishes no ResourceSlice. The channel is closed once the
// simulation has stopped after ctx ended: nothing it creates comes later.
func simulateWorkload(ctx context.Context, t *testing.T, client kubernetes.Interface, w workload, driverName string, publish bool) <-chan struct{} {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
			ds, err := client.AppsV1().DaemonSets(w.namespace).Get(ctx, w.daemonSet(), metav1.GetOptions{})
			if err != nil {
				continue
			}
			node := testNode
			if w.node != "" {
				node = w.node
			}
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: w.daemonSet() + "-abcde", Namespace: w.namespace, Labels: w.podLabels()},
				Spec:       corev1.PodSpec{NodeName: node},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
					{Type: corev1.PodReady, Status: corev1.ConditionTrue},
				}},
			}
			_, _ = client.CoreV1().Pods(w.namespace).Create(ctx, pod, metav1.CreateOptions{})
			if publish {
				slice := &resourceapi.ResourceSlice{
					ObjectMeta: metav1.ObjectMeta{Name: "0000-" + driverName + "-" + node + "-x"},
					Spec: resourceapi.ResourceSliceSpec{Driver: driverName, NodeName: new(node),
						Pool: resourceapi.ResourcePool{Name: node, ResourceSliceCount: 1}},
				}
				_, _ = client.ResourceV1().ResourceSlices().Create(ctx, slice, metav1.CreateOptions{})
			}
			if ds.Status.NumberReady != 1 {
				ds.Status.DesiredNumberScheduled, ds.Status.UpdatedNumberScheduled, ds.Status.NumberReady = 1, 1, 1
				_, _ = client.AppsV1().DaemonSets(w.namespace).UpdateStatus(ctx, ds, metav1.UpdateOptions{})
			}
		}
	}()
	return done
}

func TestApplyCreatesWaitsAndUpdates(t *testing.T) {
	t.Parallel()
	client := fake.NewClientset()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	opts := localClusterOptions()
	opts.Timeout = 10 * time.Second
	simulateNode(ctx, t, client, opts.DriverName)
	if err := Apply(ctx, client, opts); err != nil {
		t.Fatalf("first Apply: %v", err)
	}
	want, err := Objects(opts)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := client.AppsV1().DaemonSets(Namespace).Get(ctx, Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.DaemonSet.Spec, ds.Spec); diff != "" {
		t.Errorf("applied DaemonSet spec (-want +got):\n%s", diff)
	}
	for _, get := range []func() error{
		func() error {
			_, err := client.CoreV1().Namespaces().Get(ctx, Namespace, metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := client.CoreV1().ServiceAccounts(Namespace).Get(ctx, Name, metav1.GetOptions{})
			return err
		},
		func() error { _, err := client.RbacV1().ClusterRoles().Get(ctx, Name, metav1.GetOptions{}); return err },
		func() error {
			_, err := client.RbacV1().ClusterRoleBindings().Get(ctx, Name, metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, Name, metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Get(ctx, Name, metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := client.ResourceV1().DeviceClasses().Get(ctx, opts.DriverName, metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := client.ResourceV1().DeviceClasses().Get(ctx, MIGDeviceClassName(opts.DriverName), metav1.GetOptions{})
			return err
		},
	} {
		if err := get(); err != nil {
			t.Errorf("object missing after Apply: %v", err)
		}
	}

	// Applying changed options updates in place.
	opts.Image = "drakit.dev/driver:next"
	if err := Apply(ctx, client, opts); err != nil {
		t.Fatalf("second Apply: %v", err)
	}
	ds, err = client.AppsV1().DaemonSets(Namespace).Get(ctx, Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ds.Spec.Template.Spec.Containers[0].Image; got != "drakit.dev/driver:next" {
		t.Errorf("image after update %s, want drakit.dev/driver:next", got)
	}
}

// TestApplyConstrainsBeforeTheDriverRuns: the admission policy and its
// binding exist before the DaemonSet is created, and a second Apply
// updates them in place.
func TestApplyConstrainsBeforeTheDriverRuns(t *testing.T) {
	t.Parallel()
	client := fake.NewClientset()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	opts := DefaultOptions(KindGPU)
	opts.Timeout = 10 * time.Second
	var policyAtDaemonSetCreate []error
	client.PrependReactor("create", "daemonsets", func(k8stesting.Action) (bool, runtime.Object, error) {
		// The tracker, not the client: a reactor runs with the client locked.
		gv := admissionregistrationv1.SchemeGroupVersion
		_, pErr := client.Tracker().Get(gv.WithResource("validatingadmissionpolicies"), "", Name)
		_, bErr := client.Tracker().Get(gv.WithResource("validatingadmissionpolicybindings"), "", Name)
		policyAtDaemonSetCreate = append(policyAtDaemonSetCreate, pErr, bErr)
		return false, nil, nil
	})
	simulateNode(ctx, t, client, opts.DriverName)
	if err := Apply(ctx, client, opts); err != nil {
		t.Fatalf("first Apply: %v", err)
	}
	if len(policyAtDaemonSetCreate) != 2 || policyAtDaemonSetCreate[0] != nil || policyAtDaemonSetCreate[1] != nil {
		t.Errorf("policy and binding when the DaemonSet was created: %v, want both there", policyAtDaemonSetCreate)
	}
	opts.DriverName = "gpu.example.com"
	simulateNode(ctx, t, client, opts.DriverName)
	if err := Apply(ctx, client, opts); err != nil {
		t.Fatalf("second Apply: %v", err)
	}
	want, err := Objects(opts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.Policy.Spec, got.Spec); diff != "" {
		t.Errorf("policy after the second Apply (-want +got):\n%s", diff)
	}
}

func TestApplyTimeoutExplains(t *testing.T) {
	t.Parallel()
	// A pod that crashes: the error must say so and carry its logs.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: Name + "-crash", Namespace: Namespace, Labels: map[string]string{AppLabel: Name}},
		Spec:       corev1.PodSpec{NodeName: testNode},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady"}},
			ContainerStatuses: []corev1.ContainerStatus{{
				Name:         "driver",
				RestartCount: 3,
				State:        corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 1, Reason: "Error"}},
			}},
		},
	}
	event := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "e1", Namespace: Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: pod.Name, Namespace: Namespace},
		Type:           corev1.EventTypeWarning, Reason: "BackOff", Message: "Back-off restarting failed container driver",
	}
	client := fake.NewClientset(pod, event)
	opts := DefaultOptions(KindGPU)
	opts.Timeout = 200 * time.Millisecond
	err := Apply(t.Context(), client, opts)
	if !errors.Is(err, ErrNotReady) {
		t.Fatalf("got %v, want ErrNotReady", err)
	}
	for _, want := range []string{
		"driver gpu.drakit.dev after 200ms: no node runs a driver pod (desired 0)",
		"pod drakit-system/drakit-driver-crash on node \"127.0.0.1\": phase Running",
		"condition Ready=False ContainersNotReady",
		"container driver: waiting (CrashLoopBackOff: back-off 40s), ready=false, restarts=3",
		"last termination: terminated with exit code 1 (Error: )",
		"last log lines:\n      fake logs",
		"last log lines of the previous run:\n      fake logs",
		"event Warning BackOff: Back-off restarting failed container driver",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestApplyRejectsInvalidOptions(t *testing.T) {
	t.Parallel()
	client := fake.NewClientset()
	opts := DefaultOptions(KindGPU)
	opts.HostRoot = "/"
	if err := Apply(t.Context(), client, opts); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("got %v, want ErrInvalidOptions", err)
	}
	if nss, _ := client.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{}); len(nss.Items) != 0 {
		t.Errorf("invalid options still created %d namespaces", len(nss.Items))
	}
}

func TestDelete(t *testing.T) {
	t.Parallel()
	client := fake.NewClientset()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	opts := DefaultOptions(KindGPU)
	opts.Timeout = 10 * time.Second
	simCtx, cancelSim := context.WithCancel(ctx)
	simulated := simulateNode(simCtx, t, client, opts.DriverName)
	if err := Apply(ctx, client, opts); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	other := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "0000-nic.example.com-127.0.0.1-y"},
		Spec:       resourceapi.ResourceSliceSpec{Driver: "nic.example.com", NodeName: new(testNode), Pool: resourceapi.ResourcePool{Name: testNode, ResourceSliceCount: 1}},
	}
	if _, err := client.ResourceV1().ResourceSlices().Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The fake has no namespace controller or kubelet: stop the simulation
	// and remove the pod as they would once the DaemonSet is gone (after
	// the simulation's last create).
	cancelSim()
	<-simulated
	if err := client.CoreV1().Pods(Namespace).Delete(ctx, Name+"-abcde", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := Delete(ctx, client, opts); err != nil {
			t.Fatalf("Delete #%d: %v", i+1, err)
		}
	}
	for what, err := range map[string]error{
		"namespace":            get(client.CoreV1().Namespaces().Get(ctx, Namespace, metav1.GetOptions{})),
		"daemon set":           get(client.AppsV1().DaemonSets(Namespace).Get(ctx, Name, metav1.GetOptions{})),
		"cluster role":         get(client.RbacV1().ClusterRoles().Get(ctx, Name, metav1.GetOptions{})),
		"cluster role binding": get(client.RbacV1().ClusterRoleBindings().Get(ctx, Name, metav1.GetOptions{})),
		"policy":               get(client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, Name, metav1.GetOptions{})),
		"policy binding":       get(client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Get(ctx, Name, metav1.GetOptions{})),
		"device class":         get(client.ResourceV1().DeviceClasses().Get(ctx, opts.DriverName, metav1.GetOptions{})),
		"MIG device class":     get(client.ResourceV1().DeviceClasses().Get(ctx, MIGDeviceClassName(opts.DriverName), metav1.GetOptions{})),
	} {
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s still exists after Delete (get: %v)", what, err)
		}
	}
	slices, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range slices.Items {
		names = append(names, s.Name)
	}
	if diff := cmp.Diff([]string{other.Name}, names); diff != "" {
		t.Errorf("slices after Delete (-want +got):\n%s", diff)
	}
}

func get[T any](_ T, err error) error { return err }
