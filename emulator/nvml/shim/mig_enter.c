/*
 * MIG entry points, below the MIG queries (mig.c, mig_profiles.c) and
 * mutations (mig_create.c): each locks and resolves what a MIG call names,
 * a GPU (MIG capable, with profiles, with MIG mode on), a GPU instance, a
 * GPU or compute instance profile by id; the caller must call drakit_leave.
 */
#define _GNU_SOURCE

#include <stdint.h>
#include <string.h>

#include "mig_internal.h"

/*
 * enter_gpu locks and resolves a GPU handle for a MIG call; *mig is the
 * GPU's mig record, NULL when it has none. A MIG device handle or a GPU that
 * is not MIG capable gets NVML_ERROR_NOT_SUPPORTED, a lost GPU's handle
 * NVML_ERROR_GPU_IS_LOST. The caller must leave.
 */
nvmlReturn_t drakit_enter_gpu(nvmlDevice_t device, const struct nvmlDevice_st **d,
                              const struct drakit_mig **mig) {
    nvmlReturn_t rc = drakit_enter();
    if (rc != NVML_SUCCESS) {
        return rc;
    }
    *d = drakit_lookup_gpu(device.handle);
    if (*d == NULL) {
        return drakit_lookup_mig(device.handle) != NULL ? NVML_ERROR_NOT_SUPPORTED
               : drakit_handle_lost(device.handle)      ? NVML_ERROR_GPU_IS_LOST
                                                         : NVML_ERROR_INVALID_ARGUMENT;
    }
    *mig = drakit_mig_of(&g_state, (*d)->minor);
    return (*d)->mig_capable ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

/* enter_profiles is enter_gpu for calls about the GPU's profiles: a GPU
 * without a mig record has none (NOT_SUPPORTED). */
nvmlReturn_t drakit_enter_profiles(nvmlDevice_t device, const struct nvmlDevice_st **d,
                                   const struct drakit_mig **mig) {
    nvmlReturn_t rc = drakit_enter_gpu(device, d, mig);
    return rc == NVML_SUCCESS && *mig == NULL ? NVML_ERROR_NOT_SUPPORTED : rc;
}

/* enter_enabled is enter_profiles for calls that need MIG mode on. */
nvmlReturn_t drakit_enter_enabled(nvmlDevice_t device, const struct nvmlDevice_st **d,
                                  const struct drakit_mig **mig) {
    nvmlReturn_t rc = drakit_enter_profiles(device, d, mig);
    return rc == NVML_SUCCESS && (*d)->mig_mode != 1 ? NVML_ERROR_NOT_SUPPORTED : rc;
}

const struct drakit_giprofile *drakit_giprofile_by_index(int64_t gpu, unsigned int index) {
    for (size_t i = 0; i < g_state.ngiprofiles; i++) {
        if (g_state.giprofiles[i].gpu == gpu && g_state.giprofiles[i].index == (int64_t)index) {
            return &g_state.giprofiles[i];
        }
    }
    return NULL;
}

void drakit_copy_name(char dst[NVML_DEVICE_NAME_V2_BUFFER_SIZE], const char *src, size_t n) {
    memset(dst, 0, NVML_DEVICE_NAME_V2_BUFFER_SIZE);
    memcpy(dst, src, n); /* names are at most 95 bytes */
}

/* enter_gi locks and resolves a GI handle; the caller must leave. */
nvmlReturn_t drakit_enter_gi(nvmlGpuInstance_t gpuInstance, const struct drakit_gi **g) {
    nvmlReturn_t rc = drakit_enter();
    if (rc == NVML_SUCCESS && (*g = drakit_lookup_gi(gpuInstance)) == NULL) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    return rc;
}

/* gi_profile_by_id resolves a GI profile ID of a MIG-capable GPU with MIG
 * tables; an unknown ID is INVALID_ARGUMENT. The caller must leave. */
nvmlReturn_t drakit_gi_profile_by_id(nvmlDevice_t device, unsigned int profileId, int need_enabled,
                                     const struct nvmlDevice_st **d,
                                     const struct drakit_giprofile **p) {
    const struct drakit_mig *mig;
    nvmlReturn_t rc = need_enabled ? drakit_enter_enabled(device, d, &mig)
                                   : drakit_enter_profiles(device, d, &mig);
    if (rc == NVML_SUCCESS && (*p = drakit_giprofile_of(&g_state, (*d)->minor, profileId)) == NULL) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    return rc;
}

/* ci_profile_by_id resolves a CI profile ID of a GI (INVALID_ARGUMENT when
 * unknown). The caller must leave. */
nvmlReturn_t drakit_ci_profile_by_id(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                                     const struct drakit_gi **g,
                                     const struct drakit_ciprofile **p) {
    nvmlReturn_t rc = drakit_enter_gi(gpuInstance, g);
    if (rc == NVML_SUCCESS &&
        (*p = drakit_ciprofile_of(&g_state, (*g)->gpu, (*g)->profile, profileId)) == NULL) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    return rc;
}
