/*
 * Handles and locking, below every NVML function of the shim: the library's
 * mutex and reference count, the state every call reads (g_state, reread
 * when another process changed the state file), and the handles: a GPU
 * handle names a GPU minor, a GPU instance handle names (GPU minor, GI id),
 * a compute instance and a MIG device handle name (GPU minor, GI id, CI id),
 * each the address of its slot in a static table. So handles are stable for
 * the life of the process, survive other GPUs appearing or vanishing,
 * compare equal when they name the same thing, and are checked on every
 * call against the current state. A handle of a GPU whose fault record says
 * lost, or of one of its MIG devices, answers NVML_ERROR_GPU_IS_LOST.
 *
 * Visibility. As on a host or in a container, an instance exists for a
 * process only through its capability device nodes: a GI when
 * <root>/dev/nvidia-caps/nvidia-cap<gi cap minor> exists (and its GPU is
 * visible), a CI (a MIG device) when its GI's and its own node exist.
 */
#define _GNU_SOURCE

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned int g_refs; /* nvmlInit calls not yet matched by nvmlShutdown */
struct drakit_state g_state;

struct nvmlGpuInstance_st {
    unsigned char slot;
};
struct nvmlComputeInstance_st {
    unsigned char slot;
};

static struct nvmlGpuInstance_st g_gi_handles[NUM_GPUS * NUM_GIS];
static struct nvmlComputeInstance_st g_ci_handles[NUM_GPUS * NUM_GIS * NUM_CIS];
static unsigned char g_mig_handles[NUM_GPUS * NUM_GIS * NUM_CIS];

/* ---- the lock and the state ---- */

void drakit_reload(void) {
    struct drakit_state *next = malloc(sizeof *next);
    if (next == NULL) {
        return;
    }
    char root[sizeof g_state.root];
    strcpy(root, g_state.root);
    drakit_gen_attach(root); /* a root rendered again has a new generation file */
    if (drakit_state_load_root(next, root) == NVML_SUCCESS) {
        drakit_state_free(&g_state);
        g_state = *next;
    } else {
        drakit_debug("reread state under %s failed; keeping the state read before", root);
    }
    free(next);
}

/*
 * drakit_enter locks and, when initialised, rereads the state file if
 * another process (the driver, the CLI, a pod) changed it: one atomic load
 * of the generation counter (state.h, drakit_state_changed).
 */
nvmlReturn_t drakit_enter(void) {
    pthread_mutex_lock(&g_mu);
    if (g_refs == 0) {
        return NVML_ERROR_UNINITIALIZED;
    }
    if (drakit_state_changed(&g_state)) {
        drakit_reload();
    }
    return NVML_SUCCESS;
}

nvmlReturn_t drakit_leave(nvmlReturn_t rc) {
    pthread_mutex_unlock(&g_mu);
    return rc;
}

nvmlReturn_t drakit_init(void) {
    nvmlReturn_t rc = NVML_SUCCESS;
    pthread_mutex_lock(&g_mu);
    if (g_refs == UINT_MAX) {
        rc = NVML_ERROR_UNKNOWN;
    } else if (g_refs == 0) {
        rc = drakit_state_load(&g_state);
    }
    if (rc == NVML_SUCCESS) {
        g_refs++;
    }
    return drakit_leave(rc);
}

nvmlReturn_t drakit_shutdown(void) {
    nvmlReturn_t rc = drakit_enter();
    if (rc == NVML_SUCCESS && --g_refs == 0) {
        drakit_state_free(&g_state);
        drakit_gen_detach();
    }
    return drakit_leave(rc);
}

nvmlReturn_t drakit_enter_system(int *transient) {
    *transient = drakit_enter() != NVML_SUCCESS;
    return *transient ? drakit_state_load(&g_state) : NVML_SUCCESS;
}

nvmlReturn_t drakit_leave_system(nvmlReturn_t rc, int transient) {
    if (transient) {
        drakit_state_free(&g_state);
        drakit_gen_detach();
    }
    return drakit_leave(rc);
}

/* ---- GPU handles ---- */

