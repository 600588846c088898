// Package faultlatency measures how long a hardware fault takes to become
// visible in Kubernetes on a cluster whose node runs drakit's emulated
// hardware: from the moment an Xid error is written into the emulated GPU
// under a running pod's device to (a) the pod's status showing the device
// Unhealthy (KEP-4680), (b) the driver's ResourceSlice carrying a taint on
// the device (KEP-5055) and (c) the pod being evicted by the device taint
// manager (NoExecute). Each run creates a claim and a pod, injects the
// fault, watches the pod and the slices, resets the GPU, waits for the
// taint to go and deletes what it created.
//
// The pod's health is timed with a fault the driver answers with a
// NoSchedule taint (the pod keeps running: Config.HealthXid), the taint and
// the eviction with one it answers with NoExecute (Config.EvictXid): after
// a NoExecute taint the pod may be gone before the kubelet reports its
// device's health.
//
// It is a benchmark, not a test: it reports what it measured (p50 and max
// per stage) and fails only when a stage does not happen at all within
// Config.Timeout.
package faultlatency

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/emulator/fault"
)

// Config says what to measure where.
type Config struct {
	// EmulatorRoot is the node's emulator root (drakit emulator render).
	EmulatorRoot string
	// Driver, DeviceClass and UUIDAttribute name the GPU driver under
	// test, the class of its whole GPUs and the attribute holding a GPU's
	// UUID (bare name in the driver's domain).
	Driver, DeviceClass, UUIDAttribute string
	// Namespace is where the runs' claims and pods go; created when
	// missing, left in place.
	Namespace string
	// Image is the pods' image (it must run until deleted).
	Image string
	// HealthXid is an Xid the driver answers with Unhealthy and a
	// NoSchedule taint; EvictXid one it answers with a NoExecute taint.
	HealthXid, EvictXid uint64
	// Runs is the number of injections.
	Runs int
	// Timeout bounds each stage of each run.
	Timeout time.Duration
}

// DefaultConfig measures drakit's reference GPU driver 20 times, with Xid
// 94 (contained ECC error: drain and reset, NoSchedule) and Xid 48
// (double-bit ECC error: GPU reset, NoExecute).
func DefaultConfig() Config {
	return Config{
		Driver: "gpu.drakit.dev", DeviceClass: "gpu.drakit.dev", UUIDAttribute: "uuid",
		Namespace: "drakit-fault-latency", Image: "drakit.dev/pause:dev",
		HealthXid: 94, EvictXid: 48, Runs: 20, Timeout: 60 * time.Second,
	}
}

// ErrInvalidConfig is wrapped by Validate's errors.
var ErrInvalidConfig = errors.New("invalid fault latency configuration")

// Validate reports every problem of c.
func (c Config) Validate() error {
	var errs []error
	for _, f := range []struct{ name, v string }{
		{"EmulatorRoot", c.EmulatorRoot}, {"Driver", c.Driver}, {"DeviceClass", c.DeviceClass},
		{"UUIDAttribute", c.UUIDAttribute}, {"Namespace", c.Namespace}, {"Image", c.Image},
	} {
		if f.v == "" {
			errs = append(errs, fmt.Errorf("%s: required", f.name))
		}
	}
	if c.HealthXid == 0 || c.EvictXid == 0 {
		errs = append(errs, fmt.Errorf("HealthXid %d, EvictXid %d: both must be above 0", c.HealthXid, c.EvictXid))
	}
	if c.Runs < 1 {
		errs = append(errs, fmt.Errorf("Runs: %d, must be at least 1", c.Runs))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("Timeout: %s, must be positive", c.Timeout))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return nil
}

// Stages are what each run times, in Result order.
var Stages = []string{"health Unhealthy in pod status", "NoSchedule taint in slice", "NoExecute taint in slice", "pod evicted"}

// Result holds, per stage, the latency of every run.
type Result struct {
	Latencies [][]time.Duration // [stage][run]
}

// Summary is p50 and max per stage.
func (r Result) Summary(w io.Writer) {
	fmt.Fprintf(w, "%-32s %6s %10s %10s\n", "stage (from the Xid)", "runs", "p50", "max")
	for i, stage := range Stages {
		d := slices.Clone(r.Latencies[i])
		sort.Slice(d, func(a, b int) bool { return d[a] < d[b] })
		if len(d) == 0 {
			continue
		}
		fmt.Fprintf(w, "%-32s %6d %10s %10s\n", stage, len(d), d[(len(d)-1)/2].Round(time.Millisecond), d[len(d)-1].Round(time.Millisecond))
	}
}

// Run measures cfg.Runs injections on the cluster of kube.
func Run(ctx context.Context, kube kubernetes.Interface, cfg Config, progress io.Writer) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cfg.Namespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return Result{}, fmt.Errorf("create namespace %s: %w", cfg.Namespace, err)
	}
	res := Result{Latencies: make([][]time.Duration, len(Stages))}
	for i := range cfg.Runs {
		lat, err := runOnce(ctx, kube, cfg, fmt.Sprintf("fault-%d", i))
		if err != nil {
			return res, fmt.Errorf("run %d: %w", i+1, err)
		}
		for s := range Stages {
			res.Latencies[s] = append(res.Latencies[s], lat[s])
		}
		fmt.Fprintf(progress, "run %d/%d: Xid %d: health %s, taint %s; Xid %d: taint %s, eviction %s\n", i+1, cfg.Runs,
			cfg.HealthXid, lat[0].Round(time.Millisecond), lat[1].Round(time.Millisecond),
			cfg.EvictXid, lat[2].Round(time.Millisecond), lat[3].Round(time.Millisecond))
	}
	return res, nil
}

