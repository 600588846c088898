package nicdriver

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2/ktesting"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"drakit.dev/drakit/reference/pluginharness"
	"drakit.dev/drakit/reference/pluginharness/harnesstest"
)

const (
	uidA = "aaaaaaaa-0000-0000-0000-000000000001"
	uidB = "bbbbbbbb-0000-0000-0000-000000000002"
	uidC = "cccccccc-0000-0000-0000-000000000003"

	share1 = "11111111-1111-4111-8111-111111111111"
	share2 = "22222222-2222-4222-8222-222222222222"
	share3 = "33333333-3333-4333-8333-333333333333"

	pf0   = "0000:3b:00.0"
	pf0Dv = "nic-0000-3b-00-0"
)

// testEnv is a node's sysfs with a running fake kernel and the driver's
// directories.
type testEnv struct {
	fs     *fakeSysfs
	cfg    Config
	client kubernetes.Interface
	fatal  *harnesstest.FatalRecorder
}

func newEnv(t *testing.T, nics ...fakeNIC) *testEnv {
	t.Helper()
	if len(nics) == 0 {
		nics = standardNICs()
	}
	fs := newFakeSysfs(t, nics...)
	fs.startKernel()
	dir := t.TempDir()
	cfg := DefaultConfig()
	cfg.NodeName = testNode
	cfg.HostRoot = filepath.Join(dir, "host")
	cfg.SysfsRoot = fs.Root
	cfg.KubeletPluginDir = filepath.Join(dir, "plugin")
	cfg.CDIDir = filepath.Join(dir, "cdi")
	cfg.VFTimeout = 5 * time.Second
	cfg.DeviceStatus = false
	if err := os.MkdirAll(cfg.KubeletPluginDir, 0o750); err != nil {
		t.Fatal(err)
	}
	return &testEnv{fs: fs, cfg: cfg, client: fake.NewClientset(), fatal: &harnesstest.FatalRecorder{}}
}

// start creates the plugin, as a (re)started driver does.
func (e *testEnv) start(t *testing.T) *plugin {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	p, err := newPlugin(ctx, e.cfg, e.client, e.fatal.Cancel)
	if err != nil {
		t.Fatalf("start the driver: %v", err)
	}
	return p
}

func vfResult(request, device string) resourceapi.DeviceRequestAllocationResult {
	return harnesstest.AllocResult(DefaultDriverName, testNode, request, device)
}

func shareResult(request, device, shareID, bandwidth string) resourceapi.DeviceRequestAllocationResult {
	r := harnesstest.AllocResult(DefaultDriverName, testNode, request, device)
	id := types.UID(shareID)
	r.ShareID = &id
	if bandwidth != "" {
		r.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{CapacityBandwidth: resource.MustParse(bandwidth)}
	}
	return r
}

func prepareOK(t *testing.T, p *plugin, claim *resourceapi.ResourceClaim) []kubeletplugin.Device {
	t.Helper()
	res := harnesstest.PrepareOne(t, p, claim)
	if res.Err != nil {
		t.Fatalf("prepare claim %s: %v", claim.Name, res.Err)
	}
	return res.Devices
}

func prepareErr(t *testing.T, p *plugin, claim *resourceapi.ResourceClaim, want string) {
	t.Helper()
	res := harnesstest.PrepareOne(t, p, claim)
	if res.Err == nil || !strings.Contains(res.Err.Error(), want) {
		t.Fatalf("prepare claim %s: error %v, want one containing %q", claim.Name, res.Err, want)
	}
}

func unprepareOK(t *testing.T, p *plugin, uids ...string) {
	t.Helper()
	for uid, err := range harnesstest.Unprepare(t, p, uids...) {
		if err != nil {
			t.Fatalf("unprepare claim %s: %v", uid, err)
		}
	}
}

// vfLinks lists the PF's virtfn links.
func (e *testEnv) vfLinks(t *testing.T, pf string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(e.fs.Root, pciDevicesDir, pf))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, en := range entries {
		if strings.HasPrefix(en.Name(), "virtfn") {
			out = append(out, en.Name())
		}
	}
	slices.Sort(out)
	return out
}

