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
