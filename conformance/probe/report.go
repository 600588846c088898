package probe

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Marker starts the report line in the probe's stdout.
const Marker = "DRAKIT-PROBE-REPORT"

// ErrNoReport is returned by ParseLogs when the log holds no report line
// (yet): the probe has not started, or it failed before printing.
var ErrNoReport = errors.New("no " + Marker + " line in the log")

// Device node types as reported in DeviceNode.Type.
const (
	CharDevice  = "c"
	BlockDevice = "b"
)

// Report is what the probe observed inside its container.
type Report struct {
	// Devices are the character and block device nodes under /dev, sorted by
	// path. Symbolic links are not followed.
	Devices []DeviceNode `json:"devices"`
	// Env is the process environment.
	Env map[string]string `json:"env"`
	// NVML is what the NVML library enumerates.
	NVML NVML `json:"nvml"`
	// Mounts are the container's mount points, in mount order.
	Mounts []Mount `json:"mounts"`
	// Metadata are the device metadata files (KEP-5304) below
	// MetadataPath: their contents by path inside the container. Empty
	// when there are none.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Mount is one mount point of the container (/proc/self/mountinfo).
type Mount struct {
	// Path is the mount point inside the container.
	Path string `json:"path"`
	// ReadOnly says that the mount itself is read-only (option ro).
	ReadOnly bool `json:"readOnly,omitempty"`
}

// DeviceNode is one device special file.
type DeviceNode struct {
	// Path is the node's path inside the container, for example /dev/nvidia0.
	Path string `json:"path"`
	// Type is CharDevice ("c") or BlockDevice ("b").
	Type  string `json:"type"`
	Major uint32 `json:"major"`
	Minor uint32 `json:"minor"`
}

// NVML is the GPU inventory as NVML reports it.
type NVML struct {
	// Unavailable says why NVML could not be loaded or initialized in the
	// container (no libnvidia-ml, a failed dlopen, nvmlInit failing); empty
	// when it initialized. An unavailable NVML says nothing about the
	// container's devices: the other fields are then empty.
	Unavailable string `json:"unavailable,omitempty"`
	// Error is empty when every call of an initialized NVML succeeded.
	// Otherwise it says which calls failed; the other fields then hold
	// what could be read.
	Error         string `json:"error,omitempty"`
	DriverVersion string `json:"driverVersion,omitempty"`
	GPUs          []GPU  `json:"gpus"`
}

// GPU is one device as NVML enumerates it.
type GPU struct {
	Index int    `json:"index"`
	UUID  string `json:"uuid"`
	Name  string `json:"name"`
	// Minor is the device's minor number, the N of /dev/nvidiaN.
	Minor int `json:"minor"`
	// BusID is the PCI bus id as NVML prints it (domain:bus:device.function).
	BusID string `json:"busID"`
	// MemoryTotal is the framebuffer size in bytes.
	MemoryTotal uint64 `json:"memoryTotal"`
	// MIGEnabled says that the GPU's current MIG mode is enabled.
	MIGEnabled bool `json:"migEnabled,omitempty"`
	// Clique is the GPU's multi-node NVLink fabric identity as NVML reports
	// it (nvmlDeviceGetGpuFabricInfoV: "<cluster UUID>.<clique ID>" once
	// the GPU's fabric registration completed); empty without one.
	Clique string `json:"clique,omitempty"`
	// MIGDevices are the MIG devices NVML lets this container use, in MIG
	// device index order; empty when MIG is disabled.
	MIGDevices []MIGDevice `json:"migDevices,omitempty"`
}

// MIGDevice is one MIG device (a compute instance of a GPU instance) as NVML
// enumerates it under its parent GPU.
type MIGDevice struct {
	// UUID is the MIG device's UUID, MIG-<uuid>.
	UUID string `json:"uuid"`
	// Name is what NVML calls it, for example "NVIDIA A100-SXM4-40GB MIG 1g.5gb".
	Name string `json:"name"`
	// GPUInstance and ComputeInstance are the GI and CI ids: with the
	// parent's minor they determine the nvidia-caps minor numbers of the
	// device's capabilities.
	GPUInstance     int `json:"gpuInstance"`
	ComputeInstance int `json:"computeInstance"`
	// MemoryTotal is the MIG device's memory in bytes.
	MemoryTotal uint64 `json:"memoryTotal"`
}

// Format renders the report as the single line the probe prints, without a
// trailing newline.
func Format(r Report) (string, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("encode probe report: %w", err)
	}
	return Marker + " " + string(data), nil
}

// ParseLogs finds the report line in a container log and decodes it. Lines
// without the marker are ignored. It returns ErrNoReport when there is no
// report line, and a descriptive error naming the line when the report is
// malformed or when there is more than one.
func ParseLogs(logText string) (Report, error) {
	var (
		found   bool
		line    int
		payload string
	)
	sc := bufio.NewScanner(strings.NewReader(logText))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimRight(sc.Text(), "\r")
		rest, ok := strings.CutPrefix(text, Marker)
		if !ok {
			continue
		}
		if found {
			return Report{}, fmt.Errorf("parse probe log: second %s line at line %d (first at line %d); expected exactly one", Marker, n, line)
		}
		found, line = true, n
		payload = strings.TrimSpace(rest)
	}
	if err := sc.Err(); err != nil {
		return Report{}, fmt.Errorf("parse probe log: %w", err)
	}
	if !found {
		return Report{}, ErrNoReport
	}
	if payload == "" {
		return Report{}, fmt.Errorf("parse probe log: line %d: %s marker without a JSON report", line, Marker)
	}
	var r Report
	dec := json.NewDecoder(strings.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Report{}, fmt.Errorf("parse probe log: line %d: decode report: %w", line, err)
	}
	if dec.More() {
		return Report{}, fmt.Errorf("parse probe log: line %d: trailing data after the JSON report", line)
	}
	for i, d := range r.Devices {
		if d.Type != CharDevice && d.Type != BlockDevice {
			return Report{}, fmt.Errorf("parse probe log: line %d: devices[%d] (%s): type %q, want %q or %q", line, i, d.Path, d.Type, CharDevice, BlockDevice)
		}
		if d.Path == "" {
			return Report{}, fmt.Errorf("parse probe log: line %d: devices[%d]: empty path", line, i)
		}
	}
	return r, nil
}
