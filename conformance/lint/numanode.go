package lint

import (
	"fmt"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"
)

// RuleNUMANode is the rule of NUMANode; like inventory it needs the node's
// sysfs.
const RuleNUMANode = "numa-node"

// NUMANode checks the standard attribute resource.kubernetes.io/numaNode
// (KEP-6072, dra-1.37-spec.md §16 and §15 behaviour 6) of the driver's
// devices of a kind on one node against the numa_node of their PCI
// functions below sysfs: a device whose function the kernel puts on a NUMA
// node publishes that node (an int, or an int list whose first element is
// it), one the kernel puts on none (-1) publishes no numaNode. Its pcieRoot,
// where it has one, is in its pciBusID's PCI domain. Devices without a
// pciBusID of the kind are the inventory rule's findings, not this one's.
func NUMANode(in Input, node, sysfs string, kind PCIKind, inKind func(pool, device string) bool) ([]Finding, error) {
	funcs, err := nodeFunctions(sysfs, kind)
	if err != nil {
		return nil, err
	}
	var out []Finding
	devices(in, func(p pool, s *resourceapi.ResourceSlice, d *resourceapi.Device) {
		if ptr.Deref(s.Spec.NodeName, "") != node || !inKind(p.name, d.Name) {
			return
		}
		a, ok := d.Attributes[attrPCIBusID]
		if !ok || a.StringValue == nil {
			return
		}
		addr := *a.StringValue
		f, ok := funcs[addr]
		if !ok {
			return
		}
		bad := func(basis, format string, args ...any) {
			out = append(out, newFinding(RuleNUMANode, basis, p.name, s.Name, d.Name, fmt.Sprintf(format, args...)))
		}
		n, has := d.Attributes[attrNUMANode]
		switch {
		case f.numaNode < 0 && has:
			bad(basisNUMANode, "%s is %s, but the node's sysfs puts %s on no NUMA node (numa_node -1): the attribute must be omitted", attrNUMANode, describe(n), addr)
		case f.numaNode >= 0 && !has:
			bad(basisNUMANode, "publishes no %s, the node's sysfs puts %s on NUMA node %d", attrNUMANode, addr, f.numaNode)
		case f.numaNode >= 0 && n.IntValue != nil && *n.IntValue != f.numaNode:
			bad(basisNUMANode, "%s is %d, the node's sysfs says %s is on NUMA node %d", attrNUMANode, *n.IntValue, addr, f.numaNode)
		case f.numaNode >= 0 && n.IntValues != nil && n.IntValues[0] != f.numaNode:
			bad(basisNUMANode, "%s is %v, whose first element must be the device's own NUMA node: the node's sysfs says %s is on NUMA node %d", attrNUMANode, n.IntValues, addr, f.numaNode)
		case f.numaNode >= 0 && n.IntValue == nil && n.IntValues == nil:
			bad(basisNUMANode, "%s is %s, want an int or an int list", attrNUMANode, describe(n))
		}
		if r, ok := d.Attributes[attrPCIeRoot]; ok && r.StringValue != nil {
			domain, _, _ := strings.Cut(addr, ":")
			if !strings.HasPrefix(*r.StringValue, "pci"+domain+":") {
				bad(basisPCIeDomain, "%s is %s, outside the PCI domain %s of its %s %s", attrPCIeRoot, *r.StringValue, domain, attrPCIBusID, addr)
			}
		}
	})
	return out, nil
}
