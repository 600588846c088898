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
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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

/* ---- mutations: MIG mode, create and destroy ---- */

#define CAPS_DIR "proc/driver/nvidia/capabilities"

/* SHA-256 (FIPS 180-4), for MIG UUIDs as profile.DeriveMIGUUID derives them. */
static const uint32_t sha_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t ror(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void sha256_block(uint32_t h[8], const unsigned char *b) {
    uint32_t w[64], v[8];
    for (int i = 0; i < 16; i++) {
        w[i] = (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16 | (uint32_t)b[4 * i + 2] << 8 |
               (uint32_t)b[4 * i + 3];
    }
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    memcpy(v, h, sizeof v);
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = v[7] + (ror(v[4], 6) ^ ror(v[4], 11) ^ ror(v[4], 25)) +
                      ((v[4] & v[5]) ^ (~v[4] & v[6])) + sha_k[i] + w[i];
        uint32_t t2 = (ror(v[0], 2) ^ ror(v[0], 13) ^ ror(v[0], 22)) +
                      ((v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]));
        memmove(&v[1], &v[0], 7 * sizeof v[0]);
        v[4] += t1;
        v[0] = t1 + t2;
    }
    for (int i = 0; i < 8; i++) {
        h[i] += v[i];
    }
}

static void sha256(const unsigned char *msg, size_t n, unsigned char out[32]) {
    uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                     0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    unsigned char tail[128];
    size_t full = n / 64 * 64, rest = n - full;
    for (size_t i = 0; i < full; i += 64) {
        sha256_block(h, msg + i);
    }
    memset(tail, 0, sizeof tail);
    memcpy(tail, msg + full, rest);
    tail[rest] = 0x80;
    size_t tn = rest + 9 <= 64 ? 64 : 128;
    uint64_t bits = (uint64_t)n * 8;
    for (int i = 0; i < 8; i++) {
        tail[tn - 1 - i] = (unsigned char)(bits >> (8 * i));
    }
    for (size_t i = 0; i < tn; i += 64) {
        sha256_block(h, tail + i);
    }
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (unsigned char)(h[i] >> 24);
        out[4 * i + 1] = (unsigned char)(h[i] >> 16);
        out[4 * i + 2] = (unsigned char)(h[i] >> 8);
        out[4 * i + 3] = (unsigned char)h[i];
    }
}

/* mig_uuid writes profile.DeriveMIGUUID(gpu UUID, gi, ci) and a NUL into out. */
static void mig_uuid(const struct nvmlDevice_st *d, int64_t gi, int64_t ci,
                     char out[DRAKIT_UUID_LEN + 1]) {
    char in[DRAKIT_UUID_LEN + 32];
    int n = snprintf(in, sizeof in, "%.*s/gi%lld/ci%lld", (int)d->uuid_len, d->uuid, (long long)gi,
                     (long long)ci);
    unsigned char h[32];
    sha256((const unsigned char *)in, (size_t)n, h);
    static const char hex[] = "0123456789abcdef";
    char *p = out;
    memcpy(p, "MIG-", 4);
    p += 4;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) {
            *p++ = '-';
        }
        *p++ = hex[h[i] >> 4];
        *p++ = hex[h[i] & 15];
    }
    *p = '\0';
}

/* gi_access_minor is nvmlstate.GIAccessMinor; a CI's is it + 1 + CI id. */
static int64_t gi_access_minor(int64_t gpu, int64_t gi) { return 3 + gpu * 135 + gi * 9; }

/* giid is profile.GIID: the GI id of placement start:size on a GPU with
 * eight memory slices, or -1 for another geometry. */
static int64_t giid(int64_t start, int64_t size, int64_t memory_slices) {
    if (memory_slices != 8 || (size != 1 && size != 2 && size != 4 && size != 8) ||
        start % size != 0 || start + size > 8) {
        return -1;
    }
    return 8 / size - 1 + (start ^ 4) / size;
}

