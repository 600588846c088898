package profile

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// endpoint is a PCI endpoint of the profile, a GPU or a NIC, for the checks
// that treat them alike: placement, buses, bus ranges.
type endpoint struct {
	path *field.Path // spec.gpus[i] or spec.nics[i]
	pcie *Placement
	kind string // "GPU" or "NIC"
}

// endpoints lists the GPUs, then the NICs.
func (p *Profile) endpoints() []endpoint {
	var out []endpoint
	for i := range p.Spec.GPUs {
		out = append(out, endpoint{field.NewPath("spec", "gpus").Index(i), &p.Spec.GPUs[i].PCIe, "GPU"})
	}
	for i := range p.Spec.NICs {
		out = append(out, endpoint{field.NewPath("spec", "nics").Index(i), &p.Spec.NICs[i].PCIe, "NIC"})
	}
	return out
}

// placementAddress returns the address of an endpoint placed at pl when
// its placement names an existing root complex and a bus.
func (p *Profile) placementAddress(pl Placement) (Address, bool) {
	for i := range p.Spec.RootComplexes {
		rc := &p.Spec.RootComplexes[i]
		if rc.Name == pl.RootComplex && pl.Bus != 0 && pl.Bus <= 0xff && rc.Domain <= 0xffff {
			return Address{Domain: int(rc.Domain), Bus: int(pl.Bus)}, true
		}
	}
	return Address{}, false
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

// rootBuses returns the buses the root complexes and switches own: every bus
// of a domain has one owner, a root bus, a switch's upstream and internal
// bus, or a device.
func (p *Profile) rootBuses() map[[2]Hex]busOwner {
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
	return buses
}

// validatePlacement checks that the placement of an endpoint of the given
// kind names existing parents and a free bus in range; it reports whether
// the endpoint has a usable address.
func (p *Profile) validatePlacement(path *field.Path, pl Placement, kind string, buses map[[2]Hex]busOwner) (bool, field.ErrorList) {
	var errs field.ErrorList
	rci := slices.IndexFunc(p.Spec.RootComplexes, func(rc RootComplex) bool { return rc.Name == pl.RootComplex })
	switch {
	case pl.RootComplex == "":
		errs = append(errs, field.Required(path.Child("rootComplex"), ""))
	case rci < 0:
		errs = append(errs, withDetail(field.NotFound(path.Child("rootComplex"), pl.RootComplex),
			"no such name in spec.rootComplexes"))
	}
	var rc *RootComplex
	var sw *Switch
	if rci >= 0 {
		rc = &p.Spec.RootComplexes[rci]
		if pl.Switch != "" {
			swi := slices.IndexFunc(rc.Switches, func(s Switch) bool { return s.Name == pl.Switch })
			if swi < 0 {
				errs = append(errs, withDetail(field.NotFound(path.Child("switch"), pl.Switch),
					"no such switch in root complex "+rc.Name))
			} else {
				sw = &rc.Switches[swi]
			}
		}
	}
	bp := path.Child("bus")
	switch {
	case pl.Bus == 0:
		errs = append(errs, field.Required(bp, ""))
		return false, errs
	case pl.Bus > 0xff:
		errs = append(errs, field.Invalid(bp, pl.Bus, "must be 0x1..0xff"))
		return false, errs
	case rc == nil:
		return false, errs
	}
	if owner, taken := buses[[2]Hex{rc.Domain, pl.Bus}]; taken {
		errs = append(errs, withDetail(field.Duplicate(bp, pl.Bus),
			fmt.Sprintf("already the %s (%s)", owner.label, owner.path)))
		return true, errs
	}
	buses[[2]Hex{rc.Domain, pl.Bus}] = busOwner{bp, "bus of another " + kind}
	lo, hi := p.busRange(rci)
	if sw != nil {
		lo = sw.Bus + 2
	}
	if pl.Bus < lo || pl.Bus > hi {
		where := "root complex " + rc.Name
		if sw != nil {
			where = "switch " + rc.Name + "/" + sw.Name + ", whose downstream buses start after its internal bus"
		}
		errs = append(errs, field.Invalid(bp, pl.Bus, fmt.Sprintf("must lie in %s..%s, the bus range of %s", lo, hi, where)))
	}
	return true, errs
}

// validateBusRanges checks that the bus ranges of the devices on different
// root ports do not overlap, and that the ports fit the PCI device numbers.
// It only looks at the endpoints in wellPlaced, whose placement is
// otherwise valid, GPUs and NICs alike.
func (p *Profile) validateBusRanges(wellPlaced map[*Placement]bool) field.ErrorList {
	var errs field.ErrorList
	eps := p.endpoints()
	for ri, rc := range p.Spec.RootComplexes {
		ranges := make(map[string][2]Hex, len(rc.Switches))
		downstream := map[string]int{}
		for _, sw := range rc.Switches {
			ranges[sw.Name] = [2]Hex{sw.Bus, sw.Bus + 1}
		}
		var direct []endpoint
		for _, ep := range eps {
			pl := ep.pcie
			if !wellPlaced[pl] || pl.RootComplex != rc.Name {
				continue
			}
			if pl.Switch == "" {
				direct = append(direct, ep)
				continue
			}
			r := ranges[pl.Switch]
			bp := ep.path.Child("pcie", "bus")
			if downstream[pl.Switch]++; downstream[pl.Switch] > 32 {
				errs = append(errs, field.Invalid(ep.path.Child("pcie", "switch"), pl.Switch,
					"the switch has 32 downstream ports (device numbers 0..31), all in use"))
			}
			for _, other := range rc.Switches {
				if other.Name != pl.Switch && other.Bus >= r[0] && other.Bus <= pl.Bus {
					errs = append(errs, field.Invalid(bp, pl.Bus, fmt.Sprintf(
						"the bus range %s..%s of switch %s/%s would contain switch %s/%s (bus %s)",
						r[0], pl.Bus, rc.Name, pl.Switch, rc.Name, other.Name, other.Bus)))
				}
			}
			if pl.Bus > r[1] {
				ranges[pl.Switch] = [2]Hex{r[0], pl.Bus}
			}
		}
		for _, ep := range direct {
			b := ep.pcie.Bus
			for _, sw := range rc.Switches {
				if r := ranges[sw.Name]; b >= r[0] && b <= r[1] {
					errs = append(errs, field.Invalid(ep.path.Child("pcie", "bus"), b, fmt.Sprintf(
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
