/*
 * The MIG API of the shim, over the state file's MIG records (package
 * nvmlstate, mig.go).
 *
 * Handles. A GPU instance handle names (GPU minor, GI id), a compute
 * instance handle and a MIG device handle name (GPU minor, GI id, CI id):
 * each is the address of its slot in a static table, so handles are stable
 * for the life of the process, compare equal when they name the same thing,
 * and are checked on every call against the current state (a destroyed
 * instance's handle gets NVML_ERROR_INVALID_ARGUMENT).
 *
 * Visibility. As on a host or in a container, an instance exists for a
 * process only through its capability device nodes: a GI when
 * <root>/dev/nvidia-caps/nvidia-cap<gi cap minor> exists (and its GPU is
 * visible), a CI (a MIG device) when its GI's and its own node exist.
 *
 * Mutations (set MIG mode, create and destroy GIs and CIs) follow the state
 * file's concurrency rule: flock <state>.lock, reread the state, check and
 * apply, create the capability files and nodes, write the new state to a
 * temporary file, fsync, rename it over the state file, remove the nodes of
 * what was destroyed, unlock. They need the config capability
 * (/dev/nvidia-caps/nvidia-cap1), as real MIG management does, and root for
 * mknod: NVML_ERROR_NO_PERMISSION otherwise. Ids and UUIDs follow the
 * emulator's renderer (emulator/profile): GI id from the placement (GIID),
 * CI id the lowest free one, MIG-<uuid> from SHA-256 of
 * "<GPU uuid>/gi<G>/ci<C>" (DeriveMIGUUID).
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "nvml_abi.h"
#include "shim.h"
#include "state.h"

#define NUM_GPUS 255 /* minors 0..254 */
#define NUM_GIS 15   /* GI ids 0..14 */
#define NUM_CIS 8    /* CI ids 0..7 */
/* render.NvidiaCapsMajor: used when <root>/proc/devices names no nvidia-caps major. */
#define DEFAULT_NVIDIA_CAPS_MAJOR 235
#define CONFIG_CAP_MINOR 1
#define CAP_MODE 0444

struct nvmlGpuInstance_st {
    unsigned char slot;
};
struct nvmlComputeInstance_st {
    unsigned char slot;
};

static struct nvmlGpuInstance_st g_gi_handles[NUM_GPUS * NUM_GIS];
static struct nvmlComputeInstance_st g_ci_handles[NUM_GPUS * NUM_GIS * NUM_CIS];
static unsigned char g_mig_handles[NUM_GPUS * NUM_GIS * NUM_CIS];

static size_t gi_slot(int64_t gpu, int64_t gi) { return (size_t)(gpu * NUM_GIS + gi); }

static size_t ci_slot(int64_t gpu, int64_t gi, int64_t ci) {
    return gi_slot(gpu, gi) * NUM_CIS + (size_t)ci;
}

/* ---- lookups ---- */

static const struct drakit_gi *visible_gi(int64_t gpu, int64_t id) {
    const struct drakit_gi *g = drakit_gi_of(&g_state, gpu, id);
    return g != NULL && g->visible ? g : NULL;
}

static const struct drakit_ci *visible_ci(int64_t gpu, int64_t gi, int64_t id) {
    for (size_t i = 0; i < g_state.ncis; i++) {
        const struct drakit_ci *c = &g_state.cis[i];
        if (c->gpu == gpu && c->gi == gi && c->id == id) {
            return c->visible ? c : NULL;
        }
    }
    return NULL;
}

const struct drakit_ci *drakit_lookup_mig(const struct nvmlDevice_st *h) {
    uintptr_t p = (uintptr_t)h, base = (uintptr_t)g_mig_handles;
    if (p < base || p - base >= sizeof g_mig_handles) {
        return NULL;
    }
    size_t i = p - base;
    return visible_ci((int64_t)(i / (NUM_GIS * NUM_CIS)), (int64_t)(i / NUM_CIS % NUM_GIS),
                      (int64_t)(i % NUM_CIS));
}

