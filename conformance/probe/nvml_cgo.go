//go:build cgo

package probe

import (
	"errors"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"drakit.dev/drakit/internal/nvidiahw"
)

// DefaultNVMLLibrary is the library name NVML is loaded from, resolved by the
// dynamic loader like the NVIDIA tools do.
const DefaultNVMLLibrary = "libnvidia-ml.so.1"

// NewNVML returns the NVML library at path (a name for the dynamic loader or
// a file path), loaded through github.com/NVIDIA/go-nvml on Init.
func NewNVML(path string) Library {
	return &goNVML{lib: nvml.New(nvml.WithLibraryPath(path))}
}

type goNVML struct {
	lib nvml.Interface
}

func (g *goNVML) Init() error     { return retErr(g.lib.Init()) }
func (g *goNVML) Shutdown() error { return retErr(g.lib.Shutdown()) }

func (g *goNVML) DriverVersion() (string, error) {
	v, ret := g.lib.SystemGetDriverVersion()
	return v, retErr(ret)
}

func (g *goNVML) Count() (int, error) {
	n, ret := g.lib.DeviceGetCount()
	return n, retErr(ret)
}

func (g *goNVML) GPU(index int) (GPU, error) {
	var gpu GPU
	dev, ret := g.lib.DeviceGetHandleByIndex(index)
	if err := retErr(ret); err != nil {
		return gpu, fmt.Errorf("get handle: %w", err)
	}
	var errs []error
	var err error
	if gpu.UUID, ret = dev.GetUUID(); ret != nvml.SUCCESS {
		errs = append(errs, fmt.Errorf("get UUID: %w", ret))
	}
	if gpu.Name, ret = dev.GetName(); ret != nvml.SUCCESS {
		errs = append(errs, fmt.Errorf("get name: %w", ret))
	}
	if gpu.Minor, ret = dev.GetMinorNumber(); ret != nvml.SUCCESS {
		errs = append(errs, fmt.Errorf("get minor number: %w", ret))
	}
	if pci, ret := dev.GetPciInfo(); ret != nvml.SUCCESS {
		errs = append(errs, fmt.Errorf("get PCI info: %w", ret))
	} else {
		gpu.BusID = cString(pci.BusId[:])
	}
	if mem, ret := dev.GetMemoryInfo(); ret != nvml.SUCCESS {
		errs = append(errs, fmt.Errorf("get memory info: %w", ret))
	} else {
		gpu.MemoryTotal = mem.Total
	}
	if err := migDevices(dev, &gpu); err != nil {
		errs = append(errs, err)
	}
	switch info, ret := dev.GetGpuFabricInfoV().V2(); {
	case ret == nvml.ERROR_NOT_SUPPORTED:
	case ret != nvml.SUCCESS:
		errs = append(errs, fmt.Errorf("get fabric info: %w", ret))
	case info.State == nvml.GPU_FABRIC_STATE_COMPLETED && nvml.Return(info.Status) == nvml.SUCCESS:
		gpu.Clique = nvidiahw.Clique(nvidiahw.FormatClusterUUID(info.ClusterUuid), info.CliqueId)
	}
	err = errors.Join(errs...)
	return gpu, err
}

// migDevices fills the GPU's MIG mode and MIG devices. A GPU that is not MIG
// capable (NOT_SUPPORTED) simply has MIG disabled; empty MIG device slots
// answer NOT_FOUND and are skipped.
func migDevices(dev nvml.Device, gpu *GPU) error {
	current, _, ret := dev.GetMigMode()
	if ret == nvml.ERROR_NOT_SUPPORTED {
		return nil
	}
	if ret != nvml.SUCCESS {
		return fmt.Errorf("get MIG mode: %w", ret)
	}
	gpu.MIGEnabled = current == nvml.DEVICE_MIG_ENABLE
	if !gpu.MIGEnabled {
		return nil
	}
	slots, ret := dev.GetMaxMigDeviceCount()
	if ret != nvml.SUCCESS {
		return fmt.Errorf("get max MIG device count: %w", ret)
	}
	var errs []error
	for i := range slots {
		mig, ret := dev.GetMigDeviceHandleByIndex(i)
		if ret == nvml.ERROR_NOT_FOUND {
			continue
		}
		if ret != nvml.SUCCESS {
			errs = append(errs, fmt.Errorf("get MIG device handle %d: %w", i, ret))
			continue
		}
		var m MIGDevice
		if m.UUID, ret = mig.GetUUID(); ret != nvml.SUCCESS {
			errs = append(errs, fmt.Errorf("MIG device %d: get UUID: %w", i, ret))
		}
		if m.Name, ret = mig.GetName(); ret != nvml.SUCCESS {
			errs = append(errs, fmt.Errorf("MIG device %d: get name: %w", i, ret))
		}
		if m.GPUInstance, ret = mig.GetGpuInstanceId(); ret != nvml.SUCCESS {
			errs = append(errs, fmt.Errorf("MIG device %d: get GPU instance id: %w", i, ret))
		}
		if m.ComputeInstance, ret = mig.GetComputeInstanceId(); ret != nvml.SUCCESS {
			errs = append(errs, fmt.Errorf("MIG device %d: get compute instance id: %w", i, ret))
		}
		if mem, ret := mig.GetMemoryInfo(); ret != nvml.SUCCESS {
			errs = append(errs, fmt.Errorf("MIG device %d: get memory info: %w", i, ret))
		} else {
			m.MemoryTotal = mem.Total
		}
		gpu.MIGDevices = append(gpu.MIGDevices, m)
	}
	return errors.Join(errs...)
}

// retErr turns an NVML return code into an error, nil for SUCCESS.
func retErr(ret nvml.Return) error {
	if ret == nvml.SUCCESS {
		return nil
	}
	return ret
}

// cString converts a NUL-terminated C char array.
func cString(chars []int8) string {
	b := make([]byte, 0, len(chars))
	for _, c := range chars {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}
