package plaindriver

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"

	"drakit.dev/drakit/reference/pluginharness"
)

// PrepareDelay is how long every prepare takes with DefectPrepareSlow:
// longer than the 45 s the kubelet waits for a NodePrepareResources call.
const PrepareDelay = 60 * time.Second

// harnessPlugin is the harness's plugin over the plain driver's node.
type harnessPlugin = pluginharness.Plugin[pluginharness.PreparedDevice, *pluginharness.PreparedDevice]

// plugin is the harness's plugin with what the harness does not do: the
// strict-config style's opaque configuration, and the defects of prepare
// and unprepare, which a correct harness cannot have.
type plugin struct {
	*harnessPlugin
	n      *node
	driver string
	delay  time.Duration // DefectPrepareSlow's

	mu sync.Mutex
	// kept are the devices DefectUnprepareKeepsDevice keeps after their
	// claim's unprepare, by the claim's UID.
	kept map[string]string
}

func newPlugin(inner *harnessPlugin, n *node, driver string, delay time.Duration) *plugin {
	return &plugin{harnessPlugin: inner, n: n, driver: driver, delay: delay, kept: map[string]string{}}
}

// PrepareResourceClaims refuses what the defect refuses, has the harness
// prepare the rest (StyleStrictConfig: with the labels of their opaque
// configs) and changes what the defect changes in the results.
func (p *plugin) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	logger := klog.FromContext(ctx)
	result := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	if p.n.defect == DefectPrepareSlow {
		logger.V(2).Info("Defect prepare-slow: waiting before prepare", "delay", p.delay)
		select {
		case <-time.After(p.delay):
		case <-ctx.Done():
			for _, c := range claims {
				result[c.UID] = kubeletplugin.PrepareResult{Err: fmt.Errorf("prepare claim %s/%s (%s): %w", c.Namespace, c.Name, c.UID, context.Cause(ctx))}
			}
			return result, nil
		}
	}
	prepared := p.Prepared()
	var pass []*resourceapi.ResourceClaim
	for _, c := range claims {
		uid := string(c.UID)
		err := p.refuse(c, prepared)
		if err == nil && p.n.style.effective() == StyleStrictConfig {
			var labels map[string]string
			if labels, err = claimLabels(c, p.driver); err == nil {
				p.n.setLabels(uid, labels)
				defer p.n.setLabels(uid, nil)
			}
		}
		if err != nil {
			result[c.UID] = kubeletplugin.PrepareResult{Err: fmt.Errorf("prepare claim %s/%s (%s): %w", c.Namespace, c.Name, c.UID, err)}
			continue
		}
		pass = append(pass, c)
	}
	if len(pass) == 0 {
		return result, nil
	}
	inner, err := p.harnessPlugin.PrepareResourceClaims(ctx, pass)
	if err != nil {
		return nil, err
	}
	for uid, r := range inner {
		for i := range r.Devices {
			ids := &r.Devices[i].CDIDeviceIDs
			switch p.n.defect {
			case DefectNoCDIEdits:
				*ids = nil
			case DefectUnresolvableCDIDevice:
				for j := range *ids {
					(*ids)[j] += "-unknown"
				}
			}
		}
		result[uid] = r
	}
	return result, nil
}

// refuse is the error the defect gives the claim before the harness sees
// it; nil for none.
func (p *plugin) refuse(c *resourceapi.ResourceClaim, prepared map[string]preparedClaim) error {
	switch p.n.defect {
	case DefectPrepareFails:
		return fmt.Errorf("every prepare fails (defect %s)", p.n.defect)
	case DefectNotIdempotent:
		if _, ok := prepared[string(c.UID)]; ok {
			return fmt.Errorf("the claim is already prepared (defect %s)", p.n.defect)
		}
	}
	if c.Status.Allocation == nil {
		return nil // the harness says so
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.Driver != p.driver || r.Pool != p.n.name {
			continue
		}
		if p.n.defect == DefectSharesRefused && r.ShareID != nil {
			return fmt.Errorf("device %s: shares are not supported (defect %s)", r.Device, p.n.defect)
		}
		if other, ok := p.kept[r.Device]; ok && other != string(c.UID) {
			return fmt.Errorf("device %s is still held for claim %s (defect %s)", r.Device, other, p.n.defect)
		}
	}
	return nil
}

// UnprepareResourceClaims fails every claim with DefectUnprepareFails,
// skips claims the checkpoint does not know with DefectStateLost, and
// has the harness unprepare the rest; DefectUnprepareKeepsDevice then
// keeps their devices.
func (p *plugin) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	logger := klog.FromContext(ctx)
	result := make(map[types.UID]error, len(claims))
	prepared := p.Prepared()
	var pass []kubeletplugin.NamespacedObject
	for _, c := range claims {
		entry, known := prepared[string(c.UID)]
		switch {
		case p.n.defect == DefectUnprepareFails:
			result[c.UID] = fmt.Errorf("unprepare claim %s (%s): every unprepare fails (defect %s)", c.NamespacedName, c.UID, p.n.defect)
			continue
		case p.n.defect == DefectStateLost && !known:
			logger.V(2).Info("Defect state-lost-on-restart: nothing to unprepare for a claim the driver does not know", "claim", c.NamespacedName, "uid", c.UID)
			result[c.UID] = nil
			continue
		case p.n.defect == DefectUnprepareKeepsDevice && known:
			p.mu.Lock()
			for _, d := range entry.Devices {
				if d.Pool == p.n.name {
					p.kept[d.Device] = string(c.UID)
				}
			}
			p.mu.Unlock()
		}
		pass = append(pass, c)
	}
	if len(pass) == 0 {
		return result, nil
	}
	inner, err := p.harnessPlugin.UnprepareResourceClaims(ctx, pass)
	if err != nil {
		return nil, err
	}
	maps.Copy(result, inner)
	return result, nil
}
