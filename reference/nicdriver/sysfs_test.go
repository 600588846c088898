package nicdriver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeNIC is one PCI function of a test sysfs tree, laid out as the kernel
// does (emulation-surfaces.md §5.2).
type fakeNIC struct {
	BDF      string
	Bridge   string // the root port it sits below, 0000:3a:00.0
	Class    string // default 0x020000
	Vendor   string // default 0x15b3
	Device   string // default 0x101d
	VFDevice string // default 0x101e; "-" for none
	TotalVFs int    // 0: no SR-IOV capability
	NumVFs   int
	Offset   int // default 2
	Stride   int // default 1
	// NoLayout leaves out sriov_offset and sriov_stride.
	NoLayout bool
	Iface    string // "": no netdev
	MAC      string
	MTU      int
	Speed    string // Mb/s as the file reads, e.g. "100000" or "-1"
	NUMA     string // default "0"
	// RDMA is the RDMA device name ("" none), Uverbs its uverbs index.
	RDMA   string
	Uverbs int
	Driver string // "" no driver link
	// AutoProbe writes sriov_drivers_autoprobe 1.
	AutoProbe bool
}

// fakeSysfs is a sysfs tree below Root with a fake kernel that applies
// writes of sriov_numvfs (started by startKernel).
type fakeSysfs struct {
	t    testing.TB
	Root string

	mu      sync.Mutex
	nics    map[string]*fakeNIC // PFs by BDF
	applied map[string]int      // VF count the kernel applied, by PF
	// paused stops the kernel from applying writes; noVFNetdev makes
	// it create VFs without netdevs (and RDMA devices).
	paused     bool
	noVFNetdev bool
	writes     []string // "<pf>=<n>" in the order applied or refused
}

func newFakeSysfs(t testing.TB, nics ...fakeNIC) *fakeSysfs {
	t.Helper()
	s := &fakeSysfs{t: t, Root: filepath.Join(t.TempDir(), "sys"), nics: map[string]*fakeNIC{}, applied: map[string]int{}}
	for _, n := range nics {
		s.addFunction(n)
	}
	return s
}

func (s *fakeSysfs) write(rel, content string) {
	s.t.Helper()
	p := filepath.Join(s.Root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		s.t.Fatal(err)
	}
}

func (s *fakeSysfs) symlink(target, rel string) {
	s.t.Helper()
	p := filepath.Join(s.Root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		s.t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		s.t.Fatal(err)
	}
}

func (s *fakeSysfs) mkdir(rel string) {
	s.t.Helper()
	if err := os.MkdirAll(filepath.Join(s.Root, rel), 0o755); err != nil {
		s.t.Fatal(err)
	}
}

