package kit

import (
	"slices"

	"drakit.dev/drakit/conformance/declaration"
)

// Tests change the driver under test where the kit reads it: in cfg's
// declaration, before a Suite derives its settings.

// wholeKind is the declaration's first kind of whole devices.
func wholeKind(cfg Config) *declaration.DeviceKind {
	for i := range cfg.Declaration.DeviceKinds {
		if k := &cfg.Declaration.DeviceKinds[i]; k.Partitions == nil && k.SharedCapacity == "" {
			return k
		}
	}
	panic("the declaration has no kind of whole devices")
}

// dropPartitions removes the declaration's kinds of partitions, and its
// claim of partitionableDevices with them.
func dropPartitions(cfg Config) {
	d := cfg.Declaration
	d.DeviceKinds = slices.DeleteFunc(d.DeviceKinds, func(k declaration.DeviceKind) bool { return k.Partitions != nil })
	delete(d.Capabilities, declaration.CapabilityPartitionableDevices)
}

// noDriverPods leaves the kit without the driver's pods: no logs, no
// restarts.
func noDriverPods(cfg Config) { cfg.Declaration.Driver.Pods = nil }

// claimOnly makes the driver claim exactly the capabilities given.
func claimOnly(cfg Config, names ...declaration.CapabilityName) {
	cfg.Declaration.Capabilities = map[declaration.CapabilityName]bool{}
	for _, n := range names {
		cfg.Declaration.Capabilities[n] = true
	}
}
