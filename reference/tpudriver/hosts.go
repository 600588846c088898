package tpudriver

import (
	resourceapi "k8s.io/api/resource/v1"

	"drakit.dev/drakit/internal/tpuhw"
)

// sliceInfos assembles the multi-host slices the node pools describe:
// geometry and generation from the chips' topology, chipBounds and
// generation attributes, hosts by worker id. A slice whose chips disagree
// keeps the first geometry seen.
func sliceInfos(driver string, list []resourceapi.ResourceSlice) map[string]*sliceInfo {
	out := map[string]*sliceInfo{}
	for _, s := range list {
		if s.Spec.NodeName == nil || *s.Spec.NodeName == "" {
			continue
		}
		for _, d := range s.Spec.Devices {
			name, _ := stringAttr(driver, d, AttrSlice)
			typ, _ := stringAttr(driver, d, AttrType)
			topo, _ := stringAttr(driver, d, AttrTopology)
			cb, _ := stringAttr(driver, d, AttrChipBounds)
			gen, _ := stringAttr(driver, d, AttrGeneration)
			worker, ok := intAttr(driver, d, AttrWorkerID)
			if name == "" || typ != TypeChip || !ok {
				continue
			}
			info, seen := out[name]
			if !seen {
				t, err := tpuhw.ParseBounds(topo)
				if err != nil {
					continue
				}
				c, err := tpuhw.ParseBounds(cb)
				if err != nil {
					continue
				}
				g, err := tpuhw.NewSlice(t, c)
				if err != nil {
					continue
				}
				info = &sliceInfo{name: name, generation: gen, geometry: g, nodes: map[int]string{}}
				out[name] = info
			}
			if int(worker) < info.geometry.Hosts() {
				info.nodes[int(worker)] = *s.Spec.NodeName
			}
		}
	}
	return out
}

func stringAttr(driver string, d resourceapi.Device, name string) (string, bool) {
	a, ok := d.Attributes[resourceapi.QualifiedName(driver+"/"+name)]
	if !ok || a.StringValue == nil {
		return "", false
	}
	return *a.StringValue, true
}

func intAttr(driver string, d resourceapi.Device, name string) (int64, bool) {
	a, ok := d.Attributes[resourceapi.QualifiedName(driver+"/"+name)]
	if !ok || a.IntValue == nil {
		return 0, false
	}
	return *a.IntValue, true
}
