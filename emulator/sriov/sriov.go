package sriov

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	kfs "drakit.dev/drakit/emulator/internal/sysfs"
	"drakit.dev/drakit/internal/nichw"
)

// ErrNoSRIOV is returned for a PCI function without an SR-IOV capability
// (no sriov_totalvfs).
var ErrNoSRIOV = errors.New("no SR-IOV capability")

// PF is an SR-IOV physical function as its sysfs files show it.
type PF struct {
	// Address is the PF's PCI address, 0000:0c:00.0.
	Address string
	// Dir is the PF's directory, relative to the root
	// (sys/devices/pci…/0000:0c:00.0).
	Dir                              string
	TotalVFs, Offset, Stride, NumVFs int
	VFDevice                         uint32
	Vendor, SubVendor, SubDevice     uint32
	Revision                         uint32
	// Driver is the bound PF driver; empty when none is.
	Driver                  string
	NUMANode                int
	LocalCPUList, LocalCPUs string
	// VFBAR is the start of the PF's SR-IOV BAR (resource line 7), 0 without.
	VFBAR uint64
	// NetDev is the PF's interface, with its address, speed and link.
	NetDev    string
	MAC       string
	SpeedMbps int
	Up        bool
	// RDMA says the PF has an RDMA device.
	RDMA bool
}

// ReadPF reads the PF at address from root's sysfs.
func ReadPF(root, address string) (*PF, error) {
	addr, err := nichw.ParseAddress(address)
	if err != nil {
		return nil, err
	}
	busLink := filepath.Join(root, "sys/bus/pci/devices", address)
	real, err := filepath.EvalSymlinks(busLink)
	if err != nil {
		return nil, fmt.Errorf("PCI function %s: %w", address, err)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Rel(realRoot, real)
	if err != nil || strings.HasPrefix(dir, "..") {
		return nil, fmt.Errorf("PCI function %s: %s lies outside the root", address, real)
	}
	pf := &PF{Address: addr.String(), Dir: dir}
	r := reader{dir: real}
	if _, err := os.Stat(filepath.Join(real, "sriov_totalvfs")); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("PCI function %s: %w (no sriov_totalvfs)", address, ErrNoSRIOV)
	}
	pf.TotalVFs, pf.Offset, pf.Stride = r.int("sriov_totalvfs"), r.int("sriov_offset"), r.int("sriov_stride")
	pf.VFDevice = r.hex("sriov_vf_device")
	pf.Vendor, pf.SubVendor, pf.SubDevice = r.hex("vendor"), r.hex("subsystem_vendor"), r.hex("subsystem_device")
	pf.Revision = r.hex("revision")
	pf.NUMANode = r.int("numa_node")
	pf.LocalCPUList, pf.LocalCPUs = r.string("local_cpulist"), r.string("local_cpus")
	if lines := strings.Split(r.string("resource"), "\n"); len(lines) > 7 {
		if f := strings.Fields(lines[7]); len(f) == 3 {
			pf.VFBAR, _ = strconv.ParseUint(f[0], 0, 64)
		}
	}
	if drv, err := os.Readlink(filepath.Join(real, "driver")); err == nil {
		pf.Driver = filepath.Base(drv)
	}
	nets, _ := os.ReadDir(filepath.Join(real, "net"))
	if len(nets) > 0 {
		pf.NetDev = nets[0].Name()
		nr := reader{dir: filepath.Join(real, "net", pf.NetDev)}
		pf.MAC = nr.string("address")
		pf.Up = nr.string("carrier") == "1"
		if s, err := os.ReadFile(filepath.Join(root, kfs.SpeedRecord(pf.Address))); err == nil {
			pf.SpeedMbps, _ = strconv.Atoi(strings.TrimSpace(string(s)))
		}
		r.err = errors.Join(r.err, nr.err)
	}
	if ib, err := os.ReadDir(filepath.Join(real, "infiniband")); err == nil && len(ib) > 0 {
		pf.RDMA = true
	}
	if r.err != nil {
		return nil, fmt.Errorf("PF %s: %w", address, r.err)
	}
	pf.NumVFs, err = countVFs(real)
	return pf, err
}

