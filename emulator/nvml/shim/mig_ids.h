/*
 * New MIG instances' ids and UUIDs (mig_ids.c), for the MIG mutations.
 * Nothing here is exported from the library.
 */
#ifndef DRAKIT_NVML_MIG_IDS_H
#define DRAKIT_NVML_MIG_IDS_H

#include <stdint.h>

#include "shim.h"
#include "state.h"

/* drakit_new_mig_uuid writes gpu.DeriveMIGUUID(d's UUID, gi, ci) and a NUL into out. */
void drakit_new_mig_uuid(const struct nvmlDevice_st *d, int64_t gi, int64_t ci,
                         char out[DRAKIT_UUID_LEN + 1]);
/* drakit_gi_access_minor is nvmlstate.GIAccessMinor; a CI's is it + 1 + CI id. */
int64_t drakit_gi_access_minor(int64_t gpu, int64_t gi);
/* drakit_new_gi_id is the id a new GI at start:size gets: gpu.GIID, or the
 * lowest free id when that is taken or undefined; -1 when none is free. */
int64_t drakit_new_gi_id(const struct drakit_state *s, int64_t gpu, int64_t start, int64_t size,
                         int64_t memory_slices);
/* drakit_new_ci_id is the lowest free CI id of GI gi; -1 when none is free. */
int64_t drakit_new_ci_id(const struct drakit_state *s, int64_t gpu, int64_t gi);

#endif /* DRAKIT_NVML_MIG_IDS_H */
