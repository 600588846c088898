package tpu

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"drakit.dev/drakit/emulator/internal/fielderr"
	"drakit.dev/drakit/emulator/platform"
	"drakit.dev/drakit/internal/tpuhw"
)

// Validate checks a defaulted spec.tpu (at path; nil is no TPU) and returns
// every problem with its field path: the generation, the bounds, that the
// slice topology is a whole number of hosts of chipBounds, the worker id
// against the number of hosts, the chip count against chipBounds and each
// chip's placement through placer, which the caller shares with the other
// kinds of device.
func Validate(path *field.Path, h *Host, placer *platform.Placer) field.ErrorList {
	if h == nil {
		return nil
	}
	var errs field.ErrorList
	gp := path.Child("generation")
	if h.Generation == "" {
		errs = append(errs, field.Required(gp, ""))
	} else if _, ok := tpuhw.LookupGeneration(h.Generation); !ok {
		errs = append(errs, field.NotSupported(gp, h.Generation, tpuhw.GenerationNames()))
	}
	chipBounds, cerrs := bounds(path.Child("chipBounds"), h.ChipBounds)
	errs = append(errs, cerrs...)
	if len(cerrs) == 0 && len(h.Chips) != chipBounds.Chips() {
		errs = append(errs, field.Invalid(path.Child("chips"), len(h.Chips),
			fmt.Sprintf("must list %d chips, one per chip of chipBounds %s (default: placed on the root complexes)", chipBounds.Chips(), chipBounds)))
	}
	for i := range h.Chips {
		_, perrs := placer.Place(path.Child("chips").Index(i).Child("pcie"), &h.Chips[i].PCIe, "TPU chip")
		errs = append(errs, perrs...)
	}
	if s := h.Slice; s != nil {
		sp := path.Child("slice")
		errs = append(errs, fielderr.ValidateName(sp.Child("name"), s.Name)...)
		topo, terrs := bounds(sp.Child("topology"), s.Topology)
		errs = append(errs, terrs...)
		switch {
		case len(terrs) > 0 || len(cerrs) > 0:
		case !chipBounds.Divides(topo):
			errs = append(errs, field.Invalid(sp.Child("topology"), s.Topology,
				fmt.Sprintf("must be a whole number of hosts of chipBounds %s in every dimension", chipBounds)))
		default:
			sl, _ := tpuhw.NewSlice(topo, chipBounds)
			if s.WorkerID < 0 || s.WorkerID >= sl.Hosts() {
				errs = append(errs, field.Invalid(sp.Child("workerID"), s.WorkerID,
					fmt.Sprintf("must be 0..%d: the slice has %d hosts (%s of %s)", sl.Hosts()-1, sl.Hosts(), sl.HostBounds(), chipBounds)))
			}
		}
	}
	return errs
}

func bounds(path *field.Path, s string) (tpuhw.Bounds, field.ErrorList) {
	if s == "" {
		return tpuhw.Bounds{}, field.ErrorList{field.Required(path, "an XxYxZ box of chips, e.g. 2x2x1")}
	}
	b, err := tpuhw.ParseBounds(s)
	if err != nil {
		return tpuhw.Bounds{}, field.ErrorList{field.Invalid(path, s, err.Error())}
	}
	return b, nil
}

// Endpoints lists the chips as PCI endpoints for
// platform.Placer.ValidateBusRanges.
func Endpoints(path *field.Path, h *Host) []platform.Endpoint {
	if h == nil {
		return nil
	}
	var out []platform.Endpoint
	for i := range h.Chips {
		out = append(out, platform.Endpoint{Path: path.Child("chips").Index(i), PCIe: &h.Chips[i].PCIe})
	}
	return out
}

// Default places the chips when spec.tpu lists none: chipBounds' chips
// spread evenly over rcs in order (chip i on rcs[i*len(rcs)/n]), each on
// the bus after the highest bus lastBus reports for its root complex, which
// Default then advances. It leaves a host whose chipBounds does not parse,
// or a node without root complexes, for Validate to report.
func Default(h *Host, rcs []platform.RootComplex, lastBus map[string]int) {
	if h == nil || len(h.Chips) > 0 || len(rcs) == 0 {
		return
	}
	b, err := tpuhw.ParseBounds(h.ChipBounds)
	if err != nil {
		return
	}
	n := b.Chips()
	for i := range n {
		rc := rcs[i*len(rcs)/n]
		bus := lastBus[rc.Name] + 1
		lastBus[rc.Name] = bus
		h.Chips = append(h.Chips, Chip{PCIe: platform.Placement{RootComplex: rc.Name, Bus: platform.Hex(bus)}})
	}
}