/*
 * A GPU handle names a GPU by its minor: the address of the minor's slot in
 * a static table, given out in the order handles are first asked for (the
 * lock held), so the handles of a process's GPUs are adjacent. A handle
 * stays valid, and names the same GPU, across rereads whatever other GPUs
 * appear or vanish; one of a GPU that fell off the bus (fault record
 * lost=1) answers NVML_ERROR_GPU_IS_LOST. Both directions are one indexing:
 * g_slot_of maps a minor to 1 + its slot (0: none yet), a slot holds its
 * minor, and the state's minor table (drakit_gpu_by_minor) finds the GPU.
 */
struct gpu_slot {
    int64_t minor;
};
static struct gpu_slot g_gpu_slots[NUM_GPUS];
static unsigned char g_slot_of[NUM_GPUS];
static size_t g_nslots;

nvmlDevice_t drakit_gpu_handle(int64_t minor) {
    if (g_slot_of[minor] == 0) {
        g_gpu_slots[g_nslots].minor = minor;
        g_slot_of[minor] = (unsigned char)++g_nslots;
    }
    nvmlDevice_t d = {(struct nvmlDevice_st *)(void *)&g_gpu_slots[g_slot_of[minor] - 1]};
    return d;
}

/* handle_minor is the minor a GPU handle names, or -1. */
static int64_t handle_minor(const struct nvmlDevice_st *h) {
    uintptr_t p = (uintptr_t)h, base = (uintptr_t)g_gpu_slots;
    if (p < base || (p - base) % sizeof g_gpu_slots[0] != 0 ||
        (p - base) / sizeof g_gpu_slots[0] >= g_nslots) {
        return -1;
    }
    return g_gpu_slots[(p - base) / sizeof g_gpu_slots[0]].minor;
}

const struct nvmlDevice_st *drakit_lookup_gpu(const struct nvmlDevice_st *h) {
    int64_t minor = handle_minor(h);
    return minor < 0 ? NULL : drakit_gpu_by_minor(&g_state, minor);
}

int drakit_handle_lost(const struct nvmlDevice_st *h) {
    int64_t minor = handle_minor(h), ids[3];
    if (minor < 0 && drakit_mig_handle_ids(h, ids) == 0) {
        minor = ids[0];
    }
    const struct drakit_fault *f = minor < 0 ? NULL : drakit_fault_of(&g_state, minor);
    return f != NULL && f->lost;
}

/* unresolved is the error for a handle that names no visible GPU. */
static nvmlReturn_t unresolved(const struct nvmlDevice_st *h) {
    return drakit_handle_lost(h) ? NVML_ERROR_GPU_IS_LOST : NVML_ERROR_INVALID_ARGUMENT;
}

nvmlReturn_t drakit_enter_device(nvmlDevice_t device, const struct nvmlDevice_st **out) {
    nvmlReturn_t rc = drakit_enter();
    if (rc != NVML_SUCCESS) {
        return rc;
    }
    *out = drakit_lookup_gpu(device.handle);
    if (*out == NULL && drakit_lookup_mig(device.handle) != NULL) {
        return NVML_ERROR_NOT_SUPPORTED;
    }
    return *out != NULL ? NVML_SUCCESS : unresolved(device.handle);
}

nvmlReturn_t drakit_enter_any(nvmlDevice_t device, const struct nvmlDevice_st **out,
                              const struct drakit_ci **mig) {
    nvmlReturn_t rc = drakit_enter();
    if (rc != NVML_SUCCESS) {
        return rc;
    }
    *out = drakit_lookup_gpu(device.handle);
    *mig = NULL;
    if (*out == NULL && (*mig = drakit_lookup_mig(device.handle)) != NULL) {
        *out = drakit_gpu_by_minor(&g_state, (*mig)->gpu);
    }
    return *out != NULL ? NVML_SUCCESS : unresolved(device.handle);
}

/* ---- MIG handles and what they name ---- */

static size_t gi_slot(int64_t gpu, int64_t gi) { return (size_t)(gpu * NUM_GIS + gi); }

static size_t ci_slot(int64_t gpu, int64_t gi, int64_t ci) {
    return gi_slot(gpu, gi) * NUM_CIS + (size_t)ci;
}

