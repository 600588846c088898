package nicdriver

// Tests against drakit's emulator: a node rendered from testdata/node.yaml
// (emulator/render) whose sriov_numvfs writes a running emulator/sriov
// Watcher applies with the kernel's rules. The driver's own code never
// imports the emulator (TestDriverDoesNotImportTheEmulator).

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/dynamic-resource-allocation/deviceattribute"
	"k8s.io/klog/v2/ktesting"

	"drakit.dev/drakit/emulator/profile"
	"drakit.dev/drakit/emulator/render"
	"drakit.dev/drakit/emulator/sriov"
	"drakit.dev/drakit/internal/nichw"
	"drakit.dev/drakit/reference/pluginharness/harnesstest"
)

// PCI addresses of testdata/node.yaml.
const (
	emuGPU   = "0000:12:00.0"
	emuCX7   = "0000:13:00.0" // 400G, RDMA, 16 VFs at offset 1
	emuCX7b  = "0000:14:00.0" // 200G, MTU 9000
	emuE810  = "0000:90:00.0" // link down, 128 VFs at offset 8, no RDMA
	emuNoVFs = "0000:a0:00.0" // no SR-IOV
)

// emulatedNode renders testdata/node.yaml and runs the emulator's SR-IOV
// watcher on it until the test ends; it returns the root.
func emulatedNode(t *testing.T) string {
	t.Helper()
	probe := filepath.Join(t.TempDir(), "probe")
	if err := unix.Mknod(probe, unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))); err != nil {
		t.Skipf("rendering the emulated node needs mknod (root or CAP_MKNOD): %v", err)
	}
	p, err := profile.Load("testdata/node.yaml")
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "root")
	if err := render.Render(t.Context(), p, render.Options{Root: root}); err != nil {
		t.Fatal(err)
	}
	w, err := sriov.NewWatcher(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("SR-IOV watcher: %v", err)
		}
	})
	return root
}

// emulatedEnv is a test environment on an emulated node.
func emulatedEnv(t *testing.T) (*testEnv, string) {
	t.Helper()
	root := emulatedNode(t)
	dir := t.TempDir()
	cfg := DefaultConfig()
	cfg.NodeName = testNode
	cfg.HostRoot = root
	cfg.KubeletPluginDir = filepath.Join(dir, "plugin")
	cfg.CDIDir = filepath.Join(dir, "cdi")
	cfg.VFTimeout = 10 * time.Second
	cfg.DeviceStatus = false
	if err := os.MkdirAll(cfg.KubeletPluginDir, 0o750); err != nil {
		t.Fatal(err)
	}
	return &testEnv{cfg: cfg, client: fake.NewClientset(), fatal: &harnesstest.FatalRecorder{}}, root
}

