package nvml_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"drakit.dev/drakit/emulator/nvml/nvmltest"
	"drakit.dev/drakit/emulator/nvmlstate"
)

// The tests load the shim through go-nvml, as the drivers do. A process binds
// one NVML library for good, so every test uses the single path nvmltest
// builds and selects its emulator root with $DRAKIT_EMULATOR_ROOT before
// nvmlInit. Tests in this package therefore never run in parallel.

func newLib(t testing.TB) gonvml.Interface {
	t.Helper()
	return gonvml.New(gonvml.WithLibraryPath(nvmltest.BuildShim(t)))
}

// initLib points the shim at root, initialises lib and shuts it down when
// the test ends.
func initLib(t *testing.T, lib gonvml.Interface, root string) {
	t.Helper()
	t.Setenv(nvmltest.RootEnv, root)
	if ret := lib.Init(); ret != gonvml.SUCCESS {
		t.Fatalf("Init: %v", ret)
	}
	t.Cleanup(func() {
		if ret := lib.Shutdown(); ret != gonvml.SUCCESS {
			t.Errorf("Shutdown: %v", ret)
		}
	})
}

// systemView is what NVML reports about the driver.
type systemView struct {
	DriverVersion    string
	DriverVersionRet gonvml.Return
	NVMLVersion      string
	NVMLVersionRet   gonvml.Return
	CUDA, CUDAv2     int
	Count            int
}

// gpuView is what NVML reports about one GPU, through every implemented
// getter and lookup.
type gpuView struct {
	Index, Minor   int
	UUID, Name     string
	BusID, Legacy  string
	Domain, Bus    uint32
	Device         uint32
	PCIDeviceID    uint32
	PCISubSystemID uint32
	Memory         gonvml.Memory
	MemoryV2       gonvml.Memory_v2
	Architecture   gonvml.DeviceArchitecture
	Brand          gonvml.BrandType
	CCMajor        int
	CCMinor        int
	NUMANode       int
	NUMANodeRet    gonvml.Return
	MIGCurrent     int
	MIGPending     int
	MIGRet         gonvml.Return
	MaxMIGDevices  int
	IsMIGDevice    bool
	Persistence    gonvml.EnableState
	Virtualization gonvml.GpuVirtualizationMode
	// AddressingMode is the mode's value; AddressingModeRet the call's result.
	AddressingMode    uint32
	AddressingModeRet gonvml.Return
	BusType           gonvml.BusType
	ComputeMode       gonvml.ComputeMode
	// Processes counts the compute, graphics and MPS processes listed.
	Processes       int
	SupportedEvents uint64
	Health          healthView
	Fabric          fabricView
	// Index of the GPU each lookup returns.
	ByUUID, ByUpperUUID, ByBusID, ByLegacyBusID, ByGoNVLibBusID int
}