func (e *testEnv) spec(t *testing.T, class, uid string) *cdispec.Spec {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(e.cfg.CDIDir, "k8s.nic.drakit.dev-"+class+"_"+uid+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var spec cdispec.Spec
	if err := json.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	return &spec
}

func (e *testEnv) specExists(class, uid string) bool {
	_, err := os.Stat(filepath.Join(e.cfg.CDIDir, "k8s.nic.drakit.dev-"+class+"_"+uid+".json"))
	return err == nil
}

func (e *testEnv) checkpoint(t *testing.T) map[string]vfClaim {
	t.Helper()
	cp := pluginharness.Checkpoint[vfDevice]{Path: filepath.Join(e.cfg.KubeletPluginDir, pluginharness.CheckpointFile), Version: checkpointVersion, Checksum: true}
	claims, err := cp.Load()
	if err != nil {
		t.Fatal(err)
	}
	return claims
}

// TestPrepareVFs: the first VF of a PF without VFs creates the published
// number (sriov_numvfs 0→4, waited for), later ones reuse them, the CDI
// spec carries the VF's variables and uverbs node, and the VFs go (4→0)
// only when the last claim using one is unprepared. Both calls are
// idempotent.
func TestPrepareVFs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.start(t)
	claimA := harnesstest.AllocatedClaim("a", uidA, vfResult("vf", pf0Dv+"-vf0"))
	devs := prepareOK(t, p, claimA)
	if e.fs.numVFs(pf0) != "4" || len(e.vfLinks(t, pf0)) != 4 {
		t.Fatalf("after prepare: sriov_numvfs %s, links %v; want 4 VFs", e.fs.numVFs(pf0), e.vfLinks(t, pf0))
	}
	wantDevs := []kubeletplugin.Device{{Requests: []string{"vf"}, PoolName: testNode, DeviceName: pf0Dv + "-vf0",
		CDIDeviceIDs: []string{"k8s.nic.drakit.dev/claim=" + uidA + "-" + pf0Dv + "-vf0"}}}
	if diff := cmp.Diff(wantDevs, devs); diff != "" {
		t.Errorf("devices (-want +got):\n%s", diff)
	}
	spec := e.spec(t, "claim", uidA)
	wantEdits := cdispec.ContainerEdits{
		Env: []string{
			"DRAKIT_DEVICE_NIC_0000_3B_00_0_VF0_PCI_ADDRESS=0000:3b:00.2",
			"DRAKIT_DEVICE_NIC_0000_3B_00_0_VF0_PF_PCI_ADDRESS=0000:3b:00.0",
			"DRAKIT_DEVICE_NIC_0000_3B_00_0_VF0_INTERFACE=ens1f0v0",
			"DRAKIT_DEVICE_NIC_0000_3B_00_0_VF0_RDMA_DEVICE=mlx5_0_vf0",
		},
		DeviceNodes: []*cdispec.DeviceNode{{Path: "/dev/infiniband/uverbs10", HostPath: filepath.Join(e.cfg.HostRoot, "dev/infiniband/uverbs10"),
			Type: "c", Major: 231, Minor: 202}},
	}
	if len(spec.Devices) != 1 || spec.Devices[0].Name != uidA+"-"+pf0Dv+"-vf0" || spec.Kind != "k8s.nic.drakit.dev/claim" {
		t.Fatalf("spec %+v", spec)
	}
	if diff := cmp.Diff(wantEdits, spec.Devices[0].ContainerEdits); diff != "" {
		t.Errorf("VF edits (-want +got):\n%s", diff)
	}

	// Idempotent: the same devices, nothing written.
	if diff := cmp.Diff(devs, prepareOK(t, p, claimA)); diff != "" {
		t.Errorf("second prepare (-first +second):\n%s", diff)
	}
	claimB := harnesstest.AllocatedClaim("b", uidB, vfResult("vf", pf0Dv+"-vf3"))
	prepareOK(t, p, claimB)
	unprepareOK(t, p, uidA)
	if e.fs.numVFs(pf0) != "4" {
		t.Errorf("claim b still uses a VF, but sriov_numvfs is %s", e.fs.numVFs(pf0))
	}
	if e.specExists("claim", uidA) {
		t.Error("claim a's spec is still there")
	}
	unprepareOK(t, p, uidB)
	if e.fs.numVFs(pf0) != "0" || len(e.vfLinks(t, pf0)) != 0 {
		t.Errorf("after the last unprepare: sriov_numvfs %s, links %v; want no VFs", e.fs.numVFs(pf0), e.vfLinks(t, pf0))
	}
	unprepareOK(t, p, uidB, uidA)
	if diff := cmp.Diff([]string{pf0 + "=4", pf0 + "=0"}, e.fs.history()); diff != "" {
		t.Errorf("sriov_numvfs writes (-want +got):\n%s", diff)
	}
	if cp := e.checkpoint(t); len(cp) != 0 {
		t.Errorf("checkpoint still holds %v", cp)
	}
}

