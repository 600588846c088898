/*
 * NVLink, fabric and topology queries: the links of a GPU and their far
 * ends, its multi-node fabric membership, and how two GPUs reach each other
 * (the nvlink, fabric and peer records of the state file; semantics as in
 * shim.c). A GPU handle only: a MIG device gets NVML_ERROR_NOT_SUPPORTED, a
 * lost GPU NVML_ERROR_GPU_IS_LOST; a link at or past the driver's
 * NVML_NVLINK_MAX_LINKS (18) is NVML_ERROR_INVALID_ARGUMENT, a link or GPU
 * without a record NVML_ERROR_NOT_SUPPORTED.
 */
#define _GNU_SOURCE

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "nvml_abi.h"
#include "shim.h"
#include "state.h"

/* enter_link locks, resolves device and finds its link record: *out is set
 * on NVML_SUCCESS. result is the caller's output pointer (NULL: invalid). */
static nvmlReturn_t enter_link(nvmlDevice_t device, unsigned int link, const void *result,
                               const struct drakit_nvlink **out) {
    const struct nvmlDevice_st *d;
    nvmlReturn_t rc = drakit_enter_device(device, &d);
    if (rc != NVML_SUCCESS) {
        return rc;
    }
    if (result == NULL || link >= DRAKIT_MAX_NVLINKS) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    *out = drakit_nvlink_of(&g_state, d->minor, link);
    return *out == NULL ? NVML_ERROR_NOT_SUPPORTED : NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                                  nvmlEnableState_t *isActive) {
    const struct drakit_nvlink *l;
    nvmlReturn_t rc = enter_link(device, link, isActive, &l);
    if (rc == NVML_SUCCESS) {
        *isActive = l->active ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    }
    return drakit_leave(rc);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkVersion(nvmlDevice_t device, unsigned int link,
                                                    unsigned int *version) {
    const struct drakit_nvlink *l;
    nvmlReturn_t rc = enter_link(device, link, version, &l);
    if (rc == NVML_SUCCESS) {
        *version = (unsigned int)l->version;
    }
    return drakit_leave(rc);
}

/* Every link of the emulated data-centre GPUs supports P2P, system memory
 * access and atomics over NVLink; none is an SLI bridge. */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkCapability(nvmlDevice_t device, unsigned int link,
                                                       nvmlNvLinkCapability_t capability,
                                                       unsigned int *capResult) {
    const struct drakit_nvlink *l;
    nvmlReturn_t rc = enter_link(device, link, capResult, &l);
    if (rc == NVML_SUCCESS && (unsigned int)capability >= NVML_NVLINK_CAP_COUNT) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    } else if (rc == NVML_SUCCESS) {
        *capResult = capability != NVML_NVLINK_CAP_SLI_BRIDGE;
    }
    return drakit_leave(rc);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link,
                                                             nvmlPciInfo_t *pci) {
    const struct drakit_nvlink *l;
    nvmlReturn_t rc = enter_link(device, link, pci, &l);
    if (rc == NVML_SUCCESS) {
        memset(pci, 0, sizeof *pci);
        snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.%X", l->domain & 0xFFFF,
                 l->bus, l->device, l->function);
        pci->domain = l->domain;
        pci->bus = l->bus;
        pci->device = l->device;
        pci->pciDeviceId = (unsigned int)l->remote_device_id;
        memcpy(pci->busId, l->remote_bus, DRAKIT_BUS_ID_LEN);
    }
    return drakit_leave(rc);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t device, unsigned int link,
                                                             nvmlIntNvLinkDeviceType_t *pNvLinkDeviceType) {
    const struct drakit_nvlink *l;
    nvmlReturn_t rc = enter_link(device, link, pNvLinkDeviceType, &l);
    if (rc == NVML_SUCCESS) {
        *pNvLinkDeviceType = (nvmlIntNvLinkDeviceType_t)l->remote_type;
    }
    return drakit_leave(rc);
}

/* ---- fabric ---- */

/* fabric_uuid writes the 16 bytes of a validated clusterUuid text. */
static void fabric_uuid(const struct drakit_fabric *x, unsigned char out[NVML_GPU_FABRIC_UUID_LEN]) {
    size_t n = 0;
    for (size_t i = 0; i + 1 < x->uuid_len && n < NVML_GPU_FABRIC_UUID_LEN; i++) {
        if (x->uuid[i] == '-') {
            continue;
        }
        unsigned int hi = (unsigned int)(x->uuid[i] <= '9' ? x->uuid[i] - '0' : x->uuid[i] - 'a' + 10);
        unsigned int lo = (unsigned int)(x->uuid[i + 1] <= '9' ? x->uuid[i + 1] - '0' : x->uuid[i + 1] - 'a' + 10);
        out[n++] = (unsigned char)(hi << 4 | lo);
        i++;
    }
}

/* health_summary condenses a health mask: bandwidth degraded is limited
 * capacity, an unhealthy route unhealthy; only a completed probe has one. */
static unsigned char health_summary(const struct drakit_fabric *x) {
    if (x->state != NVML_GPU_FABRIC_STATE_COMPLETED) {
        return NVML_GPU_FABRIC_HEALTH_SUMMARY_NOT_SUPPORTED;
    }
    if ((x->health_mask >> 4 & 3) == 1) {
        return NVML_GPU_FABRIC_HEALTH_SUMMARY_UNHEALTHY;
    }
    if ((x->health_mask & 3) == 1) {
        return NVML_GPU_FABRIC_HEALTH_SUMMARY_LIMITED_CAPACITY;
    }
    return NVML_GPU_FABRIC_HEALTH_SUMMARY_HEALTHY;
}