// wantView is what the shim must report for state s when the device nodes
// for which visible returns true exist.
func wantView(s *nvmlstate.State, visible func(minor int) bool) (systemView, []gpuView) {
	sys := systemView{
		DriverVersion: s.System.DriverVersion, NVMLVersion: s.System.NVMLVersion,
		CUDA: int(int32(s.System.CUDADriverVersion)), CUDAv2: int(int32(s.System.CUDADriverVersion)),
	}
	// go-nvml passes 80-byte buffers for both versions.
	if len(sys.DriverVersion) >= gonvml.SYSTEM_DRIVER_VERSION_BUFFER_SIZE {
		sys.DriverVersion, sys.DriverVersionRet = "", gonvml.ERROR_INSUFFICIENT_SIZE
	}
	if len(sys.NVMLVersion) >= gonvml.SYSTEM_NVML_VERSION_BUFFER_SIZE {
		sys.NVMLVersion, sys.NVMLVersionRet = "", gonvml.ERROR_INSUFFICIENT_SIZE
	}
	var gpus []gpuView
	for _, g := range s.GPUs {
		if !visible(g.Minor) || s.FaultOf(g.Minor).Lost {
			continue // a GPU that fell off the bus is not enumerated
		}
		i := len(gpus)
		var domain, bus, device, function uint32
		fmt.Sscanf(g.BusID, "%08X:%02X:%02X.%X", &domain, &bus, &device, &function)
		legacy := fmt.Sprintf("%04X:%02X:%02X.%X", domain, bus, device, function)
		if len(legacy) >= 16 {
			legacy = ""
		}
		v := gpuView{
			Index: i, Minor: g.Minor, UUID: g.UUID, Name: cString(g.Name),
			BusID: g.BusID, Legacy: legacy, Domain: domain, Bus: bus, Device: device,
			PCIDeviceID: g.PCIDeviceID, PCISubSystemID: g.PCISubSystemID,
			Memory: gonvml.Memory{Total: g.MemoryTotal, Free: g.MemoryTotal - g.MemoryReserved, Used: g.MemoryReserved},
			MemoryV2: gonvml.Memory_v2{
				Version: gonvml.STRUCT_VERSION(gonvml.Memory_v2{}, 2), Total: g.MemoryTotal,
				Reserved: g.MemoryReserved, Free: g.MemoryTotal - g.MemoryReserved,
			},
			Architecture: gonvml.DeviceArchitecture(uint32(g.Architecture)),
			Brand:        gonvml.BrandType(int32(g.Brand)),
			CCMajor:      int(int32(g.CCMajor)), CCMinor: int(int32(g.CCMinor)),
			NUMANodeRet: gonvml.ERROR_NOT_SUPPORTED, MIGRet: gonvml.ERROR_NOT_SUPPORTED,
			Persistence: gonvml.FEATURE_DISABLED, Virtualization: gonvml.GPU_VIRTUALIZATION_MODE_NONE,
			AddressingModeRet: gonvml.ERROR_NOT_SUPPORTED, BusType: gonvml.BUS_TYPE_PCIE,
			ComputeMode: gonvml.COMPUTEMODE_DEFAULT, SupportedEvents: wantEvents(g.MIGCapable),
			Health: wantHealth(s.FaultOf(g.Minor)),
			ByUUID: i, ByUpperUUID: i, ByBusID: i, ByLegacyBusID: i, ByGoNVLibBusID: i,
		}
		if legacy == "" {
			v.ByLegacyBusID = -1 // nothing to look up
		}
		if g.NUMANode >= 0 && g.NUMANode <= math.MaxUint32 {
			v.NUMANode, v.NUMANodeRet = g.NUMANode, gonvml.SUCCESS
		}
		if g.MIGCapable {
			v.MIGCurrent, v.MIGPending, v.MIGRet = g.MIGMode, g.MIGMode, gonvml.SUCCESS
		}
		// HMM from Turing on (the open kernel modules on x86-64); NVML
		// does not support the query before, nor for an unknown architecture.
		if arch := uint32(g.Architecture); arch >= gonvml.DEVICE_ARCH_TURING && arch != gonvml.DEVICE_ARCH_UNKNOWN {
			v.AddressingMode, v.AddressingModeRet = uint32(gonvml.DEVICE_ADDRESSING_MODE_HMM), gonvml.SUCCESS
		}
		// nvml.h: zero unless MIG is enabled on a GPU with MIG tables.
		if i := slices.IndexFunc(s.MIG, func(m nvmlstate.MIG) bool { return m.GPU == g.Minor }); i >= 0 && g.MIGMode == 1 {
			v.MaxMIGDevices = s.MIG[i].MaxDevices
		}
		gpus = append(gpus, v)
	}
	for i := range gpus {
		g := &s.GPUs[slices.IndexFunc(s.GPUs, func(g nvmlstate.GPU) bool { return g.Minor == gpus[i].Minor })]
		var next *nvmlstate.GPU
		if len(gpus) > 1 {
			nm := gpus[(i+1)%len(gpus)].Minor
			next = &s.GPUs[slices.IndexFunc(s.GPUs, func(g nvmlstate.GPU) bool { return g.Minor == nm })]
		}
		gpus[i].Fabric = wantFabric(s, g, next)
	}
	sys.Count = len(gpus)
	return sys, gpus
}

// wantEvents are the event types a GPU supports: ECC, P-state, XID and
// clock events, and MIG configuration changes on a MIG-capable GPU.
func wantEvents(migCapable bool) uint64 {
	types := uint64(gonvml.EventTypeSingleBitEccError | gonvml.EventTypeDoubleBitEccError |
		gonvml.EventTypePState | gonvml.EventTypeXidCriticalError | gonvml.EventTypeClock)
	if migCapable {
		types |= gonvml.EventMigConfigChange
	}
	return types
}

// cString is s up to its first NUL, as a C caller reads it.
func cString(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}

// goNVLibBusID is the form go-nvlib's Device.GetPCIBusID makes of NVML's
// bus id (and k8s.io/dynamic-resource-allocation's deviceattribute expects).
func goNVLibBusID(busID string) string {
	id := strings.ToLower(busID)
	if id != "0000" {
		id = strings.TrimPrefix(id, "0000")
	}
	return id
}