const struct drakit_gi *drakit_visible_gi(int64_t gpu, int64_t id) {
    const struct drakit_gi *g = drakit_gi_of(&g_state, gpu, id);
    return g != NULL && g->visible ? g : NULL;
}

const struct drakit_ci *drakit_visible_ci(int64_t gpu, int64_t gi, int64_t id) {
    for (size_t i = 0; i < g_state.ncis; i++) {
        const struct drakit_ci *c = &g_state.cis[i];
        if (c->gpu == gpu && c->gi == gi && c->id == id) {
            return c->visible ? c : NULL;
        }
    }
    return NULL;
}

int drakit_mig_handle_ids(const struct nvmlDevice_st *h, int64_t ids[3]) {
    uintptr_t p = (uintptr_t)h, base = (uintptr_t)g_mig_handles;
    if (p < base || p - base >= sizeof g_mig_handles) {
        return -1;
    }
    size_t i = p - base;
    ids[0] = (int64_t)(i / (NUM_GIS * NUM_CIS));
    ids[1] = (int64_t)(i / NUM_CIS % NUM_GIS);
    ids[2] = (int64_t)(i % NUM_CIS);
    return 0;
}

const struct drakit_ci *drakit_lookup_mig(const struct nvmlDevice_st *h) {
    int64_t ids[3];
    return drakit_mig_handle_ids(h, ids) != 0 ? NULL : drakit_visible_ci(ids[0], ids[1], ids[2]);
}

struct nvmlDevice_st *drakit_mig_handle_at(int64_t gpu, int64_t gi, int64_t ci) {
    return (struct nvmlDevice_st *)(void *)&g_mig_handles[ci_slot(gpu, gi, ci)];
}

struct nvmlDevice_st *drakit_mig_handle(const struct drakit_ci *c) {
    return drakit_mig_handle_at(c->gpu, c->gi, c->id);
}

const struct drakit_gi *drakit_lookup_gi(nvmlGpuInstance_t h) {
    uintptr_t p = (uintptr_t)h.handle, base = (uintptr_t)g_gi_handles;
    if (p < base || p - base >= sizeof g_gi_handles) {
        return NULL;
    }
    size_t i = p - base;
    return drakit_visible_gi((int64_t)(i / NUM_GIS), (int64_t)(i % NUM_GIS));
}

const struct drakit_ci *drakit_lookup_ci(nvmlComputeInstance_t h) {
    uintptr_t p = (uintptr_t)h.handle, base = (uintptr_t)g_ci_handles;
    if (p < base || p - base >= sizeof g_ci_handles) {
        return NULL;
    }
    size_t i = p - base;
    return drakit_visible_ci((int64_t)(i / (NUM_GIS * NUM_CIS)), (int64_t)(i / NUM_CIS % NUM_GIS),
                             (int64_t)(i % NUM_CIS));
}

nvmlGpuInstance_t drakit_gi_handle(int64_t gpu, int64_t id) {
    nvmlGpuInstance_t h = {&g_gi_handles[gi_slot(gpu, id)]};
    return h;
}

nvmlComputeInstance_t drakit_ci_handle(int64_t gpu, int64_t gi, int64_t id) {
    nvmlComputeInstance_t h = {&g_ci_handles[ci_slot(gpu, gi, id)]};
    return h;
}

const struct drakit_giprofile *drakit_gi_profile_of(const struct drakit_gi *g) {
    return drakit_giprofile_of(&g_state, g->gpu, g->profile);
}

const struct drakit_ciprofile *drakit_ci_profile_of_ci(const struct drakit_ci *c) {
    const struct drakit_gi *g = drakit_gi_of(&g_state, c->gpu, c->gi);
    return drakit_ciprofile_of(&g_state, c->gpu, g->profile, c->profile);
}

nvmlReturn_t drakit_mig_name(const struct drakit_ci *c, char *name, unsigned int length) {
    const struct nvmlDevice_st *d = drakit_gpu_by_minor(&g_state, c->gpu);
    const struct drakit_ciprofile *p = drakit_ci_profile_of_ci(c);
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
    return (unsigned long long)drakit_gi_profile_of(g)->memory_mb << 20;
}