static nvmlReturn_t enter_fabric(nvmlDevice_t device, const void *info, const struct drakit_fabric **out) {
    const struct nvmlDevice_st *d;
    nvmlReturn_t rc = drakit_enter_device(device, &d);
    if (rc != NVML_SUCCESS) {
        return rc;
    }
    if (info == NULL) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    *out = drakit_fabric_of(&g_state, d->minor);
    return *out == NULL ? NVML_ERROR_NOT_SUPPORTED : NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t device, nvmlGpuFabricInfo_t *gpuFabricInfo) {
    const struct drakit_fabric *x;
    nvmlReturn_t rc = enter_fabric(device, gpuFabricInfo, &x);
    if (rc == NVML_SUCCESS) {
        memset(gpuFabricInfo, 0, sizeof *gpuFabricInfo);
        fabric_uuid(x, gpuFabricInfo->clusterUuid);
        gpuFabricInfo->status = (nvmlReturn_t)x->status;
        gpuFabricInfo->cliqueId = (unsigned int)x->clique;
        gpuFabricInfo->state = (nvmlGpuFabricState_t)x->state;
    }
    return drakit_leave(rc);
}

/* Versions 2 and 3 (v3 adds healthSummary); another version word is
 * NVML_ERROR_ARGUMENT_VERSION_MISMATCH, as NVML answers. */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t device, nvmlGpuFabricInfoV_t *gpuFabricInfo) {
    const struct drakit_fabric *x;
    nvmlReturn_t rc = enter_fabric(device, gpuFabricInfo, &x);
    if ((rc == NVML_SUCCESS || rc == NVML_ERROR_NOT_SUPPORTED) && gpuFabricInfo->version != nvmlGpuFabricInfo_v2 &&
        gpuFabricInfo->version != nvmlGpuFabricInfo_v3) {
        rc = NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    } else if (rc == NVML_SUCCESS) {
        unsigned int version = gpuFabricInfo->version;
        size_t size = version == nvmlGpuFabricInfo_v3 ? sizeof(nvmlGpuFabricInfo_v3_t) : sizeof(nvmlGpuFabricInfo_v2_t);
        memset(gpuFabricInfo, 0, size);
        gpuFabricInfo->version = version;
        fabric_uuid(x, gpuFabricInfo->clusterUuid);
        gpuFabricInfo->status = (nvmlReturn_t)x->status;
        gpuFabricInfo->cliqueId = (unsigned int)x->clique;
        gpuFabricInfo->state = (nvmlGpuFabricState_t)x->state;
        gpuFabricInfo->healthMask = (unsigned int)x->health_mask;
        if (version == nvmlGpuFabricInfo_v3) {
            gpuFabricInfo->healthSummary = health_summary(x);
        }
    }
    return drakit_leave(rc);
}

/* ---- two GPUs ---- */

/* enter_pair locks, resolves two different GPU handles and finds their peer
 * record. */
static nvmlReturn_t enter_pair(nvmlDevice_t device1, nvmlDevice_t device2, const void *result,
                               const struct drakit_peer **out) {
    const struct nvmlDevice_st *a;
    nvmlReturn_t rc = drakit_enter_device(device1, &a);
    if (rc != NVML_SUCCESS) {
        return rc;
    }
    const struct nvmlDevice_st *b = drakit_lookup_gpu(device2.handle);
    if (b == NULL) {
        return drakit_handle_lost(device2.handle) ? NVML_ERROR_GPU_IS_LOST : NVML_ERROR_INVALID_ARGUMENT;
    }
    if (result == NULL || a == b) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    *out = drakit_peer_of(&g_state, a->minor, b->minor);
    return *out == NULL ? NVML_ERROR_NOT_SUPPORTED : NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2,
                                                             nvmlGpuTopologyLevel_t *pathInfo) {
    const struct drakit_peer *p;
    nvmlReturn_t rc = enter_pair(device1, device2, pathInfo, &p);
    if (rc == NVML_SUCCESS) {
        *pathInfo = (nvmlGpuTopologyLevel_t)p->ancestor;
    }
    return drakit_leave(rc);
}

/*
 * Over NVLink every capability is OK. Without it: reads and writes go over
 * PCIe below one host bridge, not across host bridges (the chipset's
 * limit); PCIe atomics are not supported; the NVLink index says NOT_SUPPORTED.
 */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t device1, nvmlDevice_t device2,
                                                nvmlGpuP2PCapsIndex_t p2pIndex, nvmlGpuP2PStatus_t *p2pStatus) {
    const struct drakit_peer *p;
    nvmlReturn_t rc = enter_pair(device1, device2, p2pStatus, &p);
    if (rc == NVML_SUCCESS && (unsigned int)p2pIndex >= NVML_P2P_CAPS_INDEX_UNKNOWN) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    } else if (rc == NVML_SUCCESS) {
        nvmlGpuP2PStatus_t st = NVML_P2P_STATUS_OK;
        if (!p->nvlink) {
            switch (p2pIndex) {
            case NVML_P2P_CAPS_INDEX_NVLINK:
            case NVML_P2P_CAPS_INDEX_ATOMICS:
                st = NVML_P2P_STATUS_NOT_SUPPORTED;
                break;
            default:
                st = p->ancestor <= NVML_TOPOLOGY_HOSTBRIDGE ? NVML_P2P_STATUS_OK
                                                             : NVML_P2P_STATUS_CHIPSET_NOT_SUPPORTED;
            }
        }
        *p2pStatus = st;
    }
    return drakit_leave(rc);
}