// reader reads a directory's one-line files, keeping the first error.
type reader struct {
	dir string
	err error
}

func (r *reader) string(name string) string {
	b, err := os.ReadFile(filepath.Join(r.dir, name))
	if err != nil {
		r.err = errors.Join(r.err, err)
		return ""
	}
	return strings.TrimSuffix(string(b), "\n")
}

func (r *reader) int(name string) int {
	s := r.string(name)
	n, err := strconv.Atoi(s)
	if err != nil && s != "" {
		r.err = errors.Join(r.err, fmt.Errorf("%s: %q is not a number", name, s))
	}
	return n
}

func (r *reader) hex(name string) uint32 {
	s := r.string(name)
	n, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 32)
	if err != nil && s != "" {
		r.err = errors.Join(r.err, fmt.Errorf("%s: %q is not a hex number", name, s))
	}
	return uint32(n)
}

// countVFs is the number of virtfn<i> links of the PF directory dir: the
// current VF count.
func countVFs(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "virtfn") {
			n++
		}
	}
	return n, nil
}

// NumVFs is the PF's current VF count: its virtfn links.
func NumVFs(root, address string) (int, error) {
	pf, err := ReadPF(root, address)
	if err != nil {
		return 0, err
	}
	return pf.NumVFs, nil
}

// PFs lists the SR-IOV PFs of root in PCI order.
func PFs(root string) ([]*PF, error) {
	entries, err := os.ReadDir(filepath.Join(root, "sys/bus/pci/devices"))
	if err != nil {
		return nil, fmt.Errorf("list PCI functions of %s: %w", root, err)
	}
	var out []*PF
	for _, e := range entries {
		pf, err := ReadPF(root, e.Name())
		if errors.Is(err, ErrNoSRIOV) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, pf)
	}
	return out, nil
}

// SetNumVFs writes n to the PF's sriov_numvfs as the kernel takes the write
// (see the package documentation): errors wrap ERANGE, ENOENT or EBUSY
// (errors.Is(err, syscall.EBUSY)) as the kernel's write(2) fails, ErrNoSRIOV
// for a function without SR-IOV.
func SetNumVFs(root, address string, n int) error {
	pf, err := ReadPF(root, address)
	if err != nil {
		return err
	}
	switch {
	case n < 0 || n > 0xffff:
		return fmt.Errorf("PF %s: %d VFs: %w", address, n, syscall.EINVAL)
	case n > pf.TotalVFs:
		return fmt.Errorf("PF %s: %d VFs, but sriov_totalvfs is %d: %w", address, n, pf.TotalVFs, syscall.ERANGE)
	case pf.Driver == "":
		return fmt.Errorf("PF %s: no driver bound, cannot configure SR-IOV: %w", address, syscall.ENOENT)
	case n != 0 && pf.NumVFs != 0 && n != pf.NumVFs:
		return fmt.Errorf("PF %s: %d VFs already enabled, disable them (write 0) before enabling %d: %w",
			address, pf.NumVFs, n, syscall.EBUSY)
	}
	drv, ok := nichw.LookupDriver(pf.Driver)
	if !ok {
		return fmt.Errorf("PF %s: driver %s has no SR-IOV in the emulator: %w", address, pf.Driver, syscall.ENOENT)
	}
	// Remove VFs from the top down, virtfn links first (leftovers of an
	// interrupted call included), then create the VFs below n.
	for i := pf.TotalVFs - 1; i >= n; i-- {
		if err := removeVF(root, pf, i); err != nil {
			return err
		}
	}
	for i := 0; i < n; i++ {
		if err := createVF(root, pf, drv, i); err != nil {
			return err
		}
	}
	// A file that already reads n as the kernel prints it (a driver's
	// "echo n >", which the watcher applies) is left alone: replacing it
	// could lose a write the driver makes meanwhile.
	file, want := filepath.Join(root, pf.Dir, "sriov_numvfs"), fmt.Sprintf("%d\n", n)
	if b, err := os.ReadFile(file); err == nil && string(b) == want {
		return nil
	}
	if err := kfs.WriteFile(file, want, 0o644); err != nil {
		return fmt.Errorf("PF %s: write sriov_numvfs: %w", address, err)
	}
	return nil
}

