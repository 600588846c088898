/*
 * Internals shared by shim.c (locking, GPU handles, discovery), device.c
 * (device queries), events.c (event sets) and the MIG API (mig*.c, with
 * mig_internal.h). Nothing here is exported from the library.
 */
#ifndef DRAKIT_NVML_SHIM_H
#define DRAKIT_NVML_SHIM_H

#include "nvml_abi.h"
#include "state.h"

/* The state every call reads, under the library's mutex. */
extern struct drakit_state g_state;

/* drakit_enter locks and, when initialised, rereads the state file if another
 * process replaced it; drakit_leave unlocks and returns rc. */
nvmlReturn_t drakit_enter(void);
nvmlReturn_t drakit_leave(nvmlReturn_t rc);

/* drakit_reload rereads the state file now (after a mutation); on failure
 * the old state stays. */
void drakit_reload(void);

/*
 * drakit_enter_device locks and resolves a GPU handle; the caller must call
 * drakit_leave. A MIG device handle gets NVML_ERROR_NOT_SUPPORTED: the query
 * is one of the whole GPU.
 */
nvmlReturn_t drakit_enter_device(nvmlDevice_t device, const struct nvmlDevice_st **out);
/* Both answer NVML_ERROR_GPU_IS_LOST for a handle drakit_handle_lost names. */

/*
 * drakit_enter_any locks and resolves a GPU or MIG device handle: *out is
 * the GPU (a MIG device's parent) and *mig the compute instance behind a MIG
 * handle, NULL for a GPU handle. The caller must call drakit_leave.
 */
nvmlReturn_t drakit_enter_any(nvmlDevice_t device, const struct nvmlDevice_st **out,
                             const struct drakit_ci **mig);

/* drakit_copy_string writes n bytes of src and a NUL into dst if length
 * allows: NVML_ERROR_INSUFFICIENT_SIZE (nothing written) otherwise,
 * NVML_ERROR_INVALID_ARGUMENT for a NULL dst. */
nvmlReturn_t drakit_copy_string(char *dst, unsigned int length, const char *src, size_t n);

/* drakit_gpu_handle is the handle of the GPU with minor minor (0..254). */
struct nvmlDevice_st *drakit_gpu_handle(int64_t minor);

/* drakit_handle_lost reports whether h is the handle of a GPU, or of a MIG
 * device of a GPU, that fell off the bus (its fault record says lost). */
int drakit_handle_lost(const struct nvmlDevice_st *h);

/* drakit_mig_handle_ids decodes a MIG device handle into (GPU minor, GI id,
 * CI id) whether or not the instance exists: 0, or -1 for another pointer. */
int drakit_mig_handle_ids(const struct nvmlDevice_st *h, int64_t ids[3]);

/* drakit_mig_handle_at is the MIG device handle of (gpu, gi, ci). */
struct nvmlDevice_st *drakit_mig_handle_at(int64_t gpu, int64_t gi, int64_t ci);

/* drakit_lookup_gpu returns the visible GPU behind a GPU handle, or NULL. */
const struct nvmlDevice_st *drakit_lookup_gpu(const struct nvmlDevice_st *h);

/* drakit_lookup_mig returns the visible compute instance behind a MIG device
 * handle, or NULL. */
const struct drakit_ci *drakit_lookup_mig(const struct nvmlDevice_st *h);

/* drakit_mig_handle is the MIG device handle of c. */
struct nvmlDevice_st *drakit_mig_handle(const struct drakit_ci *c);

/* drakit_mig_name writes "<GPU name> MIG <CI profile name>" into name. */
nvmlReturn_t drakit_mig_name(const struct drakit_ci *c, char *name, unsigned int length);

/* drakit_mig_memory_bytes is the memory of c's GPU instance. */
unsigned long long drakit_mig_memory_bytes(const struct drakit_ci *c);

#endif /* DRAKIT_NVML_SHIM_H */