// TestPrepareVFsOfTwoPFs: one claim with VFs of two PFs creates both PFs'
// VFs; an Ethernet VF (no RDMA) injects no device node.
func TestPrepareVFsOfTwoPFs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.start(t)
	claim := harnesstest.AllocatedClaim("a", uidA, vfResult("a", pf0Dv+"-vf1"), vfResult("b", "nic-0000-86-00-0-vf1"))
	prepareOK(t, p, claim)
	if e.fs.numVFs(pf0) != "4" || e.fs.numVFs("0000:86:00.0") != "2" {
		t.Errorf("sriov_numvfs %s and %s, want 4 and 2", e.fs.numVFs(pf0), e.fs.numVFs("0000:86:00.0"))
	}
	spec := e.spec(t, "claim", uidA)
	intel := spec.Devices[1].ContainerEdits
	if len(intel.DeviceNodes) != 0 || !slices.Contains(intel.Env, "DRAKIT_DEVICE_NIC_0000_86_00_0_VF1_PCI_ADDRESS=0000:86:02.1") ||
		!slices.Contains(intel.Env, "DRAKIT_DEVICE_NIC_0000_86_00_0_VF1_INTERFACE=ens2f0v1") {
		t.Errorf("Ethernet VF edits %+v", intel)
	}
	unprepareOK(t, p, uidA)
	if e.fs.numVFs(pf0) != "0" || e.fs.numVFs("0000:86:00.0") != "0" {
		t.Errorf("sriov_numvfs %s and %s after unprepare, want 0", e.fs.numVFs(pf0), e.fs.numVFs("0000:86:00.0"))
	}
}

// TestPrepareForeignVFs: VFs the driver did not create are used as they
// are and never removed.
func TestPrepareForeignVFs(t *testing.T) {
	t.Parallel()
	nic := standardNICs()[0]
	nic.NumVFs = 2
	e := newEnv(t, nic)
	p := e.start(t)
	prepareErr(t, p, harnesstest.AllocatedClaim("a", uidA, vfResult("vf", pf0Dv+"-vf3")), "device "+pf0Dv+"-vf3 is not on this node")
	prepareOK(t, p, harnesstest.AllocatedClaim("b", uidB, vfResult("vf", pf0Dv+"-vf1")))
	unprepareOK(t, p, uidB)
	if e.fs.numVFs(pf0) != "2" || len(e.fs.history()) != 0 {
		t.Errorf("sriov_numvfs %s, writes %v; want the 2 VFs left alone", e.fs.numVFs(pf0), e.fs.history())
	}
}

// TestPrepareRefusedCount: a count the kernel refuses (restored to 0, as
// drakit's emulator does) fails the prepare at once (not after the
// timeout) with an error that says so, and leaves nothing behind.
func TestPrepareRefusedCount(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.start(t)
	e.fs.mu.Lock()
	e.fs.nics[pf0].TotalVFs = 2 // the kernel now refuses 4
	e.fs.mu.Unlock()
	prepareErr(t, p, harnesstest.AllocatedClaim("a", uidA, vfResult("vf", pf0Dv+"-vf0")),
		"PF 0000:3b:00.0: wrote 4 to sriov_numvfs 3 times, and each time it read 0 again: the count was refused")
	if e.fs.numVFs(pf0) != "0" || e.specExists("claim", uidA) || len(e.checkpoint(t)) != 0 {
		t.Errorf("after the failed prepare: sriov_numvfs %s, spec %v, checkpoint %v", e.fs.numVFs(pf0), e.specExists("claim", uidA), e.checkpoint(t))
	}
}