struct nvmlDevice_st *drakit_mig_handle(const struct drakit_ci *c) {
    return (struct nvmlDevice_st *)(void *)&g_mig_handles[ci_slot(c->gpu, c->gi, c->id)];
}

static const struct drakit_gi *lookup_gi(nvmlGpuInstance_t h) {
    uintptr_t p = (uintptr_t)h.handle, base = (uintptr_t)g_gi_handles;
    if (p < base || p - base >= sizeof g_gi_handles) {
        return NULL;
    }
    size_t i = p - base;
    return visible_gi((int64_t)(i / NUM_GIS), (int64_t)(i % NUM_GIS));
}

static const struct drakit_ci *lookup_ci(nvmlComputeInstance_t h) {
    uintptr_t p = (uintptr_t)h.handle, base = (uintptr_t)g_ci_handles;
    if (p < base || p - base >= sizeof g_ci_handles) {
        return NULL;
    }
    size_t i = p - base;
    return visible_ci((int64_t)(i / (NUM_GIS * NUM_CIS)), (int64_t)(i / NUM_CIS % NUM_GIS),
                      (int64_t)(i % NUM_CIS));
}

static nvmlGpuInstance_t gi_handle(int64_t gpu, int64_t id) {
    nvmlGpuInstance_t h = {&g_gi_handles[gi_slot(gpu, id)]};
    return h;
}

static nvmlComputeInstance_t ci_handle(int64_t gpu, int64_t gi, int64_t id) {
    nvmlComputeInstance_t h = {&g_ci_handles[ci_slot(gpu, gi, id)]};
    return h;
}

static nvmlDevice_t gpu_handle(int64_t minor) {
    nvmlDevice_t d = {(struct nvmlDevice_st *)drakit_gpu_by_minor(&g_state, minor)};
    return d;
}

static const struct drakit_giprofile *gi_profile_of(const struct drakit_gi *g) {
    return drakit_giprofile_of(&g_state, g->gpu, g->profile);
}

static const struct drakit_ciprofile *ci_profile_of(const struct drakit_ci *c) {
    const struct drakit_gi *g = drakit_gi_of(&g_state, c->gpu, c->gi);
    return drakit_ciprofile_of(&g_state, c->gpu, g->profile, c->profile);
}

