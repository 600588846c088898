/* The part of NVML's C ABI the bridge exports (nvml.h's layouts). */
#ifndef MOCKNVML_BRIDGE_H
#define MOCKNVML_BRIDGE_H

#define MOCKNVML_MAX_DEVICES 64

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;

typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

nvmlDevice_t mocknvml_handle(int index);
int mocknvml_index(nvmlDevice_t device);

#endif