// TestPrepareVFWithoutNetdev: a VF that does not get the netdev its PF's
// driver gives VFs fails the prepare after the timeout, and the VFs it
// created go again.
func TestPrepareVFWithoutNetdev(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.cfg.VFTimeout = 300 * time.Millisecond
	p := e.start(t)
	e.fs.setNoVFNetdev(true)
	prepareErr(t, p, harnesstest.AllocatedClaim("a", uidA, vfResult("vf", pf0Dv+"-vf0")),
		"VF 0 of PF 0000:3b:00.0: VF 0000:3b:00.2 has no network interface yet (net/) after 300ms")
	if e.fs.numVFs(pf0) != "0" || len(e.vfLinks(t, pf0)) != 0 || len(e.checkpoint(t)) != 0 {
		t.Errorf("after the failed prepare: sriov_numvfs %s, links %v, checkpoint %v", e.fs.numVFs(pf0), e.vfLinks(t, pf0), e.checkpoint(t))
	}
}

// crashMidPrepare rewrites the checkpoint as a driver that stopped after
// writing sriov_numvfs and before the VF showed up leaves it: the claim
// incomplete, its records owned and without the VF's address.
func (e *testEnv) crashMidPrepare(t *testing.T, uid string) {
	t.Helper()
	cp := pluginharness.Checkpoint[vfDevice]{Path: filepath.Join(e.cfg.KubeletPluginDir, pluginharness.CheckpointFile), Version: checkpointVersion, Checksum: true}
	claims, err := cp.Load()
	if err != nil {
		t.Fatal(err)
	}
	c := claims[uid]
	c.Incomplete = true
	for _, d := range c.Devices {
		*d.VF = vfRecord{PF: d.VF.PF, Index: d.VF.Index, Count: d.VF.Count, Owned: true}
	}
	claims[uid] = c
	if err := cp.Save(claims); err != nil {
		t.Fatal(err)
	}
	// The spec is written after the hardware changes.
	if err := os.Remove(filepath.Join(e.cfg.CDIDir, "k8s.nic.drakit.dev-claim_"+uid+".json")); err != nil {
		t.Fatal(err)
	}
}

// TestRestartMidPrepareUndoes: a driver restarted after a prepare wrote
// sriov_numvfs but before it finished removes the VFs again and forgets
// the claim (the kubelet retries the prepare), unless another claim uses
// a VF of the PF.
func TestRestartMidPrepareUndoes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.start(t)
	prepareOK(t, p, harnesstest.AllocatedClaim("a", uidA, vfResult("vf", pf0Dv+"-vf0")))
	e.crashMidPrepare(t, uidA)
	p = e.start(t)
	if e.fs.numVFs(pf0) != "0" || len(e.vfLinks(t, pf0)) != 0 || len(e.checkpoint(t)) != 0 {
		t.Errorf("after the restart: sriov_numvfs %s, links %v, checkpoint %v; want no VFs, no claim",
			e.fs.numVFs(pf0), e.vfLinks(t, pf0), e.checkpoint(t))
	}
	// The kubelet's retry prepares it again.
	prepareOK(t, p, harnesstest.AllocatedClaim("a", uidA, vfResult("vf", pf0Dv+"-vf0")))
	if e.fs.numVFs(pf0) != "4" {
		t.Errorf("prepare after the restart: sriov_numvfs %s, want 4", e.fs.numVFs(pf0))
	}

	// With another claim on the PF the VFs stay.
	prepareOK(t, p, harnesstest.AllocatedClaim("b", uidB, vfResult("vf", pf0Dv+"-vf1")))
	e.crashMidPrepare(t, uidB)
	p = e.start(t)
	if e.fs.numVFs(pf0) != "4" {
		t.Errorf("claim a uses a VF, but the restart left sriov_numvfs %s", e.fs.numVFs(pf0))
	}
	if _, ok := e.checkpoint(t)[uidB]; ok {
		t.Error("the unfinished claim b is still checkpointed")
	}
	unprepareOK(t, p, uidA)
	if e.fs.numVFs(pf0) != "0" {
		t.Errorf("after the last unprepare: sriov_numvfs %s, want 0", e.fs.numVFs(pf0))
	}
}

