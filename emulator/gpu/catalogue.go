package gpu

import (
	"slices"

	"drakit.dev/drakit/emulator/platform"
)

// Model is a catalogue entry: the fields a GPU takes from its model.
type Model struct {
	Name              string
	VendorID          platform.Hex
	DeviceID          platform.Hex
	SubsystemVendorID platform.Hex
	SubsystemDeviceID platform.Hex
	Memory            int64 // bytes, as nvmlDeviceGetMemoryInfo reports them
	MemoryReserved    int64 // bytes
	BAR1Size          int64 // bytes
	Architecture      Architecture
	Brand             Brand
	ComputeCapability string
	MIGCapable        bool
	VBIOSVersion      string
}

const mib = 1 << 20

// catalogue holds values as a real board of the model reports them through
// NVML and sysfs (go-nvml's mock GPUs and nvidia-smi output). Brand: current
// drivers report data-centre boards as NVML_BRAND_NVIDIA.
var catalogue = map[string]Model{
	"H100-80GB-HBM3": {
		Name:              "NVIDIA H100 80GB HBM3",
		VendorID:          0x10de,
		DeviceID:          0x2330,
		SubsystemVendorID: 0x10de,
		SubsystemDeviceID: 0x16c1,
		Memory:            81559 * mib, // 85520809984
		MemoryReserved:    579 * mib,
		BAR1Size:          128 << 30,
		Architecture:      "Hopper",
		Brand:             "NVIDIA",
		ComputeCapability: "9.0",
		MIGCapable:        true,
		VBIOSVersion:      "96.00.99.00.01",
	},
	// H200-141GB-HBM3e is H200-like: the name, device id 0x2335 (H200 SXM
	// 141GB) and 143771 MiB are what H200 SXM boards are reported with;
	// subsystem id, reserved memory, BAR1 and VBIOS are UNVERIFIED
	// stand-ins.
	"H200-141GB-HBM3e": {
		Name:              "NVIDIA H200",
		VendorID:          0x10de,
		DeviceID:          0x2335,
		SubsystemVendorID: 0x10de,
		SubsystemDeviceID: 0x18be,
		Memory:            143771 * mib,
		MemoryReserved:    579 * mib,
		BAR1Size:          256 << 30,
		Architecture:      "Hopper",
		Brand:             "NVIDIA",
		ComputeCapability: "9.0",
		MIGCapable:        true,
		VBIOSVersion:      "96.00.A5.00.01",
	},
	// A100-SXM4-40GB: device id 0x20b0 and 40960 MiB as the go-nvml mock
	// has them; subsystem id 0x134f, BAR1 64 GiB and VBIOS are UNVERIFIED.
	"A100-SXM4-40GB": {
		Name:              "NVIDIA A100-SXM4-40GB",
		VendorID:          0x10de,
		DeviceID:          0x20b0,
		SubsystemVendorID: 0x10de,
		SubsystemDeviceID: 0x134f,
		Memory:            40960 * mib,
		MemoryReserved:    0,
		BAR1Size:          64 << 30,
		Architecture:      "Ampere",
		Brand:             "NVIDIA",
		ComputeCapability: "8.0",
		MIGCapable:        true,
		VBIOSVersion:      "92.00.19.00.01",
	},
	"A100-SXM4-80GB": {
		Name:              "NVIDIA A100-SXM4-80GB",
		VendorID:          0x10de,
		DeviceID:          0x20b2,
		SubsystemVendorID: 0x10de,
		SubsystemDeviceID: 0x1463,
		Memory:            81920 * mib,
		MemoryReserved:    0,
		BAR1Size:          128 << 30,
		Architecture:      "Ampere",
		Brand:             "NVIDIA",
		ComputeCapability: "8.0",
		MIGCapable:        true,
		VBIOSVersion:      "92.00.45.00.03",
	},
	// GB200 is a GB200-like Blackwell GPU of an NVL72 rack: the name,
	// device id 0x2941 and compute capability 10.0 are what GB200 boards
	// report; memory, subsystem id, BAR1 and VBIOS are UNVERIFIED
	// stand-ins. Not MIG capable here: the catalogue has no Blackwell MIG
	// table.
	"GB200": {
		Name:              "NVIDIA GB200",
		VendorID:          0x10de,
		DeviceID:          0x2941,
		SubsystemVendorID: 0x10de,
		SubsystemDeviceID: 0x2046,
		Memory:            189471 * mib,
		MemoryReserved:    579 * mib,
		BAR1Size:          256 << 30,
		Architecture:      "Blackwell",
		Brand:             "NVIDIA",
		ComputeCapability: "10.0",
		MIGCapable:        false,
		VBIOSVersion:      "97.00.82.00.01",
	},
}

// Models lists the catalogue's model names, sorted.
func Models() []string {
	names := make([]string, 0, len(catalogue))
	for n := range catalogue {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// LookupModel returns the catalogue entry called name.
func LookupModel(name string) (Model, bool) {
	m, ok := catalogue[name]
	return m, ok
}