func defaulted(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// devDir is the function's directory below devices/, relative to Root.
func devDir(n *fakeNIC) string {
	bridge := defaulted(n.Bridge, "0000:3a:00.0")
	return filepath.Join("devices", "pci"+bridge[:7], bridge, n.BDF)
}

// addFunction lays out one PCI function; a PF with NumVFs > 0 gets its
// VFs.
func (s *fakeSysfs) addFunction(n fakeNIC) {
	s.t.Helper()
	dir := devDir(&n)
	s.symlink("../../../"+dir, filepath.Join(pciDevicesDir, n.BDF))
	s.write(filepath.Join(dir, "class"), defaulted(n.Class, "0x020000")+"\n")
	s.write(filepath.Join(dir, "vendor"), defaulted(n.Vendor, "0x15b3")+"\n")
	s.write(filepath.Join(dir, "device"), defaulted(n.Device, "0x101d")+"\n")
	s.write(filepath.Join(dir, "numa_node"), defaulted(n.NUMA, "0")+"\n")
	if n.TotalVFs > 0 {
		s.write(filepath.Join(dir, "sriov_totalvfs"), strconv.Itoa(n.TotalVFs)+"\n")
		s.write(filepath.Join(dir, "sriov_numvfs"), "0\n")
		if !n.NoLayout {
			s.write(filepath.Join(dir, "sriov_offset"), strconv.Itoa(defaultedInt(n.Offset, 2))+"\n")
			s.write(filepath.Join(dir, "sriov_stride"), strconv.Itoa(defaultedInt(n.Stride, 1))+"\n")
		}
		if n.VFDevice != "-" {
			s.write(filepath.Join(dir, "sriov_vf_device"), strings.TrimPrefix(defaulted(n.VFDevice, "0x101e"), "0x")+"\n")
		}
		autoprobe := "0"
		if n.AutoProbe {
			autoprobe = "1"
		}
		s.write(filepath.Join(dir, "sriov_drivers_autoprobe"), autoprobe+"\n")
	}
	if n.Driver != "" {
		s.mkdir(filepath.Join("bus/pci/drivers", n.Driver))
		s.symlink("../../../../bus/pci/drivers/"+n.Driver, filepath.Join(dir, "driver"))
	}
	if n.Iface != "" {
		s.netdev(dir, n.Iface, n.MAC, n.MTU, n.Speed)
	}
	if n.RDMA != "" {
		s.rdma(dir, n.RDMA, n.Uverbs)
	}
	if n.TotalVFs > 0 {
		pf := n
		s.nics[n.BDF] = &pf
		if n.NumVFs > 0 {
			s.applyLocked(&pf, n.NumVFs)
			s.write(filepath.Join(dir, "sriov_numvfs"), strconv.Itoa(n.NumVFs)+"\n")
		}
	}
}

func defaultedInt(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func (s *fakeSysfs) netdev(dir, name, mac string, mtu int, speed string) {
	s.write(filepath.Join(dir, "net", name, "address"), defaulted(mac, "02:00:00:00:00:01")+"\n")
	s.write(filepath.Join(dir, "net", name, "mtu"), strconv.Itoa(defaultedInt(mtu, 1500))+"\n")
	if speed != "none" {
		s.write(filepath.Join(dir, "net", name, "speed"), defaulted(speed, "100000")+"\n")
	}
	s.write(filepath.Join(dir, "net", name, "operstate"), "up\n")
}

func (s *fakeSysfs) rdma(dir, dev string, uverbs int) {
	s.mkdir(filepath.Join(dir, "infiniband", dev))
	v := fmt.Sprintf("uverbs%d", uverbs)
	s.write(filepath.Join(dir, "infiniband_verbs", v, "dev"), fmt.Sprintf("231:%d\n", 192+uverbs))
}

// vfBDFOf is VF i's address with the fake's offset and stride.
func vfBDFOf(n *fakeNIC, i int) string {
	pf := PF{BDF: n.BDF, HasVFLayout: true, VFOffset: defaultedInt(n.Offset, 2), VFStride: defaultedInt(n.Stride, 1)}
	bdf, ok := vfBDF(pf, i)
	if !ok {
		panic("no VF address")
	}
	return bdf
}

// applyLocked makes the PF have count VFs (from 0, or to 0).
func (s *fakeSysfs) applyLocked(pf *fakeNIC, count int) {
	s.t.Helper()
	dir := devDir(pf)
	parent := filepath.Dir(dir)
	if count == 0 {
		for i := range s.applied[pf.BDF] {
			vf := vfBDFOf(pf, i)
			for _, p := range []string{filepath.Join(dir, fmt.Sprintf("virtfn%d", i)), filepath.Join(parent, vf), filepath.Join(pciDevicesDir, vf)} {
				if err := os.RemoveAll(filepath.Join(s.Root, p)); err != nil {
					s.t.Error(err)
				}
			}
		}
		s.applied[pf.BDF] = 0
		return
	}
	for i := range count {
		vf := vfBDFOf(pf, i)
		vfDir := filepath.Join(parent, vf)
		s.write(filepath.Join(vfDir, "class"), "0x020000\n")
		s.write(filepath.Join(vfDir, "vendor"), defaulted(pf.Vendor, "0x15b3")+"\n")
		s.write(filepath.Join(vfDir, "device"), defaulted(pf.VFDevice, "0x101e")+"\n")
		s.symlink("../"+pf.BDF, filepath.Join(vfDir, "physfn"))
		s.symlink("../../../"+vfDir, filepath.Join(pciDevicesDir, vf))
		if pf.AutoProbe && pf.Driver != "" && pf.Iface != "" && !s.noVFNetdev {
			s.netdev(vfDir, fmt.Sprintf("%sv%d", pf.Iface, i), fmt.Sprintf("02:00:00:00:01:%02x", i), 1500, "none")
			if pf.RDMA != "" {
				s.rdma(vfDir, fmt.Sprintf("%s_vf%d", pf.RDMA, i), 10+pf.Uverbs*16+i)
			}
		}
		// Last, as the emulator does: a reader that sees virtfn<i> sees
		// all of VF i.
		s.symlink("../"+vf, filepath.Join(dir, fmt.Sprintf("virtfn%d", i)))
	}
	s.applied[pf.BDF] = count
}

// startKernel applies writes of sriov_numvfs until the test ends, as
// drakit's emulator does: asynchronously, restoring the old value when the
// write is invalid (a non-zero count while VFs exist, more than
// sriov_totalvfs, not a number).
func (s *fakeSysfs) startKernel() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s.t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.tick()
			}
		}
	}()
}

