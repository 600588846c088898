package render

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
	"k8s.io/dynamic-resource-allocation/deviceattribute"

	"drakit.dev/drakit/emulator/nic"
	"drakit.dev/drakit/emulator/profile"
)

// sysNIC is what a NIC driver (dra-driver-sriov, dranet) reads of a PF from
// sysfs, and nothing else.
type sysNIC struct {
	Address, PCIeRoot                    string
	NUMANode                             int64
	Vendor, Device, SubVendor, SubDevice string
	Driver                               string
	TotalVFs, NumVFs, VFOffset, VFStride int
	VFDevice                             string
	Interface, MAC                       string
	MTU                                  int
	Speed, Operstate, Carrier            string
	Type                                 int
	// RDMA is the RDMA device under the PF, Uverbs the verbs device whose
	// ibdev names it, with its character device's number.
	RDMA, Uverbs, UverbsDev string
}

// readNICs reads the network PFs of a rendered root as drivers discover
// them: every /sys/bus/pci/devices entry of class 0x02 without physfn,
// its ids, driver, SR-IOV files and netdev (through /sys/class/net), its
// RDMA device and verbs device, and pcieRoot and numaNode through
// deviceattribute.
func readNICs(t *testing.T, root string) []sysNIC {
	t.Helper()
	sys := filepath.Join(root, "sys")
	fsys := deviceattribute.WithFSFromRoot(sys)
	read := func(path string) string {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSuffix(string(b), "\n")
	}
	atoi := func(path string) int {
		t.Helper()
		n, err := strconv.Atoi(read(path))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	modalias := regexp.MustCompile(`^pci:v[0-9A-F]{8}d[0-9A-F]{8}sv[0-9A-F]{8}sd[0-9A-F]{8}bc[0-9A-F]{2}sc[0-9A-F]{2}i[0-9A-F]{2}$`)
	entries, err := os.ReadDir(filepath.Join(sys, "bus/pci/devices"))
	if err != nil {
		t.Fatal(err)
	}
	var out []sysNIC
	for _, e := range entries {
		dev := filepath.Join(sys, "bus/pci/devices", e.Name())
		// ghw gives up on the whole scan when one entry lacks a modalias.
		if m := read(filepath.Join(dev, "modalias")); !modalias.MatchString(m) {
			t.Errorf("%s: modalias %q", e.Name(), m)
		}
		class, err := strconv.ParseUint(read(filepath.Join(dev, "class")), 0, 32)
		if err != nil {
			t.Fatal(err)
		}
		if class>>16 != 0x02 {
			continue
		}
		if _, err := os.Lstat(filepath.Join(dev, "physfn")); err == nil {
			continue
		}
		n := sysNIC{Address: e.Name(), Vendor: read(filepath.Join(dev, "vendor")), Device: read(filepath.Join(dev, "device")),
			SubVendor: read(filepath.Join(dev, "subsystem_vendor")), SubDevice: read(filepath.Join(dev, "subsystem_device"))}
		pcieRoot, err := deviceattribute.GetPCIeRootAttributeByPCIBusID(e.Name(), fsys)
		if err != nil {
			t.Fatal(err)
		}
		n.PCIeRoot = *pcieRoot.Value.StringValue
		n.NUMANode = -1
		if numa, err := deviceattribute.GetNUMANodeAttributeByPCIBusID(e.Name(), deviceattribute.ScalarAttribute, fsys); err == nil {
			n.NUMANode = *numa.Value.IntValue
		}
		drv, err := filepath.EvalSymlinks(filepath.Join(dev, "driver"))
		if err != nil {
			t.Fatal(err)
		}
		n.Driver = filepath.Base(drv)
		if _, err := os.Stat(filepath.Join(dev, "sriov_totalvfs")); err == nil {
			n.TotalVFs, n.NumVFs = atoi(filepath.Join(dev, "sriov_totalvfs")), atoi(filepath.Join(dev, "sriov_numvfs"))
			n.VFOffset, n.VFStride = atoi(filepath.Join(dev, "sriov_offset")), atoi(filepath.Join(dev, "sriov_stride"))
			n.VFDevice = read(filepath.Join(dev, "sriov_vf_device"))
		}
		netdevs, err := os.ReadDir(filepath.Join(dev, "net"))
		if err != nil || len(netdevs) != 1 {
			t.Fatalf("%s: net/ holds %v, %v", e.Name(), netdevs, err)
		}
		n.Interface = netdevs[0].Name()
		cls := filepath.Join(sys, "class/net", n.Interface)
		if target, err := filepath.EvalSymlinks(filepath.Join(cls, "device")); err != nil || target != mustEval(t, dev) {
			t.Errorf("%s: /sys/class/net/%s/device -> %s, %v", e.Name(), n.Interface, target, err)
		}
		n.MAC, n.MTU, n.Type = read(filepath.Join(cls, "address")), atoi(filepath.Join(cls, "mtu")), atoi(filepath.Join(cls, "type"))
		n.Speed, n.Operstate, n.Carrier = read(filepath.Join(cls, "speed")), read(filepath.Join(cls, "operstate")), read(filepath.Join(cls, "carrier"))
		if ib, err := os.ReadDir(filepath.Join(dev, "infiniband")); err == nil && len(ib) == 1 {
			n.RDMA = ib[0].Name()
			if target, err := filepath.EvalSymlinks(filepath.Join(sys, "class/infiniband", n.RDMA, "device")); err != nil || target != mustEval(t, dev) {
				t.Errorf("%s: /sys/class/infiniband/%s/device -> %s, %v", e.Name(), n.RDMA, target, err)
			}
			verbs, _ := filepath.Glob(filepath.Join(sys, "class/infiniband_verbs/uverbs*"))
			for _, v := range verbs {
				if read(filepath.Join(v, "ibdev")) == n.RDMA {
					n.Uverbs = filepath.Base(v)
					n.UverbsDev = read(filepath.Join(v, "dev"))
					var st syscall.Stat_t
					if err := syscall.Stat(filepath.Join(root, "dev/infiniband", n.Uverbs), &st); err != nil ||
						fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev)) != n.UverbsDev || st.Mode&syscall.S_IFMT != syscall.S_IFCHR {
						t.Errorf("/dev/infiniband/%s: %v, mode %o, not the character device %s", n.Uverbs, err, st.Mode, n.UverbsDev)
					}
				}
			}
		}
		out = append(out, n)
	}
	return out
}