// runOnce creates a claim and a pod named name, injects the fault into the
// GPU allocated to it, and returns each stage's latency.
func runOnce(ctx context.Context, kube kubernetes.Interface, cfg Config, name string) ([]time.Duration, error) {
	logger := klog.FromContext(ctx)
	claims, pods := kube.ResourceV1().ResourceClaims(cfg.Namespace), kube.CoreV1().Pods(cfg.Namespace)
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: cfg.DeviceClass, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
		}}}},
	}
	if _, err := claims.Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create claim %s: %w", name, err)
	}
	defer func() {
		ctx := context.WithoutCancel(ctx)
		_ = pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, cfg.Timeout, true, func(ctx context.Context) (bool, error) {
			_, err := pods.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err := claims.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			logger.Error(err, "Deleting the benchmark claim failed", "claim", klog.KRef(cfg.Namespace, name))
		}
	}()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			// The local cluster has no pod network: pods share the node's.
			HostNetwork:    true,
			RestartPolicy:  corev1.RestartPolicyNever,
			ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To(name)}},
			Containers: []corev1.Container{{
				Name: "pause", Image: cfg.Image, ImagePullPolicy: corev1.PullNever,
				Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}},
			}},
		},
	}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create pod %s: %w", name, err)
	}
	var running *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, cfg.Timeout, true, func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		running = p
		return p.Status.Phase == corev1.PodRunning && len(healthOf(p)) > 0, nil
	})
	if err != nil {
		return nil, fmt.Errorf("pod %s to run with its device's health in its status: %w", name, err)
	}
	gpu, device, err := allocatedGPU(ctx, kube, cfg, name)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := fault.Reset(cfg.EmulatorRoot, gpu); err != nil {
			logger.Error(err, "Resetting the GPU failed", "gpu", gpu)
		}
	}()
	lat := make([]time.Duration, len(Stages))
	// The pod keeps running through a NoSchedule fault: its health and the
	// taint.
	err = watchFault(ctx, kube, cfg, running, device, gpu, cfg.HealthXid, func(p *corev1.Pod, deleted bool, taints []resourceapi.DeviceTaint, start time.Time) bool {
		if p != nil && slices.ContainsFunc(healthOf(p), func(h corev1.ResourceHealth) bool { return h.Health == corev1.ResourceHealthStatusUnhealthy }) {
			setOnce(&lat[0], start)
		}
		if slices.ContainsFunc(taints, func(t resourceapi.DeviceTaint) bool { return t.Effect == resourceapi.DeviceTaintEffectNoSchedule }) {
			setOnce(&lat[1], start)
		}
		return lat[0] > 0 && lat[1] > 0
	})
	if err != nil {
		return nil, err
	}
	if err := fault.Reset(cfg.EmulatorRoot, gpu); err != nil {
		return nil, fmt.Errorf("reset %s: %w", gpu, err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, cfg.Timeout, true, func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		running = p
		for _, h := range healthOf(p) {
			if h.Health != corev1.ResourceHealthStatusHealthy {
				return false, nil
			}
		}
		d, err := sliceDevice(ctx, kube, device)
		return err == nil && len(d.Taints) == 0, nil
	})
	if err != nil {
		return nil, fmt.Errorf("pod %s healthy and its device untainted again after the reset of %s: %w", name, gpu, err)
	}
	// A NoExecute fault: the taint and the eviction.
	err = watchFault(ctx, kube, cfg, running, device, gpu, cfg.EvictXid, func(p *corev1.Pod, deleted bool, taints []resourceapi.DeviceTaint, start time.Time) bool {
		if slices.ContainsFunc(taints, func(t resourceapi.DeviceTaint) bool { return t.Effect == resourceapi.DeviceTaintEffectNoExecute }) {
			setOnce(&lat[2], start)
		}
		if deleted || p != nil && slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
			return c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == "DeletionByDeviceTaintManager"
		}) {
			setOnce(&lat[3], start)
		}
		return lat[2] > 0 && lat[3] > 0
	})
	if err != nil {
		return nil, err
	}
	return lat, nil
}

