package simulate

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"k8s.io/utils/ptr"

	"drakit.dev/drakit/emulator/gpu"
	"drakit.dev/drakit/emulator/nvlink"
	"drakit.dev/drakit/emulator/nvmlstate"
	"drakit.dev/drakit/emulator/platform"
	"drakit.dev/drakit/emulator/profile"
	"drakit.dev/drakit/reference/driver"
)

// ProfileInventory returns the inventory that NVML discovery reports on a
// node rendered from p (a defaulted profile; it is validated here), without
// rendering it or loading NVML: the GPUs in PCI address order with the
// emulator's names, memory, PCIe roots and NUMA nodes, and for GPUs in MIG
// mode the model's GI profiles (named as go-nvlib names them) and the static
// layout's MIG devices with the UUIDs and capability minors the emulator
// gives them.
func ProfileInventory(p *profile.Profile) (*driver.Inventory, error) {
	topo, err := p.Topology()
	if err != nil {
		return nil, fmt.Errorf("resolve profile %s: %w", p.Metadata.Name, err)
	}
	inv := &driver.Inventory{DriverVersion: p.Spec.Driver.DriverVersion, CUDADriverVersion: p.Spec.Driver.CUDADriverVersion}
	for i, pg := range topo.GPUs {
		g, err := profileGPU(i, pg)
		if err != nil {
			return nil, fmt.Errorf("profile %s: GPU %s: %w", p.Metadata.Name, pg.Function.Address, err)
		}
		g.Fabric = profileFabric(p)
		inv.GPUs = append(inv.GPUs, g)
	}
	return inv, nil
}

// profileFabric is the fabric info NVML reports for every GPU of p: its
// NVLink domain once registration completed (state "completed", or empty,
// its default), else none.
func profileFabric(p *profile.Profile) *driver.Fabric {
	nv := p.Spec.NVLink
	if nv == nil || nv.Domain == nil || (nv.Domain.State != "" && nv.Domain.State != nvlink.StateCompleted) {
		return nil
	}
	return &driver.Fabric{ClusterUUID: nv.Domain.ClusterUUID, CliqueID: nv.Domain.CliqueID}
}

func profileGPU(index int, pg profile.PlacedGPU) (driver.GPU, error) {
	pgpu := pg.GPU
	arch, ok := pgpu.Architecture.NVML()
	if !ok {
		return driver.GPU{}, fmt.Errorf("architecture %q has no NVML value", pgpu.Architecture)
	}
	archName, err := driver.ArchitectureName(nvml.DeviceArchitecture(arch))
	if err != nil {
		return driver.GPU{}, err
	}
	brand, ok := pgpu.Brand.NVML()
	if !ok {
		return driver.GPU{}, fmt.Errorf("brand %q has no NVML value", pgpu.Brand)
	}
	brandName, err := driver.BrandName(nvml.BrandType(brand))
	if err != nil {
		return driver.GPU{}, err
	}
	ccMajor, ccMinor, err := computeCapability(pgpu.ComputeCapability)
	if err != nil {
		return driver.GPU{}, err
	}
	g := driver.GPU{
		Index:        index,
		Minor:        *pgpu.Minor,
		UUID:         pgpu.UUID,
		ProductName:  pgpu.Name,
		Architecture: archName,
		Brand:        brandName,
		CCMajor:      ccMajor,
		CCMinor:      ccMinor,
		MemoryBytes:  uint64(pgpu.Memory.Value()),
		PCIBusID:     pg.Function.Address.String(),
		PCIeRoot:     pg.HostBridge.Name(),
		NUMANode:     pg.HostBridge.NUMANode,
	}
	if g.MIG, err = profileMIG(pgpu, &g); err != nil {
		return driver.GPU{}, err
	}
	return g, nil
}

func computeCapability(s string) (major, minor int, err error) {
	ma, mi, ok := strings.Cut(s, ".")
	if major, err = strconv.Atoi(ma); ok && err == nil {
		minor, err = strconv.Atoi(mi)
	}
	if !ok || err != nil {
		return 0, 0, fmt.Errorf("compute capability %q is not MAJOR.MINOR", s)
	}
	return major, minor, nil
}