/* new_gi_id is the id a new GI at start:size gets: giid, or the lowest free
 * id when that is taken or undefined; -1 when none is free. */
static int64_t new_gi_id(const struct drakit_state *s, int64_t gpu, int64_t start, int64_t size,
                         int64_t memory_slices) {
    int64_t id = giid(start, size, memory_slices);
    if (id >= 0 && drakit_gi_of(s, gpu, id) == NULL) {
        return id;
    }
    for (id = 0; id < NUM_GIS; id++) {
        if (drakit_gi_of(s, gpu, id) == NULL) {
            return id;
        }
    }
    return -1;
}

static int64_t new_ci_id(const struct drakit_state *s, int64_t gpu, int64_t gi) {
    for (int64_t id = 0; id < NUM_CIS; id++) {
        int taken = 0;
        for (size_t i = 0; i < s->ncis; i++) {
            taken |= s->cis[i].gpu == gpu && s->cis[i].gi == gi && s->cis[i].id == id;
        }
        if (!taken) {
            return id;
        }
    }
    return -1;
}

/* A growable output buffer; err is set when memory ran out. */
struct out {
    char *p;
    size_t n, cap;
    int err;
};

static void out_bytes(struct out *o, const char *p, size_t n) {
    if (o->err) {
        return;
    }
    if (o->n + n > o->cap) {
        size_t cap = (o->n + n) * 2 + 256;
        char *q = realloc(o->p, cap);
        if (q == NULL) {
            o->err = 1;
            return;
        }
        o->p = q;
        o->cap = cap;
    }
    memcpy(o->p + o->n, p, n);
    o->n += n;
}

__attribute__((format(printf, 2, 3))) static void out_fmt(struct out *o, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof buf) {
        o->err = 1;
        return;
    }
    out_bytes(o, buf, (size_t)n);
}

/*
 * render_state writes s as nvmlstate.Write would after the change: every
 * line of the file read except the gi and ci records and the end record,
 * migMode of the gpu record whose value is at mode_val replaced by mode
 * (mode_val NULL: none), then s's gi records and ci records, then the end
 * record.
 */
static void render_state(struct out *o, const struct drakit_state *s, const char *mode_val,
                         int64_t mode) {
    const char *p = s->buf, *end = s->buf + s->len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *q = nl != NULL ? nl : end;
        /* The record type ends at a TAB or at the line's end, before a CR
         * (the reader drops one before the newline). */
        const char *text_end = q > p && q[-1] == '\r' ? q - 1 : q;
        size_t word = 0;
        while (p + word < text_end && p[word] != '\t') {
            word++;
        }
        int skip = (word == 2 && (memcmp(p, "gi", 2) == 0 || memcmp(p, "ci", 2) == 0)) ||
                   (word == 3 && memcmp(p, "end", 3) == 0);
        if (!skip && mode_val != NULL && mode_val >= p && mode_val < q) {
            const char *after = mode_val;
            while (after < q && *after != '\t') {
                after++;
            }
            out_bytes(o, p, (size_t)(mode_val - p));
            out_fmt(o, "%lld", (long long)mode);
            out_bytes(o, after, (size_t)(q - after));
            out_bytes(o, "\n", 1);
        } else if (!skip) {
            out_bytes(o, p, (size_t)(q - p));
            out_bytes(o, "\n", 1);
        }
        p = q + 1;
    }
    for (size_t i = 0; i < s->ngis; i++) {
        const struct drakit_gi *g = &s->gis[i];
        out_fmt(o, "gi\tgpu=%lld\tid=%lld\tprofile=%lld\tstart=%lld\tsize=%lld\tcapMinor=%lld\n",
                (long long)g->gpu, (long long)g->id, (long long)g->profile, (long long)g->start,
                (long long)g->size, (long long)g->cap_minor);
    }
    for (size_t i = 0; i < s->ncis; i++) {
        const struct drakit_ci *c = &s->cis[i];
        out_fmt(o,
                "ci\tgpu=%lld\tgi=%lld\tid=%lld\tprofile=%lld\tstart=%lld\tsize=%lld\tuuid=%.*s"
                "\tcapMinor=%lld\n",
                (long long)c->gpu, (long long)c->gi, (long long)c->id, (long long)c->profile,
                (long long)c->start, (long long)c->size, (int)c->uuid_len, c->uuid,
                (long long)c->cap_minor);
    }
    out_bytes(o, "end\n", 4);
}

