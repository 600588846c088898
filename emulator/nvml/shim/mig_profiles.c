/*
 * MIG GPU and compute instance profiles (by NVML index and by id), their
 * possible placements and remaining capacity; see mig.c.
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
    nvmlReturn_t rc = drakit_enter_gpu(device, &d, &mig);
    if (rc == NVML_SUCCESS && (info == NULL || profile >= NVML_GPU_INSTANCE_PROFILE_COUNT)) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc == NVML_SUCCESS && (*out = drakit_giprofile_by_index(d->minor, profile)) == NULL) {
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
/* The fields v1, v2 and v3 share (v2 and v3 lay them out differently). */
#define COPY_GI_PROFILE(dst, v1, p)                                                                \
    do {                                                                                           \
        (dst)->id = (v1).id;                                                                       \
        (dst)->sliceCount = (v1).sliceCount;                                                       \
        (dst)->instanceCount = (v1).instanceCount;                                                 \
        (dst)->multiprocessorCount = (v1).multiprocessorCount;                                     \
        (dst)->copyEngineCount = (v1).copyEngineCount;                                             \
        (dst)->decoderCount = (v1).decoderCount;                                                   \
        (dst)->encoderCount = (v1).encoderCount;                                                   \
        (dst)->jpegCount = (v1).jpegCount;                                                         \
        (dst)->ofaCount = (v1).ofaCount;                                                           \
        (dst)->memorySizeMB = (v1).memorySizeMB;                                                   \
        drakit_copy_name((dst)->name, (p)->name, (p)->name_len);                                   \
    } while (0)
    nvmlGpuInstanceProfileInfo_t v1;
    fill_gi_profile(&v1, p);
    if (info->version == nvmlGpuInstanceProfileInfo_v2) {
        COPY_GI_PROFILE(info, v1, p);
        info->isP2pSupported = v1.isP2pSupported;
        return NVML_SUCCESS;
    }
    if (info->version == nvmlGpuInstanceProfileInfo_v3) {
        nvmlGpuInstanceProfileInfo_v3_t *v3 = (nvmlGpuInstanceProfileInfo_v3_t *)(void *)info;
        COPY_GI_PROFILE(v3, v1, p);
        v3->capabilities = p->p2p ? NVML_GPU_INSTANCE_PROFILE_CAPS_P2P : 0;
        return NVML_SUCCESS;
    }
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
#undef COPY_GI_PROFILE
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
    nvmlReturn_t rc = drakit_enter_profiles(device, &d, &mig);
    if (rc == NVML_SUCCESS &&
        (info == NULL || (p = drakit_giprofile_of(&g_state, d->minor, profileId)) == NULL)) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc == NVML_SUCCESS) {
        rc = fill_gi_profile_v(info, p);
    }
    return drakit_leave(rc);
}

/*
 * placements_of answers the two-call protocol of the possible placements:
 * NULL out asks for the count; a *count too small for the placements is
 * INSUFFICIENT_SIZE with the count needed. out is an array of GI or CI
 * placements, both {start, size} pairs of unsigned int.
 */
_Static_assert(sizeof(nvmlGpuInstancePlacement_t) == 2 * sizeof(unsigned int) &&
                   sizeof(nvmlComputeInstancePlacement_t) == 2 * sizeof(unsigned int),
               "placements are {start, size} pairs");
static nvmlReturn_t placements_of(const struct drakit_list *starts, int64_t size, unsigned int *out,
                                  unsigned int *count) {
    unsigned int n = (unsigned int)starts->count;
    nvmlReturn_t rc = NVML_SUCCESS;
    if (out != NULL && *count < n) {
        rc = NVML_ERROR_INSUFFICIENT_SIZE;
    } else if (out != NULL) {
        for (unsigned int i = 0; i < n; i++) {
            out[2 * i] = (unsigned int)drakit_list_get(starts, i);
            out[2 * i + 1] = (unsigned int)size;
        }
    }
    *count = n;
    return rc;
}

/* Two-call protocol: NULL placements asks for the count; a count too small
 * for the placements is INSUFFICIENT_SIZE with the count needed. Placements
 * are the profile's whatever MIG mode is. */
static nvmlReturn_t gi_placements(nvmlDevice_t device, unsigned int profileId,
                                  nvmlGpuInstancePlacement_t *placements, unsigned int *count) {
    const struct nvmlDevice_st *d;
    const struct drakit_giprofile *p;
    nvmlReturn_t rc = drakit_gi_profile_by_id(device, profileId, 0, &d, &p);
    if (rc == NVML_SUCCESS && count == NULL) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc == NVML_SUCCESS) {
        rc = placements_of(&p->placements, p->memory_slices, (unsigned int *)(void *)placements, count);
    }
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
int drakit_gi_free(const struct drakit_state *s, int64_t gpu, int64_t start, int64_t size) {
    for (size_t i = 0; i < s->ngis; i++) {
        if (s->gis[i].gpu == gpu && overlaps(s->gis[i].start, s->gis[i].size, start, size)) {
            return 0;
        }
    }
    return 1;
}

