package plaindriver

import (
	"context"
	"path"
	"slices"
	"strconv"

	"k8s.io/klog/v2"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"drakit.dev/drakit/reference/pluginharness"
)

// containerDeviceDir is where a device's directory is mounted in a
// container: <containerDeviceDir>/<device>.
const containerDeviceDir = "/var/run/plain"

// mountOptions mount a device's directory read-only, without set-uid
// programs, device nodes or executables.
var mountOptions = []string{"ro", "nosuid", "nodev", "noexec", "bind"}

// Edits are the claim's CDI edits: one CDI device per allocated device, in
// the order of the allocation results, each device once, with that
// device's edits (deviceEdits) and no edits of the spec's own. With
// DefectExtraDevice the first device also carries the edits of the node's
// device with the lowest index that the claim was not allocated.
func (n *node) Edits(ctx context.Context, uid string, claim preparedClaim) (pluginharness.Edits, error) {
	var e pluginharness.Edits
	allocated := map[string]bool{}
	for _, pd := range claim.Devices {
		if allocated[pd.Device] {
			continue
		}
		allocated[pd.Device] = true
		e.Devices = append(e.Devices, pluginharness.DeviceEdits{Device: pd.Device, Edits: n.deviceEdits(n.byName[pd.Device])})
	}
	if n.defect != DefectExtraDevice || len(e.Devices) == 0 {
		return e, nil
	}
	logger := klog.FromContext(ctx)
	i := slices.IndexFunc(n.devices, func(d device) bool { return !allocated[d.Name] })
	if i < 0 {
		logger.Info("Defect extra-device: the claim has every device of the node, no other one to inject",
			"claim", klog.KRef(claim.Namespace, claim.Name), "uid", uid)
		return e, nil
	}
	extra := n.deviceEdits(n.devices[i])
	logger.V(2).Info("Defect extra-device: injecting a device the claim was not allocated",
		"claim", klog.KRef(claim.Namespace, claim.Name), "uid", uid, "device", n.devices[i].Name)
	first := &e.Devices[0].Edits
	first.Env = append(first.Env, extra.Env...)
	first.Mounts = append(first.Mounts, extra.Mounts...)
	return e, nil
}

// deviceEdits is what one device injects: PLAIN_DEVICE_<index>=<name>,
// PLAIN_DEVICE_<index>_SERIAL=<serial> and its directory mounted read-only
// at /var/run/plain/<name>.
func (n *node) deviceEdits(d device) cdispec.ContainerEdits {
	env := "PLAIN_DEVICE_" + strconv.Itoa(d.Index)
	return cdispec.ContainerEdits{
		Env: []string{env + "=" + d.Name, env + "_SERIAL=" + d.Serial},
		Mounts: []*cdispec.Mount{{
			HostPath:      deviceDir(n.stateDir, d.Name),
			ContainerPath: path.Join(containerDeviceDir, d.Name),
			Options:       slices.Clone(mountOptions),
		}},
	}
}
