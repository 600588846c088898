/*
 * Internals of the MIG API, shared by its files: mig.c (handles, lookups,
 * GPU and compute instances, MIG devices), mig_profiles.c (GPU and compute
 * instance profiles, placements, capacity), mig_save.c (MIG UUIDs, ids, the
 * state file's rewrite, capability files and nodes) and mig_create.c (MIG
 * mode, create and destroy). Nothing here is exported from the library.
 */
#ifndef DRAKIT_NVML_MIG_INTERNAL_H
#define DRAKIT_NVML_MIG_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

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

/* mig.c: handles, lookups and locked entry points (each enter_* locks; the
 * caller must call drakit_leave). */
const struct drakit_ci *drakit_lookup_ci(nvmlComputeInstance_t h);
nvmlGpuInstance_t drakit_gi_handle(int64_t gpu, int64_t id);
nvmlComputeInstance_t drakit_ci_handle(int64_t gpu, int64_t gi, int64_t id);
const struct drakit_giprofile *drakit_gi_profile_of(const struct drakit_gi *g);
nvmlReturn_t drakit_enter_gpu(nvmlDevice_t device, const struct nvmlDevice_st **d,
                              const struct drakit_mig **mig);
nvmlReturn_t drakit_enter_profiles(nvmlDevice_t device, const struct nvmlDevice_st **d,
                                   const struct drakit_mig **mig);
nvmlReturn_t drakit_enter_enabled(nvmlDevice_t device, const struct nvmlDevice_st **d,
                                  const struct drakit_mig **mig);
const struct drakit_giprofile *drakit_giprofile_by_index(int64_t gpu, unsigned int index);
void drakit_copy_name(char dst[NVML_DEVICE_NAME_V2_BUFFER_SIZE], const char *src, size_t n);
nvmlReturn_t drakit_enter_gi(nvmlGpuInstance_t gpuInstance, const struct drakit_gi **g);

/* mig_profiles.c: profiles by id and placement bookkeeping on a state. */
nvmlReturn_t drakit_gi_profile_by_id(nvmlDevice_t device, unsigned int profileId, int need_enabled,
                                     const struct nvmlDevice_st **d,
                                     const struct drakit_giprofile **p);
int drakit_gi_free(const struct drakit_state *s, int64_t gpu, int64_t start, int64_t size);
int64_t drakit_gis_of_profile(const struct drakit_state *s, int64_t gpu, int64_t profile);
nvmlReturn_t drakit_ci_profile_by_id(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                                     const struct drakit_gi **g, const struct drakit_ciprofile **p);
int drakit_ci_free(const struct drakit_state *s, int64_t gpu, int64_t gi, int64_t start,
                   int64_t size);
int64_t drakit_count_cis(const struct drakit_state *s, int64_t gpu, int64_t gi, int64_t profile);

/* mig_save.c: MIG UUIDs, new ids, writing the state, capability files. */
void drakit_new_mig_uuid(const struct nvmlDevice_st *d, int64_t gi, int64_t ci,
                         char out[DRAKIT_UUID_LEN + 1]);
int64_t drakit_gi_access_minor(int64_t gpu, int64_t gi);
int64_t drakit_new_gi_id(const struct drakit_state *s, int64_t gpu, int64_t start, int64_t size,
                         int64_t memory_slices);
int64_t drakit_new_ci_id(const struct drakit_state *s, int64_t gpu, int64_t gi);
nvmlReturn_t drakit_errno_rc(int err);
nvmlReturn_t drakit_save_state(const struct drakit_state *s, const char *mode_val, int64_t mode);
nvmlReturn_t drakit_add_cap(const char *root, int64_t gpu, int64_t gi, int64_t ci, int64_t minor);
void drakit_remove_cap(const char *root, int64_t gpu, int64_t gi, int64_t ci, int64_t minor);

#endif /* DRAKIT_NVML_MIG_INTERNAL_H */