// vf is VF i of pf: its address and directory.
func vfOf(pf *PF, i int) (nichw.Address, string, error) {
	addr, _ := nichw.ParseAddress(pf.Address) // ReadPF parsed it
	va, ok := nichw.VFAddress(addr, pf.Offset, pf.Stride, i)
	if !ok || va.Bus != addr.Bus {
		return nichw.Address{}, "", fmt.Errorf("PF %s: VF %d would sit past the PF's bus (sriov_offset %d, sriov_stride %d)",
			pf.Address, i, pf.Offset, pf.Stride)
	}
	return va, filepath.Join(filepath.Dir(pf.Dir), va.String()), nil
}

// DeriveVFMAC is the MAC of VF i of the PF with address pfMAC: 02 and five
// bytes of SHA-256("<pfMAC>/vf<i>"), a locally administered unicast
// address, the same each time the VF is created.
func DeriveVFMAC(pfMAC string, i int) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s/vf%d", pfMAC, i)))
	return fmt.Sprintf("02:%02x:%02x:%02x:%02x:%02x", h[0], h[1], h[2], h[3], h[4])
}

// VF MTU and the size of each VF's BAR0 in the PF's SR-IOV BAR (the
// renderer's layout).
const (
	vfMTU      = 1500
	vfBAR0Size = 1 << 20
	flagsBAR64 = 0x14220c
)

func createVF(root string, pf *PF, drv nichw.Driver, i int) error {
	va, dir, err := vfOf(pf, i)
	if err != nil {
		return err
	}
	if hotRemoved(root, pf, i) {
		return nil // RemoveVF took it; the kernel brings it back only with 0 → n
	}
	resource := make([]string, 13)
	for j := range resource {
		resource[j] = fmt.Sprintf("0x%016x 0x%016x 0x%016x", 0, 0, 0)
	}
	if pf.VFBAR != 0 {
		start := pf.VFBAR + uint64(i)*vfBAR0Size
		resource[0] = fmt.Sprintf("0x%016x 0x%016x 0x%016x", start, start+vfBAR0Size-1, flagsBAR64)
	}
	f := kfs.Function{Dir: dir, Address: va.String(), Vendor: pf.Vendor, Device: pf.VFDevice, SubVendor: pf.SubVendor,
		SubDevice: pf.SubDevice, Class: nichw.ClassEthernet, Revision: pf.Revision, Driver: drv.VFDriver,
		NUMANode: pf.NUMANode, LocalCPUList: pf.LocalCPUList, LocalCPUs: pf.LocalCPUs, Resource: strings.Join(resource, "\n") + "\n"}
	es := kfs.PCIFunction(f)
	es = append(es, kfs.Entry{Kind: kfs.Link, Path: filepath.Join(dir, "physfn"), Target: pf.Dir})
	if pf.NetDev != "" {
		name := nichw.PathName(va, "")
		if err := checkFree(root, "sys/class/net", name, dir); err != nil {
			return fmt.Errorf("PF %s: VF %d: %w", pf.Address, i, err)
		}
		ifindex, err := vfIfIndex(root, dir, name)
		if err != nil {
			return err
		}
		mac := DeriveVFMAC(pf.MAC, i)
		es = append(es, kfs.NetDevice(kfs.NetDev{DeviceDir: dir, Name: name, MAC: mac, MTU: vfMTU,
			SpeedMbps: pf.SpeedMbps, Up: pf.Up, IfIndex: ifindex})...)
		es = append(es, kfs.SpeedRecordFile(va.String(), pf.SpeedMbps))
		if pf.RDMA && drv.RDMAPrefix != "" {
			ibdev, uverbs, err := rdmaNumbers(root, dir, drv.RDMAPrefix)
			if err != nil {
				return err
			}
			es = append(es, kfs.RDMADevice(kfs.RDMA{DeviceDir: dir, Name: ibdev, Uverbs: uverbs, PCIDevice: pf.VFDevice,
				MAC: mac, NetDev: name, Up: pf.Up, SpeedMbps: pf.SpeedMbps})...)
		}
	}
	es = append(es, kfs.Entry{Kind: kfs.Link, Path: filepath.Join(pf.Dir, fmt.Sprintf("virtfn%d", i)), Target: dir})
	if err := kfs.Apply(root, es); err != nil {
		return fmt.Errorf("PF %s: create VF %d (%s): %w", pf.Address, i, va, err)
	}
	return nil
}