func emuNumVFs(t *testing.T, root, pf string) int {
	t.Helper()
	n, err := sriov.NumVFs(root, pf)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestEmulatedDiscovery: what the driver discovers in the emulator's sysfs
// is what the emulator rendered, read back by its own reader: the SR-IOV
// PFs (not the NIC without SR-IOV, not the GPU), their ids, VF layout,
// netdev, RDMA device and NUMA node; the NICs behind the GPU's switch
// share its pcieRoot.
func TestEmulatedDiscovery(t *testing.T) {
	t.Parallel()
	root := emulatedNode(t)
	_, ctx := ktesting.NewTestContext(t)
	got, err := ScanPFs(ctx, filepath.Join(root, "sys"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := sriov.PFs(root)
	if err != nil {
		t.Fatal(err)
	}
	type summary struct {
		BDF, VFDeviceID, Netdev, MAC     string
		TotalVFs, NumVFs, Offset, Stride int
		NUMANode                         int
		SpeedMbps                        int64
		RDMA, HasDriver                  bool
	}
	var gotS, wantS []summary
	for _, pf := range got {
		s := summary{BDF: pf.BDF, VFDeviceID: pf.VFDeviceID, TotalVFs: pf.TotalVFs, NumVFs: pf.NumVFs, Offset: pf.VFOffset,
			Stride: pf.VFStride, NUMANode: pf.NUMANode, RDMA: pf.RDMA != nil && pf.RDMA.Uverbs != "", HasDriver: pf.HasDriver}
		if pf.Netdev != nil {
			s.Netdev, s.MAC, s.SpeedMbps = pf.Netdev.Name, pf.Netdev.Address, pf.Netdev.SpeedMbps
		}
		gotS = append(gotS, s)
	}
	for _, pf := range want {
		s := summary{BDF: pf.Address, VFDeviceID: fmt.Sprintf("0x%04x", pf.VFDevice), TotalVFs: pf.TotalVFs, NumVFs: pf.NumVFs,
			Offset: pf.Offset, Stride: pf.Stride, NUMANode: pf.NUMANode, RDMA: pf.RDMA, HasDriver: pf.Driver != "",
			Netdev: pf.NetDev, MAC: pf.MAC}
		if pf.Up {
			s.SpeedMbps = int64(pf.SpeedMbps) // a link that is down has no speed
		}
		wantS = append(wantS, s)
	}
	if diff := cmp.Diff(wantS, gotS); diff != "" {
		t.Errorf("discovered PFs (-emulator's reading +driver's):\n%s", diff)
	}
	if len(got) != 3 {
		t.Fatalf("%d PFs, want 3 (two ConnectX-7, one E810-C; not the NIC without SR-IOV)", len(got))
	}
	gpuRoot, err := deviceattribute.GetPCIeRootAttributeByPCIBusID(emuGPU, deviceattribute.WithFSFromRoot(filepath.Join(root, "sys")))
	if err != nil {
		t.Fatal(err)
	}
	for _, pf := range got[:2] {
		if pf.PCIeRoot == "" || pf.PCIeRoot != *gpuRoot.Value.StringValue {
			t.Errorf("PF %s pcieRoot %q, want the GPU's %q (same switch)", pf.BDF, pf.PCIeRoot, *gpuRoot.Value.StringValue)
		}
	}
	if got[2].PCIeRoot == got[0].PCIeRoot || got[2].NUMANode != 1 {
		t.Errorf("E810-C: pcieRoot %q NUMA %d, want another root complex on NUMA node 1", got[2].PCIeRoot, got[2].NUMANode)
	}
	devs, _ := publish(t, &fakeSysfs{Root: filepath.Join(root, "sys")}, DefaultVFsPerPF)
	var names []string
	for _, d := range devs {
		names = append(names, d.Name)
	}
	wantNames := []string{"nic-0000-13-00-0", "nic-0000-13-00-0-vf0", "nic-0000-13-00-0-vf1", "nic-0000-13-00-0-vf2", "nic-0000-13-00-0-vf3",
		"nic-0000-14-00-0", "nic-0000-14-00-0-vf0", "nic-0000-14-00-0-vf1", "nic-0000-14-00-0-vf2", "nic-0000-14-00-0-vf3",
		"nic-0000-90-00-0-vf0", "nic-0000-90-00-0-vf1", "nic-0000-90-00-0-vf2", "nic-0000-90-00-0-vf3"}
	if diff := cmp.Diff(wantNames, names); diff != "" {
		t.Errorf("published devices (-want +got):\n%s", diff)
	}
	// The VFs' addresses before they exist are where the emulator puts them.
	for _, d := range devs {
		if d.Kind != kindVF {
			continue
		}
		pf, _ := nichw.ParseAddress(d.PF.BDF)
		want, _ := nichw.VFAddress(pf, d.PF.VFOffset, d.PF.VFStride, d.VF)
		if d.BDF != want.String() {
			t.Errorf("device %s: pciBusID %s, want %s", d.Name, d.BDF, want)
		}
	}
}

// TestEmulatedPrepareUnprepare: on the emulated node a VF's prepare makes
// the emulator create the PF's VFs (0→4), the VF's CDI device names its
// netdev (systemd's path name) and its uverbs node as the emulator made it,
// its status names the same; the last unprepare removes them (4→0).
func TestEmulatedPrepareUnprepare(t *testing.T) {
	t.Parallel()
	e, root := emulatedEnv(t)
	e.cfg.DeviceStatus = true
	claimA := harnesstest.AllocatedClaim("a", uidA, vfResult("vf", "nic-0000-13-00-0-vf1"), shareResult("net", "nic-0000-14-00-0", share1, "25G"))
	claimB := harnesstest.AllocatedClaim("b", uidB, vfResult("vf", "nic-0000-13-00-0-vf0"))
	claimC := harnesstest.AllocatedClaim("c", uidC, vfResult("vf", "nic-0000-90-00-0-vf2"))
	e.client = fake.NewClientset(claimA, claimB, claimC)
	p := e.start(t)
	prepareOK(t, p, claimA)
	if n := emuNumVFs(t, root, emuCX7); n != 4 {
		t.Fatalf("the ConnectX-7 has %d VFs after prepare, want 4", n)
	}
	vfAddr, _ := nichw.VFAddress(nichw.Address{Bus: 0x13}, 1, 1, 1)
	iface := nichw.PathName(vfAddr, "")
	edits := e.spec(t, "claim", uidA).Devices[0].ContainerEdits
	for _, want := range []string{
		"DRAKIT_DEVICE_NIC_0000_13_00_0_VF1_PCI_ADDRESS=" + vfAddr.String(),
		"DRAKIT_DEVICE_NIC_0000_13_00_0_VF1_INTERFACE=" + iface,
	} {
		if !slices.Contains(edits.Env, want) {
			t.Errorf("VF env %v lacks %s", edits.Env, want)
		}
	}
	if len(edits.DeviceNodes) != 1 {
		t.Fatalf("VF device nodes %+v, want its uverbs node", edits.DeviceNodes)
	}
	node := edits.DeviceNodes[0]
	var st unix.Stat_t
	if err := unix.Stat(node.HostPath, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR ||
		int64(unix.Major(st.Rdev)) != node.Major || int64(unix.Minor(st.Rdev)) != node.Minor ||
		!strings.HasPrefix(node.HostPath, filepath.Join(root, "dev/infiniband")+"/") || filepath.Base(node.HostPath) != filepath.Base(node.Path) {
		t.Errorf("device node %+v does not match the emulator's %s (stat %v: mode %o rdev %d:%d)", node, node.HostPath, err,
			st.Mode, unix.Major(st.Rdev), unix.Minor(st.Rdev))
	}
	status := e.claimStatus(t, "a")
	if len(status) != 2 || status[0].NetworkData == nil || status[0].NetworkData.InterfaceName != iface {
		t.Errorf("status.devices %+v, want the VF (interface %s) and the share", status, iface)
	}

	prepareOK(t, p, claimB)
	prepareOK(t, p, claimC)
	if n := emuNumVFs(t, root, emuE810); n != 4 {
		t.Errorf("the E810-C has %d VFs, want 4", n)
	}
	if nodes := e.spec(t, "claim", uidC).Devices[0].ContainerEdits.DeviceNodes; len(nodes) != 0 {
		t.Errorf("an E810-C VF (iavf, no RDMA) injects device nodes %+v", nodes)
	}
	unprepareOK(t, p, uidA)
	if n := emuNumVFs(t, root, emuCX7); n != 4 {
		t.Errorf("claim b still uses a VF, but the ConnectX-7 has %d VFs", n)
	}
	unprepareOK(t, p, uidB, uidC)
	for _, pf := range []string{emuCX7, emuE810} {
		if n := emuNumVFs(t, root, pf); n != 0 {
			t.Errorf("PF %s has %d VFs after the last unprepare, want 0", pf, n)
		}
	}
	if n := emuNumVFs(t, root, emuCX7b); n != 0 {
		t.Errorf("a bandwidth share created %d VFs on %s", n, emuCX7b)
	}
}

// TestEmulatedRestartMidPrepare: a driver restarted after the emulator
// created a prepare's VFs, before the prepare finished, removes them.
func TestEmulatedRestartMidPrepare(t *testing.T) {
	t.Parallel()
	e, root := emulatedEnv(t)
	p := e.start(t)
	prepareOK(t, p, harnesstest.AllocatedClaim("a", uidA, vfResult("vf", "nic-0000-13-00-0-vf3")))
	e.crashMidPrepare(t, uidA)
	e.start(t)
	if n := emuNumVFs(t, root, emuCX7); n != 0 {
		t.Errorf("the ConnectX-7 has %d VFs after the restart, want 0", n)
	}
	if len(e.checkpoint(t)) != 0 {
		t.Errorf("the unfinished claim is still checkpointed: %v", e.checkpoint(t))
	}
}

// TestDriverDoesNotImportTheEmulator: the driver and the family's command use the
// emulator in tests only.
func TestDriverDoesNotImportTheEmulator(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "drakit.dev/drakit/reference/nicdriver", "drakit.dev/drakit/cmd/drakit-driver").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "drakit.dev/drakit/emulator") {
			t.Errorf("the NIC driver depends on %s", pkg)
		}
	}
}
