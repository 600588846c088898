package kit

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"drakit.dev/drakit/conformance/declaration"
	"drakit.dev/drakit/conformance/probe"
	"drakit.dev/drakit/conformance/report"
	"drakit.dev/drakit/features"
)

var (
	podsGVR      = corev1.SchemeGroupVersion.WithResource("pods")
	claimsGVR    = resourceapi.SchemeGroupVersion.WithResource("resourceclaims")
	templatesGVR = resourceapi.SchemeGroupVersion.WithResource("resourceclaimtemplates")
	slicesGVR    = resourceapi.SchemeGroupVersion.WithResource("resourceslices")
)

// fakeNode plays scheduler, resourceclaim controller, kubelet, driver and
// probe on top of a fake clientset, just enough for the kit's steps: pods
// are allocated first-fit when created (request selectors are evaluated
// with the kit's CEL library), run at once and show exactly their devices;
// deleting a pod releases its claims and deletes the generated ones. The
// driver prepares an allocated claim as the reference driver does: a CDI
// spec in cdiDir whose devices set DRAKIT_DEVICE_<DEVICE>=<uuid> and inject
// /dev/nvidia<minor>, recorded in a kubelet DRA checkpoint below
// kubeletDir (fakenode_prepare_test.go). It ignores constraints (the test's
// slices put gpu-0 and gpu-1 on one NUMA node) and does no validation or
// defaulting.
//
// Reactors run under the fake's lock, so they use only the object tracker.
type fakeNode struct {
	t          *testing.T
	Kube       *fake.Clientset
	driver     string
	cdiDir     string
	kubeletDir string
	uids       atomic.Int64

	mu       sync.Mutex
	reports  map[string]probe.Report // by namespace/pod
	prepared map[types.UID]PreparedClaim

	// wrong makes the fake scheduler decide wrongly for the claims whose
	// names start with a key: leave them unschedulable, or give them a
	// device their selectors do not select.
	wrong map[string]wrongDecision
	// container, when set, changes what a pod's container sees after the
	// fake driver prepared its claims: a broken driver, or a container
	// without NVML.
	container func(pod string, r *probe.Report)
}

func (f *fakeNode) wrongFor(claim string) wrongDecision {
	for prefix, w := range f.wrong {
		if strings.HasPrefix(claim, prefix) {
			return w
		}
	}
	return wrongNone
}

// A wrong decision of the fake scheduler, for the oracle's tests.
type wrongDecision int

const (
	wrongNone wrongDecision = iota
	wrongUnschedulable
	wrongDevice
)

func newFakeNode(t *testing.T, kube *fake.Clientset, driver, cdiDir, kubeletDir string) *fakeNode {
	f := &fakeNode{t: t, Kube: kube, driver: driver, cdiDir: cdiDir, kubeletDir: kubeletDir,
		reports: map[string]probe.Report{}, prepared: map[types.UID]PreparedClaim{}}
	kube.PrependReactor("create", "resourceclaims", func(a k8stesting.Action) (bool, runtime.Object, error) {
		c := a.(k8stesting.CreateAction).GetObject().(*resourceapi.ResourceClaim)
		c.UID = f.newUID()
		return false, nil, nil
	})
	kube.PrependReactor("create", "pods", f.onPodCreate)
	kube.PrependReactor("delete", "pods", f.onPodDelete)
	return f
}

func (f *fakeNode) newUID() types.UID {
	return types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", f.uids.Add(1)))
}

// logs serves the probe's report line as the container log.
func (f *fakeNode) logs(_ context.Context, ns, pod string, opts *corev1.PodLogOptions) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.reports[ns+"/"+pod]
	if !ok || opts.Container != ProbeContainer {
		return nil, nil
	}
	line, err := probe.Format(r)
	return []byte(line + "\n"), err
}

func (f *fakeNode) getClaim(ns, name string) (*resourceapi.ResourceClaim, error) {
	obj, err := f.Kube.Tracker().Get(claimsGVR, ns, name)
	if err != nil {
		return nil, err
	}
	return obj.(*resourceapi.ResourceClaim).DeepCopy(), nil
}