func mustEval(t *testing.T, path string) string {
	t.Helper()
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// wantNICs is what readNICs should find for p: every NIC, in PCI order.
func wantNICs(t *testing.T, p *profile.Profile) []sysNIC {
	t.Helper()
	topo, err := p.Topology()
	if err != nil {
		t.Fatal(err)
	}
	var out []sysNIC
	rdma := 0
	for _, pn := range topo.NICs {
		n := pn.NIC
		w := sysNIC{
			Address: pn.Function.Address.String(), PCIeRoot: pn.HostBridge.Name(), NUMANode: int64(pn.HostBridge.NUMANode),
			Vendor: fmt.Sprintf("0x%04x", uint32(n.VendorID)), Device: fmt.Sprintf("0x%04x", uint32(n.DeviceID)),
			SubVendor: fmt.Sprintf("0x%04x", uint32(n.SubsystemVendorID)), SubDevice: fmt.Sprintf("0x%04x", uint32(n.SubsystemDeviceID)),
			Driver: n.Driver, TotalVFs: *n.TotalVFs, Interface: n.Interface, MAC: n.MAC, MTU: n.MTU, Type: 1,
			Speed: strconv.Itoa(n.SpeedMbps), Operstate: n.Link, Carrier: "1",
		}
		if *n.TotalVFs > 0 {
			w.VFOffset, w.VFStride, w.VFDevice = *n.VFOffset, *n.VFStride, fmt.Sprintf("%x", uint32(n.VFDeviceID))
		}
		if n.Link == nic.LinkDown {
			w.Speed, w.Carrier = "-1", "0"
		}
		if *n.RDMA {
			w.RDMA, w.Uverbs, w.UverbsDev = fmt.Sprintf("mlx5_%d", rdma), fmt.Sprintf("uverbs%d", rdma), fmt.Sprintf("231:%d", 192+rdma)
			rdma++
		}
		out = append(out, w)
	}
	return out
}

// TestNICsReadBack renders NIC profiles and reads them back through sysfs
// only, as a NIC driver discovers them: the result is the profile.
func TestNICsReadBack(t *testing.T) {
	requireMknod(t)
	for _, name := range []string{"testdata/profiles/nics.yaml", "dgx-a100-mig", "dgx-h100"} {
		t.Run(filepath.Base(name), func(t *testing.T) {
			t.Parallel()
			p := loadProfile(t, name)
			root := render(t, p, Options{})
			want := wantNICs(t, p)
			if len(want) == 0 {
				t.Fatal("profile has no NICs")
			}
			if diff := cmp.Diff(want, readNICs(t, root)); diff != "" {
				t.Errorf("NICs read back (-profile +sysfs):\n%s", diff)
			}
		})
	}
}

// TestGPUsShareRootsWithNICs checks the pairing drivers rely on for
// alignment: on dgx-a100-mig every GPU's pcieRoot and NUMA node are a NIC's.
func TestGPUsShareRootsWithNICs(t *testing.T) {
	requireMknod(t)
	t.Parallel()
	p := loadProfile(t, "dgx-a100-mig")
	root := render(t, p, Options{})
	fsys := deviceattribute.WithFSFromRoot(filepath.Join(root, "sys"))
	nicRoots := map[string]bool{}
	for _, n := range readNICs(t, root) {
		nicRoots[fmt.Sprintf("%s/%d", n.PCIeRoot, n.NUMANode)] = true
	}
	topo, err := p.Topology()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range topo.GPUs {
		bdf := g.Function.Address.String()
		r, err := deviceattribute.GetPCIeRootAttributeByPCIBusID(bdf, fsys)
		if err != nil {
			t.Fatal(err)
		}
		numa, err := deviceattribute.GetNUMANodeAttributeByPCIBusID(bdf, deviceattribute.ScalarAttribute, fsys)
		if err != nil {
			t.Fatal(err)
		}
		if key := fmt.Sprintf("%s/%d", *r.Value.StringValue, *numa.Value.IntValue); !nicRoots[key] {
			t.Errorf("GPU %s (%s) shares its pcieRoot and NUMA node with no NIC", bdf, key)
		}
	}
}