static int write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* errno_rc maps a failed file operation's errno to an NVML return code. */
static nvmlReturn_t errno_rc(int err) {
    return err == EPERM || err == EACCES || err == EROFS ? NVML_ERROR_NO_PERMISSION
                                                          : NVML_ERROR_UNKNOWN;
}

/* save writes s (changed as render_state says) to a temporary file next to
 * the state file, fsyncs it and renames it over the state file. */
static nvmlReturn_t save(const struct drakit_state *s, const char *mode_val, int64_t mode) {
    char path[PATH_MAX], tmp[PATH_MAX];
    struct out o = {NULL, 0, 0, 0};
    render_state(&o, s, mode_val, mode);
    if (o.err) {
        free(o.p);
        return NVML_ERROR_MEMORY;
    }
    if (drakit_join(path, sizeof path, s->root, "run/drakit-emulator/nvml.state") != 0 ||
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp) {
        free(o.p);
        return NVML_ERROR_UNKNOWN;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        int err = errno;
        free(o.p);
        drakit_debug("create %s: %s", tmp, strerror(err));
        return errno_rc(err);
    }
    int ok = fchmod(fd, 0644) == 0 && write_all(fd, o.p, o.n) == 0 && fsync(fd) == 0;
    int err = errno;
    free(o.p);
    if (close(fd) != 0 && ok) {
        ok = 0;
        err = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = 0;
        err = errno;
    }
    if (!ok) {
        drakit_debug("write %s: %s", path, strerror(err));
        unlink(tmp);
        return errno_rc(err);
    }
    return NVML_SUCCESS;
}

/* nvidia_caps_major is the nvidia-caps major of <root>/proc/devices (the
 * renderer's default when absent). */
static unsigned int nvidia_caps_major(const char *root) {
    char path[PATH_MAX], buf[8192];
    unsigned int major = DEFAULT_NVIDIA_CAPS_MAJOR;
    if (drakit_join(path, sizeof path, root, "proc/devices") != 0) {
        return major;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return major;
    }
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) {
        return major;
    }
    buf[n] = '\0';
    for (char *line = buf; line != NULL && *line != '\0';) {
        char *nl = strchr(line, '\n');
        if (nl != NULL) {
            *nl = '\0';
        }
        char *p = line;
        while (*p == ' ') {
            p++;
        }
        char *num = p;
        unsigned long v = 0;
        while (*p >= '0' && *p <= '9' && v < 4096) {
            v = v * 10 + (unsigned long)(*p++ - '0');
        }
        if (p > num && *p == ' ' && strcmp(p + 1, "nvidia-caps") == 0 && v < 4096) {
            return (unsigned int)v;
        }
        line = nl != NULL ? nl + 1 : NULL;
    }
    return major;
}

