package render

import (
	"fmt"
	"path/filepath"
	"strings"

	"drakit.dev/drakit/emulator/nvmlstate"
	"drakit.dev/drakit/emulator/profile"
	"drakit.dev/drakit/internal/nvidiahw"
)

// IMEXChannelsMajor is the dynamic major of nvidia-caps-imex-channels, the
// one after nvidia-caps (see NvidiaCapsMajor); consumers read it from
// /proc/devices.
const IMEXChannelsMajor = NvidiaCapsMajor + 1

// imexChannels is spec.nvlink.imexChannels, 0 without NVLink.
func imexChannels(p *profile.Profile) int {
	if p.Spec.NVLink == nil {
		return 0
	}
	return p.Spec.NVLink.IMEXChannels
}

func imexMajor(imex bool) []string {
	if !imex {
		return nil
	}
	return []string{fmt.Sprintf("%3d %s", IMEXChannelsMajor, nvidiahw.IMEXChannelsProcName)}
}

// imexMgmtMinor is the nvidia-caps minor of fabric-imex-mgmt: the first
// dynamic minor after the mig-minors table (migMinors).
func imexMgmtMinor(topo *profile.Topology) int {
	n := migMinorsGPUs
	for _, g := range topo.GPUs {
		n = max(n, *g.GPU.Minor+1)
	}
	return nvmlstate.CIAccessMinor(n-1, nvmlstate.MaxGIID, nvmlstate.MaxCIID) + 1
}

// imexDevfs renders the device nodes of a node with IMEX channels: the
// channels /dev/nvidia-caps-imex-channels/channel<N> (crw-rw-rw-,
// IMEXChannelsMajor:N) and the fabric-imex-mgmt capability's
// /dev/nvidia-caps node (root-only, as nvidia-modprobe creates it).
func imexDevfs(w *writer, p *profile.Profile, topo *profile.Topology) {
	if imexChannels(p) == 0 {
		return
	}
	for c := range imexChannels(p) {
		w.charDevice(strings.TrimPrefix(nvidiahw.IMEXChannelPath(c), "/"), IMEXChannelsMajor, uint32(c), 0o666)
	}
	minor := imexMgmtMinor(topo)
	w.charDevice(fmt.Sprintf("dev/nvidia-caps/nvidia-cap%d", minor), NvidiaCapsMajor, uint32(minor), capConfigMode)
}

// imexProcfs renders the fabric-imex-mgmt capability file of a node with
// IMEX channels.
func imexProcfs(w *writer, p *profile.Profile, topo *profile.Topology) {
	if imexChannels(p) == 0 {
		return
	}
	w.file(filepath.Clean(strings.TrimPrefix(nvidiahw.IMEXMgmtCapPath, "/")), 0o444, capFile(imexMgmtMinor(topo), capConfigMode))
}