nvmlReturn_t drakit_mig_name(const struct drakit_ci *c, char *name, unsigned int length) {
    const struct nvmlDevice_st *d = drakit_gpu_by_minor(&g_state, c->gpu);
    const struct drakit_ciprofile *p = ci_profile_of(c);
    size_t n = d->name_len + 5 + p->name_len;
    if (name == NULL) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    if ((size_t)length < n + 1) {
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    memcpy(name, d->name, d->name_len);
    memcpy(name + d->name_len, " MIG ", 5);
    memcpy(name + d->name_len + 5, p->name, p->name_len);
    name[n] = '\0';
    return NVML_SUCCESS;
}

unsigned long long drakit_mig_memory_bytes(const struct drakit_ci *c) {
    const struct drakit_gi *g = drakit_gi_of(&g_state, c->gpu, c->gi);
    return (unsigned long long)gi_profile_of(g)->memory_mb << 20;
}

/*
 * enter_gpu locks and resolves a GPU handle for a MIG call; *mig is the
 * GPU's mig record, NULL when it has none. A MIG device handle or a GPU that
 * is not MIG capable gets NVML_ERROR_NOT_SUPPORTED. The caller must leave.
 */
static nvmlReturn_t enter_gpu(nvmlDevice_t device, const struct nvmlDevice_st **d,
                              const struct drakit_mig **mig) {
    nvmlReturn_t rc = drakit_enter();
    if (rc != NVML_SUCCESS) {
        return rc;
    }
    *d = drakit_lookup_gpu(device.handle);
    if (*d == NULL) {
        return drakit_lookup_mig(device.handle) != NULL ? NVML_ERROR_NOT_SUPPORTED
                                                         : NVML_ERROR_INVALID_ARGUMENT;
    }
    *mig = drakit_mig_of(&g_state, (*d)->minor);
    return (*d)->mig_capable ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

/* enter_profiles is enter_gpu for calls about the GPU's profiles: a GPU
 * without a mig record has none (NOT_SUPPORTED). */
static nvmlReturn_t enter_profiles(nvmlDevice_t device, const struct nvmlDevice_st **d,
                                   const struct drakit_mig **mig) {
    nvmlReturn_t rc = enter_gpu(device, d, mig);
    return rc == NVML_SUCCESS && *mig == NULL ? NVML_ERROR_NOT_SUPPORTED : rc;
}

/* enter_enabled is enter_profiles for calls that need MIG mode on. */
static nvmlReturn_t enter_enabled(nvmlDevice_t device, const struct nvmlDevice_st **d,
                                  const struct drakit_mig **mig) {
    nvmlReturn_t rc = enter_profiles(device, d, mig);
    return rc == NVML_SUCCESS && (*d)->mig_mode != 1 ? NVML_ERROR_NOT_SUPPORTED : rc;
}

static const struct drakit_giprofile *giprofile_by_index(int64_t gpu, unsigned int index) {
    for (size_t i = 0; i < g_state.ngiprofiles; i++) {
        if (g_state.giprofiles[i].gpu == gpu && g_state.giprofiles[i].index == (int64_t)index) {
            return &g_state.giprofiles[i];
        }
    }
    return NULL;
}

static void copy_name(char dst[NVML_DEVICE_NAME_V2_BUFFER_SIZE], const char *src, size_t n) {
    memset(dst, 0, NVML_DEVICE_NAME_V2_BUFFER_SIZE);
    memcpy(dst, src, n); /* names are at most 95 bytes */
}

/* ---- GPU instance profiles ---- */

static void fill_gi_profile(nvmlGpuInstanceProfileInfo_t *info, const struct drakit_giprofile *p) {
    info->id = (unsigned int)p->id;
    info->isP2pSupported = (unsigned int)p->p2p;
    info->sliceCount = (unsigned int)p->slices;
    info->instanceCount = (unsigned int)p->instances;
    info->multiprocessorCount = (unsigned int)p->sms;
    info->copyEngineCount = (unsigned int)p->copy_engines;
    info->decoderCount = (unsigned int)p->decoders;
    info->encoderCount = (unsigned int)p->encoders;
    info->jpegCount = (unsigned int)p->jpegs;
    info->ofaCount = (unsigned int)p->ofas;
    info->memorySizeMB = p->memory_mb;
}

/*
 * gi_profile_by_index: profile is an NVML_GPU_INSTANCE_PROFILE_* index.
 * Beyond NVML_GPU_INSTANCE_PROFILE_COUNT it is INVALID_ARGUMENT (what
 * forward-compatible enumeration stops at); a known index the GPU has no
 * profile for is NOT_SUPPORTED, as nvml.h documents.
 */
static nvmlReturn_t gi_profile_by_index(nvmlDevice_t device, unsigned int profile, void *info,
                                        const struct drakit_giprofile **out) {
    const struct nvmlDevice_st *d;
    const struct drakit_mig *mig;
    nvmlReturn_t rc = enter_gpu(device, &d, &mig);
    if (rc == NVML_SUCCESS && (info == NULL || profile >= NVML_GPU_INSTANCE_PROFILE_COUNT)) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc == NVML_SUCCESS && (*out = giprofile_by_index(d->minor, profile)) == NULL) {
        rc = NVML_ERROR_NOT_SUPPORTED;
    }
    return rc;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device,
                                                             unsigned int profile,
                                                             nvmlGpuInstanceProfileInfo_t *info) {
    const struct drakit_giprofile *p;
    nvmlReturn_t rc = gi_profile_by_index(device, profile, info, &p);
    if (rc == NVML_SUCCESS) {
        fill_gi_profile(info, p);
    }
    return drakit_leave(rc);
}

/* fill_gi_profile_v fills a v2 or v3 structure (by its version word). */
static nvmlReturn_t fill_gi_profile_v(nvmlGpuInstanceProfileInfo_v2_t *info,
                                      const struct drakit_giprofile *p) {
    nvmlGpuInstanceProfileInfo_t v1;
    fill_gi_profile(&v1, p);
    if (info->version == nvmlGpuInstanceProfileInfo_v2) {
        info->id = v1.id;
        info->isP2pSupported = v1.isP2pSupported;
        info->sliceCount = v1.sliceCount;
        info->instanceCount = v1.instanceCount;
        info->multiprocessorCount = v1.multiprocessorCount;
        info->copyEngineCount = v1.copyEngineCount;
        info->decoderCount = v1.decoderCount;
        info->encoderCount = v1.encoderCount;
        info->jpegCount = v1.jpegCount;
        info->ofaCount = v1.ofaCount;
        info->memorySizeMB = v1.memorySizeMB;
        copy_name(info->name, p->name, p->name_len);
        return NVML_SUCCESS;
    }
    if (info->version == nvmlGpuInstanceProfileInfo_v3) {
        nvmlGpuInstanceProfileInfo_v3_t *v3 = (nvmlGpuInstanceProfileInfo_v3_t *)(void *)info;
        v3->id = v1.id;
        v3->sliceCount = v1.sliceCount;
        v3->instanceCount = v1.instanceCount;
        v3->multiprocessorCount = v1.multiprocessorCount;
        v3->copyEngineCount = v1.copyEngineCount;
        v3->decoderCount = v1.decoderCount;
        v3->encoderCount = v1.encoderCount;
        v3->jpegCount = v1.jpegCount;
        v3->ofaCount = v1.ofaCount;
        v3->memorySizeMB = v1.memorySizeMB;
        copy_name(v3->name, p->name, p->name_len);
        v3->capabilities = p->p2p ? NVML_GPU_INSTANCE_PROFILE_CAPS_P2P : 0;
        return NVML_SUCCESS;
    }
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(
    nvmlDevice_t device, unsigned int profile, nvmlGpuInstanceProfileInfo_v2_t *info) {
    const struct drakit_giprofile *p;
    nvmlReturn_t rc = gi_profile_by_index(device, profile, info, &p);
    if (rc == NVML_SUCCESS) {
        rc = fill_gi_profile_v(info, p);
    }
    return drakit_leave(rc);
}

/* By profile ID: an ID the GPU has no profile for is INVALID_ARGUMENT. */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoByIdV(
    nvmlDevice_t device, unsigned int profileId, nvmlGpuInstanceProfileInfo_v2_t *info) {
    const struct nvmlDevice_st *d;
    const struct drakit_mig *mig;
    const struct drakit_giprofile *p = NULL;
    nvmlReturn_t rc = enter_profiles(device, &d, &mig);
    if (rc == NVML_SUCCESS &&
        (info == NULL || (p = drakit_giprofile_of(&g_state, d->minor, profileId)) == NULL)) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc == NVML_SUCCESS) {
        rc = fill_gi_profile_v(info, p);
    }
    return drakit_leave(rc);
}

/* gi_profile_by_id resolves a GI profile ID of a MIG-capable GPU with MIG
 * tables; an unknown ID is INVALID_ARGUMENT. The caller must leave. */
static nvmlReturn_t gi_profile_by_id(nvmlDevice_t device, unsigned int profileId, int need_enabled,
                                     const struct nvmlDevice_st **d,
                                     const struct drakit_giprofile **p) {
    const struct drakit_mig *mig;
    nvmlReturn_t rc =
        need_enabled ? enter_enabled(device, d, &mig) : enter_profiles(device, d, &mig);
    if (rc == NVML_SUCCESS && (*p = drakit_giprofile_of(&g_state, (*d)->minor, profileId)) == NULL) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    return rc;
}

/* Two-call protocol: NULL placements asks for the count; a count too small
 * for the placements is INSUFFICIENT_SIZE with the count needed. Placements
 * are the profile's whatever MIG mode is. */
static nvmlReturn_t gi_placements(nvmlDevice_t device, unsigned int profileId,
                                  nvmlGpuInstancePlacement_t *placements, unsigned int *count) {
    const struct nvmlDevice_st *d;
    const struct drakit_giprofile *p;
    nvmlReturn_t rc = gi_profile_by_id(device, profileId, 0, &d, &p);
    if (rc == NVML_SUCCESS && count == NULL) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc != NVML_SUCCESS) {
        return drakit_leave(rc);
    }
    unsigned int n = (unsigned int)p->placements.count;
    if (placements != NULL && *count < n) {
        rc = NVML_ERROR_INSUFFICIENT_SIZE;
    } else if (placements != NULL) {
        for (unsigned int i = 0; i < n; i++) {
            placements[i].start = (unsigned int)drakit_list_get(&p->placements, i);
            placements[i].size = (unsigned int)p->memory_slices;
        }
    }
    *count = n;
    return drakit_leave(rc);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements(
    nvmlDevice_t device, unsigned int profileId, nvmlGpuInstancePlacement_t *placements,
    unsigned int *count) {
    return gi_placements(device, profileId, placements, count);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(
    nvmlDevice_t device, unsigned int profileId, nvmlGpuInstancePlacement_t *placements,
    unsigned int *count) {
    return gi_placements(device, profileId, placements, count);
}

/* ---- placement bookkeeping on a state ---- */

static int overlaps(int64_t a, int64_t an, int64_t b, int64_t bn) { return a < b + bn && b < a + an; }

/* gi_free reports whether start:size is free of s's GIs on gpu. */
static int gi_free(const struct drakit_state *s, int64_t gpu, int64_t start, int64_t size) {
    for (size_t i = 0; i < s->ngis; i++) {
        if (s->gis[i].gpu == gpu && overlaps(s->gis[i].start, s->gis[i].size, start, size)) {
            return 0;
        }
    }
    return 1;
}

static int64_t gis_of_profile(const struct drakit_state *s, int64_t gpu, int64_t profile) {
    int64_t n = 0;
    for (size_t i = 0; i < s->ngis; i++) {
        n += s->gis[i].gpu == gpu && s->gis[i].profile == profile;
    }
    return n;
}

/* remaining_gis is how many more GIs of profile p fit now on s. */
static int64_t remaining_gis(const struct drakit_state *s, const struct drakit_giprofile *p) {
    int64_t left = p->instances - gis_of_profile(s, p->gpu, p->id), n = 0;
    for (size_t i = 0; i < p->placements.count; i++) {
        n += gi_free(s, p->gpu, drakit_list_get(&p->placements, i), p->memory_slices);
    }
    return left < n ? (left > 0 ? left : 0) : n;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceRemainingCapacity(nvmlDevice_t device,
                                                                   unsigned int profileId,
                                                                   unsigned int *count) {
    const struct nvmlDevice_st *d;
    const struct drakit_giprofile *p;
    nvmlReturn_t rc = gi_profile_by_id(device, profileId, 1, &d, &p);
    if (rc == NVML_SUCCESS && count == NULL) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc == NVML_SUCCESS) {
        *count = (unsigned int)remaining_gis(&g_state, p);
    }
    return drakit_leave(rc);
}

/* ---- GPU instances ---- */

/* Instances of a profile, visible ones only, in id order; *count is the
 * buffer's size on entry and the number of instances on return. */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profileId,
                                                   nvmlGpuInstance_t *gpuInstances,
                                                   unsigned int *count) {
    const struct nvmlDevice_st *d;
    const struct drakit_giprofile *p;
    nvmlReturn_t rc = gi_profile_by_id(device, profileId, 1, &d, &p);
    if (rc == NVML_SUCCESS && (gpuInstances == NULL || count == NULL)) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc != NVML_SUCCESS) {
        return drakit_leave(rc);
    }
    unsigned int n = 0;
    for (int64_t id = 0; id < NUM_GIS; id++) {
        const struct drakit_gi *g = visible_gi(d->minor, id);
        if (g != NULL && g->profile == p->id) {
            if (n < *count) {
                gpuInstances[n] = gi_handle(d->minor, id);
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
    nvmlReturn_t rc = enter_enabled(device, &d, &mig);
    if (rc == NVML_SUCCESS && (gpuInstance == NULL || id >= NUM_GIS)) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc == NVML_SUCCESS && visible_gi(d->minor, id) == NULL) {
        rc = NVML_ERROR_NOT_FOUND;
    }
    if (rc == NVML_SUCCESS) {
        *gpuInstance = gi_handle(d->minor, id);
    }
    return drakit_leave(rc);
}

/* enter_gi locks and resolves a GI handle; the caller must leave. */
static nvmlReturn_t enter_gi(nvmlGpuInstance_t gpuInstance, const struct drakit_gi **g) {
    nvmlReturn_t rc = drakit_enter();
    if (rc == NVML_SUCCESS && (*g = lookup_gi(gpuInstance)) == NULL) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    return rc;
}

NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance,
                                                nvmlGpuInstanceInfo_t *info) {
    const struct drakit_gi *g;
    nvmlReturn_t rc = enter_gi(gpuInstance, &g);
    if (rc == NVML_SUCCESS && info == NULL) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc == NVML_SUCCESS) {
        info->device = gpu_handle(g->gpu);
        info->id = (unsigned int)g->id;
        info->profileId = (unsigned int)g->profile;
        info->placement.start = (unsigned int)g->start;
        info->placement.size = (unsigned int)g->size;
    }
    return drakit_leave(rc);
}