int64_t drakit_gis_of_profile(const struct drakit_state *s, int64_t gpu, int64_t profile) {
    int64_t n = 0;
    for (size_t i = 0; i < s->ngis; i++) {
        n += s->gis[i].gpu == gpu && s->gis[i].profile == profile;
    }
    return n;
}

/* remaining_gis is how many more GIs of profile p fit now on s. */
static int64_t remaining_gis(const struct drakit_state *s, const struct drakit_giprofile *p) {
    int64_t left = p->instances - drakit_gis_of_profile(s, p->gpu, p->id), n = 0;
    for (size_t i = 0; i < p->placements.count; i++) {
        n += drakit_gi_free(s, p->gpu, drakit_list_get(&p->placements, i), p->memory_slices);
    }
    return left < n ? (left > 0 ? left : 0) : n;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceRemainingCapacity(nvmlDevice_t device,
                                                                   unsigned int profileId,
                                                                   unsigned int *count) {
    const struct nvmlDevice_st *d;
    const struct drakit_giprofile *p;
    nvmlReturn_t rc = drakit_gi_profile_by_id(device, profileId, 1, &d, &p);
    if (rc == NVML_SUCCESS && count == NULL) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc == NVML_SUCCESS) {
        *count = (unsigned int)remaining_gis(&g_state, p);
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
    nvmlReturn_t rc = drakit_enter_gi(gpuInstance, &g);
    if (rc == NVML_SUCCESS && (info == NULL || profile >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT ||
                               engProfile != NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc == NVML_SUCCESS &&
        (*p = drakit_ciprofile_of(&g_state, g->gpu, g->profile, profile)) == NULL) {
        rc = NVML_ERROR_NOT_SUPPORTED;
    }
    if (rc == NVML_SUCCESS) {
        *gp = drakit_gi_profile_of(g);
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
    drakit_copy_name(info->name, p->name, p->name_len);
    if (info->version == nvmlComputeInstanceProfileInfo_v3) {
        ((nvmlComputeInstanceProfileInfo_v3_t *)(void *)info)->capabilities = 0;
    }
    return drakit_leave(NVML_SUCCESS);
}

NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstancePossiblePlacements(
    nvmlGpuInstance_t gpuInstance, unsigned int profileId,
    nvmlComputeInstancePlacement_t *placements, unsigned int *count) {
    const struct drakit_gi *g;
    const struct drakit_ciprofile *p;
    nvmlReturn_t rc = drakit_ci_profile_by_id(gpuInstance, profileId, &g, &p);
    if (rc == NVML_SUCCESS && count == NULL) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc == NVML_SUCCESS) {
        rc = placements_of(&p->placements, p->slices, (unsigned int *)(void *)placements, count);
    }
    return drakit_leave(rc);
}

/* ci_free reports whether start:size inside GI gi of gpu is free on s. */
int drakit_ci_free(const struct drakit_state *s, int64_t gpu, int64_t gi, int64_t start,
                   int64_t size) {
    for (size_t i = 0; i < s->ncis; i++) {
        const struct drakit_ci *c = &s->cis[i];
        if (c->gpu == gpu && c->gi == gi && overlaps(c->start, c->size, start, size)) {
            return 0;
        }
    }
    return 1;
}

int64_t drakit_count_cis(const struct drakit_state *s, int64_t gpu, int64_t gi, int64_t profile) {
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
    int64_t left = p->instances - drakit_count_cis(s, g->gpu, g->id, p->id);
    int64_t devices = drakit_mig_of(s, g->gpu)->max_devices - drakit_count_cis(s, g->gpu, -1, 0);
    int64_t n = 0;
    for (size_t i = 0; i < p->placements.count; i++) {
        n += drakit_ci_free(s, g->gpu, g->id, drakit_list_get(&p->placements, i), p->slices);
    }
    n = n < left ? n : left;
    n = n < devices ? n : devices;
    return n > 0 ? n : 0;
}

NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceRemainingCapacity(
    nvmlGpuInstance_t gpuInstance, unsigned int profileId, unsigned int *count) {
    const struct drakit_gi *g;
    const struct drakit_ciprofile *p;
    nvmlReturn_t rc = drakit_ci_profile_by_id(gpuInstance, profileId, &g, &p);
    if (rc == NVML_SUCCESS && count == NULL) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc == NVML_SUCCESS) {
        *count = (unsigned int)remaining_cis(&g_state, g, p);
    }
    return drakit_leave(rc);
}
