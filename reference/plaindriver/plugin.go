package plaindriver

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"

	"drakit.dev/drakit/reference/pluginharness"
)

// checkpointVersion is the only checkpoint format this driver reads.
const checkpointVersion = "plain.drakit.dev/checkpoint/v1"

// ErrCorruptCheckpoint is returned when the checkpoint cannot be read as
// this driver wrote it: bad or truncated JSON, unknown fields, another
// version.
var ErrCorruptCheckpoint = pluginharness.ErrCorruptCheckpoint

// preparedClaim is what the checkpoint holds about a prepared claim; the
// driver records nothing beyond the allocation results.
type preparedClaim = pluginharness.Claim[pluginharness.PreparedDevice]

// node is the driver's side of the kubelet plugin (pluginharness.Driver):
// the devices it publishes and the CDI edits of a prepared claim. Prepare
// and unprepare have nothing to do on the node (the devices' directories
// are written at start); the harness does the rest.
type node struct {
	name     string // the node's, and its pool's
	stateDir string
	devices  []device          // by index
	byName   map[string]device // the same devices by name
	style    Style
	defect   Defect

	mu sync.Mutex
	// claimLabels are the configured labels of the claims being prepared
	// (StyleStrictConfig), by claim UID and request: the plugin sets them
	// from the claim before the harness asks for its edits.
	claimLabels map[string]map[string]string
}

var _ pluginharness.Driver[pluginharness.PreparedDevice] = (*node)(nil)

func newNode(cfg Config) *node {
	n := &node{name: cfg.NodeName, stateDir: cfg.StateDir, devices: nodeDevices(cfg.NodeName, cfg.Devices, cfg.Style),
		style: cfg.Style, defect: cfg.Defect, claimLabels: map[string]map[string]string{}}
	n.byName = make(map[string]device, len(n.devices))
	for _, d := range n.devices {
		n.byName[d.Name] = d
	}
	return n
}

// harnessConfig is the plugin's configuration: the checkpoint in the state
// directory, without a checksum, and with DefectLeaveCDISpec the hook that
// keeps a claim's spec.
func harnessConfig(cfg Config, n *node) pluginharness.Config {
	hcfg := pluginharness.Config{
		DriverName:        cfg.DriverName,
		NodeName:          cfg.NodeName,
		CDIDir:            cfg.CDIDir,
		CheckpointDir:     cfg.StateDir,
		CheckpointVersion: checkpointVersion,
	}
	if cfg.Defect == DefectLeaveCDISpec {
		hcfg.KeepSpecOnUnprepare = n.leaveSpec
	}
	return hcfg
}

// Discover returns the node's pool (buildResources).
func (n *node) Discover(context.Context, map[string]preparedClaim) (resourceslice.DriverResources, error) {
	return buildResources(n.name, n.name, n.devices, n.style, n.defect), nil
}

// Admit admits every device: admin access changes nothing for a plain
// device. DefectAdminAccessRefused refuses admin access.
func (n *node) Admit(device string, admin bool) error {
	if admin && n.defect == DefectAdminAccessRefused {
		return fmt.Errorf("device %s: admin access is not supported (defect %s)", device, n.defect)
	}
	return nil
}

// setLabels records the configured labels of claim uid for Edits; nil
// forgets them.
func (n *node) setLabels(uid string, labels map[string]string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if labels == nil {
		delete(n.claimLabels, uid)
		return
	}
	n.claimLabels[uid] = labels
}

// labels returns the configured labels of claim uid, by request.
func (n *node) labels(uid string) map[string]string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.claimLabels[uid]
}

// Prepare has nothing to do on the node.
func (n *node) Prepare(context.Context, string, *preparedClaim, func() error) error { return nil }

// Unprepare has nothing to undo on the node.
func (n *node) Unprepare(context.Context, string, preparedClaim) error { return nil }

// leaveSpec is KeepSpecOnUnprepare with DefectLeaveCDISpec: every spec
// stays.
func (n *node) leaveSpec(ctx context.Context, claim kubeletplugin.NamespacedObject, spec string) bool {
	klog.FromContext(ctx).V(2).Info("Defect leave-cdi-spec: leaving the claim's CDI spec behind",
		"claim", claim.NamespacedName, "uid", claim.UID, "spec", spec)
	return true
}