func (f *fakeNode) onPodCreate(a k8stesting.Action) (bool, runtime.Object, error) {
	pod := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
	ns := a.GetNamespace()
	pod.UID = f.newUID()
	pod.Status.Phase = corev1.PodPending
	var claims []*resourceapi.ResourceClaim
	for _, pc := range pod.Spec.ResourceClaims {
		if pc.ResourceClaimName != nil {
			c, err := f.getClaim(ns, *pc.ResourceClaimName)
			if err != nil {
				return false, nil, nil // stays pending, like a pod whose claim is missing
			}
			claims = append(claims, c)
			continue
		}
		obj, err := f.Kube.Tracker().Get(templatesGVR, ns, *pc.ResourceClaimTemplateName)
		if err != nil {
			return false, nil, nil
		}
		tmpl := obj.(*resourceapi.ResourceClaimTemplate)
		c := &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("%s-%s-%05d", pod.Name, pc.Name, f.uids.Load()), Namespace: ns, UID: f.newUID(),
				Annotations:     map[string]string{resourceapi.PodResourceClaimAnnotation: pc.Name},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: ptrTrue()}},
			},
			Spec: tmpl.Spec.Spec,
		}
		if err := f.Kube.Tracker().Add(c); err != nil {
			return true, nil, err
		}
		pod.Status.ResourceClaimStatuses = append(pod.Status.ResourceClaimStatuses, corev1.PodResourceClaimStatus{Name: pc.Name, ResourceClaimName: &c.Name})
		claims = append(claims, c)
	}
	taken := map[string]bool{}
	for _, c := range claims {
		if c.Status.Allocation != nil {
			continue
		}
		results, ok := f.allocate(c, taken)
		wrong := f.wrongFor(c.Name)
		if wrong == wrongUnschedulable {
			ok = false
		}
		if ok && wrong == wrongDevice {
			// Ignore the request's selectors: the first free device.
			results = []resourceapi.DeviceRequestAllocationResult{{Request: c.Spec.Devices.Requests[0].Name, Driver: f.driver, Pool: "127.0.0.1", Device: "gpu-3"}}
		}
		if !ok {
			pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: 1 cannot allocate all claims."}}
			return false, nil, nil
		}
		// As the scheduler does for node-local devices: the node by name.
		c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: results, Config: allocationConfig(c)},
			NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{
				Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"127.0.0.1"},
			}}}}}}
	}
	report := probe.Report{Env: map[string]string{"PATH": "/usr/bin"}}
	report.Devices = []probe.DeviceNode{{Path: "/dev/null", Type: "c", Major: 1, Minor: 3}}
	report.NVML.GPUs = []probe.GPU{}
	devices := f.devices()
	for _, c := range claims {
		c.Status.ReservedFor = append(c.Status.ReservedFor, resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: pod.Name, UID: pod.UID})
		if err := f.Kube.Tracker().Update(claimsGVR, c, ns); err != nil {
			return true, nil, err
		}
		f.prepare(c, devices, &report)
	}
	if f.container != nil {
		f.container(pod.Name, &report)
	}
	pod.Spec.NodeName = "127.0.0.1"
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
	// The fake kubelet shows what the fake driver streams (KEP-4680):
	// every allocated device Healthy, in every container's status, under
	// the pod's claim entry; claims holds one claim per entry.
	var health []corev1.ResourceStatus
	for i, c := range claims {
		rs := corev1.ResourceStatus{Name: corev1.ResourceName("claim:" + pod.Spec.ResourceClaims[i].Name)}
		for _, r := range c.Status.Allocation.Devices.Results {
			rs.Resources = append(rs.Resources, corev1.ResourceHealth{ResourceID: corev1.ResourceID(r.Driver + "/" + r.Pool + "/" + r.Device), Health: corev1.ResourceHealthStatusHealthy})
		}
		health = append(health, rs)
	}
	for _, ctr := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{Name: ctr.Name, Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, AllocatedResourcesStatus: health})
	}
	f.mu.Lock()
	f.reports[ns+"/"+pod.Name] = report
	f.mu.Unlock()
	return false, nil, nil
}

func (f *fakeNode) devices() []PublishedDevice {
	obj, err := f.Kube.Tracker().List(slicesGVR, resourceapi.SchemeGroupVersion.WithKind("ResourceSlice"), "")
	if err != nil {
		f.t.Errorf("list slices: %v", err)
		return nil
	}
	return publishedDevices(obj.(*resourceapi.ResourceSliceList).Items, f.driver)
}

