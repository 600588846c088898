package main

/*
#include <string.h>
#include "bridge.h"
*/
import "C"

import (
	"sync"
	"unsafe"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
)

var (
	mu      sync.Mutex
	server  *dgxa100.Server
	indexOf map[nvml.Device]int // the mock's devices, by handle slot
)

func main() {}

//export nvmlInit_v2
func nvmlInit_v2() C.nvmlReturn_t {
	mu.Lock()
	defer mu.Unlock()
	if server == nil {
		server = dgxa100.New()
		indexOf = map[nvml.Device]int{}
		for i, d := range server.Devices {
			if i >= C.MOCKNVML_MAX_DEVICES {
				break
			}
			indexOf[d] = i
		}
	}
	return C.nvmlReturn_t(server.Init())
}

//export nvmlShutdown
func nvmlShutdown() C.nvmlReturn_t {
	s := current()
	if s == nil {
		return C.nvmlReturn_t(nvml.ERROR_UNINITIALIZED)
	}
	return C.nvmlReturn_t(s.Shutdown())
}

func current() *dgxa100.Server {
	mu.Lock()
	defer mu.Unlock()
	return server
}

//export nvmlDeviceGetCount_v2
func nvmlDeviceGetCount_v2(count *C.uint) C.nvmlReturn_t {
	s := current()
	if s == nil {
		return C.nvmlReturn_t(nvml.ERROR_UNINITIALIZED)
	}
	if count == nil {
		return C.nvmlReturn_t(nvml.ERROR_INVALID_ARGUMENT)
	}
	n, ret := s.DeviceGetCount()
	*count = C.uint(n)
	return C.nvmlReturn_t(ret)
}

//export nvmlDeviceGetHandleByIndex_v2
func nvmlDeviceGetHandleByIndex_v2(index C.uint, device *C.nvmlDevice_t) C.nvmlReturn_t {
	s := current()
	if s == nil {
		return C.nvmlReturn_t(nvml.ERROR_UNINITIALIZED)
	}
	if device == nil {
		return C.nvmlReturn_t(nvml.ERROR_INVALID_ARGUMENT)
	}
	d, ret := s.DeviceGetHandleByIndex(int(index))
	if ret != nvml.SUCCESS {
		return C.nvmlReturn_t(ret)
	}
	i, ok := indexOf[d]
	if !ok {
		return C.nvmlReturn_t(nvml.ERROR_UNKNOWN)
	}
	*device = C.mocknvml_handle(C.int(i))
	return C.nvmlReturn_t(nvml.SUCCESS)
}

// device resolves a handle to the mock's device.
func device(h C.nvmlDevice_t) (nvml.Device, nvml.Return) {
	s := current()
	if s == nil {
		return nil, nvml.ERROR_UNINITIALIZED
	}
	i := int(C.mocknvml_index(h))
	if i < 0 || i >= len(s.Devices) {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	return s.Devices[i], nvml.SUCCESS
}

// copyString writes s and a NUL into buf of length bytes, as NVML does.
func copyString(buf *C.char, length C.uint, s string) C.nvmlReturn_t {
	if buf == nil {
		return C.nvmlReturn_t(nvml.ERROR_INVALID_ARGUMENT)
	}
	if int(length) < len(s)+1 {
		return C.nvmlReturn_t(nvml.ERROR_INSUFFICIENT_SIZE)
	}
	dst := unsafe.Slice((*byte)(unsafe.Pointer(buf)), len(s)+1)
	copy(dst, s)
	dst[len(s)] = 0
	return C.nvmlReturn_t(nvml.SUCCESS)
}

//export nvmlDeviceGetUUID
func nvmlDeviceGetUUID(h C.nvmlDevice_t, uuid *C.char, length C.uint) C.nvmlReturn_t {
	d, ret := device(h)
	if ret != nvml.SUCCESS {
		return C.nvmlReturn_t(ret)
	}
	u, ret := d.GetUUID()
	if ret != nvml.SUCCESS {
		return C.nvmlReturn_t(ret)
	}
	return copyString(uuid, length, u)
}

//export nvmlDeviceGetName
func nvmlDeviceGetName(h C.nvmlDevice_t, name *C.char, length C.uint) C.nvmlReturn_t {
	d, ret := device(h)
	if ret != nvml.SUCCESS {
		return C.nvmlReturn_t(ret)
	}
	n, ret := d.GetName()
	if ret != nvml.SUCCESS {
		return C.nvmlReturn_t(ret)
	}
	return copyString(name, length, n)
}

//export nvmlDeviceGetMemoryInfo
func nvmlDeviceGetMemoryInfo(h C.nvmlDevice_t, memory *C.nvmlMemory_t) C.nvmlReturn_t {
	d, ret := device(h)
	if ret != nvml.SUCCESS {
		return C.nvmlReturn_t(ret)
	}
	if memory == nil {
		return C.nvmlReturn_t(nvml.ERROR_INVALID_ARGUMENT)
	}
	m, ret := d.GetMemoryInfo()
	if ret != nvml.SUCCESS {
		return C.nvmlReturn_t(ret)
	}
	memory.total, memory.free, memory.used = C.ulonglong(m.Total), C.ulonglong(m.Free), C.ulonglong(m.Used)
	return C.nvmlReturn_t(nvml.SUCCESS)
}

//export nvmlDeviceGetPciInfo_v3
func nvmlDeviceGetPciInfo_v3(h C.nvmlDevice_t, pci *C.nvmlPciInfo_t) C.nvmlReturn_t {
	d, ret := device(h)
	if ret != nvml.SUCCESS {
		return C.nvmlReturn_t(ret)
	}
	if pci == nil {
		return C.nvmlReturn_t(nvml.ERROR_INVALID_ARGUMENT)
	}
	p, ret := d.GetPciInfo()
	if ret != nvml.SUCCESS {
		return C.nvmlReturn_t(ret)
	}
	C.memset(unsafe.Pointer(pci), 0, C.sizeof_nvmlPciInfo_t)
	for i, c := range p.BusIdLegacy {
		pci.busIdLegacy[i] = C.char(c)
	}
	for i, c := range p.BusId {
		pci.busId[i] = C.char(c)
	}
	pci.domain, pci.bus, pci.device = C.uint(p.Domain), C.uint(p.Bus), C.uint(p.Device)
	pci.pciDeviceId, pci.pciSubSystemId = C.uint(p.PciDeviceId), C.uint(p.PciSubSystemId)
	return C.nvmlReturn_t(nvml.SUCCESS)
}
