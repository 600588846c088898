/*
 * Device queries: what NVML reports about a GPU (and, where NVML allows it,
 * a MIG device: its parent's value unless noted), from the state file's GPU
 * record. Semantics as in shim.c.
 */
#define _GNU_SOURCE

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "nvml_abi.h"
#include "shim.h"
#include "state.h"

/* ---- device queries ---- */

/* A MIG device is named "<GPU name> MIG <profile>", e.g. "NVIDIA A100-SXM4-40GB MIG 1g.5gb". */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
    const struct nvmlDevice_st *d;
    const struct drakit_ci *mig;
    nvmlReturn_t rc = drakit_enter_any(device, &d, &mig);
    if (rc == NVML_SUCCESS) {
        rc = mig != NULL ? drakit_mig_name(mig, name, length)
                         : drakit_copy_string(name, length, d->name, d->name_len);
    }
    return drakit_leave(rc);
}

/* A MIG device's UUID is its MIG-<uuid>. */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length) {
    const struct nvmlDevice_st *d;
    const struct drakit_ci *mig;
    nvmlReturn_t rc = drakit_enter_any(device, &d, &mig);
    if (rc == NVML_SUCCESS) {
        rc = drakit_copy_string(uuid, length, mig != NULL ? mig->uuid : d->uuid, DRAKIT_UUID_LEN);
    }
    return drakit_leave(rc);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber) {
    DRAKIT_GPU_ANSWER(device, minorNumber, (unsigned int)d->minor);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index) {
    DRAKIT_GPU_ANSWER(device, index, d->index);
}

/* v1: used counts the driver's reservation, so total = free + used. A MIG
 * device has its GPU instance's memory, all of it free. */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
    const struct nvmlDevice_st *d;
    const struct drakit_ci *mig;
    nvmlReturn_t rc = drakit_enter_any(device, &d, &mig);
    if (rc == NVML_SUCCESS) {
        if (memory == NULL) {
            rc = NVML_ERROR_INVALID_ARGUMENT;
        } else if (mig != NULL) {
            memory->total = memory->free = drakit_mig_memory_bytes(mig);
            memory->used = 0;
        } else {
            memory->total = d->memory_total;
            memory->free = d->memory_total - d->memory_reserved;
            memory->used = d->memory_reserved;
        }
    }
    return drakit_leave(rc);
}

/* v2: the reservation is reported apart; nothing is allocated on an emulated
 * GPU, so used is 0 and total = reserved + free + used. */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory) {
    const struct nvmlDevice_st *d;
    const struct drakit_ci *mig;
    nvmlReturn_t rc = drakit_enter_any(device, &d, &mig);
    if (rc == NVML_SUCCESS) {
        if (memory == NULL) {
            rc = NVML_ERROR_INVALID_ARGUMENT;
        } else if (memory->version != nvmlMemory_v2) {
            rc = NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
        } else if (mig != NULL) {
            memory->total = memory->free = drakit_mig_memory_bytes(mig);
            memory->reserved = memory->used = 0;
        } else {
            memory->total = d->memory_total;
            memory->reserved = d->memory_reserved;
            memory->free = d->memory_total - d->memory_reserved;
            memory->used = 0;
        }
    }
    return drakit_leave(rc);
}

/*
 * The legacy bus id has a 4-digit domain ("0000:1B:00.0"); it must fit 16
 * bytes with its NUL, so a domain of 0x10000000 or more leaves it empty.
 */
static void legacy_bus_id(const struct nvmlDevice_st *d, char out[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE]) {
    char tmp[64];
    int n = snprintf(tmp, sizeof tmp, "%04X:%02X:%02X.%X", d->domain, d->bus, d->device,
                     d->function);
    memset(out, 0, NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE);
    if (n > 0 && n < NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE) {
        memcpy(out, tmp, (size_t)n);
    }
}

