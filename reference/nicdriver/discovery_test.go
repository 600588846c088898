package nicdriver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/klog/v2/ktesting"
)

// TestScanPFs: discovery finds exactly the SR-IOV PFs of Ethernet
// controllers the tree holds, with what their files say; the NIC without
// SR-IOV and the GPU are not PFs.
func TestScanPFs(t *testing.T) {
	t.Parallel()
	fs := newFakeSysfs(t, standardNICs()...)
	_, ctx := ktesting.NewTestContext(t)
	got, err := ScanPFs(ctx, fs.Root)
	if err != nil {
		t.Fatal(err)
	}
	want := []PF{
		{
			BDF: "0000:3b:00.0", VendorID: "0x15b3", DeviceID: "0x101d", VFDeviceID: "0x101e", TotalVFs: 8,
			VFOffset: 2, VFStride: 1, HasVFLayout: true, AutoProbe: true, HasDriver: true, NUMANode: 0, PCIeRoot: "pci0000:3a",
			Netdev: &Netdev{Name: "ens1f0", Address: "b8:3f:d2:00:00:01", MTU: 9000, SpeedMbps: 100000, OperState: "up"},
			RDMA:   &RDMA{Device: "mlx5_0", Uverbs: "uverbs0", Major: 231, Minor: 192},
		},
		{
			BDF: "0000:3b:00.1", VendorID: "0x15b3", DeviceID: "0x101d", VFDeviceID: "0x101e", TotalVFs: 8,
			VFOffset: 1, VFStride: 1, HasVFLayout: true, AutoProbe: true, HasDriver: true, NUMANode: 0, PCIeRoot: "pci0000:3a",
			Netdev: &Netdev{Name: "ens1f1", Address: "b8:3f:d2:00:00:02", MTU: 1500, SpeedMbps: 25000, OperState: "up"},
			RDMA:   &RDMA{Device: "mlx5_1", Uverbs: "uverbs1", Major: 231, Minor: 193},
		},
		{
			BDF: "0000:86:00.0", VendorID: "0x8086", DeviceID: "0x1593", VFDeviceID: "0x1889", TotalVFs: 2,
			VFOffset: 16, VFStride: 1, HasVFLayout: true, AutoProbe: true, HasDriver: true, NUMANode: 1, PCIeRoot: "pci0000:85",
			// A link that is down reads speed -1: unknown.
			Netdev: &Netdev{Name: "ens2f0", Address: "02:00:00:00:00:01", MTU: 1500, SpeedMbps: 0, OperState: "up"},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("PFs (-want +got):\n%s", diff)
	}
}

// TestScanPFsWithVFs: VFs that exist are read through the virtfn links,
// with their netdevs and RDMA devices.
func TestScanPFsWithVFs(t *testing.T) {
	t.Parallel()
	nic := standardNICs()[0]
	nic.NumVFs = 2
	fs := newFakeSysfs(t, nic)
	_, ctx := ktesting.NewTestContext(t)
	got, err := ScanPFs(ctx, fs.Root)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("%d PFs, want 1 (VFs are not PFs)", len(got))
	}
	want := []VF{
		{Index: 0, BDF: "0000:3b:00.2", Netdev: &Netdev{Name: "ens1f0v0", Address: "02:00:00:00:01:00", MTU: 1500, OperState: "up"},
			RDMA: &RDMA{Device: "mlx5_0_vf0", Uverbs: "uverbs10", Major: 231, Minor: 202}},
		{Index: 1, BDF: "0000:3b:00.3", Netdev: &Netdev{Name: "ens1f0v1", Address: "02:00:00:00:01:01", MTU: 1500, OperState: "up"},
			RDMA: &RDMA{Device: "mlx5_0_vf1", Uverbs: "uverbs11", Major: 231, Minor: 203}},
	}
	if got[0].NumVFs != 2 {
		t.Errorf("NumVFs = %d, want 2", got[0].NumVFs)
	}
	if diff := cmp.Diff(want, got[0].VFs); diff != "" {
		t.Errorf("VFs (-want +got):\n%s", diff)
	}
}