/* mkdirs creates root/rel and its missing parents (0755, as the renderer). */
static int mkdirs(const char *root, const char *rel) {
    char path[PATH_MAX];
    if (drakit_join(path, sizeof path, root, rel) != 0) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')) != NULL; p++) {
        *p = '\0';
        int r = mkdir(path, 0755);
        *p = '/';
        if (r != 0 && errno != EEXIST) {
            return -1;
        }
    }
    return mkdir(path, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* Capability paths of GI gi (ci < 0) or CI ci of gpu, relative to the root. */
static void cap_dir(char *out, size_t n, int64_t gpu, int64_t gi, int64_t ci) {
    if (ci < 0) {
        snprintf(out, n, CAPS_DIR "/gpu%lld/mig/gi%lld", (long long)gpu, (long long)gi);
    } else {
        snprintf(out, n, CAPS_DIR "/gpu%lld/mig/gi%lld/ci%lld", (long long)gpu, (long long)gi,
                 (long long)ci);
    }
}

/*
 * add_cap creates what the renderer creates for an instance: the access file
 * (0444, "DeviceFileMinor: m\nDeviceFileMode: 292\nDeviceFileModify: 1\n")
 * in its capability directory and the node /dev/nvidia-caps/nvidia-cap<m>
 * (character device, nvidia-caps major, 0444).
 */
static nvmlReturn_t add_cap(const char *root, int64_t gpu, int64_t gi, int64_t ci, int64_t minor) {
    char dir[128], rel[160], path[PATH_MAX], body[96];
    cap_dir(dir, sizeof dir, gpu, gi, ci);
    snprintf(rel, sizeof rel, "%s/access", dir);
    int n = snprintf(body, sizeof body, "DeviceFileMinor: %lld\nDeviceFileMode: %d\nDeviceFileModify: 1\n",
                     (long long)minor, CAP_MODE);
    if (mkdirs(root, dir) != 0 || drakit_join(path, sizeof path, root, rel) != 0) {
        return errno_rc(errno);
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
    if (fd < 0) {
        return errno_rc(errno);
    }
    int ok = fchmod(fd, 0444) == 0 && write_all(fd, body, (size_t)n) == 0;
    int err = errno;
    if (close(fd) != 0 || !ok) {
        return errno_rc(ok ? errno : err);
    }
    snprintf(rel, sizeof rel, "dev/nvidia-caps/nvidia-cap%lld", (long long)minor);
    if (mkdirs(root, "dev/nvidia-caps") != 0 || drakit_join(path, sizeof path, root, rel) != 0) {
        return errno_rc(errno);
    }
    unsigned int major = nvidia_caps_major(root), mi = (unsigned int)minor;
    /* The kernel's device number encoding (new_encode_dev); the system call,
     * not glibc's mknod, which is versioned GLIBC_2.33. */
    unsigned long dev = (mi & 0xffu) | (major << 8) | ((mi & ~0xffu) << 12);
    unlink(path); /* a stale node of an earlier instance */
    if (syscall(SYS_mknodat, AT_FDCWD, path, (unsigned long)(S_IFCHR | 0444), dev) != 0 ||
        chmod(path, 0444) != 0) {
        int e = errno;
        drakit_debug("create %s: %s (mknod needs root or CAP_MKNOD)", path, strerror(e));
        return errno_rc(e);
    }
    return NVML_SUCCESS;
}

/* remove_cap removes what add_cap created, and the GPU's capability
 * directories once they are empty. */
static void remove_cap(const char *root, int64_t gpu, int64_t gi, int64_t ci, int64_t minor) {
    char rel[160], path[PATH_MAX];
    snprintf(rel, sizeof rel, "dev/nvidia-caps/nvidia-cap%lld", (long long)minor);
    if (drakit_join(path, sizeof path, root, rel) == 0) {
        unlink(path);
    }
    cap_dir(rel, sizeof rel, gpu, gi, ci);
    size_t dl = strlen(rel);
    snprintf(rel + dl, sizeof rel - dl, "/access");
    if (drakit_join(path, sizeof path, root, rel) == 0) {
        unlink(path);
    }
    /* rmdir the instance's directory and the empty parents up to gpu<g>. */
    rel[dl] = '\0';
    size_t stop = strlen(CAPS_DIR);
    while (strlen(rel) > stop && drakit_join(path, sizeof path, root, rel) == 0 &&
           rmdir(path) == 0) {
        *strrchr(rel, '/') = '\0';
    }
}

/*
 * struct txn is one mutation: the lock on <state>.lock and the state read
 * under it. begin takes the lock (blocking) and reads the state of the
 * root g_state came from; the caller must call end.
 */
struct txn {
    int lock_fd;
    struct drakit_state *s;
};

static nvmlReturn_t begin(struct txn *t) {
    char path[PATH_MAX];
    t->lock_fd = -1;
    t->s = NULL;
    if (drakit_join(path, sizeof path, g_state.root, "run/drakit-emulator/nvml.state.lock") != 0) {
        return NVML_ERROR_UNKNOWN;
    }
    char cap[PATH_MAX];
    /* MIG management needs the config capability, as on a host. */
    if (drakit_join(cap, sizeof cap, g_state.root, "dev/nvidia-caps/nvidia-cap1") != 0 ||
        access(cap, R_OK) != 0) {
        drakit_debug("MIG management needs %s", cap);
        return NVML_ERROR_NO_PERMISSION;
    }
    t->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (t->lock_fd < 0) {
        return errno_rc(errno);
    }
    while (flock(t->lock_fd, LOCK_EX) != 0) {
        if (errno != EINTR) {
            return errno_rc(errno);
        }
    }
    t->s = malloc(sizeof *t->s);
    if (t->s == NULL) {
        return NVML_ERROR_MEMORY;
    }
    nvmlReturn_t rc = drakit_state_load_root(t->s, g_state.root);
    if (rc != NVML_SUCCESS) {
        free(t->s);
        t->s = NULL;
    }
    return rc;
}

/* end releases the lock and rereads the state into g_state. */
static void end(struct txn *t) {
    if (t->s != NULL) {
        drakit_state_free(t->s);
        free(t->s);
    }
    if (t->lock_fd >= 0) {
        close(t->lock_fd);
    }
    drakit_reload();
}

/* insert_gi adds g to s's GIs before the first one ordered after it by
 * (GPU, id), so a file in that order stays in it. */
static int insert_gi(struct drakit_state *s, const struct drakit_gi *g) {
    struct drakit_gi *gis = realloc(s->gis, (s->ngis + 1) * sizeof *gis);
    if (gis == NULL) {
        return -1;
    }
    size_t at = 0;
    while (at < s->ngis && (gis[at].gpu < g->gpu || (gis[at].gpu == g->gpu && gis[at].id < g->id))) {
        at++;
    }
    memmove(&gis[at + 1], &gis[at], (s->ngis - at) * sizeof *gis);
    gis[at] = *g;
    s->gis = gis;
    s->ngis++;
    return 0;
}

/* insert_ci is insert_gi for CIs, ordered by (GPU, GI id, CI id). */
static int insert_ci(struct drakit_state *s, const struct drakit_ci *c) {
    struct drakit_ci *cis = realloc(s->cis, (s->ncis + 1) * sizeof *cis);
    if (cis == NULL) {
        return -1;
    }
    size_t at = 0;
    while (at < s->ncis &&
           (cis[at].gpu < c->gpu || (cis[at].gpu == c->gpu && cis[at].gi < c->gi) ||
            (cis[at].gpu == c->gpu && cis[at].gi == c->gi && cis[at].id < c->id))) {
        at++;
    }
    memmove(&cis[at + 1], &cis[at], (s->ncis - at) * sizeof *cis);
    cis[at] = *c;
    s->cis = cis;
    s->ncis++;
    return 0;
}

/* commit_add creates the capability files and node of a new instance, then
 * saves s; on failure it removes what it created. */
static nvmlReturn_t commit_add(struct drakit_state *s, int64_t gpu, int64_t gi, int64_t ci,
                               int64_t minor) {
    nvmlReturn_t rc = add_cap(s->root, gpu, gi, ci, minor);
    if (rc == NVML_SUCCESS) {
        rc = save(s, NULL, 0);
    }
    if (rc != NVML_SUCCESS) {
        remove_cap(s->root, gpu, gi, ci, minor);
    }
    return rc;
}

/*
 * create_gi_on creates a GI of profile pid on gpu in s, at start or (start
 * < 0) at the highest free placement, where the driver puts a GI created
 * without one (profile.autoPlace follows the same rule); *id is its id.
 */
static nvmlReturn_t create_gi_on(struct drakit_state *s, int64_t gpu, int64_t pid, int64_t start,
                                 int64_t *id) {
    const struct nvmlDevice_st *d = drakit_gpu_by_minor(s, gpu);
    const struct drakit_mig *mig = drakit_mig_of(s, gpu);
    const struct drakit_giprofile *p = drakit_giprofile_of(s, gpu, pid);
    if (d == NULL || mig == NULL || p == NULL || d->mig_mode != 1) {
        return NVML_ERROR_NOT_SUPPORTED; /* changed by another process */
    }
    if (gis_of_profile(s, gpu, pid) >= p->instances) {
        return NVML_ERROR_INSUFFICIENT_RESOURCES;
    }
    if (start >= 0 && !gi_free(s, gpu, start, p->memory_slices)) {
        return NVML_ERROR_INSUFFICIENT_RESOURCES;
    }
    for (size_t i = p->placements.count; start < 0 && i > 0; i--) {
        int64_t st = drakit_list_get(&p->placements, i - 1);
        if (gi_free(s, gpu, st, p->memory_slices)) {
            start = st;
        }
    }
    if (start < 0 || (*id = new_gi_id(s, gpu, start, p->memory_slices, mig->memory_slices)) < 0) {
        return NVML_ERROR_INSUFFICIENT_RESOURCES;
    }
    struct drakit_gi g = {gpu, *id, pid, start, p->memory_slices, gi_access_minor(gpu, *id), 1};
    if (insert_gi(s, &g) != 0) {
        return NVML_ERROR_MEMORY;
    }
    return commit_add(s, gpu, *id, -1, g.cap_minor);
}

static nvmlReturn_t create_gi(nvmlDevice_t device, unsigned int profileId,
                              const nvmlGpuInstancePlacement_t *placement, int with_placement,
                              nvmlGpuInstance_t *gpuInstance) {
    const struct nvmlDevice_st *d;
    const struct drakit_giprofile *p;
    nvmlReturn_t rc = gi_profile_by_id(device, profileId, 1, &d, &p);
    if (rc == NVML_SUCCESS &&
        (gpuInstance == NULL || (with_placement && placement == NULL) ||
         (with_placement && (!drakit_list_contains(&p->placements, placement->start) ||
                             placement->size != (unsigned int)p->memory_slices)))) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc != NVML_SUCCESS) {
        return drakit_leave(rc);
    }
    int64_t gpu = d->minor, pid = p->id, start = with_placement ? (int64_t)placement->start : -1, id = 0;
    struct txn t;
    rc = begin(&t);
    if (rc == NVML_SUCCESS) {
        rc = create_gi_on(t.s, gpu, pid, start, &id);
    }
    end(&t);
    if (rc == NVML_SUCCESS) {
        *gpuInstance = gi_handle(gpu, id);
    }
    return drakit_leave(rc);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceCreateGpuInstance(nvmlDevice_t device, unsigned int profileId,
                                                     nvmlGpuInstance_t *gpuInstance) {
    return create_gi(device, profileId, NULL, 0, gpuInstance);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(
    nvmlDevice_t device, unsigned int profileId, const nvmlGpuInstancePlacement_t *placement,
    nvmlGpuInstance_t *gpuInstance) {
    return create_gi(device, profileId, placement, 1, gpuInstance);
}

static char g_new_uuid[DRAKIT_UUID_LEN + 1]; /* the UUID of the CI being created */

/* create_ci_on creates a CI of profile pid in GI gi of gpu in s, at start
 * or (start < 0) at the lowest free placement, with the lowest free id. */
static nvmlReturn_t create_ci_on(struct drakit_state *s, int64_t gpu, int64_t gi, int64_t pid,
                                 int64_t start, int64_t *id) {
    const struct nvmlDevice_st *d = drakit_gpu_by_minor(s, gpu);
    const struct drakit_gi *g = drakit_gi_of(s, gpu, gi);
    if (d == NULL || g == NULL) {
        return NVML_ERROR_INVALID_ARGUMENT; /* destroyed by another process */
    }
    const struct drakit_ciprofile *p = drakit_ciprofile_of(s, gpu, g->profile, pid);
    if (count_cis(s, gpu, gi, pid) >= p->instances ||
        count_cis(s, gpu, -1, 0) >= drakit_mig_of(s, gpu)->max_devices ||
        (start >= 0 && !ci_free(s, gpu, gi, start, p->slices))) {
        return NVML_ERROR_INSUFFICIENT_RESOURCES;
    }
    for (size_t i = 0; start < 0 && i < p->placements.count; i++) {
        int64_t st = drakit_list_get(&p->placements, i);
        if (ci_free(s, gpu, gi, st, p->slices)) {
            start = st;
        }
    }
    if (start < 0 || (*id = new_ci_id(s, gpu, gi)) < 0) {
        return NVML_ERROR_INSUFFICIENT_RESOURCES;
    }
    mig_uuid(d, gi, *id, g_new_uuid);
    struct drakit_ci c = {gpu,          gi, *id, pid, start, p->slices, gi_access_minor(gpu, gi) + 1 + *id,
                          g_new_uuid, DRAKIT_UUID_LEN, 1};
    if (insert_ci(s, &c) != 0) {
        return NVML_ERROR_MEMORY;
    }
    return commit_add(s, gpu, gi, *id, c.cap_minor);
}

static nvmlReturn_t create_ci(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                              const nvmlComputeInstancePlacement_t *placement, int with_placement,
                              nvmlComputeInstance_t *computeInstance) {
    const struct drakit_gi *g;
    const struct drakit_ciprofile *p;
    nvmlReturn_t rc = ci_profile_by_id(gpuInstance, profileId, &g, &p);
    if (rc == NVML_SUCCESS &&
        (computeInstance == NULL || (with_placement && placement == NULL) ||
         (with_placement && (!drakit_list_contains(&p->placements, placement->start) ||
                             placement->size != (unsigned int)p->slices)))) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc != NVML_SUCCESS) {
        return drakit_leave(rc);
    }
    int64_t gpu = g->gpu, gi = g->id, pid = p->id, id = 0;
    int64_t start = with_placement ? (int64_t)placement->start : -1;
    struct txn t;
    rc = begin(&t);
    if (rc == NVML_SUCCESS) {
        rc = create_ci_on(t.s, gpu, gi, pid, start, &id);
    }
    end(&t);
    if (rc == NVML_SUCCESS) {
        *computeInstance = ci_handle(gpu, gi, id);
    }
    return drakit_leave(rc);
}

NVML_EXPORT nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(
    nvmlGpuInstance_t gpuInstance, unsigned int profileId, nvmlComputeInstance_t *computeInstance) {
    return create_ci(gpuInstance, profileId, NULL, 0, computeInstance);
}

NVML_EXPORT nvmlReturn_t nvmlGpuInstanceCreateComputeInstanceWithPlacement(
    nvmlGpuInstance_t gpuInstance, unsigned int profileId,
    const nvmlComputeInstancePlacement_t *placement, nvmlComputeInstance_t *computeInstance) {
    return create_ci(gpuInstance, profileId, placement, 1, computeInstance);
}

/* destroy_on removes GI gi (ci < 0) or CI ci of gpu from s, saves s and
 * removes the instance's capability files and node. A GI that still has
 * CIs is NVML_ERROR_IN_USE. */
static nvmlReturn_t destroy_on(struct drakit_state *s, int64_t gpu, int64_t gi, int64_t ci) {
    int64_t minor = -1;
    if (ci < 0) {
        if (count_cis(s, gpu, -1, 0) > 0) {
            for (size_t i = 0; i < s->ncis; i++) {
                if (s->cis[i].gpu == gpu && s->cis[i].gi == gi) {
                    return NVML_ERROR_IN_USE;
                }
            }
        }
        for (size_t i = 0; i < s->ngis && minor < 0; i++) {
            if (s->gis[i].gpu == gpu && s->gis[i].id == gi) {
                minor = s->gis[i].cap_minor;
                memmove(&s->gis[i], &s->gis[i + 1], (s->ngis - i - 1) * sizeof s->gis[0]);
                s->ngis--;
            }
        }
    } else {
        for (size_t i = 0; i < s->ncis && minor < 0; i++) {
            const struct drakit_ci *c = &s->cis[i];
            if (c->gpu == gpu && c->gi == gi && c->id == ci) {
                minor = c->cap_minor;
                memmove(&s->cis[i], &s->cis[i + 1], (s->ncis - i - 1) * sizeof s->cis[0]);
                s->ncis--;
            }
        }
    }
    if (minor < 0) {
        return NVML_ERROR_INVALID_ARGUMENT; /* destroyed by another process */
    }
    nvmlReturn_t rc = save(s, NULL, 0);
    if (rc == NVML_SUCCESS) {
        remove_cap(s->root, gpu, gi, ci, minor);
    }
    return rc;
}

static nvmlReturn_t destroy(int64_t gpu, int64_t gi, int64_t ci) {
    struct txn t;
    nvmlReturn_t rc = begin(&t);
    if (rc == NVML_SUCCESS) {
        rc = destroy_on(t.s, gpu, gi, ci);
    }
    end(&t);
    return drakit_leave(rc);
}

NVML_EXPORT nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t computeInstance) {
    nvmlReturn_t rc = drakit_enter();
    const struct drakit_ci *c = NULL;
    if (rc == NVML_SUCCESS && (c = lookup_ci(computeInstance)) == NULL) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc != NVML_SUCCESS) {
        return drakit_leave(rc);
    }
    return destroy(c->gpu, c->gi, c->id);
}