/* ---- compute instance profiles ---- */

static void fill_ci_profile(nvmlComputeInstanceProfileInfo_t *info,
                            const struct drakit_ciprofile *p, const struct drakit_giprofile *gp) {
    info->id = (unsigned int)p->id;
    info->sliceCount = (unsigned int)p->slices;
    info->instanceCount = (unsigned int)p->instances;
    info->multiprocessorCount = (unsigned int)p->sms;
    info->sharedCopyEngineCount = (unsigned int)gp->copy_engines;
    info->sharedDecoderCount = (unsigned int)gp->decoders;
    info->sharedEncoderCount = (unsigned int)gp->encoders;
    info->sharedJpegCount = (unsigned int)gp->jpegs;
    info->sharedOfaCount = (unsigned int)gp->ofas;
}

/* ci_profile_by_index: profile is an NVML_COMPUTE_INSTANCE_PROFILE_* value
 * (the CI profile's id); out of range or an engine profile other than
 * SHARED is INVALID_ARGUMENT, a value the GI has no profile for
 * NOT_SUPPORTED. The caller must leave. */
static nvmlReturn_t ci_profile_by_index(nvmlGpuInstance_t gpuInstance, unsigned int profile,
                                        unsigned int engProfile, void *info,
                                        const struct drakit_ciprofile **p,
                                        const struct drakit_giprofile **gp) {
    const struct drakit_gi *g;
    nvmlReturn_t rc = enter_gi(gpuInstance, &g);
    if (rc == NVML_SUCCESS && (info == NULL || profile >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT ||
                               engProfile != NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc == NVML_SUCCESS &&
        (*p = drakit_ciprofile_of(&g_state, g->gpu, g->profile, profile)) == NULL) {
        rc = NVML_ERROR_NOT_SUPPORTED;
    }
    if (rc == NVML_SUCCESS) {
        *gp = gi_profile_of(g);
    }
    return rc;
}

NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(
    nvmlGpuInstance_t gpuInstance, unsigned int profile, unsigned int engProfile,
    nvmlComputeInstanceProfileInfo_t *info) {
    const struct drakit_ciprofile *p;
    const struct drakit_giprofile *gp;
    nvmlReturn_t rc = ci_profile_by_index(gpuInstance, profile, engProfile, info, &p, &gp);
    if (rc == NVML_SUCCESS) {
        fill_ci_profile(info, p, gp);
    }
    return drakit_leave(rc);
}

NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfoV(
    nvmlGpuInstance_t gpuInstance, unsigned int profile, unsigned int engProfile,
    nvmlComputeInstanceProfileInfo_v2_t *info) {
    const struct drakit_ciprofile *p;
    const struct drakit_giprofile *gp;
    nvmlReturn_t rc = ci_profile_by_index(gpuInstance, profile, engProfile, info, &p, &gp);
    if (rc != NVML_SUCCESS) {
        return drakit_leave(rc);
    }
    nvmlComputeInstanceProfileInfo_t v1;
    fill_ci_profile(&v1, p, gp);
    if (info->version != nvmlComputeInstanceProfileInfo_v2 &&
        info->version != nvmlComputeInstanceProfileInfo_v3) {
        return drakit_leave(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    }
    /* v2 and v3 share the layout up to name; v3 adds capabilities. */
    info->id = v1.id;
    info->sliceCount = v1.sliceCount;
    info->instanceCount = v1.instanceCount;
    info->multiprocessorCount = v1.multiprocessorCount;
    info->sharedCopyEngineCount = v1.sharedCopyEngineCount;
    info->sharedDecoderCount = v1.sharedDecoderCount;
    info->sharedEncoderCount = v1.sharedEncoderCount;
    info->sharedJpegCount = v1.sharedJpegCount;
    info->sharedOfaCount = v1.sharedOfaCount;
    copy_name(info->name, p->name, p->name_len);
    if (info->version == nvmlComputeInstanceProfileInfo_v3) {
        ((nvmlComputeInstanceProfileInfo_v3_t *)(void *)info)->capabilities = 0;
    }
    return drakit_leave(NVML_SUCCESS);
}

/* ci_profile_by_id resolves a CI profile ID of a GI (INVALID_ARGUMENT when
 * unknown). The caller must leave. */
static nvmlReturn_t ci_profile_by_id(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                                     const struct drakit_gi **g,
                                     const struct drakit_ciprofile **p) {
    nvmlReturn_t rc = enter_gi(gpuInstance, g);
    if (rc == NVML_SUCCESS &&
        (*p = drakit_ciprofile_of(&g_state, (*g)->gpu, (*g)->profile, profileId)) == NULL) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    return rc;
}

NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstancePossiblePlacements(
    nvmlGpuInstance_t gpuInstance, unsigned int profileId,
    nvmlComputeInstancePlacement_t *placements, unsigned int *count) {
    const struct drakit_gi *g;
    const struct drakit_ciprofile *p;
    nvmlReturn_t rc = ci_profile_by_id(gpuInstance, profileId, &g, &p);
    if (rc == NVML_SUCCESS && count == NULL) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc != NVML_SUCCESS) {
        return drakit_leave(rc);
    }
    unsigned int n = (unsigned int)p->placements.count;
    if (placements != NULL && *count < n) {
        rc = NVML_ERROR_INSUFFICIENT_SIZE;
    } else if (placements != NULL) {
        for (unsigned int i = 0; i < n; i++) {
            placements[i].start = (unsigned int)drakit_list_get(&p->placements, i);
            placements[i].size = (unsigned int)p->slices;
        }
    }
    *count = n;
    return drakit_leave(rc);
}

/* ci_free reports whether start:size inside GI gi of gpu is free on s. */
static int ci_free(const struct drakit_state *s, int64_t gpu, int64_t gi, int64_t start,
                   int64_t size) {
    for (size_t i = 0; i < s->ncis; i++) {
        const struct drakit_ci *c = &s->cis[i];
        if (c->gpu == gpu && c->gi == gi && overlaps(c->start, c->size, start, size)) {
            return 0;
        }
    }
    return 1;
}

static int64_t count_cis(const struct drakit_state *s, int64_t gpu, int64_t gi, int64_t profile) {
    int64_t n = 0;
    for (size_t i = 0; i < s->ncis; i++) {
        const struct drakit_ci *c = &s->cis[i];
        n += c->gpu == gpu && (gi < 0 || (c->gi == gi && c->profile == profile));
    }
    return n;
}

/* remaining_cis is how many more CIs of profile p fit now in GI g on s. */
static int64_t remaining_cis(const struct drakit_state *s, const struct drakit_gi *g,
                             const struct drakit_ciprofile *p) {
    int64_t left = p->instances - count_cis(s, g->gpu, g->id, p->id);
    int64_t devices = drakit_mig_of(s, g->gpu)->max_devices - count_cis(s, g->gpu, -1, 0);
    int64_t n = 0;
    for (size_t i = 0; i < p->placements.count; i++) {
        n += ci_free(s, g->gpu, g->id, drakit_list_get(&p->placements, i), p->slices);
    }
    n = n < left ? n : left;
    n = n < devices ? n : devices;
    return n > 0 ? n : 0;
}

NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceRemainingCapacity(
    nvmlGpuInstance_t gpuInstance, unsigned int profileId, unsigned int *count) {
    const struct drakit_gi *g;
    const struct drakit_ciprofile *p;
    nvmlReturn_t rc = ci_profile_by_id(gpuInstance, profileId, &g, &p);
    if (rc == NVML_SUCCESS && count == NULL) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc == NVML_SUCCESS) {
        *count = (unsigned int)remaining_cis(&g_state, g, p);
    }
    return drakit_leave(rc);
}

