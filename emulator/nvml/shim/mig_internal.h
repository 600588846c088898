/*
 * What the MIG API's rooms share: the entry points (mig_enter.c), used by
 * the queries (mig.c: GPU and compute instances, MIG devices;
 * mig_profiles.c: profiles, placements, capacity) and the mutations
 * (mig_create.c), and mig_profiles.c's placement bookkeeping, used by the
 * mutations. Handles are in shim.h (handles.c). Nothing here is exported
 * from the library.
 */
#ifndef DRAKIT_NVML_MIG_INTERNAL_H
#define DRAKIT_NVML_MIG_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "nvml_abi.h"
#include "shim.h"
#include "state.h"

/* mig_enter.c: locked entry points (each enter_* and *_by_id locks; the
 * caller must call drakit_leave), and lookups under the lock. */
nvmlReturn_t drakit_enter_gpu(nvmlDevice_t device, const struct nvmlDevice_st **d,
                              const struct drakit_mig **mig);
nvmlReturn_t drakit_enter_profiles(nvmlDevice_t device, const struct nvmlDevice_st **d,
                                   const struct drakit_mig **mig);
nvmlReturn_t drakit_enter_enabled(nvmlDevice_t device, const struct nvmlDevice_st **d,
                                  const struct drakit_mig **mig);
const struct drakit_giprofile *drakit_giprofile_by_index(int64_t gpu, unsigned int index);
void drakit_copy_name(char dst[NVML_DEVICE_NAME_V2_BUFFER_SIZE], const char *src, size_t n);
nvmlReturn_t drakit_enter_gi(nvmlGpuInstance_t gpuInstance, const struct drakit_gi **g);
nvmlReturn_t drakit_gi_profile_by_id(nvmlDevice_t device, unsigned int profileId, int need_enabled,
                                     const struct nvmlDevice_st **d,
                                     const struct drakit_giprofile **p);
nvmlReturn_t drakit_ci_profile_by_id(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                                     const struct drakit_gi **g, const struct drakit_ciprofile **p);

/* mig_profiles.c: placement bookkeeping on a state. */
int drakit_gi_free(const struct drakit_state *s, int64_t gpu, int64_t start, int64_t size);
int64_t drakit_gis_of_profile(const struct drakit_state *s, int64_t gpu, int64_t profile);
int drakit_ci_free(const struct drakit_state *s, int64_t gpu, int64_t gi, int64_t start,
                   int64_t size);
int64_t drakit_count_cis(const struct drakit_state *s, int64_t gpu, int64_t gi, int64_t profile);

#endif /* DRAKIT_NVML_MIG_INTERNAL_H */
