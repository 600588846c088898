package driver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"drakit.dev/drakit/reference/pluginharness"
)

// Paths inside containers (docs/architecture.md).
const (
	containerNVMLPath  = "/usr/lib/x86_64-linux-gnu/" + NVMLLibraryName
	containerStatePath = "/run/drakit-emulator/nvml.state"
)

// envName is DRAKIT_DEVICE_<DEVICE>: upper case, '-' → '_'.
func envName(device string) string {
	return "DRAKIT_DEVICE_" + strings.ToUpper(strings.ReplaceAll(device, "-", "_"))
}

// cdiDevice is what one prepared device injects: its device nodes (paths
// below /dev, e.g. "nvidia0", "nvidia-caps/nvidia-cap12") and the UUID its
// DRAKIT_DEVICE_<DEVICE> variable carries.
type cdiDevice struct {
	name  string // published device name
	uuid  string // GPU-… or MIG-…
	nodes []string
}

// Edits are the claim's CDI edits: per device its /dev/nvidia<minor> (the
// parent's for a MIG device), a MIG device's GI and CI capability nodes,
// and DRAKIT_DEVICE_<DEVICE> with its UUID (an IMEX channel of the node's
// clique: its /dev/nvidia-caps-imex-channels/channel<N> and channel<N>); for the whole spec
// /dev/nvidiactl, the NVML library and, below an emulator root, the NVML
// state's directory.
func (h *hardware) Edits(_ context.Context, _ string, claim preparedClaim) (pluginharness.Edits, error) {
	var devs []cdiDevice
	seen := map[string]bool{}
	for _, pd := range claim.Devices {
		if seen[pd.Device] {
			continue
		}
		seen[pd.Device] = true
		if pd.Pool != h.poolName {
			c, err := imexChannelDevice(pd.Device)
			if err != nil {
				return pluginharness.Edits{}, err
			}
			devs = append(devs, c)
			continue
		}
		if rec := pd.MIG; rec != nil {
			if !rec.ready() {
				return pluginharness.Edits{}, fmt.Errorf("device %s: %s was not created", pd.Device, rec)
			}
			devs = append(devs, cdiDevice{name: pd.Device, uuid: rec.UUID, nodes: migNodes(rec.ParentMinor, rec.GICapMinor, rec.CICapMinor)})
			continue
		}
		d, ok := h.devices[pd.Device]
		if !ok {
			return pluginharness.Edits{}, fmt.Errorf("device %s is not on this node", pd.Device)
		}
		switch d.Kind {
		case kindGPU:
			devs = append(devs, cdiDevice{name: d.Name, uuid: d.GPU.UUID, nodes: []string{fmt.Sprintf("nvidia%d", d.GPU.Minor)}})
		case kindMIGStatic:
			inst := d.Instance
			devs = append(devs, cdiDevice{name: d.Name, uuid: inst.UUID, nodes: migNodes(d.GPU.Minor, inst.GICapMinor, inst.CICapMinor)})
		default:
			return pluginharness.Edits{}, fmt.Errorf("device %s: MIG partition without a MIG device record", pd.Device)
		}
	}
	if len(devs) == 0 {
		return pluginharness.Edits{}, nil
	}
	if h.deviceNodesOnly {
		return deviceNodeEdits(h.driverRoot, devs), nil
	}
	return cdiEdits(h.driverRoot, h.nvmlLib, devs)
}

func migNodes(parentMinor, giCap, ciCap int) []string {
	return []string{
		fmt.Sprintf("nvidia%d", parentMinor),
		fmt.Sprintf("nvidia-caps/nvidia-cap%d", giCap),
		fmt.Sprintf("nvidia-caps/nvidia-cap%d", ciCap),
	}
}

// cdiEdits builds the edits of devs (not empty, no device twice): host
// paths below driverRoot, the NVML library file nvmlLib.
func cdiEdits(driverRoot, nvmlLib string, devs []cdiDevice) (pluginharness.Edits, error) {
	e := pluginharness.Edits{Claim: cdispec.ContainerEdits{
		DeviceNodes: []*cdispec.DeviceNode{{
			Path:     "/dev/nvidiactl",
			HostPath: filepath.Join(driverRoot, "dev", "nvidiactl"),
		}},
		Mounts: []*cdispec.Mount{{
			HostPath:      nvmlLib,
			ContainerPath: containerNVMLPath,
			Options:       []string{"ro", "nosuid", "nodev", "bind"},
		}},
	}}
	// The state file exists only below an emulator root. Its directory is
	// mounted, not the file: the emulator replaces the file by renaming a
	// new one over it, which a file bind mount would not show to a running
	// container.
	state := filepath.Join(driverRoot, containerStatePath)
	switch _, err := os.Stat(state); {
	case err == nil:
		e.Claim.Mounts = append(e.Claim.Mounts, &cdispec.Mount{
			HostPath:      filepath.Dir(state),
			ContainerPath: path.Dir(containerStatePath),
			Options:       []string{"ro", "nosuid", "nodev", "bind"},
		})
	case !errors.Is(err, fs.ErrNotExist):
		return pluginharness.Edits{}, fmt.Errorf("stat NVML state file: %w", err)
	}
	for _, d := range devs {
		edits := cdispec.ContainerEdits{Env: []string{envName(d.name) + "=" + d.uuid}}
		for _, n := range d.nodes {
			edits.DeviceNodes = append(edits.DeviceNodes, &cdispec.DeviceNode{
				Path:     "/dev/" + n,
				HostPath: filepath.Join(driverRoot, "dev", filepath.FromSlash(n)),
			})
		}
		e.Devices = append(e.Devices, pluginharness.DeviceEdits{Device: d.name, Edits: edits})
	}
	return e, nil
}

// deviceNodeEdits are the edits of devs with Config.DeviceNodesOnly: each
// device's nodes, and /dev/nvidiactl for the whole spec.
func deviceNodeEdits(driverRoot string, devs []cdiDevice) pluginharness.Edits {
	e := pluginharness.Edits{Claim: cdispec.ContainerEdits{
		DeviceNodes: []*cdispec.DeviceNode{{Path: "/dev/nvidiactl", HostPath: filepath.Join(driverRoot, "dev", "nvidiactl")}},
	}}
	for _, d := range devs {
		var edits cdispec.ContainerEdits
		for _, n := range d.nodes {
			edits.DeviceNodes = append(edits.DeviceNodes, &cdispec.DeviceNode{
				Path:     "/dev/" + n,
				HostPath: filepath.Join(driverRoot, "dev", filepath.FromSlash(n)),
			})
		}
		e.Devices = append(e.Devices, pluginharness.DeviceEdits{Device: d.name, Edits: edits})
	}
	return e
}