func (s *fakeSysfs) tick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.paused {
		return
	}
	for bdf, pf := range s.nics {
		p := filepath.Join(s.Root, devDir(pf), "sriov_numvfs")
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		cur := s.applied[bdf]
		text := strings.TrimSpace(string(data))
		// Empty: a write between its truncate and its data (`echo n >`
		// opens with O_TRUNC, then writes).
		if text == strconv.Itoa(cur) || text == "" {
			continue
		}
		n, err := strconv.Atoi(text)
		valid := err == nil && n >= 0 && n <= pf.TotalVFs && (cur == 0 || n == 0)
		if !valid {
			s.writes = append(s.writes, bdf+"="+text+" refused")
			_ = os.WriteFile(p, []byte(strconv.Itoa(cur)+"\n"), 0o644)
			continue
		}
		s.applyLocked(pf, n)
		s.writes = append(s.writes, fmt.Sprintf("%s=%d", bdf, n))
	}
}

func (s *fakeSysfs) setPaused(v bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paused = v
}

func (s *fakeSysfs) setNoVFNetdev(v bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noVFNetdev = v
}

// history is the writes the kernel applied or refused.
func (s *fakeSysfs) history() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.writes...)
}

// numVFs is the PF's sriov_numvfs as the file reads.
func (s *fakeSysfs) numVFs(bdf string) string {
	s.t.Helper()
	data, err := os.ReadFile(filepath.Join(s.Root, pciDevicesDir, bdf, "sriov_numvfs"))
	if err != nil {
		s.t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

// standardNICs is a node with two RDMA-capable 100G PFs of one adapter
// below one root port, an Ethernet PF on another root complex with a down
// link, a NIC without SR-IOV and a GPU.
func standardNICs() []fakeNIC {
	return []fakeNIC{
		{BDF: "0000:3b:00.0", TotalVFs: 8, Iface: "ens1f0", MAC: "b8:3f:d2:00:00:01", MTU: 9000, Speed: "100000",
			RDMA: "mlx5_0", Uverbs: 0, Driver: "mlx5_core", AutoProbe: true},
		{BDF: "0000:3b:00.1", TotalVFs: 8, Iface: "ens1f1", MAC: "b8:3f:d2:00:00:02", Speed: "25000", Offset: 1,
			RDMA: "mlx5_1", Uverbs: 1, Driver: "mlx5_core", AutoProbe: true},
		{BDF: "0000:86:00.0", Bridge: "0000:85:00.0", Vendor: "0x8086", Device: "0x1593", VFDevice: "0x1889", TotalVFs: 2,
			Offset: 16, Iface: "ens2f0", Speed: "-1", NUMA: "1", Driver: "ice", AutoProbe: true},
		{BDF: "0000:19:00.0", Iface: "eno1", Speed: "1000", Driver: "igb"},
		{BDF: "0000:1b:00.0", Class: "0x030200", Vendor: "0x10de", Device: "0x2330"},
	}
}
