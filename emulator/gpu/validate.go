package gpu

import (
	"math/bits"
	"regexp"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"drakit.dev/drakit/emulator/internal/fielderr"
	"drakit.dev/drakit/emulator/platform"
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
	ccPattern    = regexp.MustCompile(`^[0-9]{1,2}\.[0-9]$`)
	vbiosPattern = regexp.MustCompile(`^[0-9A-F]{2}(\.[0-9A-F]{2}){4}$`)
	uuidPattern  = regexp.MustCompile(`^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
)

// Validate checks defaulted GPUs (spec.gpus, at path) and returns every
// problem with its field path: model fields, MIG configuration, minors and
// UUIDs (unique), and each GPU's placement through placer, which the
// caller shares with the other kinds of device. seed is spec.uuidSeed, to
// tell two GPUs on one address (derived UUIDs alike) from a real
// duplicate.
func Validate(path *field.Path, gpus []GPU, seed string, placer *platform.Placer) field.ErrorList {
	var errs field.ErrorList
	if len(gpus) > MaxGPUs {
		errs = append(errs, field.TooMany(path, len(gpus), MaxGPUs))
	}
	minors := map[int]int{}
	uuids := map[string]int{}
	for i := range gpus {
		g := &gpus[i]
		gp := path.Index(i)
		errs = append(errs, validateModelFields(gp, g)...)
		errs = append(errs, validateMIG(gp.Child("mig"), g)...)
		switch {
		case g.Minor == nil:
			errs = append(errs, field.Required(gp.Child("minor"), ""))
		case *g.Minor < 0 || *g.Minor > MaxMinor:
			errs = append(errs, field.Invalid(gp.Child("minor"), *g.Minor, "must be 0..254 (255 is /dev/nvidiactl)"))
		default:
			if j, dup := minors[*g.Minor]; dup {
				errs = append(errs, fielderr.Duplicate(gp.Child("minor"), *g.Minor, path.Index(j).Child("minor")))
			} else {
				minors[*g.Minor] = i
			}
		}
		placed, perrs := placer.Place(gp.Child("pcie"), &g.PCIe, "GPU")
		errs = append(errs, perrs...)
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
				if !sameDerivedUUID(placer, seed, g, &gpus[j]) {
					errs = append(errs, fielderr.Duplicate(gp.Child("uuid"), g.UUID, path.Index(j).Child("uuid")))
				}
			} else {
				uuids[g.UUID] = i
			}
		}
	}
	return errs
}

func sameDerivedUUID(placer *platform.Placer, seed string, a, b *GPU) bool {
	addrA, okA := placer.Address(a.PCIe)
	addrB, okB := placer.Address(b.PCIe)
	return okA && okB && addrA == addrB && a.UUID == DeriveUUID(seed, addrA)
}

func validateModelFields(path *field.Path, g *GPU) field.ErrorList {
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
	errs = append(errs, platform.ValidatePCIIDs(path, []platform.PCIID{{Field: "vendorID", Value: g.VendorID}, {Field: "deviceID", Value: g.DeviceID},
		{Field: "subsystemVendorID", Value: g.SubsystemVendorID}, {Field: "subsystemDeviceID", Value: g.SubsystemDeviceID}})...)
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