NVML_EXPORT nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance) {
    const struct drakit_gi *g;
    nvmlReturn_t rc = enter_gi(gpuInstance, &g);
    if (rc != NVML_SUCCESS) {
        return drakit_leave(rc);
    }
    return destroy(g->gpu, g->id, -1);
}

/*
 * MIG mode takes effect at once (*activationStatus NVML_SUCCESS: no GPU
 * reset is emulated). Disabling it while the GPU has GPU instances is
 * NVML_ERROR_IN_USE; a GPU that is not MIG capable NOT_SUPPORTED.
 */
NVML_EXPORT nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t device, unsigned int mode,
                                              nvmlReturn_t *activationStatus) {
    const struct nvmlDevice_st *d;
    const struct drakit_mig *mig;
    nvmlReturn_t rc = enter_gpu(device, &d, &mig);
    if (rc == NVML_SUCCESS && (activationStatus == NULL || mode > 1)) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc != NVML_SUCCESS) {
        return drakit_leave(rc);
    }
    int64_t gpu = d->minor;
    struct txn t;
    rc = begin(&t);
    const struct nvmlDevice_st *cur = rc == NVML_SUCCESS ? drakit_gpu_by_minor(t.s, gpu) : NULL;
    if (rc == NVML_SUCCESS && cur == NULL) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc == NVML_SUCCESS && cur->mig_mode != (int64_t)mode) {
        for (size_t i = 0; i < t.s->ngis; i++) {
            if (t.s->gis[i].gpu == gpu) {
                rc = NVML_ERROR_IN_USE;
            }
        }
        if (rc == NVML_SUCCESS) {
            rc = save(t.s, cur->mig_mode_val, (int64_t)mode);
        }
    }
    end(&t);
    if (rc == NVML_SUCCESS) {
        *activationStatus = NVML_SUCCESS;
    }
    return drakit_leave(rc);
}
