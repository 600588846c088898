package nic

import (
	"slices"

	"drakit.dev/drakit/emulator/platform"
	"drakit.dev/drakit/internal/nichw"
)

// Model is a NIC catalogue entry: the fields a NIC takes from its model.
type Model struct {
	// Product is the adapter's name, for people (lspci's names come from
	// pci.ids by id).
	Product           string
	VendorID          platform.Hex
	DeviceID          platform.Hex
	SubsystemVendorID platform.Hex
	SubsystemDeviceID platform.Hex
	Driver            string
	RDMA              bool
	SpeedMbps         int
	TotalVFs          int
	VFDeviceID        platform.Hex
	VFOffset          int
	VFStride          int
}

// catalogue holds the NIC models. PCI ids, drivers and speeds are the
// real parts' (internal/nichw). sriov_totalvfs of a ConnectX is what its
// firmware is configured with (mlxconfig NUM_OF_VFS); 16 is a common
// setting, not a hardware limit. A single-port ConnectX puts its VFs right
// after the PF (offset 1, stride 1: 00.1 … 00.7, 01.0 …). Subsystem ids of
// the ConnectX entries and the E810's offset, stride and totalvfs are
// UNVERIFIED stand-ins.
var catalogue = map[string]Model{
	// ConnectX-7: a single-port 400 Gb/s adapter, what DGX H100 pairs
	// with each GPU, run here in Ethernet mode (RoCE).
	"ConnectX-7": {
		Product:           "NVIDIA ConnectX-7 400G",
		VendorID:          nichw.VendorMellanox,
		DeviceID:          nichw.DeviceConnectX7,
		SubsystemVendorID: nichw.VendorMellanox,
		SubsystemDeviceID: 0x0021,
		Driver:            nichw.DriverMLX5,
		RDMA:              true,
		SpeedMbps:         400000,
		TotalVFs:          16,
		VFDeviceID:        nichw.DeviceConnectX7VF,
		VFOffset:          1,
		VFStride:          1,
	},
	// ConnectX-6: a single-port 200 Gb/s (HDR) adapter, what DGX A100
	// pairs with each GPU.
	"ConnectX-6": {
		Product:           "NVIDIA ConnectX-6 HDR 200G",
		VendorID:          nichw.VendorMellanox,
		DeviceID:          nichw.DeviceConnectX6,
		SubsystemVendorID: nichw.VendorMellanox,
		SubsystemDeviceID: 0x0007,
		Driver:            nichw.DriverMLX5,
		RDMA:              true,
		SpeedMbps:         200000,
		TotalVFs:          16,
		VFDeviceID:        nichw.DeviceConnectX6VF,
		VFOffset:          1,
		VFStride:          1,
	},
	// E810-C: Intel's 100 Gb/s Ethernet controller (E810-CQDA2), Ethernet
	// only here (its RDMA is the separate irdma driver, not modelled);
	// VFs are bound to iavf. 128 VFs per port, the first at <bus>:01.0.
	"E810-C": {
		Product:           "Intel Ethernet Network Adapter E810-C-Q2",
		VendorID:          nichw.VendorIntel,
		DeviceID:          nichw.DeviceE810C,
		SubsystemVendorID: nichw.VendorIntel,
		SubsystemDeviceID: 0x0002,
		Driver:            nichw.DriverIce,
		SpeedMbps:         100000,
		TotalVFs:          128,
		VFDeviceID:        nichw.DeviceAdaptiveVF,
		VFOffset:          8,
		VFStride:          1,
	},
}

// Models lists the NIC catalogue's model names, sorted.
func Models() []string {
	names := make([]string, 0, len(catalogue))
	for n := range catalogue {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// LookupModel returns the NIC catalogue entry called name.
func LookupModel(name string) (Model, bool) {
	m, ok := catalogue[name]
	return m, ok
}