/* ---- compute instances and MIG devices ---- */

NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstances(
    nvmlGpuInstance_t gpuInstance, unsigned int profileId,
    nvmlComputeInstance_t *computeInstances, unsigned int *count) {
    const struct drakit_gi *g;
    const struct drakit_ciprofile *p;
    nvmlReturn_t rc = ci_profile_by_id(gpuInstance, profileId, &g, &p);
    if (rc == NVML_SUCCESS && (computeInstances == NULL || count == NULL)) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc != NVML_SUCCESS) {
        return drakit_leave(rc);
    }
    unsigned int n = 0;
    for (int64_t id = 0; id < NUM_CIS; id++) {
        const struct drakit_ci *c = visible_ci(g->gpu, g->id, id);
        if (c != NULL && c->profile == p->id) {
            if (n < *count) {
                computeInstances[n] = ci_handle(g->gpu, g->id, id);
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
    nvmlReturn_t rc = enter_gi(gpuInstance, &g);
    if (rc == NVML_SUCCESS && (computeInstance == NULL || id >= NUM_CIS)) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc == NVML_SUCCESS && visible_ci(g->gpu, g->id, id) == NULL) {
        rc = NVML_ERROR_NOT_FOUND;
    }
    if (rc == NVML_SUCCESS) {
        *computeInstance = ci_handle(g->gpu, g->id, id);
    }
    return drakit_leave(rc);
}

static nvmlReturn_t ci_info(nvmlComputeInstance_t computeInstance, nvmlComputeInstanceInfo_t *info) {
    nvmlReturn_t rc = drakit_enter();
    const struct drakit_ci *c = NULL;
    if (rc == NVML_SUCCESS && (info == NULL || (c = lookup_ci(computeInstance)) == NULL)) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc == NVML_SUCCESS) {
        info->device.handle = drakit_mig_handle(c);
        info->gpuInstance = gi_handle(c->gpu, c->gi);
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
    nvmlReturn_t rc = enter_gpu(device, &d, &mig);
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
    nvmlReturn_t rc = enter_enabled(device, &d, &mig);
    if (rc == NVML_SUCCESS && (migDevice == NULL || index >= (unsigned int)mig->max_devices)) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc != NVML_SUCCESS) {
        return drakit_leave(rc);
    }
    unsigned int n = 0;
    for (int64_t gi = 0; gi < NUM_GIS; gi++) {
        for (int64_t ci = 0; ci < NUM_CIS; ci++) {
            const struct drakit_ci *c = visible_ci(d->minor, gi, ci);
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
        *device = gpu_handle(c->gpu);
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
        const struct drakit_giprofile *gp = gi_profile_of(g);
        const struct drakit_ciprofile *p = ci_profile_of(c);
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