// checkFree fails when /sys/<class>/<name> exists and belongs to another
// device than dir.
func checkFree(root, class, name, dir string) error {
	link := filepath.Join(root, class, name)
	target, err := filepath.EvalSymlinks(link)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	want, _ := filepath.EvalSymlinks(filepath.Join(root, dir))
	if want == "" || !strings.HasPrefix(target, want+string(filepath.Separator)) {
		return fmt.Errorf("/%s/%s already exists (%s): %w", class, name, target, syscall.EEXIST)
	}
	return nil
}

// vfIfIndex keeps a VF's interface index when it exists already (a repeated
// call), and otherwise takes one above every index in /sys/class/net.
func vfIfIndex(root, dir, name string) (int, error) {
	if b, err := os.ReadFile(filepath.Join(root, dir, "net", name, "ifindex")); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			return n, nil
		}
	}
	entries, err := os.ReadDir(filepath.Join(root, "sys/class/net"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	highest := 1 // lo
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(root, "sys/class/net", e.Name(), "ifindex"))
		if err != nil {
			continue // a link whose device went away
		}
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			highest = max(highest, n)
		}
	}
	return highest + 1, nil
}

// rdmaNumbers keeps a VF's RDMA and verbs devices when they exist already,
// and otherwise takes the lowest free numbers, as the kernel's IDAs do.
func rdmaNumbers(root, dir, prefix string) (string, int, error) {
	ib, _ := os.ReadDir(filepath.Join(root, dir, "infiniband"))
	verbs, _ := os.ReadDir(filepath.Join(root, dir, "infiniband_verbs"))
	if len(ib) == 1 && len(verbs) == 1 {
		if n, err := strconv.Atoi(strings.TrimPrefix(verbs[0].Name(), "uverbs")); err == nil {
			return ib[0].Name(), n, nil
		}
	}
	lowest := func(class, prefix string) (int, error) {
		entries, err := os.ReadDir(filepath.Join(root, class))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return 0, err
		}
		var used []int
		for _, e := range entries {
			if n, err := strconv.Atoi(strings.TrimPrefix(e.Name(), prefix)); err == nil && strings.HasPrefix(e.Name(), prefix) {
				used = append(used, n)
			}
		}
		n := 0
		for slices.Contains(used, n) {
			n++
		}
		return n, nil
	}
	dev, err := lowest("sys/class/infiniband", prefix)
	if err != nil {
		return "", 0, err
	}
	uverbs, err := lowest("sys/class/infiniband_verbs", "uverbs")
	if err != nil {
		return "", 0, err
	}
	return fmt.Sprintf("%s%d", prefix, dev), uverbs, nil
}

// removeVF removes VF i of pf and everything that points at it, virtfn link
// first; what is gone already is skipped.
func removeVF(root string, pf *PF, i int) error {
	return removeVFFunction(root, pf, i, true)
}