/*
 * v1's struct ended after pciSubSystemId with reserved words where today's
 * busId begins: write only the 36-byte prefix both layouts share, with the
 * legacy bus id in the first field, so neither kind of caller is corrupted.
 */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t *pci) {
    const struct nvmlDevice_st *d;
    const struct drakit_ci *mig; /* a MIG device answers with its GPU's value */
    nvmlReturn_t rc = drakit_enter_any(device, &d, &mig);
    if (rc == NVML_SUCCESS) {
        if (pci == NULL) {
            rc = NVML_ERROR_INVALID_ARGUMENT;
        } else {
            legacy_bus_id(d, pci->busIdLegacy);
            pci->domain = d->domain;
            pci->bus = d->bus;
            pci->device = d->device;
            pci->pciDeviceId = d->pci_device_id;
            pci->pciSubSystemId = d->pci_subsystem_id;
        }
    }
    return drakit_leave(rc);
}

static nvmlReturn_t pci_info(nvmlDevice_t device, nvmlPciInfo_t *pci) {
    const struct nvmlDevice_st *d;
    const struct drakit_ci *mig; /* a MIG device answers with its GPU's value */
    nvmlReturn_t rc = drakit_enter_any(device, &d, &mig);
    if (rc == NVML_SUCCESS) {
        if (pci == NULL) {
            rc = NVML_ERROR_INVALID_ARGUMENT;
        } else {
            memset(pci, 0, sizeof *pci);
            legacy_bus_id(d, pci->busIdLegacy);
            pci->domain = d->domain;
            pci->bus = d->bus;
            pci->device = d->device;
            pci->pciDeviceId = d->pci_device_id;
            pci->pciSubSystemId = d->pci_subsystem_id;
            memcpy(pci->busId, d->bus_id, DRAKIT_BUS_ID_LEN);
        }
    }
    return drakit_leave(rc);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t *pci) {
    return pci_info(device, pci);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci) {
    return pci_info(device, pci);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device,
                                                   nvmlDeviceArchitecture_t *arch) {
    DRAKIT_ANY_ANSWER(device, arch, (nvmlDeviceArchitecture_t)d->architecture);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device, nvmlBrandType_t *type) {
    DRAKIT_ANY_ANSWER(device, type, (nvmlBrandType_t)(int)d->brand);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major,
                                                            int *minor) {
    const struct nvmlDevice_st *d;
    const struct drakit_ci *mig; /* a MIG device answers with its GPU's value */
    nvmlReturn_t rc = drakit_enter_any(device, &d, &mig);
    if (rc == NVML_SUCCESS) {
        if (major == NULL || minor == NULL) {
            rc = NVML_ERROR_INVALID_ARGUMENT;
        } else {
            *major = (int)d->cc_major;
            *minor = (int)d->cc_minor;
        }
    }
    return drakit_leave(rc);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode,
                                              unsigned int *pendingMode) {
    const struct nvmlDevice_st *d;
    nvmlReturn_t rc = drakit_enter_device(device, &d);
    if (rc == NVML_SUCCESS) {
        if (currentMode == NULL || pendingMode == NULL) {
            rc = NVML_ERROR_INVALID_ARGUMENT;
        } else if (!d->mig_capable) {
            rc = NVML_ERROR_NOT_SUPPORTED;
        } else {
            *currentMode = (unsigned int)d->mig_mode;
            *pendingMode = (unsigned int)d->mig_mode;
        }
    }
    return drakit_leave(rc);
}

/* The state's numaNode; -1 (unknown) or any value out of range is NOT_SUPPORTED. */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int *node) {
    const struct nvmlDevice_st *d;
    const struct drakit_ci *mig; /* a MIG device answers with its GPU's value */
    nvmlReturn_t rc = drakit_enter_any(device, &d, &mig);
    if (rc == NVML_SUCCESS) {
        if (node == NULL) {
            rc = NVML_ERROR_INVALID_ARGUMENT;
        } else if (d->numa_node < 0 || d->numa_node > (int64_t)UINT_MAX) {
            rc = NVML_ERROR_NOT_SUPPORTED;
        } else {
            *node = (unsigned int)d->numa_node;
        }
    }
    return drakit_leave(rc);
}

/* Persistence mode is off, NVML's default; the state file does not model it. */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, nvmlEnableState_t *mode) {
    DRAKIT_GPU_ANSWER(device, mode, NVML_FEATURE_DISABLED);
}

/* Emulated GPUs are bare metal. */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetVirtualizationMode(nvmlDevice_t device,
                                                         nvmlGpuVirtualizationMode_t *pVirtualMode) {
    DRAKIT_ANY_ANSWER(device, pVirtualMode, NVML_GPU_VIRTUALIZATION_MODE_NONE);
}

