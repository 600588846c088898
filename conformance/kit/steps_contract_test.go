package kit

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"drakit.dev/drakit/conformance/declaration"
	"drakit.dev/drakit/conformance/kubeletapi"
	"drakit.dev/drakit/conformance/probe"
	"drakit.dev/drakit/conformance/report"
	"drakit.dev/drakit/features"
)

func TestCDIDefinitions(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.json", `{"cdiVersion":"0.6.0","kind":"v.example/gpu","devices":[{"name":"gpu-0"},{"name":"gpu-1"}]}`)
	write("b.yaml", "cdiVersion: 0.6.0\nkind: v.example/gpu\ndevices:\n- name: gpu-1\n")
	write("notes.txt", "not a spec")
	got, err := CdiDefinitions(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got["v.example/gpu=gpu-0"], []string{"a.json"}) || !slices.Equal(got["v.example/gpu=gpu-1"], []string{"a.json", "b.yaml"}) || len(got) != 2 {
		t.Errorf("cdiDefinitions = %v", got)
	}
	write("c.json", `{"kind": [`)
	if _, err := CdiDefinitions(dir); err == nil || !strings.Contains(err.Error(), "c.json") {
		t.Errorf("cdiDefinitions of a broken spec = %v, want an error naming c.json", err)
	}
}

// contractDriver is how a fake driver keeps the kubelet's contract, on top
// of the fake node's kubelet and scheduler (fakenode_test.go).
type contractDriver struct {
	// sharedSpec keeps every prepared device in one CDI spec file named
	// after the driver, its CDI devices named after the device alone: no
	// claim UID in a file or device name.
	sharedSpec bool
	// leaks leaves the shared spec's devices behind on unprepare.
	leaks bool
	// unprepareFails fails every unprepare: the kubelet never finishes a
	// pod with claims.
	unprepareFails bool
	// wipesOnRestart removes its CDI specs when it starts.
	wipesOnRestart bool
	// socket serves the driver's registration and DRAPlugin sockets in
	// the kubelet's plugin registry; prepareOnce makes a prepare of a
	// prepared claim fail there.
	socket, prepareOnce bool
}

const (
	fakeDriverNamespace = "drakit-driver"
	fakeDriverSelector  = "app=fake-driver"
	// sharedSpecKind is the CDI kind of the shared spec.
	sharedSpecKind = "k8s.gpu.drakit.dev/gpu"
)

// runContractOnFakeNode runs driver-contract.feature's scenarios with the
// tags against the fake node whose driver keeps the contract as drv says,
// with a driver pod that the kit can restart. It returns the scenarios by
// name and the kit's output.
func runContractOnFakeNode(t *testing.T, drv contractDriver, tags string) (map[string]report.ScenarioResult, string) {
	t.Helper()
	kube, ctx := fakeClusterWithGPUs(t)
	cfg := testConfig(t)
	cfg.Tags = tags
	cfg.NodeCDIDir, cfg.NodeKubeletRootDir = t.TempDir(), t.TempDir()
	cfg.Declaration.Driver.Pods = &declaration.DriverPods{Namespace: fakeDriverNamespace, Selector: fakeDriverSelector}
	out := &strings.Builder{}
	cfg.Output = out
	f := &fakeNode{t: t, Kube: kube, driver: testDriver, cdiDir: cfg.NodeCDIDir, kubeletDir: cfg.NodeKubeletRootDir,
		reports: map[string]probe.Report{}, prepared: map[types.UID]PreparedClaim{}}
	d := &fakeContractDriver{contractDriver: drv, node: f}
	kube.PrependReactor("create", "resourceclaims", func(a k8stesting.Action) (bool, runtime.Object, error) {
		a.(k8stesting.CreateAction).GetObject().(*resourceapi.ResourceClaim).UID = f.newUID()
		return false, nil, nil
	})
	kube.PrependReactor("create", "pods", d.onPodCreate)
	kube.PrependReactor("delete", "pods", d.onPodDelete)
	if err := kube.Tracker().Add(d.driverPod()); err != nil {
		t.Fatal(err)
	}
	if drv.socket {
		// Below the 108-byte limit of a unix socket's path.
		dir, err := os.MkdirTemp("", "kubelet")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		cfg.NodeKubeletRootDir, f.kubeletDir = dir, dir
		d.serveSockets(t, dir)
	}
	st := &Suite{Cfg: cfg, Driver: driverSettings(cfg.Declaration), Kube: kube, apiHost: "127.0.0.1", apiPort: 6443, stepGroups: stepGroupsForTest, artifacts: cfg.ArtifactsDir, logs: f.logs, gates: fakeGates,
		features: fstest.MapFS{"kep-4381-structured-parameters/driver-contract.feature": {Data: contractFeature(t)}}}
	res, _, err := st.run(ctx)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	byName := map[string]report.ScenarioResult{}
	for _, sr := range res.Scenarios {
		byName[sr.Name] = sr
	}
	return byName, out.String()
}

