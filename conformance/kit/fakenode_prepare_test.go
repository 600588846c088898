package kit

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"drakit.dev/drakit/conformance/observe"
	"drakit.dev/drakit/conformance/probe"
)

// prepare is the fake node's kubelet and driver preparing an allocated
// claim: a CDI spec with one device per allocated GPU (DRAKIT_DEVICE_<DEVICE>
// = its uuid, /dev/nvidia<minor>), recorded in the kubelet's checkpoint,
// and what the container then sees added to report (the CDI edits, and the
// GPUs through NVML).
func (f *fakeNode) prepare(c *resourceapi.ResourceClaim, devices []PublishedDevice, report *probe.Report) {
	f.mu.Lock()
	defer f.mu.Unlock()
	spec := cdispec.Spec{Version: "0.6.0", Kind: "k8s." + f.driver + "/claim"}
	var prepared []observe.PreparedDevice
	for _, r := range c.Status.Allocation.Devices.Results {
		d, _ := FindDevice(devices, r.Pool, r.Device)
		minor, _ := strconv.Atoi(strings.TrimPrefix(d.Name, "gpu-"))
		uuid := *d.Attributes["uuid"].StringValue
		env := observe.DeviceEnvName(driverSettings(referenceDriverConfig().Declaration).DeviceEnvPrefix, d.Name) + "=" + uuid
		node := fmt.Sprintf("/dev/nvidia%d", minor)
		name := string(c.UID) + "-" + d.Name
		spec.Devices = append(spec.Devices, cdispec.Device{Name: name, ContainerEdits: cdispec.ContainerEdits{
			Env:         []string{env},
			DeviceNodes: []*cdispec.DeviceNode{{Path: node, Type: "c", Major: 195, Minor: int64(minor)}},
		}})
		prepared = append(prepared, observe.PreparedDevice{PoolName: r.Pool, DeviceName: r.Device, RequestNames: []string{r.Request},
			CDIDeviceIDs: []string{spec.Kind + "=" + name}})
		k, v, _ := strings.Cut(env, "=")
		report.Env[k] = v
		report.Devices = append(report.Devices, probe.DeviceNode{Path: node, Type: "c", Major: 195, Minor: uint32(minor)})
		report.NVML.GPUs = append(report.NVML.GPUs, probe.GPU{Index: len(report.NVML.GPUs), UUID: uuid, Minor: minor})
	}
	// The fake driver applies configs of its own, as a driver decodes
	// only those: each key becomes FAKE_CONFIG_<KEY> in the claim's first
	// CDI device.
	for _, cfg := range c.Status.Allocation.Devices.Config {
		var params map[string]string
		if cfg.Opaque == nil || cfg.Opaque.Driver != f.driver || json.Unmarshal(cfg.Opaque.Parameters.Raw, &params) != nil || len(spec.Devices) == 0 {
			continue
		}
		for k, v := range params {
			name := "FAKE_CONFIG_" + strings.ToUpper(k)
			spec.Devices[0].ContainerEdits.Env = append(spec.Devices[0].ContainerEdits.Env, name+"="+v)
			report.Env[name] = v
		}
	}
	data, err := json.Marshal(spec)
	if err == nil {
		err = os.WriteFile(f.cdiSpecPath(c), data, 0o644)
	}
	if err != nil {
		f.t.Errorf("write CDI spec: %v", err)
	}
	claim := PreparedClaim{ClaimUID: string(c.UID), ClaimName: c.Name, Namespace: c.Namespace,
		DriverState: map[string]struct{ Devices []observe.PreparedDevice }{f.driver: {Devices: prepared}}}
	f.prepared[c.UID] = claim
	f.writeCheckpoint()
}

// unprepare removes the claim's CDI spec and checkpoint entry.
func (f *fakeNode) unprepare(c *resourceapi.ResourceClaim) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := os.Remove(f.cdiSpecPath(c)); err != nil && !errors.Is(err, os.ErrNotExist) {
		f.t.Errorf("remove CDI spec: %v", err)
	}
	delete(f.prepared, c.UID)
	f.writeCheckpoint()
}

func (f *fakeNode) cdiSpecPath(c *resourceapi.ResourceClaim) string {
	return filepath.Join(f.cdiDir, "k8s."+f.driver+"-claim_"+string(c.UID)+".json")
}

// writeCheckpoint writes the kubelet's DRA checkpoint as the kubelet does:
// the data as a JSON string with its CRC32 checksum. Called with mu held.
func (f *fakeNode) writeCheckpoint() {
	if f.kubeletDir == "" {
		return
	}
	var list []PreparedClaim
	for _, c := range f.prepared {
		list = append(list, c)
	}
	data, err := json.Marshal(map[string]any{"kind": "DRACheckpoint", "apiVersion": kubeletCheckpointAPIVersion, "ClaimInfoStateList": list})
	if err != nil {
		f.t.Errorf("encode checkpoint: %v", err)
		return
	}
	b, err := json.Marshal(map[string]any{"Data": string(data), "Checksum": crc32.ChecksumIEEE(data)})
	if err == nil {
		tmp := filepath.Join(f.kubeletDir, kubeletDRAStateFile+".tmp")
		if err = os.WriteFile(tmp, b, 0o600); err == nil {
			err = os.Rename(tmp, filepath.Join(f.kubeletDir, kubeletDRAStateFile))
		}
	}
	if err != nil {
		f.t.Errorf("write checkpoint: %v", err)
	}
}