func TestVFBDF(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pf     PF
		i      int
		want   string
		wantOK bool
	}{
		{PF{BDF: "0000:3b:00.0", HasVFLayout: true, VFOffset: 2, VFStride: 1}, 0, "0000:3b:00.2", true},
		{PF{BDF: "0000:3b:00.0", HasVFLayout: true, VFOffset: 2, VFStride: 1}, 5, "0000:3b:00.7", true},
		{PF{BDF: "0000:3b:00.0", HasVFLayout: true, VFOffset: 2, VFStride: 1}, 6, "0000:3b:01.0", true},
		{PF{BDF: "0000:86:00.0", HasVFLayout: true, VFOffset: 16, VFStride: 1}, 1, "0000:86:02.1", true},
		{PF{BDF: "0001:3b:1f.7", HasVFLayout: true, VFOffset: 1, VFStride: 2}, 0, "0001:3c:00.0", true},
		{PF{BDF: "0000:ff:1f.7", HasVFLayout: true, VFOffset: 1, VFStride: 1}, 0, "", false},
		{PF{BDF: "0000:3b:00.0", HasVFLayout: true, VFOffset: 1, VFStride: 0}, 1, "", false},
		{PF{BDF: "0000:3b:00.0"}, 0, "", false},
	} {
		got, ok := vfBDF(tc.pf, tc.i)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("vfBDF(%s offset %d stride %d, %d) = %q, %v; want %q, %v", tc.pf.BDF, tc.pf.VFOffset, tc.pf.VFStride, tc.i, got, ok, tc.want, tc.wantOK)
		}
	}
}

