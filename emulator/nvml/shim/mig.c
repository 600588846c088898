/*
 * The MIG API of the shim, over the state file's MIG records (package
 * nvmlstate, mig.go): here GPU and compute instances and MIG devices;
 * handles and visibility in handles.c (shim.h), entry points in
 * mig_enter.c, profiles in mig_profiles.c, mutations in mig_create.c (with
 * mig_ids.c, caps.c and state_write.c). A destroyed instance's handle gets
 * NVML_ERROR_INVALID_ARGUMENT.
 *
 * Mutations (set MIG mode, create and destroy GIs and CIs) follow the state
 * file's concurrency rule: flock <state>.lock, reread the state, check and
 * apply, create the capability files and nodes, write the new state to a
 * temporary file, fsync, rename it over the state file, remove the nodes of
 * what was destroyed, unlock. They need the config capability
 * (/dev/nvidia-caps/nvidia-cap1), as real MIG management does, and root for
 * mknod: NVML_ERROR_NO_PERMISSION otherwise. Ids and UUIDs follow the
 * emulator's renderer (emulator/gpu): GI id from the placement (GIID),
 * CI id the lowest free one, MIG-<uuid> from SHA-256 of
 * "<GPU uuid>/gi<G>/ci<C>" (DeriveMIGUUID).
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mig_internal.h"

/* ---- lookups ---- */

/* ---- GPU instances ---- */

/* Instances of a profile, visible ones only, in id order; *count is the
 * buffer's size on entry and the number of instances on return. */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profileId,
                                                   nvmlGpuInstance_t *gpuInstances,
                                                   unsigned int *count) {
    const struct nvmlDevice_st *d;
    const struct drakit_giprofile *p;
    nvmlReturn_t rc = drakit_gi_profile_by_id(device, profileId, 1, &d, &p);
    if (rc == NVML_SUCCESS && (gpuInstances == NULL || count == NULL)) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc != NVML_SUCCESS) {
        return drakit_leave(rc);
    }
    unsigned int n = 0;
    for (int64_t id = 0; id < NUM_GIS; id++) {
        const struct drakit_gi *g = drakit_visible_gi(d->minor, id);
        if (g != NULL && g->profile == p->id) {
            if (n < *count) {
                gpuInstances[n] = drakit_gi_handle(d->minor, id);
            }
            n++;
        }
    }
    rc = n > *count ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
    *count = n;
    return drakit_leave(rc);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id,
                                                      nvmlGpuInstance_t *gpuInstance) {
    const struct nvmlDevice_st *d;
    const struct drakit_mig *mig;
    nvmlReturn_t rc = drakit_enter_enabled(device, &d, &mig);
    if (rc == NVML_SUCCESS && (gpuInstance == NULL || id >= NUM_GIS)) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc == NVML_SUCCESS && drakit_visible_gi(d->minor, id) == NULL) {
        rc = NVML_ERROR_NOT_FOUND;
    }
    if (rc == NVML_SUCCESS) {
        *gpuInstance = drakit_gi_handle(d->minor, id);
    }
    return drakit_leave(rc);
}

NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance,
                                                nvmlGpuInstanceInfo_t *info) {
    const struct drakit_gi *g;
    nvmlReturn_t rc = drakit_enter_gi(gpuInstance, &g);
    if (rc == NVML_SUCCESS && info == NULL) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc == NVML_SUCCESS) {
        info->device = drakit_gpu_handle(g->gpu);
        info->id = (unsigned int)g->id;
        info->profileId = (unsigned int)g->profile;
        info->placement.start = (unsigned int)g->start;
        info->placement.size = (unsigned int)g->size;
    }
    return drakit_leave(rc);
}

/* ---- compute instances and MIG devices ---- */

NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstances(
    nvmlGpuInstance_t gpuInstance, unsigned int profileId,
    nvmlComputeInstance_t *computeInstances, unsigned int *count) {
    const struct drakit_gi *g;
    const struct drakit_ciprofile *p;
    nvmlReturn_t rc = drakit_ci_profile_by_id(gpuInstance, profileId, &g, &p);
    if (rc == NVML_SUCCESS && (computeInstances == NULL || count == NULL)) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc != NVML_SUCCESS) {
        return drakit_leave(rc);
    }
    unsigned int n = 0;
    for (int64_t id = 0; id < NUM_CIS; id++) {
        const struct drakit_ci *c = drakit_visible_ci(g->gpu, g->id, id);
        if (c != NULL && c->profile == p->id) {
            if (n < *count) {
                computeInstances[n] = drakit_ci_handle(g->gpu, g->id, id);
            }
            n++;
        }
    }
    rc = n > *count ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
    *count = n;
    return drakit_leave(rc);
}

NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceById(
    nvmlGpuInstance_t gpuInstance, unsigned int id, nvmlComputeInstance_t *computeInstance) {
    const struct drakit_gi *g;
    nvmlReturn_t rc = drakit_enter_gi(gpuInstance, &g);
    if (rc == NVML_SUCCESS && (computeInstance == NULL || id >= NUM_CIS)) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc == NVML_SUCCESS && drakit_visible_ci(g->gpu, g->id, id) == NULL) {
        rc = NVML_ERROR_NOT_FOUND;
    }
    if (rc == NVML_SUCCESS) {
        *computeInstance = drakit_ci_handle(g->gpu, g->id, id);
    }
    return drakit_leave(rc);
}

static nvmlReturn_t ci_info(nvmlComputeInstance_t computeInstance, nvmlComputeInstanceInfo_t *info) {
    nvmlReturn_t rc = drakit_enter();
    const struct drakit_ci *c = NULL;
    if (rc == NVML_SUCCESS && (info == NULL || (c = drakit_lookup_ci(computeInstance)) == NULL)) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc == NVML_SUCCESS) {
        info->device.handle = drakit_mig_handle(c);
        info->gpuInstance = drakit_gi_handle(c->gpu, c->gi);
        info->id = (unsigned int)c->id;
        info->profileId = (unsigned int)c->profile;
        info->placement.start = (unsigned int)c->start;
        info->placement.size = (unsigned int)c->size;
    }
    return drakit_leave(rc);
}

NVML_EXPORT nvmlReturn_t nvmlComputeInstanceGetInfo(nvmlComputeInstance_t computeInstance,
                                                    nvmlComputeInstanceInfo_t *info) {
    return ci_info(computeInstance, info);
}

NVML_EXPORT nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t computeInstance,
                                                       nvmlComputeInstanceInfo_t *info) {
    return ci_info(computeInstance, info);
}

/* The GPU's maxDevices with MIG mode on, 0 otherwise or without MIG tables. */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count) {
    const struct nvmlDevice_st *d = NULL;
    const struct drakit_mig *mig = NULL;
    nvmlReturn_t rc = drakit_enter_gpu(device, &d, &mig);
    if (rc == NVML_ERROR_NOT_SUPPORTED && d != NULL) {
        rc = NVML_SUCCESS; /* not MIG capable: zero */
    }
    if (rc == NVML_SUCCESS && count == NULL) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc == NVML_SUCCESS) {
        *count = d->mig_capable && mig != NULL && d->mig_mode == 1
                     ? (unsigned int)mig->max_devices
                     : 0;
    }
    return drakit_leave(rc);
}

/* Slots 0..n-1 are the GPU's visible MIG devices ordered by (GI id, CI id);
 * the other slots below maxDevices are empty (NOT_FOUND). */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device,
                                                             unsigned int index,
                                                             nvmlDevice_t *migDevice) {
    const struct nvmlDevice_st *d;
    const struct drakit_mig *mig;
    nvmlReturn_t rc = drakit_enter_enabled(device, &d, &mig);
    if (rc == NVML_SUCCESS && (migDevice == NULL || index >= (unsigned int)mig->max_devices)) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc != NVML_SUCCESS) {
        return drakit_leave(rc);
    }
    unsigned int n = 0;
    for (int64_t gi = 0; gi < NUM_GIS; gi++) {
        for (int64_t ci = 0; ci < NUM_CIS; ci++) {
            const struct drakit_ci *c = drakit_visible_ci(d->minor, gi, ci);
            if (c != NULL && n++ == index) {
                migDevice->handle = drakit_mig_handle(c);
                return drakit_leave(NVML_SUCCESS);
            }
        }
    }
    return drakit_leave(NVML_ERROR_NOT_FOUND);
}