// TestRestartKeepsPreparedVFs: a restarted driver keeps prepared claims and
// their VFs, publishes the VFs as they are, and removes them at the last
// unprepare.
func TestRestartKeepsPreparedVFs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.start(t)
	claim := harnesstest.AllocatedClaim("a", uidA, vfResult("vf", pf0Dv+"-vf2"))
	devs := prepareOK(t, p, claim)
	p = e.start(t)
	if e.fs.numVFs(pf0) != "4" {
		t.Fatalf("the restart changed sriov_numvfs to %s", e.fs.numVFs(pf0))
	}
	if diff := cmp.Diff(devs, prepareOK(t, p, claim)); diff != "" {
		t.Errorf("prepare after the restart (-before +after):\n%s", diff)
	}
	unprepareOK(t, p, uidA)
	if e.fs.numVFs(pf0) != "0" {
		t.Errorf("sriov_numvfs %s after unprepare, want 0", e.fs.numVFs(pf0))
	}
}

// TestAdmit: admin access to a VF is refused; a PF share never reaches the
// harness.
func TestAdmit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.start(t)
	r := vfResult("vf", pf0Dv+"-vf0")
	r.AdminAccess = new(bool)
	*r.AdminAccess = true
	prepareErr(t, p, harnesstest.AllocatedClaim("a", uidA, r), "admin access to a VF is not supported")
	if err := p.hw.Admit(pf0Dv, false); err == nil || !strings.Contains(err.Error(), "bandwidth share") {
		t.Errorf("Admit(PF) = %v", err)
	}
	if e.fs.numVFs(pf0) != "0" {
		t.Errorf("a refused claim wrote sriov_numvfs %s", e.fs.numVFs(pf0))
	}
}

// TestPrepareShares: bandwidth shares of a PF are prepared for several
// claims at once (allowMultipleAllocations), each with its shareID and the
// bandwidth it consumes in its spec; the bandwidth prepared never exceeds
// the link; unprepare removes the spec.
func TestPrepareShares(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.start(t)
	claimA := harnesstest.AllocatedClaim("a", uidA, shareResult("net", pf0Dv, share1, "40G"))
	claimB := harnesstest.AllocatedClaim("b", uidB, shareResult("net", pf0Dv, share2, "40G"))
	devs := prepareOK(t, p, claimA)
	id := types.UID(share1)
	want := []kubeletplugin.Device{{Requests: []string{"net"}, PoolName: testNode, DeviceName: pf0Dv, ShareID: &id,
		CDIDeviceIDs: []string{"k8s.nic.drakit.dev/share=" + uidA + "-" + pf0Dv + "-" + share1}}}
	if diff := cmp.Diff(want, devs); diff != "" {
		t.Errorf("devices (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(devs, prepareOK(t, p, claimA)); diff != "" {
		t.Errorf("second prepare (-first +second):\n%s", diff)
	}
	prepareOK(t, p, claimB)
	spec := e.spec(t, "share", uidB)
	wantEnv := []string{
		"DRAKIT_DEVICE_NIC_0000_3B_00_0_PCI_ADDRESS=0000:3b:00.0",
		"DRAKIT_DEVICE_NIC_0000_3B_00_0_SHARE_ID=" + share2,
		"DRAKIT_DEVICE_NIC_0000_3B_00_0_INTERFACE=ens1f0",
		"DRAKIT_DEVICE_NIC_0000_3B_00_0_BANDWIDTH=40G",
	}
	if spec.Kind != "k8s.nic.drakit.dev/share" || len(spec.Devices) != 1 || spec.Devices[0].Name != uidB+"-"+pf0Dv+"-"+share2 {
		t.Fatalf("share spec %+v", spec)
	}
	if diff := cmp.Diff(wantEnv, spec.Devices[0].ContainerEdits.Env); diff != "" {
		t.Errorf("share env (-want +got):\n%s", diff)
	}
	claimC := harnesstest.AllocatedClaim("c", uidC, shareResult("net", pf0Dv, share3, "40G"))
	prepareErr(t, p, claimC, "device "+pf0Dv+": the shares of this claim take more bandwidth than the link's 100G has left (claims prepared before take 80G)")
	if e.specExists("share", uidC) {
		t.Error("the refused claim has a spec")
	}
	unprepareOK(t, p, uidA)
	if e.specExists("share", uidA) {
		t.Error("claim a's share spec is still there")
	}
	prepareOK(t, p, claimC)
	// A restarted driver still counts the prepared shares.
	p = e.start(t)
	prepareErr(t, p, harnesstest.AllocatedClaim("a", uidA, shareResult("net", pf0Dv, share1, "40G")), "claims prepared before take 80G")
	if len(e.fs.history()) != 0 {
		t.Errorf("shares wrote sriov_numvfs: %v", e.fs.history())
	}
}

// TestPrepareShareErrors: a share needs its shareID and, unless it has
// admin access, its consumed bandwidth; a failing share undoes the claim's
// VFs.
func TestPrepareShareErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.start(t)
	noID := harnesstest.AllocResult(DefaultDriverName, testNode, "net", pf0Dv)
	prepareErr(t, p, harnesstest.AllocatedClaim("a", uidA, vfResult("vf", pf0Dv+"-vf0"), noID),
		"device "+pf0Dv+": a PF's bandwidth share needs a shareID, the allocation has none")
	if e.fs.numVFs(pf0) != "0" || len(e.checkpoint(t)) != 0 || e.specExists("claim", uidA) {
		t.Errorf("the failed claim left sriov_numvfs %s, checkpoint %v", e.fs.numVFs(pf0), e.checkpoint(t))
	}
	prepareErr(t, p, harnesstest.AllocatedClaim("b", uidB, shareResult("net", pf0Dv, share1, "")),
		"the allocation's consumedCapacity has no bandwidth")
	admin := shareResult("net", pf0Dv, share2, "")
	admin.AdminAccess = new(bool)
	*admin.AdminAccess = true
	prepareOK(t, p, harnesstest.AllocatedClaim("c", uidC, admin))
	if env := e.spec(t, "share", uidC).Devices[0].ContainerEdits.Env; slices.ContainsFunc(env, func(s string) bool { return strings.Contains(s, "BANDWIDTH") }) {
		t.Errorf("an admin share's env names a bandwidth: %v", env)
	}
}