/*
 * The addressing mode a driver reports on an x86-64 host with NVIDIA's open
 * kernel modules (the default since driver 560 for Turing and newer): HMM,
 * system memory mirrored into the GPU's page tables. Before Turing, or for
 * an architecture NVML does not know, the query is NOT_SUPPORTED, as nvml.h
 * documents. A MIG device answers with its GPU's mode.
 */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetAddressingMode(nvmlDevice_t device,
                                                     nvmlDeviceAddressingMode_t *mode) {
    const struct nvmlDevice_st *d;
    const struct drakit_ci *mig;
    nvmlReturn_t rc = drakit_enter_any(device, &d, &mig);
    if (rc == NVML_SUCCESS) {
        unsigned int arch = (unsigned int)d->architecture;
        if (mode == NULL) {
            rc = NVML_ERROR_INVALID_ARGUMENT;
        } else if (mode->version != nvmlDeviceAddressingMode_v1) {
            rc = NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
        } else if (arch < NVML_DEVICE_ARCH_TURING || arch == NVML_DEVICE_ARCH_UNKNOWN) {
            rc = NVML_ERROR_NOT_SUPPORTED;
        } else {
            mode->value = NVML_DEVICE_ADDRESSING_MODE_HMM;
        }
    }
    return drakit_leave(rc);
}

/* Every emulated GPU sits on PCI Express (its procfs information file says
 * "Bus Type: PCIe"). */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetBusType(nvmlDevice_t device, nvmlBusType_t *type) {
    DRAKIT_ANY_ANSWER(device, type, NVML_BUS_TYPE_PCIE);
}

/* The compute mode is DEFAULT, the driver's default; the state file does not
 * model nvidia-smi -c. */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, nvmlComputeMode_t *mode) {
    DRAKIT_GPU_ANSWER(device, mode, NVML_COMPUTEMODE_DEFAULT);
}

/*
 * No process runs on an emulated GPU or MIG device: every running-process
 * list is empty. *infoCount becomes 0; infos may be NULL only when
 * *infoCount is 0, as nvml.h documents. Nothing is written to infos, so the
 * three struct versions share this.
 */
static nvmlReturn_t no_processes(nvmlDevice_t device, unsigned int *infoCount, const void *infos) {
    const struct nvmlDevice_st *d;
    const struct drakit_ci *mig;
    nvmlReturn_t rc = drakit_enter_any(device, &d, &mig);
    if (rc == NVML_SUCCESS) {
        if (infoCount == NULL || (infos == NULL && *infoCount != 0)) {
            rc = NVML_ERROR_INVALID_ARGUMENT;
        } else {
            *infoCount = 0;
        }
    }
    return drakit_leave(rc);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                 unsigned int *infoCount,
                                                                 nvmlProcessInfo_t *infos) {
    return no_processes(device, infoCount, infos);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device,
                                                                 unsigned int *infoCount,
                                                                 nvmlProcessInfo_v2_t *infos) {
    return no_processes(device, infoCount, infos);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device,
                                                              unsigned int *infoCount,
                                                              nvmlProcessInfo_v1_t *infos) {
    return no_processes(device, infoCount, infos);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device,
                                                                  unsigned int *infoCount,
                                                                  nvmlProcessInfo_t *infos) {
    return no_processes(device, infoCount, infos);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t device,
                                                                  unsigned int *infoCount,
                                                                  nvmlProcessInfo_v2_t *infos) {
    return no_processes(device, infoCount, infos);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t device,
                                                               unsigned int *infoCount,
                                                               nvmlProcessInfo_v1_t *infos) {
    return no_processes(device, infoCount, infos);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                    unsigned int *infoCount,
                                                                    nvmlProcessInfo_t *infos) {
    return no_processes(device, infoCount, infos);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v2(nvmlDevice_t device,
                                                                    unsigned int *infoCount,
                                                                    nvmlProcessInfo_v2_t *infos) {
    return no_processes(device, infoCount, infos);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses(nvmlDevice_t device,
                                                                 unsigned int *infoCount,
                                                                 nvmlProcessInfo_v1_t *infos) {
    return no_processes(device, infoCount, infos);
}