// observeView asks lib, initialised, everything wantView predicts. It
// reports failed calls the view has no field for as test errors.
func observeView(t testing.TB, lib gonvml.Interface) (systemView, []gpuView) {
	t.Helper()
	check := func(what string, ret gonvml.Return) {
		t.Helper()
		if ret != gonvml.SUCCESS {
			t.Errorf("%s: %v", what, ret)
		}
	}
	var sys systemView
	sys.DriverVersion, sys.DriverVersionRet = lib.SystemGetDriverVersion()
	sys.NVMLVersion, sys.NVMLVersionRet = lib.SystemGetNVMLVersion()
	var ret gonvml.Return
	sys.CUDA, ret = lib.SystemGetCudaDriverVersion()
	check("SystemGetCudaDriverVersion", ret)
	sys.CUDAv2, ret = lib.SystemGetCudaDriverVersion_v2()
	check("SystemGetCudaDriverVersion_v2", ret)
	sys.Count, ret = lib.DeviceGetCount()
	check("DeviceGetCount", ret)

	indexOf := func(what string, d gonvml.Device, ret gonvml.Return) int {
		t.Helper()
		if ret != gonvml.SUCCESS {
			return -1
		}
		i, ret := d.GetIndex()
		check(what+": GetIndex", ret)
		return i
	}
	var gpus []gpuView
	for i := 0; i < sys.Count; i++ {
		d, ret := lib.DeviceGetHandleByIndex(i)
		if ret != gonvml.SUCCESS {
			t.Errorf("DeviceGetHandleByIndex(%d): %v", i, ret)
			continue
		}
		var v gpuView
		v.Index, ret = d.GetIndex()
		check("GetIndex", ret)
		v.Minor, ret = d.GetMinorNumber()
		check("GetMinorNumber", ret)
		v.UUID, ret = d.GetUUID()
		check("GetUUID", ret)
		v.Name, ret = d.GetName()
		check("GetName", ret)
		pci, ret := d.GetPciInfo()
		check("GetPciInfo", ret)
		v.BusID, v.Legacy = cBytes(pci.BusId[:]), cBytes(pci.BusIdLegacy[:])
		v.Domain, v.Bus, v.Device = pci.Domain, pci.Bus, pci.Device
		v.PCIDeviceID, v.PCISubSystemID = pci.PciDeviceId, pci.PciSubSystemId
		v.Memory, ret = d.GetMemoryInfo()
		check("GetMemoryInfo", ret)
		v.MemoryV2, ret = d.GetMemoryInfo_v2()
		check("GetMemoryInfo_v2", ret)
		v.Architecture, ret = d.GetArchitecture()
		check("GetArchitecture", ret)
		v.Brand, ret = d.GetBrand()
		check("GetBrand", ret)
		v.CCMajor, v.CCMinor, ret = d.GetCudaComputeCapability()
		check("GetCudaComputeCapability", ret)
		v.NUMANode, v.NUMANodeRet = d.GetNumaNodeId()
		v.MIGCurrent, v.MIGPending, v.MIGRet = d.GetMigMode()
		v.MaxMIGDevices, ret = d.GetMaxMigDeviceCount()
		check("GetMaxMigDeviceCount", ret)
		v.IsMIGDevice, ret = d.IsMigDeviceHandle()
		check("IsMigDeviceHandle", ret)
		v.Persistence, ret = d.GetPersistenceMode()
		check("GetPersistenceMode", ret)
		v.Virtualization, ret = d.GetVirtualizationMode()
		check("GetVirtualizationMode", ret)
		mode, ret := d.GetAddressingMode()
		v.AddressingMode, v.AddressingModeRet = mode.Value, ret
		v.BusType, ret = d.GetBusType()
		check("GetBusType", ret)
		v.ComputeMode, ret = d.GetComputeMode()
		check("GetComputeMode", ret)
		for what, list := range map[string]func() ([]gonvml.ProcessInfo, gonvml.Return){
			"GetComputeRunningProcesses": d.GetComputeRunningProcesses, "GetGraphicsRunningProcesses": d.GetGraphicsRunningProcesses,
			"GetMPSComputeRunningProcesses": d.GetMPSComputeRunningProcesses,
		} {
			procs, ret := list()
			check(what, ret)
			v.Processes += len(procs)
		}
		v.SupportedEvents, ret = d.GetSupportedEventTypes()
		check("GetSupportedEventTypes", ret)
		v.Health = observeHealth(t, d)
		var next gonvml.Device
		if sys.Count > 1 {
			next, ret = lib.DeviceGetHandleByIndex((i + 1) % sys.Count)
			check("DeviceGetHandleByIndex(next)", ret)
		}
		v.Fabric = observeFabric(t, d, next)

		byUUID, ret := lib.DeviceGetHandleByUUID(v.UUID)
		v.ByUUID = indexOf("DeviceGetHandleByUUID", byUUID, ret)
		if byUUID != d && ret == gonvml.SUCCESS && v.ByUUID == i {
			t.Errorf("DeviceGetHandleByUUID(%s) returned a handle unequal to DeviceGetHandleByIndex(%d)'s", v.UUID, i)
		}
		upper, ret := lib.DeviceGetHandleByUUID("GPU-" + strings.ToUpper(strings.TrimPrefix(v.UUID, "GPU-")))
		v.ByUpperUUID = indexOf("DeviceGetHandleByUUID(upper case)", upper, ret)
		byBus, ret := lib.DeviceGetHandleByPciBusId(v.BusID)
		v.ByBusID = indexOf("DeviceGetHandleByPciBusId", byBus, ret)
		byLegacy, ret := lib.DeviceGetHandleByPciBusId(v.Legacy)
		v.ByLegacyBusID = indexOf("DeviceGetHandleByPciBusId(legacy)", byLegacy, ret)
		byNVLib, ret := lib.DeviceGetHandleByPciBusId(goNVLibBusID(v.BusID))
		v.ByGoNVLibBusID = indexOf("DeviceGetHandleByPciBusId(go-nvlib form)", byNVLib, ret)
		gpus = append(gpus, v)
	}
	return sys, gpus
}

// cBytes converts a C char array to a string up to its NUL.
func cBytes(b []int8) string {
	var s strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		s.WriteByte(byte(c))
	}
	return s.String()
}