// TestPrepareMixedClaim: a claim with a VF, a share and another driver's
// device prepares this driver's two.
func TestPrepareMixedClaim(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.start(t)
	other := harnesstest.AllocResult("gpu.drakit.dev", testNode, "gpu", "gpu-0")
	claim := harnesstest.AllocatedClaim("a", uidA, vfResult("vf", pf0Dv+"-vf0"), other, shareResult("net", "nic-0000-3b-00-1", share1, "5G"))
	devs := prepareOK(t, p, claim)
	var names []string
	for _, d := range devs {
		names = append(names, d.DeviceName)
	}
	if diff := cmp.Diff([]string{pf0Dv + "-vf0", "nic-0000-3b-00-1"}, names); diff != "" {
		t.Errorf("devices (-want +got):\n%s", diff)
	}
	unprepareOK(t, p, uidA)
	if e.specExists("claim", uidA) || e.specExists("share", uidA) || e.fs.numVFs(pf0) != "0" {
		t.Error("unprepare left specs or VFs")
	}
}

// TestVFEditsNeedTheVF: edits come from the record alone, and a record of
// a VF that was never created has none.
func TestVFEditsNeedTheVF(t *testing.T) {
	t.Parallel()
	h := &hardware{}
	_, err := h.Edits(context.Background(), uidA, vfClaim{Devices: []vfDevice{{PreparedDevice: pluginharness.PreparedDevice{Device: "x"}, VF: &vfRecord{PF: pf0}}}})
	if err == nil || !strings.Contains(err.Error(), "device x: the VF was not created") {
		t.Errorf("Edits = %v", err)
	}
}

// TestPrepareCanceled: a prepare whose context ends (the kubelet's call
// timeout) while it waits for the VFs says so and leaves nothing behind.
func TestPrepareCanceled(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.start(t)
	e.fs.setPaused(true)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	claim := harnesstest.AllocatedClaim("a", uidA, vfResult("vf", pf0Dv+"-vf0"))
	res, err := p.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{claim})
	if err != nil {
		t.Fatal(err)
	}
	if err := res[claim.UID].Err; err == nil || !strings.Contains(err.Error(), "stopped waiting: context deadline exceeded") {
		t.Fatalf("prepare: %v, want it stopped by the deadline", err)
	}
	e.fs.setPaused(false)
	time.Sleep(50 * time.Millisecond) // the kernel would apply a stale write now
	if e.fs.numVFs(pf0) != "0" || len(e.vfLinks(t, pf0)) != 0 || len(e.checkpoint(t)) != 0 {
		t.Errorf("after the canceled prepare: sriov_numvfs %s, links %v, checkpoint %v", e.fs.numVFs(pf0), e.vfLinks(t, pf0), e.checkpoint(t))
	}
}
