package lint

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"
)

// PCIKind says which of a node's PCI functions are devices of a kind: the
// vendor ID ("10de") and a prefix of the class code ("0302" for 3D
// controllers, "03" for any display controller), lower-case hex.
type PCIKind struct {
	Vendor, Class string
}

// pciFunction is one PCI function of the node, as sysfs shows it.
type pciFunction struct {
	address string
	// numaNode is the numa_node file; -1 when the kernel knows none.
	numaNode int64
	// root is the PCIe root complex of the resolved device path:
	// "pci0000:00".
	root string
}

// nodeFunctions reads the PCI functions of the kind below sysfs (the root
// of the node's /sys), the kernel's layout: bus/pci/devices/<address> links
// into devices/pci<domain>:<bus>/….
func nodeFunctions(sysfs string, kind PCIKind) (map[string]pciFunction, error) {
	dir := filepath.Join(sysfs, "bus", "pci", "devices")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read the node's PCI devices: %w", err)
	}
	out := map[string]pciFunction{}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		vendor, err1 := readHex(filepath.Join(path, "vendor"))
		class, err2 := readHex(filepath.Join(path, "class"))
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("read PCI function %s: %w", e.Name(), err)
		}
		if vendor != kind.Vendor || !strings.HasPrefix(class, kind.Class) {
			continue
		}
		f := pciFunction{address: e.Name(), numaNode: -1}
		if b, err := os.ReadFile(filepath.Join(path, "numa_node")); err == nil {
			if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
				f.numaNode = n
			}
		}
		resolved, err := filepath.EvalSymlinks(path)
		if err != nil {
			return nil, fmt.Errorf("resolve PCI function %s: %w", e.Name(), err)
		}
		rel, err := filepath.Rel(filepath.Join(sysfs, "devices"), resolved)
		if err == nil && !strings.HasPrefix(rel, "..") {
			f.root, _, _ = strings.Cut(rel, string(filepath.Separator))
		}
		out[f.address] = f
	}
	return out, nil
}

// readHex reads a sysfs hex file ("0x10de") as lower-case hex without 0x.
func readHex(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.ToLower(strings.TrimPrefix(strings.TrimSpace(string(b)), "0x")), nil
}

// Inventory compares the driver's devices of a kind on one node (inKind says
// which of the devices of the node's slices, by pool and name) with the node's PCI functions of
// the kind, below sysfs: every function is published (the standard pciBusID
// of a device or of one of its partitions), every published pciBusID is a
// function of the kind, and a device's pcieRoot is the function's root
// complex. Its numaNode is the numa-node rule's (NUMANode). An error means
// sysfs could not be read.
func Inventory(in Input, node, sysfs string, kind PCIKind, inKind func(pool, device string) bool) ([]Finding, error) {
	funcs, err := nodeFunctions(sysfs, kind)
	if err != nil {
		return nil, err
	}
	published := map[string]bool{}
	var out []Finding
	devices(in, func(p pool, s *resourceapi.ResourceSlice, d *resourceapi.Device) {
		if ptr.Deref(s.Spec.NodeName, "") != node || !inKind(p.name, d.Name) {
			return
		}
		bad := func(format string, args ...any) {
			out = append(out, newFinding(RuleInventory, basisInventory, p.name, s.Name, d.Name, fmt.Sprintf(format, args...)))
		}
		a, ok := d.Attributes[attrPCIBusID]
		if !ok || a.StringValue == nil {
			bad("publishes no %s: the kit cannot tell which of the node's PCI functions it is", attrPCIBusID)
			return
		}
		addr := *a.StringValue
		published[addr] = true
		f, ok := funcs[addr]
		if !ok {
			bad("%s is %s, which the node has no PCI function of vendor %s class %s* at", attrPCIBusID, addr, kind.Vendor, kind.Class)
			return
		}
		if r, ok := d.Attributes[attrPCIeRoot]; ok && r.StringValue != nil && f.root != "" && *r.StringValue != f.root {
			bad("%s is %s, the node's sysfs puts %s under %s", attrPCIeRoot, *r.StringValue, addr, f.root)
		}
	})
	var missing []string
	for addr := range funcs {
		if !published[addr] {
			missing = append(missing, addr)
		}
	}
	sort.Strings(missing)
	for _, addr := range missing {
		out = append(out, newFinding(RuleInventory, basisInventory, "", "", "", fmt.Sprintf("node %s has PCI function %s (vendor %s class %s*), no device of the driver publishes it", node, addr, kind.Vendor, kind.Class)))
	}
	return out, nil
}