// allocate picks free devices first-fit for every request of the claim.
func (f *fakeNode) allocate(c *resourceapi.ResourceClaim, taken map[string]bool) ([]resourceapi.DeviceRequestAllocationResult, bool) {
	obj, err := f.Kube.Tracker().List(claimsGVR, resourceapi.SchemeGroupVersion.WithKind("ResourceClaim"), "")
	if err != nil {
		f.t.Errorf("list claims: %v", err)
		return nil, false
	}
	for _, other := range obj.(*resourceapi.ResourceClaimList).Items {
		if other.Status.Allocation != nil {
			for _, r := range other.Status.Allocation.Devices.Results {
				taken[r.Pool+"/"+r.Device] = true
			}
		}
	}
	var results []resourceapi.DeviceRequestAllocationResult
	for _, req := range c.Spec.Devices.Requests {
		n := max(req.Exactly.Count, 1)
		for _, d := range f.devices() {
			if n == 0 {
				break
			}
			if taken[d.ID()] || !f.selected(req.Exactly.Selectors, d) {
				continue
			}
			taken[d.ID()] = true
			results = append(results, resourceapi.DeviceRequestAllocationResult{Request: req.Name, Driver: f.driver, Pool: d.Pool, Device: d.Name})
			n--
		}
		if n > 0 {
			return nil, false
		}
	}
	return results, true
}

// selected evaluates the request's selectors on the device with the kit's
// CEL library, as the scheduler does.
func (f *fakeNode) selected(selectors []resourceapi.DeviceSelector, d PublishedDevice) bool {
	var exprs []string
	for _, s := range selectors {
		exprs = append(exprs, s.CEL.Expression)
	}
	got, err := selectDevices(context.Background(), f.driver, []PublishedDevice{d}, exprs)
	return err == nil && len(got) == 1
}

// onPodDelete releases the pod's claims: the reservation goes, claims
// nobody reserves are deallocated (their CDI spec removed), and claims
// generated for the pod are deleted.
func (f *fakeNode) onPodDelete(a k8stesting.Action) (bool, runtime.Object, error) {
	ns, name := a.GetNamespace(), a.(k8stesting.DeleteAction).GetName()
	obj, err := f.Kube.Tracker().Get(podsGVR, ns, name)
	if apierrors.IsNotFound(err) {
		return false, nil, nil
	}
	if err != nil {
		return true, nil, err
	}
	pod := obj.(*corev1.Pod)
	var names []string
	for _, pc := range pod.Spec.ResourceClaims {
		if pc.ResourceClaimName != nil {
			names = append(names, *pc.ResourceClaimName)
		}
	}
	for _, st := range pod.Status.ResourceClaimStatuses {
		names = append(names, *st.ResourceClaimName)
	}
	for _, n := range names {
		c, err := f.getClaim(ns, n)
		if err != nil {
			continue
		}
		var keep []resourceapi.ResourceClaimConsumerReference
		for _, r := range c.Status.ReservedFor {
			if r.UID != pod.UID {
				keep = append(keep, r)
			}
		}
		c.Status.ReservedFor = keep
		if len(keep) == 0 && c.Status.Allocation != nil {
			c.Status.Allocation = nil
			f.unprepare(c)
		}
		if len(c.OwnerReferences) == 1 && c.OwnerReferences[0].UID == pod.UID {
			err = f.Kube.Tracker().Delete(claimsGVR, ns, n)
		} else {
			err = f.Kube.Tracker().Update(claimsGVR, c, ns)
		}
		if err != nil {
			return true, nil, err
		}
	}
	f.mu.Lock()
	delete(f.reports, ns+"/"+name)
	f.mu.Unlock()
	return false, nil, nil
}

func ptrTrue() *bool { b := true; return &b }

// runOnFakeNode runs the embedded features with cfg against a fake node
// with four GPUs; the node's CDI directory and kubelet root dir are
// temporary directories of the test.
func runOnFakeNode(t *testing.T, cfg Config) (report.Result, string) {
	t.Helper()
	return runFakeNode(t, cfg, fakeRun{})
}

// fakeRun varies a run on the fake node.
type fakeRun struct {
	// blind keeps the node's CDI directory and kubelet root dir from the
	// kit, as on a cluster whose nodes it cannot read.
	blind bool
	// container is the fake node's fakeNode.container.
	container func(pod string, r *probe.Report)
}