/* enter_mig locks and resolves a MIG device handle; a GPU handle is
 * INVALID_ARGUMENT. The caller must leave. */
static nvmlReturn_t enter_mig(nvmlDevice_t device, const struct drakit_ci **c) {
    nvmlReturn_t rc = drakit_enter();
    if (rc == NVML_SUCCESS && (*c = drakit_lookup_mig(device.handle)) == NULL) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    return rc;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int *isMigDevice) {
    nvmlReturn_t rc = drakit_enter();
    if (rc != NVML_SUCCESS) {
        return drakit_leave(rc);
    }
    int mig = drakit_lookup_mig(device.handle) != NULL;
    if (isMigDevice == NULL || (!mig && drakit_lookup_gpu(device.handle) == NULL)) {
        return drakit_leave(NVML_ERROR_INVALID_ARGUMENT);
    }
    *isMigDevice = (unsigned int)mig;
    return drakit_leave(NVML_SUCCESS);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice,
                                                                      nvmlDevice_t *device) {
    const struct drakit_ci *c;
    nvmlReturn_t rc = enter_mig(migDevice, &c);
    if (rc == NVML_SUCCESS && device == NULL) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc == NVML_SUCCESS) {
        *device = drakit_gpu_handle(c->gpu);
    }
    return drakit_leave(rc);
}

static nvmlReturn_t mig_id(nvmlDevice_t device, unsigned int *id, int want_gi) {
    const struct drakit_ci *c;
    nvmlReturn_t rc = enter_mig(device, &c);
    if (rc == NVML_ERROR_INVALID_ARGUMENT && drakit_lookup_gpu(device.handle) != NULL) {
        rc = NVML_ERROR_NOT_SUPPORTED; /* a GPU handle has no instance ids */
    }
    if (rc == NVML_SUCCESS && id == NULL) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc == NVML_SUCCESS) {
        *id = (unsigned int)(want_gi ? c->gi : c->id);
    }
    return drakit_leave(rc);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id) {
    return mig_id(device, id, 1);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id) {
    return mig_id(device, id, 0);
}

/* Attributes of a MIG device: its CI's SMs and slices, its GI's engines,
 * slices and memory. The state has no SM counts of whole GPUs, so a GPU
 * handle gets NOT_SUPPORTED. */
static nvmlReturn_t attributes(nvmlDevice_t device, nvmlDeviceAttributes_t *attr) {
    const struct drakit_ci *c;
    nvmlReturn_t rc = enter_mig(device, &c);
    if (rc == NVML_ERROR_INVALID_ARGUMENT && drakit_lookup_gpu(device.handle) != NULL) {
        rc = NVML_ERROR_NOT_SUPPORTED;
    }
    if (rc == NVML_SUCCESS && attr == NULL) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc == NVML_SUCCESS) {
        const struct drakit_gi *g = drakit_gi_of(&g_state, c->gpu, c->gi);
        const struct drakit_giprofile *gp = drakit_gi_profile_of(g);
        const struct drakit_ciprofile *p = drakit_ci_profile_of_ci(c);
        attr->multiprocessorCount = (unsigned int)p->sms;
        attr->sharedCopyEngineCount = (unsigned int)gp->copy_engines;
        attr->sharedDecoderCount = (unsigned int)gp->decoders;
        attr->sharedEncoderCount = (unsigned int)gp->encoders;
        attr->sharedJpegCount = (unsigned int)gp->jpegs;
        attr->sharedOfaCount = (unsigned int)gp->ofas;
        attr->gpuInstanceSliceCount = (unsigned int)gp->slices;
        attr->computeInstanceSliceCount = (unsigned int)p->slices;
        attr->memorySizeMB = gp->memory_mb;
    }
    return drakit_leave(rc);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetAttributes(nvmlDevice_t device,
                                                 nvmlDeviceAttributes_t *attributes_) {
    return attributes(device, attributes_);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device,
                                                    nvmlDeviceAttributes_t *attributes_) {
    return attributes(device, attributes_);
}