func contractFeature(t *testing.T) []byte {
	t.Helper()
	data, err := fs.ReadFile(features.FS, "kep-4381-structured-parameters/driver-contract.feature")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// fakeContractDriver plays the driver of the fake node as contractDriver
// says, and the kubelet's part that depends on it: a claim prepared before
// is not prepared again for another pod, which gets its CDI devices from
// the node's specs; a pod is removed only once its claims are unprepared.
type fakeContractDriver struct {
	contractDriver
	node     *fakeNode
	restarts int
}

func (d *fakeContractDriver) driverPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: fakeDriverNamespace, Name: fmt.Sprintf("driver-%d", d.restarts), UID: d.node.newUID(), Labels: map[string]string{"app": "fake-driver"}},
		Spec:       corev1.PodSpec{NodeName: "127.0.0.1"},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}

func (d *fakeContractDriver) onPodCreate(a k8stesting.Action) (bool, runtime.Object, error) {
	pod := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
	if missing := d.unresolvable(a.GetNamespace(), pod); missing != "" {
		pod.UID = d.node.newUID()
		pod.Spec.NodeName = "127.0.0.1"
		pod.Status = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: ProbeContainer,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerError", Message: "unresolvable CDI devices " + missing}}}}}
		return true, pod, d.node.Kube.Tracker().Create(podsGVR, pod, a.GetNamespace())
	}
	handled, obj, err := d.node.onPodCreate(a)
	if !handled && d.sharedSpec {
		d.share()
	}
	return handled, obj, err
}

// unresolvable names the CDI devices of the pod's prepared claims that no
// spec of the node defines: the kubelet does not prepare a prepared claim
// again, and the runtime cannot start the container.
func (d *fakeContractDriver) unresolvable(ns string, pod *corev1.Pod) string {
	defined, err := CdiDefinitions(d.node.cdiDir)
	if err != nil {
		d.node.t.Error(err)
		return ""
	}
	d.node.mu.Lock()
	defer d.node.mu.Unlock()
	var missing []string
	for _, pc := range pod.Spec.ResourceClaims {
		if pc.ResourceClaimName == nil {
			continue
		}
		c, err := d.node.getClaim(ns, *pc.ResourceClaimName)
		if err != nil {
			continue
		}
		for _, dev := range d.node.prepared[c.UID].DriverState[d.node.driver].Devices {
			for _, id := range dev.CDIDeviceIDs {
				if len(defined[id]) == 0 {
					missing = append(missing, id)
				}
			}
		}
	}
	return strings.Join(missing, ", ")
}

func (d *fakeContractDriver) onPodDelete(a k8stesting.Action) (bool, runtime.Object, error) {
	ns, name := a.GetNamespace(), a.(k8stesting.DeleteAction).GetName()
	if ns == fakeDriverNamespace {
		d.restart()
		return false, nil, nil
	}
	obj, err := d.node.Kube.Tracker().Get(podsGVR, ns, name)
	if err == nil && d.unprepareFails && len(obj.(*corev1.Pod).Spec.ResourceClaims) > 0 {
		return true, nil, nil // the kubelet retries the failed unprepare, the pod stays
	}
	handled, obj, err := d.node.onPodDelete(a)
	if !handled && d.sharedSpec && !d.leaks {
		d.share()
	}
	return handled, obj, err
}

// restart replaces the driver's pod (deleted by the kit) with a new one.
func (d *fakeContractDriver) restart() {
	d.restarts++
	if err := d.node.Kube.Tracker().Add(d.driverPod()); err != nil {
		d.node.t.Error(err)
	}
	if !d.wipesOnRestart {
		return
	}
	entries, _ := os.ReadDir(d.node.cdiDir)
	for _, e := range entries {
		if err := os.Remove(filepath.Join(d.node.cdiDir, e.Name())); err != nil {
			d.node.t.Error(err)
		}
	}
}