func runFakeNode(t *testing.T, cfg Config, run fakeRun) (report.Result, string) {
	t.Helper()
	kube, ctx := fakeClusterWithGPUs(t)
	cdiDir, kubeletDir := t.TempDir(), t.TempDir()
	cfg.NodeCDIDir, cfg.NodeKubeletRootDir = cdiDir, kubeletDir
	if run.blind {
		cfg.NodeCDIDir, cfg.NodeKubeletRootDir = "", ""
	}
	out := &strings.Builder{}
	cfg.Output = out
	node := newFakeNode(t, kube, testDriver, cdiDir, kubeletDir)
	node.container = run.container
	st := &Suite{Cfg: cfg, Driver: driverSettings(cfg.Declaration), Kube: kube, apiHost: "127.0.0.1", apiPort: 6443, stepGroups: stepGroupsForTest, artifacts: cfg.ArtifactsDir, features: features.FS, logs: node.logs,
		gates: fakeGates}
	res, _, err := st.run(ctx)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	entries, err := os.ReadDir(cdiDir)
	if err != nil || len(entries) != 0 {
		t.Errorf("CDI specs left: %v (err %v)", entries, err)
	}
	if state, err := ReadKubeletDRAState(kubeletDir); err != nil || len(state) != 0 {
		t.Errorf("prepared claims left: %v (err %v)", state, err)
	}
	return res, out.String()
}

// allocationConfig is the claim's config as the scheduler copies it into
// the allocation (the fake allocates every request).
func allocationConfig(c *resourceapi.ResourceClaim) []resourceapi.DeviceAllocationConfiguration {
	var out []resourceapi.DeviceAllocationConfiguration
	for _, cfg := range c.Spec.Devices.Config {
		out = append(out, resourceapi.DeviceAllocationConfiguration{Source: resourceapi.AllocationConfigSourceClaim,
			Requests: cfg.Requests, DeviceConfiguration: cfg.DeviceConfiguration})
	}
	return out
}

// fakeOpaqueConfig is the fake driver's configuration sample: the fake
// driver sets FAKE_CONFIG_<KEY>=<value> for every key of a config of its
// own (fakeNode.prepare).
var fakeOpaqueConfig = &declaration.OpaqueConfig{
	Parameters: json.RawMessage(`{"strategy":"TimeSlicing"}`),
	Env:        map[string]string{"FAKE_CONFIG_STRATEGY": "TimeSlicing"},
}

// TestFeaturesOnFakeNode runs the real KEP-4381 features on the fake node,
// one scenario at a time and three at a time (each holding the GPUs it
// needs), and expects every scenario that the fake can play to pass: this
// exercises the kit's positive paths end to end without a cluster,
// including the DRA contract against the fake's CDI specs and kubelet
// checkpoint. The validation scenarios need the real API server (the fake
// neither validates nor defaults) and are not judged; the pre-created
// partition, alignment, driver-restart, kubelet-contract and NVLink fabric
// scenarios must skip (the fake has no partition class, no PCIe root peer,
// no driver pods, no interposer and no GPU in an NVLink clique). The KEP-4815 features need a
// scheduler that counts counters and a node that partitions GPUs, and are
// not run (partitions_test.go and conformance/inventory cover their parts).
func TestFeaturesOnFakeNode(t *testing.T) {
	t.Parallel()
	for _, concurrency := range []int{1, 3} {
		t.Run(fmt.Sprintf("concurrency %d", concurrency), func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t)
			cfg.Tags = "@kep-4381"
			cfg.Concurrency = concurrency
			dropPartitions(cfg)                // the fake node has no MIG: those scenarios must skip
			noDriverPods(cfg)                  // nor driver pods to restart
			wholeKind(cfg).PCIeRootPeers = nil // nor another driver
			wholeKind(cfg).OpaqueConfig = fakeOpaqueConfig
			res, out := runOnFakeNode(t, cfg)
			judged := 0
			for _, sr := range res.Scenarios {
				if strings.HasSuffix(sr.URI, "/validation.feature") {
					continue
				}
				if strings.HasSuffix(sr.URI, "/pre-created-partitions.feature") || strings.HasSuffix(sr.URI, "/alignment.feature") ||
					strings.HasSuffix(sr.URI, "/kubelet-contract.feature") || strings.HasSuffix(sr.URI, "/nvlink-fabric.feature") ||
					strings.HasSuffix(sr.URI, "/registration.feature") ||
					strings.Contains(sr.Name, "driver restarts") || strings.Contains(sr.Name, "driver's socket") || strings.Contains(sr.Name, "exactly the node's devices") {
					if sr.Status != report.StatusSkipped {
						t.Errorf("%s:%d %q: %s, want skipped without a partition class, a PCIe root peer, driver pods, the node's sysfs, an interposer, an NVLink clique or a plugin registry: %s", sr.URI, sr.Line, sr.Name, sr.Status, sr.Message)
					}
					continue
				}
				judged++
				if sr.Status != report.StatusPassed {
					t.Errorf("%s:%d %q: %s: %s", sr.URI, sr.Line, sr.Name, sr.Status, sr.Message)
				}
			}
			if judged != 14 {
				t.Errorf("%d scenarios judged, want the 14 outside validation.feature that the fake can play", judged)
			}
			if t.Failed() {
				t.Logf("output:\n%s", out)
			}
		})
	}
}