// watchFault watches the pod and the driver's slices, injects the Xid into
// the GPU and hands every change to seen, with the injection's time, until
// seen says done.
func watchFault(ctx context.Context, kube kubernetes.Interface, cfg Config, pod *corev1.Pod, device resourceapi.DeviceRequestAllocationResult, gpu string, xid uint64,
	seen func(p *corev1.Pod, deleted bool, taints []resourceapi.DeviceTaint, start time.Time) bool) error {
	podWatch, err := kube.CoreV1().Pods(pod.Namespace).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + pod.Name, ResourceVersion: pod.ResourceVersion})
	if err != nil {
		return fmt.Errorf("watch pod %s: %w", pod.Name, err)
	}
	defer podWatch.Stop()
	selector := resourceapi.ResourceSliceSelectorDriver + "=" + device.Driver
	sliceList, err := kube.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: selector})
	if err != nil {
		return fmt.Errorf("list ResourceSlices: %w", err)
	}
	sliceWatch, err := kube.ResourceV1().ResourceSlices().Watch(ctx, metav1.ListOptions{FieldSelector: selector, ResourceVersion: sliceList.ResourceVersion})
	if err != nil {
		return fmt.Errorf("watch ResourceSlices: %w", err)
	}
	defer sliceWatch.Stop()
	start := time.Now()
	if _, err := fault.InjectXid(cfg.EmulatorRoot, gpu, fault.XidRequest{Code: xid}); err != nil {
		return fmt.Errorf("inject Xid %d into %s: %w", xid, gpu, err)
	}
	deadline := time.After(cfg.Timeout)
	for {
		var done bool
		select {
		case ev, ok := <-podWatch.ResultChan():
			if !ok {
				return fmt.Errorf("the watch of pod %s ended", pod.Name)
			}
			p, _ := ev.Object.(*corev1.Pod)
			done = seen(p, ev.Type == watch.Deleted, nil, start)
		case ev, ok := <-sliceWatch.ResultChan():
			if !ok {
				return errors.New("the watch of the driver's ResourceSlices ended")
			}
			s, ok := ev.Object.(*resourceapi.ResourceSlice)
			if !ok || s.Spec.Pool.Name != device.Pool {
				continue
			}
			if i := slices.IndexFunc(s.Spec.Devices, func(d resourceapi.Device) bool { return d.Name == device.Device }); i >= 0 {
				done = seen(nil, false, s.Spec.Devices[i].Taints, start)
			}
		case <-deadline:
			return fmt.Errorf("Xid %d into %s: not everything seen within %s", xid, gpu, cfg.Timeout)
		case <-ctx.Done():
			return ctx.Err()
		}
		if done {
			return nil
		}
	}
}

// sliceDevice is the allocated device as the driver's slices publish it.
func sliceDevice(ctx context.Context, kube kubernetes.Interface, r resourceapi.DeviceRequestAllocationResult) (*resourceapi.Device, error) {
	list, err := kube.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: resourceapi.ResourceSliceSelectorDriver + "=" + r.Driver})
	if err != nil {
		return nil, err
	}
	for i := range list.Items {
		if list.Items[i].Spec.Pool.Name != r.Pool {
			continue
		}
		if j := slices.IndexFunc(list.Items[i].Spec.Devices, func(d resourceapi.Device) bool { return d.Name == r.Device }); j >= 0 {
			return &list.Items[i].Spec.Devices[j], nil
		}
	}
	return nil, fmt.Errorf("device %s/%s/%s is in no ResourceSlice", r.Driver, r.Pool, r.Device)
}

func setOnce(d *time.Duration, start time.Time) {
	if *d == 0 {
		*d = time.Since(start)
	}
}

// healthOf is the health of the pod's allocated devices, over its
// containers.
func healthOf(p *corev1.Pod) []corev1.ResourceHealth {
	var out []corev1.ResourceHealth
	for _, cs := range p.Status.ContainerStatuses {
		for _, rs := range cs.AllocatedResourcesStatus {
			out = append(out, rs.Resources...)
		}
	}
	return out
}

// allocatedGPU is the UUID and allocation result of the device allocated
// to the claim.
func allocatedGPU(ctx context.Context, kube kubernetes.Interface, cfg Config, claim string) (string, resourceapi.DeviceRequestAllocationResult, error) {
	c, err := kube.ResourceV1().ResourceClaims(cfg.Namespace).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return "", resourceapi.DeviceRequestAllocationResult{}, fmt.Errorf("get claim %s: %w", claim, err)
	}
	if c.Status.Allocation == nil || len(c.Status.Allocation.Devices.Results) != 1 {
		return "", resourceapi.DeviceRequestAllocationResult{}, fmt.Errorf("claim %s: not allocated one device", claim)
	}
	r := c.Status.Allocation.Devices.Results[0]
	list, err := kube.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: resourceapi.ResourceSliceSelectorDriver + "=" + r.Driver})
	if err != nil {
		return "", r, fmt.Errorf("list ResourceSlices: %w", err)
	}
	for _, s := range list.Items {
		if s.Spec.Pool.Name != r.Pool {
			continue
		}
		for _, d := range s.Spec.Devices {
			if d.Name != r.Device {
				continue
			}
			for name, a := range d.Attributes {
				if (string(name) == cfg.UUIDAttribute || string(name) == cfg.Driver+"/"+cfg.UUIDAttribute) && a.StringValue != nil {
					return *a.StringValue, r, nil
				}
			}
		}
	}
	return "", r, fmt.Errorf("device %s/%s/%s: no %s attribute in the driver's slices", r.Driver, r.Pool, r.Device, cfg.UUIDAttribute)
}
