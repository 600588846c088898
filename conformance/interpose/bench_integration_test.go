package interpose

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// TestIntegrationPrepareLatency is the NodePrepareResources benchmark
// (scripts/bench-interpose.sh; not a timed test: it asserts only that the
// pods ran and the interposer saw their prepares). On a cluster whose
// driver runs behind drakit interpose ($DRAKIT_INTERPOSE, its control
// address) it runs $DRAKIT_BENCH_ROUNDS pods (default 20) one after the
// other with a claim for 1 and for 8 whole devices of $DRAKIT_BENCH_CLASS
// (default gpu.drakit.dev) and reports the p50 and p99 of the driver's
// NodePrepareResources as the interposer timed the kubelet's calls.
func TestIntegrationPrepareLatency(t *testing.T) {
	kubeconfig, control := os.Getenv("DRAKIT_KUBECONFIG"), os.Getenv("DRAKIT_INTERPOSE")
	if kubeconfig == "" || control == "" {
		t.Skip("needs DRAKIT_KUBECONFIG and DRAKIT_INTERPOSE (a driver behind drakit interpose)")
	}
	rounds := 20
	if s := os.Getenv("DRAKIT_BENCH_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("DRAKIT_BENCH_ROUNDS %q: want a positive number", s)
		}
		rounds = n
	}
	class := os.Getenv("DRAKIT_BENCH_CLASS")
	if class == "" {
		class = "gpu.drakit.dev"
	}
	restCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(restCfg)
	ip, err := NewClient(control)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "drakit-bench-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })

	for _, count := range []int64{1, 8} {
		var uids []string
		for i := range rounds {
			uids = append(uids, runClaimPod(ctx, t, kube, ns.Name, fmt.Sprintf("c%d-%d", count, i), class, count))
		}
		var driver, total []time.Duration
		for _, uid := range uids {
			recs, err := ip.Records(ctx, Filter{Method: MethodPrepare, Source: SourceKubelet, ClaimUID: uid})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				if c, _ := r.Claim(uid); r.OK() && c.Answered && c.Error == "" {
					if len(c.Devices) != int(count) {
						t.Errorf("claim %s: prepared %d devices, want %d", uid, len(c.Devices), count)
					}
					driver, total = append(driver, r.DriverDuration), append(total, r.Duration)
					break
				}
			}
		}
		if len(driver) != rounds {
			t.Fatalf("%d devices: the interposer saw %d successful prepares of the kubelet for %d pods", count, len(driver), rounds)
		}
		t.Logf("NodePrepareResources, claim for %d device(s), %d pods: driver p50 %s p99 %s max %s; at the interposer p50 %s p99 %s",
			count, rounds, percentile(driver, 50), percentile(driver, 99), slices.Max(driver), percentile(total, 50), percentile(total, 99))
	}
}

// runClaimPod runs a pod with a claim for count devices of class until it
// runs, deletes both and waits until the claim is gone (its devices
// deallocated); it returns the claim's UID.
func runClaimPod(ctx context.Context, t *testing.T, kube kubernetes.Interface, ns, name, class string, count int64) string {
	t.Helper()
	claim, err := kube.ResourceV1().ResourceClaims(ns).Create(ctx, &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count},
		}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			HostNetwork: true, RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: ptr.To[int64](0),
			AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{Name: "c", Image: "drakit.dev/probe:dev", ImagePullPolicy: corev1.PullNever,
				Command: []string{"/usr/bin/drakit-probe", "--hold"}, Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}}},
			ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To(name)}},
		},
	}
	if _, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Status.Phase == corev1.PodRunning, nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s to run: %v", ns, name, err)
	}
	if err := kube.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	if err := kube.ResourceV1().ResourceClaims(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := kube.ResourceV1().ResourceClaims(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("claim %s/%s to be deallocated and deleted: %v", ns, name, err)
	}
	return string(claim.UID)
}

// percentile is the p-th percentile of ds (nearest rank).
func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (p*len(s)+99)/100 - 1
	return s[max(i, 0)]
}