// envOnlyConfig is the kit configured by the env-only example driver's
// declaration (no partitions, no NVML, GPU_DEVICE_{attribute:index}=
// {device}) for the fake node's driver and its devices.
func envOnlyConfig(t *testing.T) Config {
	t.Helper()
	d, err := declaration.Load("../../docs/examples/env-only-driver.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t)
	d.Driver.Name = cfg.Declaration.Driver.Name // the fake node's driver
	d.DeviceKinds[0].DeviceClass = wholeKind(cfg).DeviceClass
	d.DeviceKinds[0].Identity.Env = nil // the fake sets the reference driver's variables
	cfg.Declaration = d
	noDriverPods(cfg) // and runs no driver pods
	return cfg
}

// TestFeaturesSkipWhatTheDriverDoesNotDeclare runs the KEP-4381 and KEP-4815
// features against the fake node as a driver configured only by the
// env-only example's declaration, plus the NUMA attribute the fake's GPUs
// publish: no partitions, no NVML, no driver pods, real hardware. The
// partition scenarios must be skipped as an unclaimed capability (the
// @emulator one too: its Background says so first), the restart and
// pre-created ones with their reasons (the multi-node one as its own
// capability, perDeviceNodeSelection, unclaimed), those of the alpha gate
// DRAPartitionableDevicesType as not eligible (the fake's gates lack it),
// and none may fail; the partitionable
// profile is reported as unclaimed. The validation scenarios need a real API server
// and are not judged; the pool scenarios of the kit's own test driver need
// a scheduler that counts counters.
func TestFeaturesSkipWhatTheDriverDoesNotDeclare(t *testing.T) {
	t.Parallel()
	cfg := envOnlyConfig(t)
	claimOnly(cfg, declaration.CapabilityNUMANodeAttribute)
	cfg.Tags = "@kep-4381,@kep-4815"
	res, out := runOnFakeNode(t, cfg)
	reasons := map[string]int{}
	unclaimed := unclaimedReason(declaration.CapabilityPartitionableDevices)
	for _, sr := range res.Scenarios {
		if strings.HasSuffix(sr.URI, "/validation.feature") || strings.HasSuffix(sr.URI, "/pools.feature") {
			continue
		}
		if sr.Status != report.StatusSkipped && sr.Status != report.StatusPassed {
			t.Errorf("%s:%d %q: %s, want passed or skipped: %s", sr.URI, sr.Line, sr.Name, sr.Status, sr.Message)
			continue
		}
		for _, r := range []string{unclaimed, PartitionSkipReason, RestartSkipReason} {
			if strings.Contains(sr.Message, r) {
				reasons[r]++
			}
		}
		if strings.Contains(sr.URI, "kep-4815") && !report.UnclaimedSkip(sr.Message) && !strings.HasPrefix(sr.Message, report.NotEligiblePrefix) {
			t.Errorf("%s:%d %q: %s (%s), want skipped as unclaimed or not eligible", sr.URI, sr.Line, sr.Name, sr.Status, sr.Message)
		}
	}
	claimed := 0
	for _, sr := range res.Scenarios {
		if slices.Contains(sr.Claimed, string(declaration.CapabilityNUMANodeAttribute)) {
			claimed++
		}
	}
	if claimed == 0 {
		t.Error("no scenario noted the claimed capability numaNodeAttribute for the verdict")
	}
	for _, r := range []string{unclaimed, PartitionSkipReason, RestartSkipReason} {
		if reasons[r] == 0 {
			t.Errorf("no scenario skipped for %q", r)
		}
	}
	data, err := os.ReadFile(filepath.Join(cfg.ArtifactsDir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Profiles []struct{ Name, Result string }
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	for _, p := range doc.Profiles {
		if p.Name == "partitionable" && p.Result != string(report.NotApplicable) {
			t.Errorf("profile partitionable: result %s, want %s", p.Result, report.NotApplicable)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}

// TestFeaturesSkipTheEmulatorOnRealHardware: a driver of real devices
// (--hardware) that claims everything the @emulator scenarios need gets
// them skipped, with the reason, never failed.
func TestFeaturesSkipTheEmulatorOnRealHardware(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Declaration.Hardware = declaration.HardwareReal
	cfg.Tags = EmulatorTag
	res, out := runOnFakeNode(t, cfg)
	if res.Total() == 0 {
		t.Fatal("no @emulator scenario ran")
	}
	for _, sr := range res.Scenarios {
		if sr.Status != report.StatusSkipped || sr.Message != HardwareSkipReason {
			t.Errorf("%s:%d %q: %s (%s), want skipped: %s", sr.URI, sr.Line, sr.Name, sr.Status, sr.Message, HardwareSkipReason)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}

// TestFeaturesFailWhatTheDriverPublishesButDoesNotClaim: the fake's GPUs
// publish resource.kubernetes.io/numaNode; a driver that does not claim
// numaNodeAttribute cannot escape the NUMA scenario by leaving it
// unclaimed, it fails with the evidence.
func TestFeaturesFailWhatTheDriverPublishesButDoesNotClaim(t *testing.T) {
	t.Parallel()
	cfg := envOnlyConfig(t)
	cfg.Tags = "@kep-4381 && @extended"
	res, out := runOnFakeNode(t, cfg)
	found := false
	for _, sr := range res.Scenarios {
		if !strings.Contains(sr.Name, "matchAttribute constraint") {
			continue
		}
		found = true
		want := "capability numaNodeAttribute (KEP-6072) unclaimed, but driver gpu.drakit.dev publishes it: device 127.0.0.1/gpu-0 (ResourceSlice node-gpus) publishes resource.kubernetes.io/numaNode"
		if sr.Status != report.StatusFailed || !strings.Contains(sr.Message, want) {
			t.Errorf("%q: %s (%s), want failed with %q", sr.Name, sr.Status, sr.Message, want)
		}
	}
	if !found {
		t.Errorf("no NUMA scenario ran:\n%s", out)
	}
}

// fakeGates are the feature gates the fake cluster claims to have on: a
// fake clientset cannot serve the API server's /metrics.
var fakeGates = []string{"DRAPrioritizedList", "DRAPartitionableDevices", "DRADeviceTaints", "DRAAdminAccess", "ResourceHealthStatus"}

// fakeClusterWithGPUs is a fake cluster with the test driver's DeviceClass
// and four GPUs on two NUMA nodes of node 127.0.0.1, a Ready Node.
func fakeClusterWithGPUs(t *testing.T) (*fake.Clientset, context.Context) {
	t.Helper()
	kube := fakeCluster(t)
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "127.0.0.1", UID: "node-127-0-0-1", Labels: map[string]string{"kubernetes.io/hostname": "127.0.0.1"}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	if _, err := kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.ResourceV1().DeviceClasses().Create(ctx, &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: testDriver}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := slice("node-gpus", testDriver, "127.0.0.1", "127.0.0.1", 1,
		gpu("gpu-0", "GPU-aaaa-0", 0), gpu("gpu-1", "GPU-aaaa-1", 0), gpu("gpu-2", "GPU-aaaa-2", 1), gpu("gpu-3", "GPU-aaaa-3", 1))
	for i := range s.Spec.Devices {
		// The reference driver's minor, which its declared device node
		// /dev/nvidia{attribute:minor} names.
		s.Spec.Devices[i].Attributes["minor"] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(i))}
	}
	// Owned by the Node, as the kubelet plugin library publishes it.
	s.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID, Controller: ptr.To(true)}}
	if _, err := kube.ResourceV1().ResourceSlices().Create(ctx, &s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return kube, ctx
}
