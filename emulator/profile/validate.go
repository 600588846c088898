package profile

import (
	"fmt"
	"math/bits"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Limits enforced by Validate.
const (
	// MaxGPUs bounds spec.gpus: the 32-bit MMIO window below 4 GiB that the
	// renderer lays the GPUs' 16 MiB BAR0 regions into holds 128 of them.
	MaxGPUs = 128
	// MaxMinor is the largest GPU minor; 255 is /dev/nvidiactl.
	MaxMinor = 254
	// MaxNameBytes is the longest GPU name NVML can return (buffer 96).
	MaxNameBytes = 95
	// maxBAR1 keeps each GPU's 64-bit BARs inside its 2 TiB address window.
	maxBAR1 = 1 << 40
)

var (
	driverVersionPattern = regexp.MustCompile(`^[0-9]{1,4}(\.[0-9]{1,4}){1,2}$`)
	ccPattern            = regexp.MustCompile(`^[0-9]{1,2}\.[0-9]$`)
	vbiosPattern         = regexp.MustCompile(`^[0-9A-F]{2}(\.[0-9A-F]{2}){4}$`)
	uuidPattern          = regexp.MustCompile(`^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
)

// Validate checks a defaulted profile and returns every problem with its
// field path, e.g. "spec.gpus[3].minor: Duplicate value: 2". Call Default
// first: Validate reports unset defaultable fields as required.
func (p *Profile) Validate() field.ErrorList {
	var errs field.ErrorList
	if p.APIVersion != APIVersion {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), p.APIVersion, []string{APIVersion}))
	}
	if p.Kind != Kind {
		errs = append(errs, field.NotSupported(field.NewPath("kind"), p.Kind, []string{Kind}))
	}
	errs = append(errs, validateName(field.NewPath("metadata", "name"), p.Metadata.Name)...)
	spec := field.NewPath("spec")
	if p.Spec.UUIDSeed == "" {
		errs = append(errs, field.Required(spec.Child("uuidSeed"), "defaults to metadata.name"))
	}
	errs = append(errs, validateDriver(spec.Child("driver"), &p.Spec.Driver)...)
	errs = append(errs, validateNUMANodes(spec.Child("numaNodes"), p.Spec.NUMANodes)...)
	errs = append(errs, p.validateRootComplexes(spec.Child("rootComplexes"))...)
	errs = append(errs, p.validateGPUs(spec.Child("gpus"))...)
	return errs
}

func validateName(path *field.Path, name string) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(name) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	return errs
}

func validateDriver(path *field.Path, d *Driver) field.ErrorList {
	var errs field.ErrorList
	switch {
	case d.DriverVersion == "":
		errs = append(errs, field.Required(path.Child("driverVersion"), ""))
	case !driverVersionPattern.MatchString(d.DriverVersion):
		errs = append(errs, field.Invalid(path.Child("driverVersion"), d.DriverVersion,
			"must be a driver version such as 570.172.08"))
	}
	if v := d.CUDADriverVersion; v < 1000 || v > 99990 || v%10 != 0 {
		errs = append(errs, field.Invalid(path.Child("cudaDriverVersion"), v,
			"must be major*1000+minor*10, e.g. 12080 for CUDA 12.8"))
	}
	return errs
}

func validateNUMANodes(path *field.Path, nodes []NUMANode) field.ErrorList {
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
				errs = append(errs, duplicate(np.Child("id"), *n.ID, path.Index(j).Child("id")))
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

func (p *Profile) validateRootComplexes(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]int{}
	roots := map[[2]Hex]int{}
	for i := range p.Spec.RootComplexes {
		rc := &p.Spec.RootComplexes[i]
		rp := path.Index(i)
		errs = append(errs, validateName(rp.Child("name"), rc.Name)...)
		if j, dup := names[rc.Name]; dup && rc.Name != "" {
			errs = append(errs, duplicate(rp.Child("name"), rc.Name, path.Index(j).Child("name")))
		} else {
			names[rc.Name] = i
		}
		if rc.Domain > 0xffff {
			errs = append(errs, field.Invalid(rp.Child("domain"), rc.Domain, "must be 0x0..0xffff"))
		}
		if rc.Bus > 0xff {
			errs = append(errs, field.Invalid(rp.Child("bus"), rc.Bus, "must be 0x0..0xff"))
		} else if j, dup := roots[[2]Hex{rc.Domain, rc.Bus}]; dup {
			errs = append(errs, duplicate(rp.Child("bus"), rc.Bus, path.Index(j).Child("bus")))
		} else {
			roots[[2]Hex{rc.Domain, rc.Bus}] = i
		}
		if rc.NUMANode != nil && !p.hasNUMANode(*rc.NUMANode) {
			errs = append(errs, withDetail(field.NotFound(rp.Child("numaNode"), *rc.NUMANode),
				"no such id in spec.numaNodes; leave numaNode unset for devices without NUMA affinity"))
		}
		lo, hi := p.busRange(i)
		switches := map[string]int{}
		for j, sw := range rc.Switches {
			sp := rp.Child("switches").Index(j)
			errs = append(errs, validateName(sp.Child("name"), sw.Name)...)
			if k, dup := switches[sw.Name]; dup && sw.Name != "" {
				errs = append(errs, duplicate(sp.Child("name"), sw.Name, rp.Child("switches").Index(k).Child("name")))
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

func (p *Profile) hasNUMANode(id int) bool {
	for _, n := range p.Spec.NUMANodes {
		if n.ID != nil && *n.ID == id {
			return true
		}
	}
	return false
}

// busRange returns the buses available below root complex i: from its root
// bus + 1 up to the bus before the next root complex of the same domain.
func (p *Profile) busRange(i int) (Hex, Hex) {
	rc := p.Spec.RootComplexes[i]
	hi := Hex(0xff)
	for j, other := range p.Spec.RootComplexes {
		if j != i && other.Domain == rc.Domain && other.Bus > rc.Bus && other.Bus-1 < hi {
			hi = other.Bus - 1
		}
	}
	return rc.Bus + 1, hi
}

type busOwner struct {
	path  *field.Path
	label string
}

func (p *Profile) validateGPUs(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(p.Spec.GPUs) > MaxGPUs {
		errs = append(errs, field.TooMany(path, len(p.Spec.GPUs), MaxGPUs))
	}
	minors := map[int]int{}
	uuids := map[string]int{}
	wellPlaced := map[int]bool{}
	// Every bus of a domain has one owner: a root bus, a switch's upstream
	// and internal bus, or a device.
	buses := map[[2]Hex]busOwner{}
	rcs := field.NewPath("spec", "rootComplexes")
	for i, rc := range p.Spec.RootComplexes {
		for j, sw := range rc.Switches {
			sp := rcs.Index(i).Child("switches").Index(j).Child("bus")
			buses[[2]Hex{rc.Domain, sw.Bus}] = busOwner{sp, "upstream port of switch " + rc.Name + "/" + sw.Name}
			buses[[2]Hex{rc.Domain, sw.Bus + 1}] = busOwner{sp, "internal bus of switch " + rc.Name + "/" + sw.Name}
		}
		buses[[2]Hex{rc.Domain, rc.Bus}] = busOwner{rcs.Index(i).Child("bus"), "root bus of " + rc.Name}
	}
	for i := range p.Spec.GPUs {
		g := &p.Spec.GPUs[i]
		gp := path.Index(i)
		errs = append(errs, validateGPUModelFields(gp, g)...)
		errs = append(errs, validateMIG(gp.Child("mig"), g)...)
		switch {
		case g.Minor == nil:
			errs = append(errs, field.Required(gp.Child("minor"), ""))
		case *g.Minor < 0 || *g.Minor > MaxMinor:
			errs = append(errs, field.Invalid(gp.Child("minor"), *g.Minor, "must be 0..254 (255 is /dev/nvidiactl)"))
		default:
			if j, dup := minors[*g.Minor]; dup {
				errs = append(errs, duplicate(gp.Child("minor"), *g.Minor, path.Index(j).Child("minor")))
			} else {
				minors[*g.Minor] = i
			}
		}
		placed, perrs := p.validatePlacement(gp.Child("pcie"), g, buses)
		errs = append(errs, perrs...)
		if placed && len(perrs) == 0 {
			wellPlaced[i] = true
		}
		switch {
		case g.UUID == "" && placed:
			errs = append(errs, field.Required(gp.Child("uuid"), "defaults to a UUID derived from spec.uuidSeed"))
		case g.UUID == "":
		case !uuidPattern.MatchString(g.UUID):
			errs = append(errs, field.Invalid(gp.Child("uuid"), g.UUID, "must be GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx in lower-case hex"))
		default:
			if j, dup := uuids[g.UUID]; dup {
				// Two GPUs on one address derive the same UUID; the bus
				// error already says so.
				if !p.sameDerivedUUID(g, &p.Spec.GPUs[j]) {
					errs = append(errs, duplicate(gp.Child("uuid"), g.UUID, path.Index(j).Child("uuid")))
				}
			} else {
				uuids[g.UUID] = i
			}
		}
	}
	return append(errs, p.validateBusRanges(path, wellPlaced)...)
}

func (p *Profile) sameDerivedUUID(a, b *GPU) bool {
	addrA, okA := p.gpuAddress(a)
	addrB, okB := p.gpuAddress(b)
	return okA && okB && addrA == addrB && a.UUID == DeriveUUID(p.Spec.UUIDSeed, addrA)
}

// validatePlacement checks that the placement names existing parents and a
// free bus in range; it reports whether the GPU has a usable address.
func (p *Profile) validatePlacement(path *field.Path, g *GPU, buses map[[2]Hex]busOwner) (bool, field.ErrorList) {
	var errs field.ErrorList
	rci := slices.IndexFunc(p.Spec.RootComplexes, func(rc RootComplex) bool { return rc.Name == g.PCIe.RootComplex })
	switch {
	case g.PCIe.RootComplex == "":
		errs = append(errs, field.Required(path.Child("rootComplex"), ""))
	case rci < 0:
		errs = append(errs, withDetail(field.NotFound(path.Child("rootComplex"), g.PCIe.RootComplex),
			"no such name in spec.rootComplexes"))
	}
	var rc *RootComplex
	var sw *Switch
	if rci >= 0 {
		rc = &p.Spec.RootComplexes[rci]
		if g.PCIe.Switch != "" {
			swi := slices.IndexFunc(rc.Switches, func(s Switch) bool { return s.Name == g.PCIe.Switch })
			if swi < 0 {
				errs = append(errs, withDetail(field.NotFound(path.Child("switch"), g.PCIe.Switch),
					"no such switch in root complex "+rc.Name))
			} else {
				sw = &rc.Switches[swi]
			}
		}
	}
	bp := path.Child("bus")
	switch {
	case g.PCIe.Bus == 0:
		errs = append(errs, field.Required(bp, ""))
		return false, errs
	case g.PCIe.Bus > 0xff:
		errs = append(errs, field.Invalid(bp, g.PCIe.Bus, "must be 0x1..0xff"))
		return false, errs
	case rc == nil:
		return false, errs
	}
	if owner, taken := buses[[2]Hex{rc.Domain, g.PCIe.Bus}]; taken {
		errs = append(errs, withDetail(field.Duplicate(bp, g.PCIe.Bus),
			fmt.Sprintf("already the %s (%s)", owner.label, owner.path)))
		return true, errs
	}
	buses[[2]Hex{rc.Domain, g.PCIe.Bus}] = busOwner{bp, "bus of another GPU"}
	lo, hi := p.busRange(rci)
	if sw != nil {
		lo = sw.Bus + 2
	}
	if g.PCIe.Bus < lo || g.PCIe.Bus > hi {
		where := "root complex " + rc.Name
		if sw != nil {
			where = "switch " + rc.Name + "/" + sw.Name + ", whose downstream buses start after its internal bus"
		}
		errs = append(errs, field.Invalid(bp, g.PCIe.Bus, fmt.Sprintf("must lie in %s..%s, the bus range of %s", lo, hi, where)))
	}
	return true, errs
}

// validateBusRanges checks that the bus ranges of the devices on different
// root ports do not overlap, and that the ports fit the PCI device numbers.
// It only looks at the GPUs in wellPlaced, whose placement is otherwise valid.
func (p *Profile) validateBusRanges(path *field.Path, wellPlaced map[int]bool) field.ErrorList {
	var errs field.ErrorList
	for ri, rc := range p.Spec.RootComplexes {
		ranges := make(map[string][2]Hex, len(rc.Switches))
		downstream := map[string]int{}
		for _, sw := range rc.Switches {
			ranges[sw.Name] = [2]Hex{sw.Bus, sw.Bus + 1}
		}
		var direct []int
		for i := range p.Spec.GPUs {
			g := &p.Spec.GPUs[i]
			if !wellPlaced[i] || g.PCIe.RootComplex != rc.Name {
				continue
			}
			if g.PCIe.Switch == "" {
				direct = append(direct, i)
				continue
			}
			r := ranges[g.PCIe.Switch]
			bp := path.Index(i).Child("pcie", "bus")
			if downstream[g.PCIe.Switch]++; downstream[g.PCIe.Switch] > 32 {
				errs = append(errs, field.Invalid(path.Index(i).Child("pcie", "switch"), g.PCIe.Switch,
					"the switch has 32 downstream ports (device numbers 0..31), all in use"))
			}
			for _, other := range rc.Switches {
				if other.Name != g.PCIe.Switch && other.Bus >= r[0] && other.Bus <= g.PCIe.Bus {
					errs = append(errs, field.Invalid(bp, g.PCIe.Bus, fmt.Sprintf(
						"the bus range %s..%s of switch %s/%s would contain switch %s/%s (bus %s)",
						r[0], g.PCIe.Bus, rc.Name, g.PCIe.Switch, rc.Name, other.Name, other.Bus)))
				}
			}
			if g.PCIe.Bus > r[1] {
				ranges[g.PCIe.Switch] = [2]Hex{r[0], g.PCIe.Bus}
			}
		}
		for _, i := range direct {
			b := p.Spec.GPUs[i].PCIe.Bus
			for _, sw := range rc.Switches {
				if r := ranges[sw.Name]; b >= r[0] && b <= r[1] {
					errs = append(errs, field.Invalid(path.Index(i).Child("pcie", "bus"), b, fmt.Sprintf(
						"lies in the bus range %s..%s of switch %s/%s; place the device behind the switch or outside its range",
						r[0], r[1], rc.Name, sw.Name)))
				}
			}
		}
		if ports := len(rc.Switches) + len(direct); ports > 31 {
			errs = append(errs, withDetail(field.TooMany(field.NewPath("spec", "rootComplexes").Index(ri), ports, 31),
				"switches plus directly attached devices need one root port each (device numbers 1..31)"))
		}
	}
	return errs
}

func validateGPUModelFields(path *field.Path, g *GPU) field.ErrorList {
	if g.Model != "" {
		if _, ok := LookupModel(g.Model); !ok {
			return field.ErrorList{field.NotSupported(path.Child("model"), g.Model, Models())}
		}
	}
	var errs field.ErrorList
	switch {
	case g.Name == "":
		errs = append(errs, field.Required(path.Child("name"), ""))
	case len(g.Name) > MaxNameBytes:
		errs = append(errs, field.TooLong(path.Child("name"), g.Name, MaxNameBytes))
	case !utf8.ValidString(g.Name) || strings.ContainsFunc(g.Name, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		errs = append(errs, field.Invalid(path.Child("name"), g.Name, "must be UTF-8 without control characters"))
	}
	for _, id := range []struct {
		name string
		v    Hex
	}{{"vendorID", g.VendorID}, {"deviceID", g.DeviceID}, {"subsystemVendorID", g.SubsystemVendorID}, {"subsystemDeviceID", g.SubsystemDeviceID}} {
		switch {
		case id.v == 0:
			errs = append(errs, field.Required(path.Child(id.name), ""))
		case id.v >= 0xffff:
			errs = append(errs, field.Invalid(path.Child(id.name), id.v, "must be 0x1..0xfffe"))
		}
	}
	memory, merrs := positiveBytes(path.Child("memory"), g.Memory)
	errs = append(errs, merrs...)
	switch {
	case g.MemoryReserved == nil:
		errs = append(errs, field.Required(path.Child("memoryReserved"), ""))
	case !isWholeBytes(*g.MemoryReserved) || g.MemoryReserved.Sign() < 0:
		errs = append(errs, field.Invalid(path.Child("memoryReserved"), g.MemoryReserved.String(), "must be a whole, non-negative number of bytes"))
	case memory > 0 && g.MemoryReserved.Value() >= memory:
		errs = append(errs, field.Invalid(path.Child("memoryReserved"), g.MemoryReserved.String(), "must be less than memory"))
	}
	bar1, berrs := positiveBytes(path.Child("bar1Size"), g.BAR1Size)
	errs = append(errs, berrs...)
	if bar1 > 0 && (bits.OnesCount64(uint64(bar1)) != 1 || bar1 < 1<<20 || bar1 > maxBAR1) {
		errs = append(errs, field.Invalid(path.Child("bar1Size"), g.BAR1Size.String(), "must be a power of two from 1Mi to 1Ti"))
	}
	if g.Architecture == "" {
		errs = append(errs, field.Required(path.Child("architecture"), ""))
	} else if _, ok := g.Architecture.NVML(); !ok {
		errs = append(errs, field.NotSupported(path.Child("architecture"), g.Architecture, Architectures()))
	}
	if g.Brand == "" {
		errs = append(errs, field.Required(path.Child("brand"), ""))
	} else if _, ok := g.Brand.NVML(); !ok {
		errs = append(errs, field.NotSupported(path.Child("brand"), g.Brand, Brands()))
	}
	switch {
	case g.ComputeCapability == "":
		errs = append(errs, field.Required(path.Child("computeCapability"), ""))
	case !ccPattern.MatchString(g.ComputeCapability):
		errs = append(errs, field.Invalid(path.Child("computeCapability"), g.ComputeCapability, `must be MAJOR.MINOR, e.g. "9.0"`))
	}
	if g.MIGCapable == nil {
		errs = append(errs, field.Required(path.Child("migCapable"), ""))
	}
	switch {
	case g.VBIOSVersion == "":
		errs = append(errs, field.Required(path.Child("vbiosVersion"), ""))
	case !vbiosPattern.MatchString(g.VBIOSVersion):
		errs = append(errs, field.Invalid(path.Child("vbiosVersion"), g.VBIOSVersion, "must be five dot-separated upper-case hex bytes, e.g. 96.00.99.00.01"))
	}
	return errs
}

func positiveBytes(path *field.Path, q *resource.Quantity) (int64, field.ErrorList) {
	switch {
	case q == nil:
		return 0, field.ErrorList{field.Required(path, "")}
	case !isWholeBytes(*q) || q.Sign() <= 0:
		return 0, field.ErrorList{field.Invalid(path, q.String(), "must be a positive, whole number of bytes")}
	}
	return q.Value(), nil
}

// isWholeBytes reports whether q is an integer that fits int64.
func isWholeBytes(q resource.Quantity) bool {
	v, ok := q.AsInt64()
	return ok && resource.NewQuantity(v, resource.BinarySI).Cmp(q) == 0
}

func duplicate(path *field.Path, value any, first *field.Path) *field.Error {
	return withDetail(field.Duplicate(path, value), "also "+first.String())
}

func withDetail(e *field.Error, detail string) *field.Error {
	e.Detail = detail
	return e
}
