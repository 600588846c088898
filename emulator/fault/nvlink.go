package fault

import (
	"errors"
	"fmt"

	"drakit.dev/drakit/emulator/nvmlstate"
	"drakit.dev/drakit/internal/nvidiahw"
)

// ErrNoLink is returned for a link the GPU has no record of (a GPU without
// NVLink, or a link past its linksPerGPU).
var ErrNoLink = errors.New("no such NVLink")

// SetNVLink brings link of the GPU target up or down: NVML then reports
// its state (nvmlDeviceGetNvLinkState) as enabled or disabled. A GPU of a
// multi-node fabric reports degraded bandwidth in its fabric health mask
// while any of its links is down (nvidiahw.FabricDegradedBandwidth) and a
// healthy mask once all are up again. Like every fault it rewrites the
// state under its lock and bumps the generation.
func SetNVLink(root, target string, link int, up bool) error {
	if link < 0 || link >= nvmlstate.MaxNVLinks {
		return fmt.Errorf("nvlink %s: %w: link %d out of range 0..%d", target, ErrInvalid, link, nvmlstate.MaxNVLinks-1)
	}
	return update(root, target, "nvlink", false, func(s *nvmlstate.State, d device) error {
		if d.ci != nil {
			return fmt.Errorf("%s: %w: NVLinks belong to the whole GPU", d, ErrMIGTarget)
		}
		found, down := false, false
		for i := range s.NVLinks {
			l := &s.NVLinks[i]
			if l.GPU != d.gpu.Minor {
				continue
			}
			if l.Link == link {
				l.Active, found = up, true
			}
			down = down || !l.Active
		}
		if !found {
			return fmt.Errorf("%s: %w %d (render a profile with spec.nvlink)", d, ErrNoLink, link)
		}
		for i := range s.Fabrics {
			if f := &s.Fabrics[i]; f.GPU == d.gpu.Minor {
				f.HealthMask = nvidiahw.FabricHealthy
				if down {
					f.HealthMask = nvidiahw.FabricDegradedBandwidth
				}
			}
		}
		return nil
	})
}