// removeVFFunction removes VF i of pf: its directory and what points at
// it, and with virtfn its PF's virtfn<i> link first.
func removeVFFunction(root string, pf *PF, i int, virtfn bool) error {
	va, dir, err := vfOf(pf, i)
	if err != nil {
		return err
	}
	if err := checkVFDir(root, pf, dir); err != nil {
		return err
	}
	var paths []string
	if virtfn {
		paths = append(paths, filepath.Join(pf.Dir, fmt.Sprintf("virtfn%d", i)))
	}
	nets, _ := os.ReadDir(filepath.Join(root, dir, "net"))
	for _, n := range nets {
		paths = append(paths, filepath.Join("sys/class/net", n.Name()))
	}
	ibs, _ := os.ReadDir(filepath.Join(root, dir, "infiniband"))
	for _, ib := range ibs {
		paths = append(paths, filepath.Join("sys/class/infiniband", ib.Name()))
	}
	verbs, _ := os.ReadDir(filepath.Join(root, dir, "infiniband_verbs"))
	for _, v := range verbs {
		paths = append(paths, filepath.Join("sys/class/infiniband_verbs", v.Name()), filepath.Join("dev/infiniband", v.Name()))
	}
	if drv, err := os.Readlink(filepath.Join(root, dir, "driver")); err == nil {
		paths = append(paths, filepath.Join("sys/bus/pci/drivers", filepath.Base(drv), va.String()))
	}
	paths = append(paths, filepath.Join("sys/bus/pci/devices", va.String()), filepath.Dir(kfs.SpeedRecord(va.String())), dir)
	if err := kfs.Remove(root, paths...); err != nil {
		return fmt.Errorf("PF %s: remove VF %d (%s): %w", pf.Address, i, va, err)
	}
	return nil
}

// hotRemoved says whether VF i of pf was removed by RemoveVF: its virtfn
// link is there, its target is not. Nothing else leaves that: a VF's
// virtfn link is made last and removed first.
func hotRemoved(root string, pf *PF, i int) bool {
	link := filepath.Join(root, pf.Dir, fmt.Sprintf("virtfn%d", i))
	if _, err := os.Lstat(link); err != nil {
		return false
	}
	_, err := os.Stat(link)
	return errors.Is(err, fs.ErrNotExist)
}

// ErrNoVF is wrapped by RemoveVF's error for an address that is not a VF
// present in the root.
var ErrNoVF = errors.New("no such VF")

// RemoveVF hot-removes one VF, as a write of 1 to the kernel's
// /sys/bus/pci/devices/<vf>/remove does (a function that failed, or an
// operator's removal): the VF's directory goes with everything that points
// at it (its bus and driver entries, its netdev, RDMA and verbs devices,
// /dev/infiniband/uverbs<N>), but not its PF's virtfn<i> link, which the
// kernel removes only when SR-IOV is disabled: it dangles, and the PF's
// VF count (sriov_numvfs, the virtfn links) stays. Writing the same count
// again changes nothing; writing 0 clears the PF, and the VF is back with
// the next 0 → n. The error wraps ErrNoVF for an address that is not a VF
// present in the root (removed already included).
func RemoveVF(root, address string) error {
	va, err := nichw.ParseAddress(address)
	if err != nil {
		return err
	}
	physfn, err := os.Readlink(filepath.Join(root, "sys/bus/pci/devices", va.String(), "physfn"))
	if err != nil {
		return fmt.Errorf("PCI function %s: %w (no physfn link: not a VF, or removed)", va, ErrNoVF)
	}
	pf, err := ReadPF(root, filepath.Base(physfn))
	if err != nil {
		return err
	}
	for i := range pf.TotalVFs {
		a, _, err := vfOf(pf, i)
		if err != nil {
			return err
		}
		if a == va {
			return removeVFFunction(root, pf, i, false)
		}
	}
	return fmt.Errorf("PCI function %s: %w of PF %s (sriov_offset %d, sriov_stride %d)", va, ErrNoVF, pf.Address, pf.Offset, pf.Stride)
}

// checkVFDir refuses to remove dir unless it is missing or is a VF of pf:
// its physfn leads to pf, or (a VF whose creation was interrupted before
// its physfn link) its device file is the PF's sriov_vf_device.
func checkVFDir(root string, pf *PF, dir string) error {
	path := filepath.Join(root, dir)
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if target, err := os.Readlink(filepath.Join(path, "physfn")); err == nil {
		if filepath.Clean(filepath.Join(dir, target)) == pf.Dir {
			return nil
		}
	} else if b, err := os.ReadFile(filepath.Join(path, "device")); err == nil &&
		strings.TrimSpace(string(b)) == fmt.Sprintf("0x%04x", pf.VFDevice) {
		return nil
	}
	return fmt.Errorf("PF %s: %s is not one of its VFs; refusing to remove it", pf.Address, dir)
}
