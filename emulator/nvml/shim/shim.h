/*
 * Handles and locking (handles.c), the room every NVML function stands on:
 * the library's lock and reference count, the state every call reads, GPU
 * and MIG handles. Nothing here is exported from the library.
 */
#ifndef DRAKIT_NVML_SHIM_H
#define DRAKIT_NVML_SHIM_H

#include <stdint.h>

#include "nvml_abi.h"
#include "state.h"

#define NUM_GPUS 255 /* minors 0..254 */
#define NUM_GIS 15   /* GI ids 0..14 */
#define NUM_CIS 8    /* CI ids 0..7 */

/* The state every call reads, under the library's mutex. */
extern struct drakit_state g_state;

/* drakit_enter locks and, when initialised, rereads the state file if another
 * process changed it; drakit_leave unlocks and returns rc. */
nvmlReturn_t drakit_enter(void);
nvmlReturn_t drakit_leave(nvmlReturn_t rc);

/* drakit_reload rereads the state file now (after a mutation); on failure
 * the old state stays. */
void drakit_reload(void);

/* nvmlInit and nvmlShutdown: reference-counted; the first init after a full
 * shutdown reads the state. */
nvmlReturn_t drakit_init(void);
nvmlReturn_t drakit_shutdown(void);

/*
 * drakit_enter_system locks and makes the system record available even
 * before nvmlInit, as NVML answers its library and CUDA versions without
 * initialisation: it then loads the state for this one call (*transient).
 * The caller must call drakit_leave_system.
 */
nvmlReturn_t drakit_enter_system(int *transient);
nvmlReturn_t drakit_leave_system(nvmlReturn_t rc, int transient);

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
 *
 * Both answer NVML_ERROR_GPU_IS_LOST for a handle drakit_handle_lost names.
 */
nvmlReturn_t drakit_enter_any(nvmlDevice_t device, const struct nvmlDevice_st **out,
                              const struct drakit_ci **mig);

/*
 * DRAKIT_GPU_ANSWER and DRAKIT_ANY_ANSWER are the body of a getter: they
 * lock and resolve device (GPU: a GPU handle only, as drakit_enter_device;
 * ANY: a GPU or MIG device handle, d being the MIG device's GPU, so it
 * answers with its GPU's value), then store value, an expression of the
 * GPU d, into *out (a NULL out is NVML_ERROR_INVALID_ARGUMENT), unlock and
 * return.
 */
#define DRAKIT_GPU_ANSWER(device, out, value) DRAKIT_ANSWER_(drakit_enter_device, device, out, value)
#define DRAKIT_ANY_ANSWER(device, out, value) DRAKIT_ANSWER_(drakit_enter_any_gpu, device, out, value)
#define DRAKIT_ANSWER_(enter, device, out, value)                                                  \
    do {                                                                                           \
        const struct nvmlDevice_st *d;                                                             \
        nvmlReturn_t rc_ = enter(device, &d);                                                      \
        if (rc_ == NVML_SUCCESS && (out) == NULL) {                                                \
            rc_ = NVML_ERROR_INVALID_ARGUMENT;                                                     \
        } else if (rc_ == NVML_SUCCESS) {                                                          \
            *(out) = (value);                                                                      \
        }                                                                                          \
        return drakit_leave(rc_);                                                                  \
    } while (0)

/* drakit_enter_any_gpu is drakit_enter_any for a query answered by the GPU. */
static inline nvmlReturn_t drakit_enter_any_gpu(nvmlDevice_t device, const struct nvmlDevice_st **d) {
    const struct drakit_ci *mig;
    return drakit_enter_any(device, d, &mig);
}

/* drakit_handle_lost reports whether h is the handle of a GPU, or of a MIG
 * device of a GPU, that fell off the bus (its fault record says lost). */
int drakit_handle_lost(const struct nvmlDevice_st *h);

/* drakit_mig_handle_ids decodes a MIG device handle into (GPU minor, GI id,
 * CI id) whether or not the instance exists: 0, or -1 for another pointer. */
int drakit_mig_handle_ids(const struct nvmlDevice_st *h, int64_t ids[3]);

/* drakit_lookup_gpu returns the visible GPU behind a GPU handle, or NULL. */
const struct nvmlDevice_st *drakit_lookup_gpu(const struct nvmlDevice_st *h);

/* drakit_gpu_handle is the handle of the GPU with minor minor (0..254),
 * whether or not it is visible now. */
nvmlDevice_t drakit_gpu_handle(int64_t minor);

/* MIG handles: each looks up what it names among the visible instances of
 * g_state (NULL when absent or destroyed), or makes the handle of one. */
const struct drakit_ci *drakit_lookup_mig(const struct nvmlDevice_st *h);
const struct drakit_gi *drakit_lookup_gi(nvmlGpuInstance_t h);
const struct drakit_ci *drakit_lookup_ci(nvmlComputeInstance_t h);
struct nvmlDevice_st *drakit_mig_handle(const struct drakit_ci *c);
struct nvmlDevice_st *drakit_mig_handle_at(int64_t gpu, int64_t gi, int64_t ci);
nvmlGpuInstance_t drakit_gi_handle(int64_t gpu, int64_t id);
nvmlComputeInstance_t drakit_ci_handle(int64_t gpu, int64_t gi, int64_t id);
const struct drakit_gi *drakit_visible_gi(int64_t gpu, int64_t id);
const struct drakit_ci *drakit_visible_ci(int64_t gpu, int64_t gi, int64_t id);

/* What a MIG device is, from g_state: its GI's profile, its CI's profile,
 * its name ("<GPU name> MIG <CI profile name>", written into name as
 * drakit_copy_string does) and its GI's memory in bytes. */
const struct drakit_giprofile *drakit_gi_profile_of(const struct drakit_gi *g);
const struct drakit_ciprofile *drakit_ci_profile_of_ci(const struct drakit_ci *c);
nvmlReturn_t drakit_mig_name(const struct drakit_ci *c, char *name, unsigned int length);
unsigned long long drakit_mig_memory_bytes(const struct drakit_ci *c);

#endif /* DRAKIT_NVML_SHIM_H */
