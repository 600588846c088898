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

// containerNodeDir is where StyleDeviceNodes creates a device's node:
// <containerNodeDir>/<device>.
const containerNodeDir = "/dev/plain"

// hostNode is the host device node every device node of StyleDeviceNodes
// is made from: /dev/null, character device 1:3, harmless to hand out.
var hostNode = struct {
	path         string
	major, minor int64
}{"/dev/null", 1, 3}

// mountOptions mount a device's directory read-only, without set-uid
// programs, device nodes or executables; DefectMountWritable drops "ro".
var mountOptions = []string{"ro", "nosuid", "nodev", "noexec", "bind"}

// Edits are the claim's CDI edits: one CDI device per allocated device, in
// the order of the allocation results, each device once, with that
// device's edits (deviceEdits) and no edits of the spec's own. With
// DefectExtraDevice or DefectExtraDeviceNode the first device also carries
// the edits (the device node) of the node's device with the lowest index
// that the claim was not allocated; with DefectWrongDevice each device
// carries the edits of such a device instead of its own.
func (n *node) Edits(ctx context.Context, uid string, claim preparedClaim) (pluginharness.Edits, error) {
	var e pluginharness.Edits
	allocated := map[string]bool{}
	for _, pd := range claim.Devices {
		allocated[pd.Device] = true
	}
	labels := n.labels(uid)
	logger := klog.FromContext(ctx)
	done := map[string]bool{}
	for _, pd := range claim.Devices {
		if done[pd.Device] {
			continue
		}
		done[pd.Device] = true
		d := n.byName[pd.Device]
		if n.defect == DefectWrongDevice {
			if other, ok := n.unallocated(allocated, d.Kind); ok {
				logger.V(2).Info("Defect wrong-device: injecting another device", "uid", uid, "allocated", d.Name, "injected", other.Name)
				d = other
			}
		}
		e.Devices = append(e.Devices, pluginharness.DeviceEdits{Device: pd.Device, Edits: n.deviceEdits(d, labels[pd.Request])})
	}
	if (n.defect != DefectExtraDevice && n.defect != DefectExtraDeviceNode) || len(e.Devices) == 0 {
		return e, nil
	}
	extra, ok := n.unallocated(allocated, n.byName[claim.Devices[0].Device].Kind)
	if !ok {
		logger.Info("Defect "+string(n.defect)+": the claim has every device of the node, no other one to inject",
			"claim", klog.KRef(claim.Namespace, claim.Name), "uid", uid)
		return e, nil
	}
	logger.V(2).Info("Defect "+string(n.defect)+": injecting a device the claim was not allocated",
		"claim", klog.KRef(claim.Namespace, claim.Name), "uid", uid, "device", extra.Name)
	first, more := &e.Devices[0].Edits, n.deviceEdits(extra, "")
	if n.defect == DefectExtraDeviceNode {
		first.DeviceNodes = append(first.DeviceNodes, more.DeviceNodes...)
		return e, nil
	}
	first.Env = append(first.Env, more.Env...)
	first.Mounts = append(first.Mounts, more.Mounts...)
	return e, nil
}

// unallocated is the device of kind with the lowest index that allocated
// does not name.
func (n *node) unallocated(allocated map[string]bool, kind string) (device, bool) {
	i := slices.IndexFunc(n.devices, func(d device) bool { return d.Kind == kind && !allocated[d.Name] })
	if i < 0 {
		return device{}, false
	}
	return n.devices[i], true
}

// deviceEdits is what one device injects: PLAIN_DEVICE_<index>=<name>,
// PLAIN_DEVICE_<index>_SERIAL=<serial>, with a configured label
// PLAIN_DEVICE_<index>_LABEL=<label>, and by style its directory mounted
// read-only at /var/run/plain/<name> or the device node /dev/plain/<name>;
// the container-side defects change that.
func (n *node) deviceEdits(d device, label string) cdispec.ContainerEdits {
	env := "PLAIN_DEVICE_" + strconv.Itoa(d.Index)
	var e cdispec.ContainerEdits
	switch n.defect {
	case DefectMissingEnv:
	case DefectEnvWrongValue:
		e.Env = append(e.Env, env+"=dev"+strconv.Itoa(d.Index))
	default:
		e.Env = append(e.Env, env+"="+d.Name)
	}
	e.Env = append(e.Env, env+"_SERIAL="+d.Serial)
	if label != "" && n.defect != DefectConfigIgnored {
		e.Env = append(e.Env, env+"_LABEL="+label)
	}
	if n.style.mounts() && n.defect != DefectMountMissing {
		opts := slices.Clone(mountOptions)
		if n.defect == DefectMountWritable {
			opts = slices.DeleteFunc(opts, func(o string) bool { return o == "ro" })
		}
		e.Mounts = []*cdispec.Mount{{HostPath: deviceDir(n.stateDir, d.Name), ContainerPath: path.Join(containerDeviceDir, d.Name), Options: opts}}
	}
	if n.style.effective() == StyleDeviceNodes && n.defect != DefectDeviceNodeMissing {
		e.DeviceNodes = []*cdispec.DeviceNode{{
			Path: path.Join(containerNodeDir, d.Name), HostPath: hostNode.path,
			Type: "c", Major: hostNode.major, Minor: hostNode.minor, Permissions: "rw",
		}}
	}
	return e
}
