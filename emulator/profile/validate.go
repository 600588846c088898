package profile

import (
	"fmt"
	"math/bits"
	"regexp"
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
	buses := p.rootBuses()
	wellPlaced := map[*Placement]bool{}
	errs = append(errs, p.validateGPUs(spec.Child("gpus"), buses, wellPlaced)...)
	errs = append(errs, p.validateNICs(spec.Child("nics"), buses, wellPlaced)...)
	errs = append(errs, p.validateBusRanges(wellPlaced)...)
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

func (p *Profile) validateGPUs(path *field.Path, buses map[[2]Hex]busOwner, wellPlaced map[*Placement]bool) field.ErrorList {
	var errs field.ErrorList
	if len(p.Spec.GPUs) > MaxGPUs {
		errs = append(errs, field.TooMany(path, len(p.Spec.GPUs), MaxGPUs))
	}
	minors := map[int]int{}
	uuids := map[string]int{}
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
		placed, perrs := p.validatePlacement(gp.Child("pcie"), g.PCIe, "GPU", buses)
		errs = append(errs, perrs...)
		if placed && len(perrs) == 0 {
			wellPlaced[&g.PCIe] = true
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
	return errs
}

func (p *Profile) sameDerivedUUID(a, b *GPU) bool {
	addrA, okA := p.gpuAddress(a)
	addrB, okB := p.gpuAddress(b)
	return okA && okB && addrA == addrB && a.UUID == DeriveUUID(p.Spec.UUIDSeed, addrA)
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
