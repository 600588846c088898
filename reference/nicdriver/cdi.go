package nicdriver

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"drakit.dev/drakit/reference/pluginharness"
)

// Environment variables a prepared device sets in containers, each
// DRAKIT_DEVICE_<DEVICE>_<WHAT> (device name upper case, '-' → '_').
const (
	envPCIAddress   = "PCI_ADDRESS"
	envPFPCIAddress = "PF_PCI_ADDRESS"
	envInterface    = "INTERFACE"
	envRDMADevice   = "RDMA_DEVICE"
	envBandwidth    = "BANDWIDTH"
	envShareID      = "SHARE_ID"
)

// containerUverbsDir is where RDMA user verbs nodes are in a container.
const containerUverbsDir = "/dev/infiniband"

// envName is DRAKIT_DEVICE_<DEVICE>_<what>.
func envName(device, what string) string {
	return "DRAKIT_DEVICE_" + strings.ToUpper(strings.ReplaceAll(device, "-", "_")) + "_" + what
}

// Edits are the CDI edits of a claim's VFs, from its records alone: per VF
// DRAKIT_DEVICE_<DEVICE>_PCI_ADDRESS and _PF_PCI_ADDRESS, _INTERFACE when
// it has a netdev, and for an RDMA VF _RDMA_DEVICE and its user verbs node
// /dev/infiniband/uverbs<N> (host path below <HostRoot>/dev, with its
// device numbers from sysfs so that the runtime need not stat it). An
// Ethernet VF gets no device node: its netdev is not a file.
func (h *hardware) Edits(_ context.Context, _ string, claim vfClaim) (pluginharness.Edits, error) {
	var e pluginharness.Edits
	seen := map[string]bool{}
	for _, d := range claim.Devices {
		if seen[d.Device] {
			continue
		}
		seen[d.Device] = true
		rec := d.VF
		if rec == nil || !rec.ready() {
			return pluginharness.Edits{}, fmt.Errorf("device %s: the VF was not created", d.Device)
		}
		e.Devices = append(e.Devices, pluginharness.DeviceEdits{Device: d.Device, Edits: vfEdits(h.hostRoot, d.Device, rec)})
	}
	return e, nil
}

func vfEdits(hostRoot, name string, rec *vfRecord) cdispec.ContainerEdits {
	edits := cdispec.ContainerEdits{Env: []string{
		envName(name, envPCIAddress) + "=" + rec.BDF,
		envName(name, envPFPCIAddress) + "=" + rec.PF,
	}}
	if rec.Interface != "" {
		edits.Env = append(edits.Env, envName(name, envInterface)+"="+rec.Interface)
	}
	if rec.Uverbs != "" {
		edits.Env = append(edits.Env, envName(name, envRDMADevice)+"="+rec.RDMADevice)
		edits.DeviceNodes = append(edits.DeviceNodes, &cdispec.DeviceNode{
			Path:     path.Join(containerUverbsDir, rec.Uverbs),
			HostPath: filepath.Join(hostRoot, "dev", "infiniband", rec.Uverbs),
			Type:     "c",
			Major:    rec.UverbsMajor,
			Minor:    rec.UverbsMinor,
		})
	}
	return edits
}

// shareEdits are a PF share's edits: DRAKIT_DEVICE_<DEVICE>_INTERFACE (the
// PF's), _PCI_ADDRESS, _BANDWIDTH (what the share consumes, bits per
// second as a quantity) and _SHARE_ID.
func shareEdits(name string, pf *PF, rec shareRecord) cdispec.ContainerEdits {
	env := []string{
		envName(name, envPCIAddress) + "=" + pf.BDF,
		envName(name, envShareID) + "=" + rec.ShareID,
	}
	if pf.Netdev != nil {
		env = append(env, envName(name, envInterface)+"="+pf.Netdev.Name)
	}
	if rec.Bandwidth != "" {
		env = append(env, envName(name, envBandwidth)+"="+rec.Bandwidth)
	}
	return cdispec.ContainerEdits{Env: env}
}
