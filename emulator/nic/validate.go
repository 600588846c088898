package nic

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"drakit.dev/drakit/emulator/internal/fielderr"
	"drakit.dev/drakit/emulator/platform"
	"drakit.dev/drakit/internal/nichw"
)

var macPattern = regexp.MustCompile(`^[0-9a-f]{2}(:[0-9a-f]{2}){5}$`)

// Validate checks defaulted NICs (spec.nics, at path) and returns every
// problem with its field path: model fields, SR-IOV geometry, interface
// names and MACs (unique), MTU, link state and each NIC's placement through
// placer, which the caller shares with the other kinds of device. seed is
// spec.uuidSeed, to tell two NICs on one address (derived MACs alike) from
// a real duplicate.
func Validate(path *field.Path, nics []NIC, seed string, placer *platform.Placer) field.ErrorList {
	var errs field.ErrorList
	if len(nics) > MaxNICs {
		errs = append(errs, field.TooMany(path, len(nics), MaxNICs))
	}
	names := map[string]int{}
	macs := map[string]int{}
	for i := range nics {
		n := &nics[i]
		np := path.Index(i)
		errs = append(errs, validateModelFields(np, n)...)
		placed, perrs := placer.Place(np.Child("pcie"), &n.PCIe, "NIC")
		errs = append(errs, perrs...)
		ip := np.Child("interface")
		switch {
		case n.Interface == "" && placed && n.Driver != "":
			errs = append(errs, field.Required(ip, "defaults to the PF's systemd path name, e.g. enp12s0np0"))
		case n.Interface == "":
		case nichw.ValidInterfaceName(n.Interface) != "":
			errs = append(errs, field.Invalid(ip, n.Interface, nichw.ValidInterfaceName(n.Interface)))
		default:
			if j, dup := names[n.Interface]; dup {
				errs = append(errs, fielderr.Duplicate(ip, n.Interface, path.Index(j).Child("interface")))
			} else {
				names[n.Interface] = i
			}
		}
		mp := np.Child("mac")
		switch {
		case n.MAC == "" && placed:
			errs = append(errs, field.Required(mp, "defaults to an address derived from spec.uuidSeed"))
		case n.MAC == "":
		case !macPattern.MatchString(n.MAC):
			errs = append(errs, field.Invalid(mp, n.MAC, "must be six lower-case hex bytes separated by colons, e.g. 02:00:00:00:00:01"))
		case macFirstByte(n.MAC)&1 == 1 || n.MAC == "00:00:00:00:00:00":
			errs = append(errs, field.Invalid(mp, n.MAC, "must be a unicast address other than 00:00:00:00:00:00 (the first byte even)"))
		default:
			// Two NICs on one address derive the same MAC; the bus error
			// already says so.
			if j, dup := macs[n.MAC]; dup && !sameDerivedMAC(placer, seed, n, &nics[j]) {
				errs = append(errs, fielderr.Duplicate(mp, n.MAC, path.Index(j).Child("mac")))
			} else if !dup {
				macs[n.MAC] = i
			}
		}
		if n.MTU < MinMTU || n.MTU > MaxMTU {
			errs = append(errs, field.Invalid(np.Child("mtu"), n.MTU, fmt.Sprintf("must be %d..%d", MinMTU, MaxMTU)))
		}
		if n.Link != LinkUp && n.Link != LinkDown {
			errs = append(errs, field.NotSupported(np.Child("link"), n.Link, []string{LinkUp, LinkDown}))
		}
		if placed && len(perrs) == 0 && n.TotalVFs != nil && *n.TotalVFs > 0 && *n.TotalVFs <= 255 && n.VFOffset != nil && n.VFStride != nil &&
			*n.VFOffset > 0 && *n.VFStride > 0 {
			addr, _ := placer.Address(n.PCIe)
			last, ok := nichw.VFAddress(nichw.Address(addr), *n.VFOffset, *n.VFStride, *n.TotalVFs-1)
			if !ok || last.Bus != addr.Bus {
				errs = append(errs, field.Invalid(np.Child("totalVFs"), *n.TotalVFs, fmt.Sprintf(
					"VF %d would sit past the PF's bus %s (vfOffset %d + %d × vfStride %d > 255); the emulator keeps every VF on the PF's bus",
					*n.TotalVFs-1, n.PCIe.Bus, *n.VFOffset, *n.TotalVFs-1, *n.VFStride)))
			}
		}
	}
	return errs
}

func macFirstByte(mac string) uint64 {
	b, _ := strconv.ParseUint(mac[:2], 16, 8)
	return b
}

func sameDerivedMAC(placer *platform.Placer, seed string, a, b *NIC) bool {
	addrA, okA := placer.Address(a.PCIe)
	addrB, okB := placer.Address(b.PCIe)
	return okA && okB && addrA == addrB && a.MAC == DeriveMAC(seed, addrA)
}

func validateModelFields(path *field.Path, n *NIC) field.ErrorList {
	if n.Model != "" {
		if _, ok := LookupModel(n.Model); !ok {
			return field.ErrorList{field.NotSupported(path.Child("model"), n.Model, Models())}
		}
	}
	var errs field.ErrorList
	errs = append(errs, platform.ValidatePCIIDs(path, []platform.PCIID{{Field: "vendorID", Value: n.VendorID}, {Field: "deviceID", Value: n.DeviceID},
		{Field: "subsystemVendorID", Value: n.SubsystemVendorID}, {Field: "subsystemDeviceID", Value: n.SubsystemDeviceID}})...)
	drivers := make([]string, 0, len(nichw.Drivers))
	for name := range nichw.Drivers {
		drivers = append(drivers, name)
	}
	slices.Sort(drivers)
	d, known := nichw.LookupDriver(n.Driver)
	switch {
	case n.Driver == "":
		errs = append(errs, field.Required(path.Child("driver"), ""))
	case !known:
		errs = append(errs, field.NotSupported(path.Child("driver"), n.Driver, drivers))
	}
	switch {
	case n.RDMA == nil:
		errs = append(errs, field.Required(path.Child("rdma"), ""))
	case *n.RDMA && known && d.RDMAPrefix == "":
		errs = append(errs, field.Invalid(path.Child("rdma"), true, "the emulator models RDMA devices of mlx5_core only"))
	}
	if n.SpeedMbps <= 0 {
		errs = append(errs, field.Required(path.Child("speedMbps"), "the link speed in Mb/s, e.g. 400000"))
	}
	switch {
	case n.TotalVFs == nil:
		errs = append(errs, field.Required(path.Child("totalVFs"), "0 for a PF without SR-IOV"))
	case *n.TotalVFs < 0 || *n.TotalVFs > 255:
		errs = append(errs, field.Invalid(path.Child("totalVFs"), *n.TotalVFs, "must be 0..255 (the VFs sit on the PF's bus)"))
	case *n.TotalVFs > 0:
		errs = append(errs, platform.ValidatePCIIDs(path, []platform.PCIID{{Field: "vfDeviceID", Value: n.VFDeviceID}})...)
		for _, f := range []struct {
			name string
			v    *int
		}{{"vfOffset", n.VFOffset}, {"vfStride", n.VFStride}} {
			switch {
			case f.v == nil:
				errs = append(errs, field.Required(path.Child(f.name), "required with totalVFs"))
			case *f.v < 1 || *f.v > 255:
				errs = append(errs, field.Invalid(path.Child(f.name), *f.v, "must be 1..255"))
			}
		}
	}
	return errs
}
