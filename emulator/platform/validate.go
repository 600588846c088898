package platform

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"drakit.dev/drakit/emulator/internal/fielderr"
)

// SLIT distances DefaultNUMANodes fills in.
const (
	LocalDistance  = 10 // SLIT distance of a node to itself
	RemoteDistance = 20 // the kernel's distance to other nodes without a SLIT
)

// DefaultNUMANodes fills, in place, each node's socket (its id) and SLIT row
// (LocalDistance for itself, RemoteDistance for the others). Nodes without
// an id are left for ValidateNUMANodes.
func DefaultNUMANodes(nodes []NUMANode) {
	for i := range nodes {
		n := &nodes[i]
		if n.ID == nil {
			continue
		}
		if n.Socket == nil {
			id := *n.ID
			n.Socket = &id
		}
		if n.Distances == nil {
			n.Distances = make([]int, len(nodes))
			for j := range n.Distances {
				n.Distances[j] = RemoteDistance
			}
			if *n.ID >= 0 && *n.ID < len(n.Distances) {
				n.Distances[*n.ID] = LocalDistance
			}
		}
	}
}

// ValidateNUMANodes checks spec.numaNodes (at path): ids 0..n-1, each once,
// CPU lists that parse and do not overlap, memory in whole KiB, sockets, and
// SLIT rows.
func ValidateNUMANodes(path *field.Path, nodes []NUMANode) field.ErrorList {
	var errs field.ErrorList
	ids := map[int]int{}
	cpuOwner := map[int]int{}
	for i, n := range nodes {
		np := path.Index(i)
		switch {
		case n.ID == nil:
			errs = append(errs, field.Required(np.Child("id"), ""))
		case *n.ID < 0 || *n.ID >= len(nodes):
			errs = append(errs, field.Invalid(np.Child("id"), *n.ID,
				fmt.Sprintf("NUMA node ids must be 0..%d, one per entry of spec.numaNodes", len(nodes)-1)))
		default:
			if j, dup := ids[*n.ID]; dup {
				errs = append(errs, fielderr.Duplicate(np.Child("id"), *n.ID, path.Index(j).Child("id")))
			} else {
				ids[*n.ID] = i
			}
		}
		cpus, err := ParseCPUList(n.CPUList)
		if err != nil {
			errs = append(errs, field.Invalid(np.Child("cpulist"), n.CPUList, err.Error()))
		}
		for _, c := range cpus {
			if j, taken := cpuOwner[c]; taken {
				errs = append(errs, field.Invalid(np.Child("cpulist"), n.CPUList,
					fmt.Sprintf("CPU %d is also in %s", c, path.Index(j).Child("cpulist"))))
				break
			}
			cpuOwner[c] = i
		}
		if n.Memory != nil && (n.Memory.Sign() <= 0 || n.Memory.Value()%1024 != 0) {
			errs = append(errs, field.Invalid(np.Child("memory"), n.Memory.String(), "must be a positive whole number of KiB (meminfo counts kB)"))
		}
		if n.Socket == nil {
			errs = append(errs, field.Required(np.Child("socket"), "defaults to the node's id"))
		} else if *n.Socket < 0 {
			errs = append(errs, field.Invalid(np.Child("socket"), *n.Socket, "must not be negative"))
		}
		dp := np.Child("distances")
		if len(n.Distances) != len(nodes) {
			errs = append(errs, field.Invalid(dp, n.Distances,
				fmt.Sprintf("must have %d entries, one per NUMA node in id order", len(nodes))))
			continue
		}
		for j, d := range n.Distances {
			switch {
			case n.ID != nil && j == *n.ID && d != LocalDistance:
				errs = append(errs, field.Invalid(dp.Index(j), d, "the distance of a node to itself must be 10"))
			case (n.ID == nil || j != *n.ID) && (d <= LocalDistance || d > 254):
				errs = append(errs, field.Invalid(dp.Index(j), d, "the distance to another node must be 11..254"))
			}
		}
	}
	return errs
}

