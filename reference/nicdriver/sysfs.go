package nicdriver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/dynamic-resource-allocation/deviceattribute"
	"k8s.io/klog/v2"
)

// pciDevicesDir is where sysfs lists every PCI function, relative to the
// sysfs root: one relative symlink per BDF into devices/pci<root>/….
const pciDevicesDir = "bus/pci/devices"

// classEthernet is the PCI class (base class 0x02 network, subclass 0x00
// Ethernet) of the functions the driver discovers: class files read
// 0x0200xx.
const classEthernet = 0x0200

// bdfPattern is the BDF form sysfs names PCI functions with.
var bdfPattern = regexp.MustCompile(`^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)

// maxSysfsFile bounds what the driver reads of one sysfs attribute file:
// they are one short line.
const maxSysfsFile = 4096

// PF is an SR-IOV physical function of an Ethernet controller as sysfs
// shows it.
type PF struct {
	// BDF is the PCI address, 0000:3b:00.0.
	BDF string
	// VendorID, DeviceID and VFDeviceID (sriov_vf_device; empty when
	// sysfs has none) are hexadecimal as sysfs writes them, 0x15b3.
	VendorID, DeviceID, VFDeviceID string
	// TotalVFs (sriov_totalvfs, > 0) and NumVFs (sriov_numvfs).
	TotalVFs, NumVFs int
	// VFOffset and VFStride place VF i at routing ID PF + offset +
	// i·stride; HasVFLayout is false when sysfs has no sriov_offset or
	// sriov_stride.
	VFOffset, VFStride int
	HasVFLayout        bool
	// AutoProbe (sriov_drivers_autoprobe reads 1) and HasDriver (a driver
	// link): new VFs are bound to the PF's driver, which gives them a
	// netdev (and RDMA device when the PF has one).
	AutoProbe, HasDriver bool
	// NUMANode is numa_node, -1 when sysfs reports no affinity or none.
	NUMANode int
	// PCIeRoot is the root complex (pci0000:00) through deviceattribute;
	// empty when it could not be resolved.
	PCIeRoot string
	// Netdev is the PF's network interface; nil when it has none.
	Netdev *Netdev
	// RDMA is the PF's RDMA device; nil when it has none.
	RDMA *RDMA
	// VFs are the VFs that exist (virtfn<i> links), by index.
	VFs []VF
}

// Netdev is a network interface of a PCI function (net/<name>).
type Netdev struct {
	Name string
	// Address is the hardware (MAC) address; empty when unreadable.
	Address string
	// MTU is 0 when unreadable.
	MTU int
	// SpeedMbps is the link speed in Mb/s; 0 when unknown (a link that
	// is down reads -1 or fails).
	SpeedMbps int64
	// OperState is up, down, unknown, ….
	OperState string
}

// RDMA is the RDMA device of a PCI function: infiniband/<Device> and its
// user verbs character device infiniband_verbs/<Uverbs>.
type RDMA struct {
	Device string
	// Uverbs is uverbs<N> (the node is /dev/infiniband/uverbs<N>); empty
	// when sysfs lists none. Major and Minor are its device numbers.
	Uverbs       string
	Major, Minor int64
}

// VF is an existing virtual function of a PF.
type VF struct {
	Index  int
	BDF    string
	Netdev *Netdev
	RDMA   *RDMA
}

// sysfs reads the PCI functions below a sysfs root.
type sysfs struct {
	root string
}

// pciPath is the path of a file of the PCI function bdf.
func (s sysfs) pciPath(bdf string, elem ...string) string {
	return filepath.Join(append([]string{s.root, pciDevicesDir, bdf}, elem...)...)
}

// ScanPFs returns the SR-IOV PFs of Ethernet controllers below sysfsRoot
// (functions of class 0x0200xx without a physfn link whose sriov_totalvfs
// is positive), sorted by BDF. Content that the kernel never writes (a
// malformed BDF, class, id or count) is an error naming the file; what a
// PF may lack (netdev, speed, NUMA node, PCIe root, RDMA) is left out.
func ScanPFs(ctx context.Context, sysfsRoot string) ([]PF, error) {
	s := sysfs{root: sysfsRoot}
	entries, err := os.ReadDir(filepath.Join(sysfsRoot, pciDevicesDir))
	if err != nil {
		return nil, fmt.Errorf("list PCI devices: %w", err)
	}
	var pfs []PF
	for _, e := range entries {
		bdf := e.Name()
		if !bdfPattern.MatchString(bdf) {
			return nil, fmt.Errorf("PCI device %s in %s: not a PCI address (0000:3b:00.0)", bdf, filepath.Join(sysfsRoot, pciDevicesDir))
		}
		ok, err := s.isPF(bdf)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		pf, err := s.readPF(ctx, bdf)
		if err != nil {
			return nil, err
		}
		pfs = append(pfs, pf)
	}
	slices.SortFunc(pfs, func(a, b PF) int { return strings.Compare(a.BDF, b.BDF) })
	return pfs, nil
}

// isPF reports whether bdf is an Ethernet function that is an SR-IOV PF.
func (s sysfs) isPF(bdf string) (bool, error) {
	class, err := s.readHex(bdf, "class")
	if err != nil {
		return false, err
	}
	if class>>8 != classEthernet {
		return false, nil
	}
	if _, err := os.Lstat(s.pciPath(bdf, "physfn")); err == nil {
		return false, nil // a VF
	}
	if _, err := os.Stat(s.pciPath(bdf, "sriov_totalvfs")); errors.Is(err, fs.ErrNotExist) {
		return false, nil // no SR-IOV capability
	}
	total, err := s.readInt(bdf, "sriov_totalvfs")
	if err != nil {
		return false, err
	}
	if total < 0 {
		return false, fmt.Errorf("%s: %d VFs", s.pciPath(bdf, "sriov_totalvfs"), total)
	}
	return total > 0, nil
}

// readPF reads a PF.
func (s sysfs) readPF(ctx context.Context, bdf string) (PF, error) {
	logger := klog.FromContext(ctx)
	pf := PF{BDF: bdf, NUMANode: -1}
	var err error
	if pf.VendorID, err = s.readID(bdf, "vendor"); err != nil {
		return PF{}, err
	}
	if pf.DeviceID, err = s.readID(bdf, "device"); err != nil {
		return PF{}, err
	}
	if s.exists(bdf, "sriov_vf_device") {
		// The kernel writes this one without 0x (%x).
		v, err := s.readHexDigits(bdf, "sriov_vf_device", false)
		if err != nil {
			return PF{}, err
		}
		if pf.VFDeviceID, err = s.pciID(bdf, "sriov_vf_device", v); err != nil {
			return PF{}, err
		}
	}
	if pf.TotalVFs, err = s.readInt(bdf, "sriov_totalvfs"); err != nil {
		return PF{}, err
	}
	if pf.NumVFs, err = s.readNumVFs(bdf); err != nil {
		return PF{}, err
	}
	if pf.NumVFs > pf.TotalVFs {
		return PF{}, fmt.Errorf("%s: %d VFs, more than sriov_totalvfs %d", s.pciPath(bdf, "sriov_numvfs"), pf.NumVFs, pf.TotalVFs)
	}
	if s.exists(bdf, "sriov_offset") && s.exists(bdf, "sriov_stride") {
		if pf.VFOffset, err = s.readInt(bdf, "sriov_offset"); err != nil {
			return PF{}, err
		}
		if pf.VFStride, err = s.readInt(bdf, "sriov_stride"); err != nil {
			return PF{}, err
		}
		if pf.VFOffset < 0 || pf.VFStride < 0 {
			return PF{}, fmt.Errorf("PCI device %s: negative VF offset %d or stride %d", bdf, pf.VFOffset, pf.VFStride)
		}
		pf.HasVFLayout = true
	}
	if s.exists(bdf, "sriov_drivers_autoprobe") {
		v, err := s.readInt(bdf, "sriov_drivers_autoprobe")
		if err != nil {
			return PF{}, err
		}
		pf.AutoProbe = v == 1
	}
	_, err = os.Lstat(s.pciPath(bdf, "driver"))
	pf.HasDriver = err == nil

	fsys := deviceattribute.WithFSFromRoot(s.root)
	if attr, err := deviceattribute.GetPCIeRootAttributeByPCIBusID(bdf, fsys); err != nil {
		logger.Info("Warning: publishing PF without PCIe root", "pf", bdf, "err", err)
	} else {
		pf.PCIeRoot = *attr.Value.StringValue
	}
	if attr, err := deviceattribute.GetNUMANodeAttributeByPCIBusID(bdf, deviceattribute.ScalarAttribute, fsys); err != nil {
		logger.V(2).Info("Publishing PF without NUMA node", "pf", bdf, "reason", err.Error())
	} else {
		pf.NUMANode = int(*attr.Value.IntValue)
	}
	if pf.Netdev, err = s.readNetdev(bdf); err != nil {
		return PF{}, err
	}
	if pf.RDMA, err = s.readRDMA(bdf); err != nil {
		return PF{}, err
	}
	if pf.VFs, err = s.readVFs(bdf); err != nil {
		return PF{}, err
	}
	return pf, nil
}

// readVFs reads the VFs the PF's virtfn<i> links name, by index.
func (s sysfs) readVFs(pf string) ([]VF, error) {
	links, err := s.virtfnLinks(pf)
	if err != nil {
		return nil, err
	}
	var vfs []VF
	for _, i := range slices.Sorted(maps.Keys(links)) {
		vf, err := s.readVF(pf, i, links[i])
		if err != nil {
			return nil, err
		}
		vfs = append(vfs, vf)
	}
	return vfs, nil
}

// readVF reads VF index of pf at bdf.
func (s sysfs) readVF(pf string, index int, bdf string) (VF, error) {
	vf := VF{Index: index, BDF: bdf}
	var err error
	if vf.Netdev, err = s.readNetdev(bdf); err != nil {
		return VF{}, fmt.Errorf("VF %d of PF %s: %w", index, pf, err)
	}
	if vf.RDMA, err = s.readRDMA(bdf); err != nil {
		return VF{}, fmt.Errorf("VF %d of PF %s: %w", index, pf, err)
	}
	return vf, nil
}

// virtfnLinks returns the targets' BDFs of the PF's virtfn<i> links by i.
func (s sysfs) virtfnLinks(pf string) (map[int]string, error) {
	entries, err := os.ReadDir(s.pciPath(pf))
	if err != nil {
		return nil, fmt.Errorf("list PCI device %s: %w", pf, err)
	}
	links := map[int]string{}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "virtfn")
		if !ok {
			continue
		}
		i, err := strconv.Atoi(rest)
		if err != nil || i < 0 || strconv.Itoa(i) != rest {
			return nil, fmt.Errorf("PCI device %s: %s is not virtfn<index>", pf, e.Name())
		}
		target, err := os.Readlink(s.pciPath(pf, e.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue // a VF going away
		}
		if err != nil {
			return nil, fmt.Errorf("PCI device %s: read %s: %w", pf, e.Name(), err)
		}
		bdf := filepath.Base(target)
		if !bdfPattern.MatchString(bdf) {
			return nil, fmt.Errorf("PCI device %s: %s points to %s, not to a PCI device", pf, e.Name(), target)
		}
		links[i] = bdf
	}
	return links, nil
}

// readNetdev reads the first network interface (by name) of a PCI
// function; nil when it has none.
func (s sysfs) readNetdev(bdf string) (*Netdev, error) {
	names, err := s.subdirs(bdf, "net")
	if err != nil || len(names) == 0 {
		return nil, err
	}
	n := &Netdev{Name: names[0]}
	netFile := func(name string) string { return s.pciPath(bdf, "net", n.Name, name) }
	if v, err := readLine(netFile("address")); err == nil {
		n.Address = v
	}
	if v, err := readLine(netFile("mtu")); err == nil {
		mtu, err := strconv.Atoi(v)
		if err != nil || mtu < 0 {
			return nil, fmt.Errorf("%s: %q is not an MTU", netFile("mtu"), v)
		}
		n.MTU = mtu
	}
	// A link that is down reads -1 (SPEED_UNKNOWN) or fails with EINVAL.
	if v, err := readLine(netFile("speed")); err == nil {
		speed, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a speed in Mb/s", netFile("speed"), v)
		}
		n.SpeedMbps = max(speed, 0)
	}
	if v, err := readLine(netFile("operstate")); err == nil {
		n.OperState = v
	}
	return n, nil
}

// readRDMA reads the first RDMA device of a PCI function (infiniband/<dev>)
// and its first user verbs device (infiniband_verbs/uverbs<N>, whose dev
// file holds major:minor); nil when it has none.
func (s sysfs) readRDMA(bdf string) (*RDMA, error) {
	devs, err := s.subdirs(bdf, "infiniband")
	if err != nil || len(devs) == 0 {
		return nil, err
	}
	r := &RDMA{Device: devs[0]}
	verbs, err := s.subdirs(bdf, "infiniband_verbs")
	if err != nil {
		return nil, err
	}
	for _, v := range verbs {
		if !strings.HasPrefix(v, "uverbs") {
			continue
		}
		devFile := s.pciPath(bdf, "infiniband_verbs", v, "dev")
		line, err := readLine(devFile)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", devFile, err)
		}
		major, minor, ok := parseDevNum(line)
		if !ok {
			return nil, fmt.Errorf("%s: %q is not major:minor", devFile, line)
		}
		r.Uverbs, r.Major, r.Minor = v, major, minor
		break
	}
	return r, nil
}

func parseDevNum(s string) (major, minor int64, ok bool) {
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		return 0, 0, false
	}
	major, err1 := strconv.ParseInt(a, 10, 64)
	minor, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || major < 0 || minor < 0 {
		return 0, 0, false
	}
	return major, minor, true
}

// subdirs lists the entries of a directory of a PCI function, sorted; none
// when it does not exist. Entries with names that cannot be paths are an
// error.
func (s sysfs) subdirs(bdf, dir string) ([]string, error) {
	entries, err := os.ReadDir(s.pciPath(bdf, dir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", s.pciPath(bdf, dir), err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names, nil
}

func (s sysfs) exists(bdf, name string) bool {
	_, err := os.Stat(s.pciPath(bdf, name))
	return err == nil
}

// readNumVFs reads sriov_numvfs.
func (s sysfs) readNumVFs(bdf string) (int, error) {
	n, err := s.readInt(bdf, "sriov_numvfs")
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, fmt.Errorf("%s: %d VFs", s.pciPath(bdf, "sriov_numvfs"), n)
	}
	return n, nil
}

// readInt reads a decimal attribute.
func (s sysfs) readInt(bdf, name string) (int, error) {
	p := s.pciPath(bdf, name)
	line, err := readLine(p)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", p, err)
	}
	v, err := strconv.Atoi(line)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a number", p, line)
	}
	return v, nil
}

// readHex reads a 0x-prefixed hexadecimal attribute.
func (s sysfs) readHex(bdf, name string) (uint64, error) { return s.readHexDigits(bdf, name, true) }

// readHexDigits reads a hexadecimal attribute of at most 32 bits, with the
// 0x prefix or without.
func (s sysfs) readHexDigits(bdf, name string, prefixed bool) (uint64, error) {
	p := s.pciPath(bdf, name)
	line, err := readLine(p)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", p, err)
	}
	want := "a hexadecimal number without 0x"
	digits := line
	if prefixed {
		want = "a 0x-prefixed hexadecimal number"
		var ok bool
		if digits, ok = strings.CutPrefix(line, "0x"); !ok {
			return 0, fmt.Errorf("%s: %q is not %s", p, line, want)
		}
	}
	if digits == "" || len(digits) > 8 {
		return 0, fmt.Errorf("%s: %q is not %s", p, line, want)
	}
	v, err := strconv.ParseUint(digits, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not %s", p, line, want)
	}
	return v, nil
}

// readID reads a 16-bit PCI id (0x15b3) and returns it as sysfs writes
// vendor and device, 0x15b3.
func (s sysfs) readID(bdf, name string) (string, error) {
	v, err := s.readHex(bdf, name)
	if err != nil {
		return "", err
	}
	return s.pciID(bdf, name, v)
}

func (s sysfs) pciID(bdf, name string, v uint64) (string, error) {
	if v > 0xffff {
		return "", fmt.Errorf("%s: 0x%x is not a 16-bit PCI id", s.pciPath(bdf, name), v)
	}
	return fmt.Sprintf("0x%04x", v), nil
}

// readLine reads a sysfs attribute: one line, trailing white space cut.
func readLine(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSysfsFile+1))
	if err != nil {
		return "", err
	}
	if len(data) > maxSysfsFile {
		return "", fmt.Errorf("%s is longer than %d bytes", path, maxSysfsFile)
	}
	return strings.TrimRight(string(data), " \t\r\n\x00"), nil
}