// TestScanPFsBadContent: content the kernel never writes is an error that
// names the file; what a PF may lack is left out. Nothing panics.
func TestScanPFsBadContent(t *testing.T) {
	t.Parallel()
	const pf = "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/"
	for _, tc := range []struct {
		name    string
		file    string // below the PF's directory unless absolute below the root
		content string // "<remove>" removes it
		wantErr string // empty: no error
	}{
		{"class not hex", pf + "class", "ethernet\n", `class: "ethernet" is not a 0x-prefixed hexadecimal number`},
		{"class too long", pf + "class", strings.Repeat("0", 5000), "is longer than 4096 bytes"},
		{"totalvfs not a number", pf + "sriov_totalvfs", "eight\n", `sriov_totalvfs: "eight" is not a number`},
		{"totalvfs negative", pf + "sriov_totalvfs", "-3\n", "sriov_totalvfs: -3 VFs"},
		{"numvfs above total", pf + "sriov_numvfs", "9\n", "sriov_numvfs: 9 VFs, more than sriov_totalvfs 8"},
		{"numvfs negative", pf + "sriov_numvfs", "-1\n", "sriov_numvfs: -1 VFs"},
		{"numvfs missing", pf + "sriov_numvfs", "<remove>", "sriov_numvfs: no such file or directory"},
		{"vendor too wide", pf + "vendor", "0x1ffff\n", `vendor: 0x1ffff is not a 16-bit PCI id`},
		{"vendor missing", pf + "vendor", "<remove>", "vendor: no such file or directory"},
		{"vf device with 0x", pf + "sriov_vf_device", "0x101e\n", `sriov_vf_device: "0x101e" is not a hexadecimal number without 0x`},
		{"offset not a number", pf + "sriov_offset", "two\n", `sriov_offset: "two" is not a number`},
		{"negative stride", pf + "sriov_stride", "-1\n", "negative VF offset 2 or stride -1"},
		{"autoprobe not a number", pf + "sriov_drivers_autoprobe", "yes\n", `sriov_drivers_autoprobe: "yes" is not a number`},
		{"mtu not a number", pf + "net/ens1f0/mtu", "big\n", `mtu: "big" is not an MTU`},
		{"speed not a number", pf + "net/ens1f0/speed", "fast\n", `speed: "fast" is not a speed in Mb/s`},
		{"uverbs dev not major:minor", pf + "infiniband_verbs/uverbs0/dev", "231\n", `dev: "231" is not major:minor`},
		{"not a PCI address", "bus/pci/devices/eth0", "", "PCI device eth0 in "},
		{"virtfn name", pf + "virtfnX", "", "virtfnX is not virtfn<index>"},
		// Lenient: a PF may lack these.
		{"no speed", pf + "net/ens1f0/speed", "<remove>", ""},
		{"no NUMA affinity", pf + "numa_node", "-1\n", ""},
		{"no netdev", pf + "net", "<remove>", ""},
		{"no RDMA", pf + "infiniband", "<remove>", ""},
		{"no VF layout", pf + "sriov_stride", "<remove>", ""},
		{"no SR-IOV", pf + "sriov_totalvfs", "<remove>", ""},
		{"trailing NUL", pf + "sriov_numvfs", "0\n\x00", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fs := newFakeSysfs(t, standardNICs()[0])
			p := filepath.Join(fs.Root, tc.file)
			switch tc.content {
			case "<remove>":
				if err := os.RemoveAll(p); err != nil {
					t.Fatal(err)
				}
			default:
				fs.write(tc.file, tc.content)
			}
			_, ctx := ktesting.NewTestContext(t)
			_, err := ScanPFs(ctx, fs.Root)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// FuzzScanPFs: whatever the files of a PF hold, discovery and publishing
// return an error or PFs that keep the invariants, and never panic.
func FuzzScanPFs(f *testing.F) {
	f.Add("0x020000", "8", "0", "0x15b3", "101e", "100000", "9000", "231:192", "2", "1")
	f.Add("0x020000", "8", "9", "0x15b3", "101e", "-1", "1500", "x", "0", "0")
	f.Add("0x02", "1", "1", "0xffff", "ffff", "1", "0", "0:0", "255", "255")
	f.Add("0x030000", "", "\x00", "0x", "", "99999999999999999999", "-5", ":", "-1", "")
	f.Fuzz(func(t *testing.T, class, total, num, vendor, vfDevice, speed, mtu, uverbsDev, offset, stride string) {
		fs := newFakeSysfs(t, standardNICs()[0])
		const pf = "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/"
		for file, content := range map[string]string{
			"class": class, "sriov_totalvfs": total, "sriov_numvfs": num, "vendor": vendor, "sriov_vf_device": vfDevice,
			"net/ens1f0/speed": speed, "net/ens1f0/mtu": mtu, "infiniband_verbs/uverbs0/dev": uverbsDev,
			"sriov_offset": offset, "sriov_stride": stride,
		} {
			fs.write(pf+file, content)
		}
		_, ctx := ktesting.NewTestContext(t)
		pfs, err := ScanPFs(ctx, fs.Root)
		if err != nil {
			if !strings.Contains(err.Error(), fs.Root) && !strings.Contains(err.Error(), "0000:3b:00.0") {
				t.Errorf("error %q names neither the file nor the PF", err)
			}
			return
		}
		for _, p := range pfs {
			if p.TotalVFs <= 0 || p.NumVFs < 0 || p.NumVFs > p.TotalVFs || p.Netdev != nil && p.Netdev.SpeedMbps < 0 {
				t.Errorf("PF breaks the invariants: %+v", p)
			}
		}
		res, err := buildResources("node", inventory(ctx, pfs, DefaultVFsPerPF))
		if err != nil {
			return
		}
		for _, s := range res.Pools["node"].Slices {
			for _, d := range s.Devices {
				for name, c := range d.Capacity {
					if errs := checkRequestPolicy(d.AllowMultipleAllocations, c); len(errs) > 0 {
						t.Errorf("device %s capacity %s: %v", d.Name, name, errs)
					}
				}
			}
		}
	})
}