// profileMIG is the MIG information of a GPU whose MIG mode is enabled, nil
// for any other GPU.
func profileMIG(pgpu *gpu.GPU, g *driver.GPU) (*driver.MIGInfo, error) {
	if pgpu.MIG == nil || pgpu.MIG.Mode != gpu.MIGEnabled {
		return nil, nil
	}
	table, ok := gpu.LookupMIGTable(pgpu.Model)
	if !ok {
		return nil, fmt.Errorf("model %q has no MIG table", pgpu.Model)
	}
	m := &driver.MIGInfo{}
	names := map[int]string{} // GI profile ID → name
	for _, p := range table.GIProfiles {
		info := nvml.GpuInstanceProfileInfo{
			Id: uint32(p.ID), SliceCount: uint32(p.Slices), InstanceCount: uint32(p.Instances),
			MultiprocessorCount: uint32(p.SMs), CopyEngineCount: uint32(p.CopyEngines), DecoderCount: uint32(p.Decoders),
			EncoderCount: uint32(p.Encoders), JpegCount: uint32(p.JPEGs), OfaCount: uint32(p.OFAs), MemorySizeMB: p.MemoryMB,
		}
		mp := driver.MIGProfile{Index: p.Index, Info: info, Name: driver.MIGProfileName(p.Index, info, g.MemoryBytes)}
		for _, start := range p.Starts {
			mp.Placements = append(mp.Placements, nvml.GpuInstancePlacement{Start: uint32(start), Size: uint32(p.MemorySlices)})
		}
		names[p.ID] = mp.Name
		m.Profiles = append(m.Profiles, mp)
	}
	gis, err := pgpu.MIGLayout()
	if err != nil {
		return nil, err
	}
	for _, gi := range gis {
		for _, ci := range gi.ComputeInstances {
			name := names[gi.Profile.ID]
			if ci.Profile.Slices != gi.Profile.Slices {
				name = fmt.Sprintf("%dc.%s", ci.Profile.Slices, name)
			}
			m.Instances = append(m.Instances, driver.MIGInstance{
				GI: gi.ID, CI: ci.ID, ProfileID: gi.Profile.ID, Start: gi.Start, Size: gi.Profile.MemorySlices,
				Name: name, UUID: gpu.DeriveMIGUUID(g.UUID, gi.ID, ci.ID), MemoryBytes: gi.Profile.MemoryMB << 20,
				GICapMinor: nvmlstate.GIAccessMinor(g.Minor, gi.ID), CICapMinor: nvmlstate.CIAccessMinor(g.Minor, gi.ID, ci.ID),
			})
		}
	}
	return m, nil
}

// ReplicateProfileGPUs returns a copy of p with exactly gpus GPUs: p's GPUs
// repeated in spec order, the last copy cut short. Copy k (k ≥ 1) of the
// node's PCIe tree sits in PCI domain domain+k·D, D being one more than p's
// highest domain, with its root complexes renamed <name>-copy<k>; its GPUs
// get minor+k·M, M being one more than p's highest minor, and UUIDs derived
// from their new addresses. NUMA nodes are shared. p must be defaulted; the
// copy is defaulted and validated.
func ReplicateProfileGPUs(p *profile.Profile, gpus int) (*profile.Profile, error) {
	if gpus < 1 {
		return nil, fmt.Errorf("replicate profile %s: %d GPUs, want at least 1", p.Metadata.Name, gpus)
	}
	if len(p.Spec.GPUs) == 0 {
		return nil, fmt.Errorf("replicate profile %s: it has no GPUs", p.Metadata.Name)
	}
	out, err := cloneJSON(p)
	if err != nil {
		return nil, fmt.Errorf("replicate profile %s: %w", p.Metadata.Name, err)
	}
	domains, minors := platform.Hex(0), 0
	for _, rc := range p.Spec.RootComplexes {
		domains = max(domains, rc.Domain+1)
	}
	for _, g := range p.Spec.GPUs {
		if g.Minor != nil {
			minors = max(minors, *g.Minor+1)
		}
	}
	out.Spec.GPUs = nil
	for k := 0; len(out.Spec.GPUs) < gpus; k++ {
		suffix := fmt.Sprintf("-copy%d", k)
		if k == 0 {
			suffix = ""
		} else {
			for _, rc := range p.Spec.RootComplexes {
				c, err := cloneJSON(&rc)
				if err != nil {
					return nil, fmt.Errorf("replicate profile %s: %w", p.Metadata.Name, err)
				}
				c.Name += suffix
				c.Domain += platform.Hex(k) * domains
				out.Spec.RootComplexes = append(out.Spec.RootComplexes, *c)
			}
		}
		for _, g := range p.Spec.GPUs {
			if len(out.Spec.GPUs) == gpus {
				break
			}
			c, err := cloneJSON(&g)
			if err != nil {
				return nil, fmt.Errorf("replicate profile %s: %w", p.Metadata.Name, err)
			}
			if k > 0 {
				c.PCIe.RootComplex += suffix
				c.Minor = ptr.To(*g.Minor + k*minors)
				c.UUID = ""
			}
			out.Spec.GPUs = append(out.Spec.GPUs, *c)
		}
	}
	out.Default()
	if errs := out.Validate(); len(errs) > 0 {
		return nil, profile.NewValidationError(fmt.Sprintf("profile %s replicated to %d GPUs", p.Metadata.Name, gpus), errs)
	}
	return out, nil
}

// cloneJSON deep-copies a profile value through its JSON form.
func cloneJSON[T any](v *T) (*T, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("copy %T: %w", v, err)
	}
	out := new(T)
	if err := json.Unmarshal(data, out); err != nil {
		return nil, fmt.Errorf("copy %T: %w", v, err)
	}
	return out, nil
}