// ValidateRootComplexes checks spec.rootComplexes (at path): names, domains
// and root buses, each root complex's NUMA node (one of nodes), and its
// switches' names and buses.
func ValidateRootComplexes(path *field.Path, rcs []RootComplex, nodes []NUMANode) field.ErrorList {
	var errs field.ErrorList
	names := map[string]int{}
	roots := map[[2]Hex]int{}
	for i := range rcs {
		rc := &rcs[i]
		rp := path.Index(i)
		errs = append(errs, fielderr.ValidateName(rp.Child("name"), rc.Name)...)
		if j, dup := names[rc.Name]; dup && rc.Name != "" {
			errs = append(errs, fielderr.Duplicate(rp.Child("name"), rc.Name, path.Index(j).Child("name")))
		} else {
			names[rc.Name] = i
		}
		if rc.Domain > 0xffff {
			errs = append(errs, field.Invalid(rp.Child("domain"), rc.Domain, "must be 0x0..0xffff"))
		}
		if rc.Bus > 0xff {
			errs = append(errs, field.Invalid(rp.Child("bus"), rc.Bus, "must be 0x0..0xff"))
		} else if j, dup := roots[[2]Hex{rc.Domain, rc.Bus}]; dup {
			errs = append(errs, fielderr.Duplicate(rp.Child("bus"), rc.Bus, path.Index(j).Child("bus")))
		} else {
			roots[[2]Hex{rc.Domain, rc.Bus}] = i
		}
		if rc.NUMANode != nil && !hasNUMANode(nodes, *rc.NUMANode) {
			errs = append(errs, fielderr.WithDetail(field.NotFound(rp.Child("numaNode"), *rc.NUMANode),
				"no such id in spec.numaNodes; leave numaNode unset for devices without NUMA affinity"))
		}
		lo, hi := busRange(rcs, i)
		switches := map[string]int{}
		for j, sw := range rc.Switches {
			sp := rp.Child("switches").Index(j)
			errs = append(errs, fielderr.ValidateName(sp.Child("name"), sw.Name)...)
			if k, dup := switches[sw.Name]; dup && sw.Name != "" {
				errs = append(errs, fielderr.Duplicate(sp.Child("name"), sw.Name, rp.Child("switches").Index(k).Child("name")))
			} else {
				switches[sw.Name] = j
			}
			switch {
			case sw.Bus == 0:
				errs = append(errs, field.Required(sp.Child("bus"), "the bus of the switch's upstream port"))
			case sw.Bus < lo || sw.Bus+1 > hi:
				errs = append(errs, field.Invalid(sp.Child("bus"), sw.Bus,
					fmt.Sprintf("the switch uses buses bus and bus+1, which must lie in %s..%s, the bus range of root complex %s",
						lo, hi, rc.Name)))
			}
		}
	}
	return errs
}

func hasNUMANode(nodes []NUMANode, id int) bool {
	for _, n := range nodes {
		if n.ID != nil && *n.ID == id {
			return true
		}
	}
	return false
}

// PCIID is one PCI id field of a device (vendorID, deviceID, …) for
// ValidatePCIIDs.
type PCIID struct {
	Field string
	Value Hex
}

// ValidatePCIIDs requires each id below path and keeps it in 0x1..0xfffe
// (0 is no device, 0xffff what a read of an absent function returns).
func ValidatePCIIDs(path *field.Path, ids []PCIID) field.ErrorList {
	var errs field.ErrorList
	for _, id := range ids {
		switch {
		case id.Value == 0:
			errs = append(errs, field.Required(path.Child(id.Field), ""))
		case id.Value >= 0xffff:
			errs = append(errs, field.Invalid(path.Child(id.Field), id.Value, "must be 0x1..0xfffe"))
		}
	}
	return errs
}