// share moves the devices of the fake's per-claim specs into the shared
// spec, named after the device alone, with the kubelet's checkpoint
// recording those IDs, and drops from the shared spec the devices no
// prepared claim has.
func (d *fakeContractDriver) share() {
	f := d.node
	f.mu.Lock()
	defer f.mu.Unlock()
	path := filepath.Join(f.cdiDir, "drakit-gpus.json")
	shared := cdispec.Spec{Version: "0.6.0", Kind: sharedSpecKind}
	if data, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(data, &shared); err != nil {
			f.t.Error(err)
		}
	}
	byName := map[string]cdispec.Device{}
	for _, dev := range shared.Devices {
		byName[dev.Name] = dev
	}
	inUse := map[string]bool{}
	for uid, c := range f.prepared {
		specPath := filepath.Join(f.cdiDir, "k8s."+f.driver+"-claim_"+string(uid)+".json")
		data, err := os.ReadFile(specPath)
		if err == nil {
			var spec cdispec.Spec
			if err := json.Unmarshal(data, &spec); err != nil {
				f.t.Error(err)
			}
			for _, dev := range spec.Devices {
				dev.Name = strings.TrimPrefix(dev.Name, string(uid)+"-")
				byName[dev.Name] = dev
			}
			if err := os.Remove(specPath); err != nil {
				f.t.Error(err)
			}
		}
		devices := c.DriverState[f.driver].Devices
		for i := range devices {
			devices[i].CDIDeviceIDs = []string{sharedSpecKind + "=" + devices[i].DeviceName}
			inUse[devices[i].DeviceName] = true
		}
	}
	f.writeCheckpoint()
	shared.Devices = nil
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		if inUse[name] || d.leaks {
			shared.Devices = append(shared.Devices, byName[name])
		}
	}
	data, err := json.Marshal(shared)
	if err == nil {
		err = os.WriteFile(path, data, 0o644)
	}
	if err != nil {
		f.t.Error(err)
	}
}

// serveSockets serves the driver's registration socket in the plugin
// registry below the kubelet's root dir and its DRAPlugin endpoint, which
// answers from the fake kubelet's checkpoint.
func (d *fakeContractDriver) serveSockets(t *testing.T, root string) {
	endpoint := filepath.Join(root, "dra.sock")
	d.serve(t, endpoint, func(s *grpc.Server) { drapb.RegisterDRAPluginServer(s, fakeDRAPlugin{d: d}) })
	d.serve(t, filepath.Join(root, kubeletapi.PluginRegistryDir, testDriver+"-reg.sock"), func(s *grpc.Server) {
		registerapi.RegisterRegistrationServer(s, fakeRegistrar{info: &registerapi.PluginInfo{Type: registerapi.DRAPlugin, Name: testDriver, Endpoint: endpoint,
			SupportedVersions: []string{drapb.DRAPluginService}}})
	})
}

func (d *fakeContractDriver) serve(t *testing.T, path string, register func(*grpc.Server)) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	register(s)
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
}

type fakeRegistrar struct {
	registerapi.UnimplementedRegistrationServer
	info *registerapi.PluginInfo
}

func (f fakeRegistrar) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return f.info, nil
}

// fakeDRAPlugin answers a prepare of a claim the fake kubelet prepared with
// its CDI devices (an error with prepareOnce), and every unprepare with
// success.
type fakeDRAPlugin struct {
	drapb.UnimplementedDRAPluginServer
	d *fakeContractDriver
}

func (p fakeDRAPlugin) NodePrepareResources(_ context.Context, req *drapb.NodePrepareResourcesRequest) (*drapb.NodePrepareResourcesResponse, error) {
	f := p.d.node
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]*drapb.NodePrepareResourceResponse{}
	for _, c := range req.Claims {
		prepared, ok := f.prepared[types.UID(c.Uid)]
		switch {
		case !ok:
			out[c.Uid] = &drapb.NodePrepareResourceResponse{Error: "the fake prepares through its kubelet only"}
		case p.d.prepareOnce:
			out[c.Uid] = &drapb.NodePrepareResourceResponse{Error: "claim already prepared"}
		default:
			var devices []*drapb.Device
			for _, dev := range prepared.DriverState[f.driver].Devices {
				devices = append(devices, &drapb.Device{PoolName: dev.PoolName, DeviceName: dev.DeviceName, CdiDeviceIds: dev.CDIDeviceIDs})
			}
			out[c.Uid] = &drapb.NodePrepareResourceResponse{Devices: devices}
		}
	}
	return &drapb.NodePrepareResourcesResponse{Claims: out}, nil
}

func (fakeDRAPlugin) NodeUnprepareResources(_ context.Context, req *drapb.NodeUnprepareResourcesRequest) (*drapb.NodeUnprepareResourcesResponse, error) {
	out := map[string]*drapb.NodeUnprepareResourceResponse{}
	for _, c := range req.Claims {
		out[c.Uid] = &drapb.NodeUnprepareResourceResponse{}
	}
	return &drapb.NodeUnprepareResourcesResponse{Claims: out}, nil
}

