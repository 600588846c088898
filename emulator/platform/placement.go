package platform

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"drakit.dev/drakit/emulator/internal/fielderr"
)

// Endpoint is a PCI endpoint of the profile, a GPU or a NIC, for the checks
// that treat every kind alike: placement, buses, bus ranges.
type Endpoint struct {
	// Path is the device's field path, spec.gpus[i] or spec.nics[i].
	Path *field.Path
	// PCIe is the device's placement; Placer.Place records it by pointer.
	PCIe *Placement
}

// PlacementAddress returns the address of an endpoint placed at pl when
// its placement names an existing root complex and a bus.
func PlacementAddress(rcs []RootComplex, pl Placement) (Address, bool) {
	for i := range rcs {
		rc := &rcs[i]
		if rc.Name == pl.RootComplex && pl.Bus != 0 && pl.Bus <= 0xff && rc.Domain <= 0xffff {
			return Address{Domain: int(rc.Domain), Bus: int(pl.Bus)}, true
		}
	}
	return Address{}, false
}

// busRange returns the buses available below root complex i: from its root
// bus + 1 up to the bus before the next root complex of the same domain.
func busRange(rcs []RootComplex, i int) (Hex, Hex) {
	rc := rcs[i]
	hi := Hex(0xff)
	for j, other := range rcs {
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

// Placer checks the placements of one profile's endpoints, every kind of
// device in turn, against its root complexes: it remembers which bus of a
// domain each root bus, switch and endpoint owns, and which endpoints are
// well placed for ValidateBusRanges. Use one Placer for one validation.
type Placer struct {
	rcs        []RootComplex
	buses      map[[2]Hex]busOwner
	wellPlaced map[*Placement]bool
}

// NewPlacer returns a Placer over the root complexes rcs (spec.rootComplexes)
// whose root buses and switch buses are taken.
func NewPlacer(rcs []RootComplex) *Placer {
	buses := map[[2]Hex]busOwner{}
	path := field.NewPath("spec", "rootComplexes")
	for i, rc := range rcs {
		for j, sw := range rc.Switches {
			sp := path.Index(i).Child("switches").Index(j).Child("bus")
			buses[[2]Hex{rc.Domain, sw.Bus}] = busOwner{sp, "upstream port of switch " + rc.Name + "/" + sw.Name}
			buses[[2]Hex{rc.Domain, sw.Bus + 1}] = busOwner{sp, "internal bus of switch " + rc.Name + "/" + sw.Name}
		}
		buses[[2]Hex{rc.Domain, rc.Bus}] = busOwner{path.Index(i).Child("bus"), "root bus of " + rc.Name}
	}
	return &Placer{rcs: rcs, buses: buses, wellPlaced: map[*Placement]bool{}}
}

// Address returns the address of an endpoint placed at pl (PlacementAddress).
func (p *Placer) Address(pl Placement) (Address, bool) { return PlacementAddress(p.rcs, pl) }

// Place checks that the placement of an endpoint of the given kind ("GPU",
// "NIC") names existing parents and a free bus in range, and takes the bus;
// it reports whether the endpoint has a usable address. An endpoint placed
// without errors counts for ValidateBusRanges.
func (p *Placer) Place(path *field.Path, pcie *Placement, kind string) (bool, field.ErrorList) {
	placed, errs := p.place(path, *pcie, kind)
	if placed && len(errs) == 0 {
		p.wellPlaced[pcie] = true
	}
	return placed, errs
}

func (p *Placer) place(path *field.Path, pl Placement, kind string) (bool, field.ErrorList) {
	var errs field.ErrorList
	rci := slices.IndexFunc(p.rcs, func(rc RootComplex) bool { return rc.Name == pl.RootComplex })
	switch {
	case pl.RootComplex == "":
		errs = append(errs, field.Required(path.Child("rootComplex"), ""))
	case rci < 0:
		errs = append(errs, fielderr.WithDetail(field.NotFound(path.Child("rootComplex"), pl.RootComplex),
			"no such name in spec.rootComplexes"))
	}
	var rc *RootComplex
	var sw *Switch
	if rci >= 0 {
		rc = &p.rcs[rci]
		if pl.Switch != "" {
			swi := slices.IndexFunc(rc.Switches, func(s Switch) bool { return s.Name == pl.Switch })
			if swi < 0 {
				errs = append(errs, fielderr.WithDetail(field.NotFound(path.Child("switch"), pl.Switch),
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
	if owner, taken := p.buses[[2]Hex{rc.Domain, pl.Bus}]; taken {
		errs = append(errs, fielderr.WithDetail(field.Duplicate(bp, pl.Bus),
			fmt.Sprintf("already the %s (%s)", owner.label, owner.path)))
		return true, errs
	}
	p.buses[[2]Hex{rc.Domain, pl.Bus}] = busOwner{bp, "bus of another " + kind}
	lo, hi := busRange(p.rcs, rci)
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

// ValidateBusRanges checks that the bus ranges of the devices on different
// root ports do not overlap, and that the ports fit the PCI device numbers.
// eps are every endpoint of the profile, GPUs then NICs; it only looks at
// those Place found well placed.
func (p *Placer) ValidateBusRanges(eps []Endpoint) field.ErrorList {
	var errs field.ErrorList
	for ri, rc := range p.rcs {
		ranges := make(map[string][2]Hex, len(rc.Switches))
		downstream := map[string]int{}
		for _, sw := range rc.Switches {
			ranges[sw.Name] = [2]Hex{sw.Bus, sw.Bus + 1}
		}
		var direct []Endpoint
		for _, ep := range eps {
			pl := ep.PCIe
			if !p.wellPlaced[pl] || pl.RootComplex != rc.Name {
				continue
			}
			if pl.Switch == "" {
				direct = append(direct, ep)
				continue
			}
			r := ranges[pl.Switch]
			bp := ep.Path.Child("pcie", "bus")
			if downstream[pl.Switch]++; downstream[pl.Switch] > 32 {
				errs = append(errs, field.Invalid(ep.Path.Child("pcie", "switch"), pl.Switch,
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
			b := ep.PCIe.Bus
			for _, sw := range rc.Switches {
				if r := ranges[sw.Name]; b >= r[0] && b <= r[1] {
					errs = append(errs, field.Invalid(ep.Path.Child("pcie", "bus"), b, fmt.Sprintf(
						"lies in the bus range %s..%s of switch %s/%s; place the device behind the switch or outside its range",
						r[0], r[1], rc.Name, sw.Name)))
				}
			}
		}
		if ports := len(rc.Switches) + len(direct); ports > 31 {
			errs = append(errs, fielderr.WithDetail(field.TooMany(field.NewPath("spec", "rootComplexes").Index(ri), ports, 31),
				"switches plus directly attached devices need one root port each (device numbers 1..31)"))
		}
	}
	return errs
}
