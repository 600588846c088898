package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"drakit.dev/drakit/emulator/nvlink"
	"drakit.dev/drakit/emulator/nvmlstate"
	"drakit.dev/drakit/internal/nvidiahw"
)

func TestNVSwitchesAndLinks(t *testing.T) {
	requireMknod(t)
	root := render(t, loadProfile(t, "hgx-h100"), Options{})
	switches := map[string]bool{}
	entries, err := os.ReadDir(filepath.Join(root, "sys/bus/pci/devices"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		dir := filepath.Join(root, "sys/bus/pci/devices", e.Name())
		if readTrimmed(t, filepath.Join(dir, "class")) != "0x068000" {
			continue
		}
		if v := readTrimmed(t, filepath.Join(dir, "vendor")); v != "0x10de" {
			t.Errorf("NVSwitch %s: vendor %s", e.Name(), v)
		}
		if drv, err := os.Readlink(filepath.Join(dir, "driver")); err != nil || filepath.Base(drv) != nvswitchDriver {
			t.Errorf("NVSwitch %s: driver %q, %v", e.Name(), drv, err)
		}
		switches[strings.ToUpper("0000"+e.Name())] = true
	}
	if len(switches) != 4 {
		t.Fatalf("%d NVSwitch functions in sysfs, want 4: %v", len(switches), switches)
	}
	s := readState(t, root)
	if len(s.NVLinks) != 8*18 {
		t.Fatalf("%d nvlink records, want 8 GPUs x 18 links", len(s.NVLinks))
	}
	reached := map[[2]string]bool{}
	for _, l := range s.NVLinks {
		if !l.Active || l.Version != 6 || l.RemoteType != nvmlstate.RemoteSwitch || !switches[l.RemoteBusID] {
			t.Errorf("link %+v: want active, NVML version 6 (NVLink 4), to an NVSwitch of sysfs", l)
		}
		reached[[2]string{s.GPUs[l.GPU].BusID, l.RemoteBusID}] = true
	}
	if len(reached) != 8*4 {
		t.Errorf("%d (GPU, NVSwitch) pairs linked, want every GPU to every switch (32)", len(reached))
	}
	if len(s.Fabrics) != 0 {
		t.Errorf("hgx-h100 has no multi-node domain, but %d fabric records", len(s.Fabrics))
	}
	if len(s.Peers) != 28 {
		t.Fatalf("%d peer records, want 28 pairs", len(s.Peers))
	}
	for _, p := range s.Peers {
		if !p.NVLink {
			t.Errorf("peer %+v: all-to-all through NVSwitches, want nvlink", p)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "dev/nvidia-caps-imex-channels")); !os.IsNotExist(err) {
		t.Errorf("hgx-h100 has no IMEX channels, /dev/nvidia-caps-imex-channels: %v", err)
	}
}

func TestFabricAndIMEX(t *testing.T) {
	requireMknod(t)
	// A cluster profile sets the node's domain; here it is set by hand.
	p := loadProfile(t, "gb200-nvl-node")
	p.Spec.NVLink.Domain = &nvlink.Domain{ClusterUUID: "5f0c7a3e-2b1d-4e8a-9c6f-0d1e2f3a4b5c", CliqueID: 1}
	p.Default()
	root := render(t, p, Options{})
	s := readState(t, root)
	if len(s.Fabrics) != 4 {
		t.Fatalf("%d fabric records, want one per GPU", len(s.Fabrics))
	}
	for _, f := range s.Fabrics {
		if f.ClusterUUID != p.Spec.NVLink.Domain.ClusterUUID || f.CliqueID != 1 || f.State != nvmlstate.FabricCompleted ||
			f.HealthMask != nvidiahw.FabricHealthy {
			t.Errorf("fabric %+v: want the profile's domain, clique 1, completed, healthy", f)
		}
	}
	for _, l := range s.NVLinks {
		if l.RemoteType != nvmlstate.RemoteSwitch || !strings.HasPrefix(l.RemoteBusID, "0000FFFF:") || l.Version != 7 {
			t.Errorf("link %+v: want NVLink 5 (NVML 7) to a switch tray off the node", l)
		}
	}
	procDevices := readTrimmed(t, filepath.Join(root, "proc/devices"))
	if !strings.Contains(procDevices, "\n236 "+nvidiahw.IMEXChannelsProcName+"\n") {
		t.Errorf("/proc/devices lacks %q:\n%s", nvidiahw.IMEXChannelsProcName, procDevices)
	}
	for c := range 9 {
		var st unix.Stat_t
		err := unix.Stat(filepath.Join(root, nvidiahw.IMEXChannelPath(c)), &st)
		switch {
		case c == 8 && err == nil:
			t.Errorf("channel8 exists, the profile has 8 channels")
		case c < 8 && err != nil:
			t.Errorf("channel%d: %v", c, err)
		case c < 8 && (st.Mode&unix.S_IFMT != unix.S_IFCHR || unix.Major(st.Rdev) != IMEXChannelsMajor || unix.Minor(st.Rdev) != uint32(c)):
			t.Errorf("channel%d: mode %o, %d:%d; want a character device %d:%d", c, st.Mode, unix.Major(st.Rdev), unix.Minor(st.Rdev), IMEXChannelsMajor, c)
		}
	}
	minor := nvmlstate.CIAccessMinor(31, nvmlstate.MaxGIID, nvmlstate.MaxCIID) + 1
	checkAccessFile(t, filepath.Join(root, nvidiahw.IMEXMgmtCapPath), minor, capConfigMode)
	checkCapNode(t, root, minor, capConfigMode)
}

func TestDirectLinksPairGPUs(t *testing.T) {
	requireMknod(t)
	root := render(t, loadProfile(t, "../profile/testdata/valid-nvlink.yaml"), Options{})
	s := readState(t, root)
	if len(s.NVLinks) != 2*18 {
		t.Fatalf("%d nvlink records, want 36", len(s.NVLinks))
	}
	// valid-nvlink has a domain, so its links go to the rack's switches;
	// its two GPUs on one root complex are HOSTBRIDGE apart.
	if len(s.Peers) != 1 || s.Peers[0].Ancestor != nvmlstate.TopologyHostBridge || !s.Peers[0].NVLink {
		t.Errorf("peers %+v: want one HOSTBRIDGE pair over NVLink", s.Peers)
	}
}
