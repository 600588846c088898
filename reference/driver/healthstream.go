package driver

import (
	"context"
	"time"

	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"drakit.dev/drakit/reference/pluginharness"
)

// The health stream: every device's health is sent at start, on every
// change and every healthResend, well inside healthCheckTimeout, after
// which the kubelet reports a device it heard nothing of as Unknown.
const (
	healthCheckTimeout = 30 * time.Second
	healthResend       = 10 * time.Second
)

// gpuPlugin is the harness's plugin with the GPU driver's health stream.
type gpuPlugin struct {
	*pluginharness.Plugin[preparedDevice, *preparedDevice]
	health *monitor
}

// WatchHealthStatus sends the health of every device the driver
// discovered (withdrawn ones Unhealthy) at start, whenever one changes and
// every healthResend, until ctx ends.
func (p *gpuPlugin) WatchHealthStatus(ctx context.Context, reports chan<- kubeletplugin.DeviceHealthReport) error {
	return p.health.stream(ctx, reports, healthResend)
}

// stream is WatchHealthStatus with the resend interval given. Nothing is
// sent before the first fault state was read.
func (m *monitor) stream(ctx context.Context, reports chan<- kubeletplugin.DeviceHealthReport, resend time.Duration) error {
	t := time.NewTicker(resend)
	defer t.Stop()
	for {
		report, changed := m.report(time.Now())
		if len(report.Devices) > 0 {
			select {
			case <-ctx.Done():
				return nil
			case reports <- report:
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-t.C:
		}
	}
}