// Scenario names of driver-contract.feature.
const (
	scenarioUnprepared     = "A claim is unprepared when its pod goes, and its device serves the next claim"
	scenarioRestart        = "The driver restarts between prepare and unprepare: the pod runs on and its claim stays usable"
	scenarioCDIGone        = "The CDI devices a claim got are gone from the node once its pod is, whatever their names"
	scenarioRestartCDIGone = "The driver restarts between prepare and unprepare: the claim's CDI devices stay until its pod goes"
	scenarioIdempotent     = "Prepare and unprepare called again on the driver's socket are idempotent"
)

// TestDriverContractOnFakeNode: a correct driver passes every scenario the
// fake node can play, whether it names its CDI specs and devices after the
// claim or not; the socket scenario skips (the fake has no plugin
// registry), with its reason.
func TestDriverContractOnFakeNode(t *testing.T) {
	t.Parallel()
	for name, drv := range map[string]contractDriver{"per-claim specs": {}, "one spec without claim UIDs": {sharedSpec: true}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, out := runContractOnFakeNode(t, drv, "@kep-4381")
			for _, sc := range []string{scenarioUnprepared, scenarioRestart, scenarioCDIGone, scenarioRestartCDIGone} {
				if sr, ok := got[sc]; !ok || sr.Status != report.StatusPassed {
					t.Errorf("%q: %s (%s), want passed", sc, sr.Status, sr.Message)
				}
			}
			if sr := got[scenarioIdempotent]; sr.Status != report.StatusSkipped || !strings.Contains(sr.Message, "plugin registry") {
				t.Errorf("%q: %s (%s), want skipped without the kubelet's plugin registry", scenarioIdempotent, sr.Status, sr.Message)
			}
			if len(got) != 5 {
				t.Errorf("%d scenarios ran, want 5", len(got))
			}
			if t.Failed() {
				t.Logf("output:\n%s", out)
			}
		})
	}
}

// TestDriverContractFailsBrokenDrivers: each broken driver fails the
// scenarios that can see its defect, with a finding that names it.
func TestDriverContractFailsBrokenDrivers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		Name, tags string
		drv        contractDriver
		// fails are the scenarios that must fail, with a finding each.
		fails map[string]string
	}{
		{"unprepare fails", "@kep-4381", contractDriver{unprepareFails: true}, map[string]string{
			scenarioUnprepared: "does the driver's unprepare fail?",
			scenarioCDIGone:    "does the driver's unprepare fail?",
		}},
		// The first scenario to use the device finds the leak; a later
		// one takes the leaked name for a spec the driver keeps, defined
		// before it began.
		{"unprepare leaks CDI devices not named after the claim", "@kep-4381 && @extended", contractDriver{sharedSpec: true, leaks: true}, map[string]string{
			scenarioCDIGone: "still defined: k8s.gpu.drakit.dev/gpu=gpu-0 in drakit-gpus.json",
		}},
		{"prepare of a prepared claim fails", "@kep-4381 && @extended", contractDriver{socket: true, prepareOnce: true}, map[string]string{
			scenarioIdempotent: "a repeated NodePrepareResources of prepared claim gpu failed: claim already prepared",
		}},
		{"restart wipes the CDI specs", "@kep-4381", contractDriver{wipesOnRestart: true}, map[string]string{
			scenarioRestart:        "unresolvable CDI devices",
			scenarioRestartCDIGone: "that the kubelet got for it (a container started now could not get them)",
		}},
	} {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			got, out := runContractOnFakeNode(t, tc.drv, tc.tags)
			for sc, finding := range tc.fails {
				if sr := got[sc]; sr.Status != report.StatusFailed || !strings.Contains(sr.Message, finding) {
					t.Errorf("%q: %s (%s), want failed with %q", sc, sr.Status, sr.Message, finding)
				}
			}
			if t.Failed() {
				t.Logf("output:\n%s", out)
			}
		})
	}
}

// TestDriverContractIdempotentOnTheSocket: with the driver's sockets in the
// kubelet's plugin registry, an idempotent driver passes the socket
// scenario.
func TestDriverContractIdempotentOnTheSocket(t *testing.T) {
	t.Parallel()
	got, out := runContractOnFakeNode(t, contractDriver{socket: true}, "@kep-4381 && @extended")
	if sr := got[scenarioIdempotent]; sr.Status != report.StatusPassed {
		t.Errorf("%q: %s (%s), want passed\noutput:\n%s", scenarioIdempotent, sr.Status, sr.Message, out)
	}
}
