/*
 * The NVML functions the emulator implements, over the state core (state.h):
 * here locking, initialisation, system versions, enumeration and lookups;
 * error strings in error_string.c, device queries in device.c, health
 * queries in health.c, event sets in events.c, the MIG API in mig*.c. Every other function nvml.h declares is a weak stub in
 * nvml_stubs_gen.c that returns NVML_ERROR_NOT_SUPPORTED; the definitions
 * override those.
 *
 * Semantics follow nvml.h's documentation: NVML_ERROR_UNINITIALIZED before
 * nvmlInit, NVML_ERROR_INVALID_ARGUMENT for NULL pointers, unknown handles
 * and bad indices, NVML_ERROR_INSUFFICIENT_SIZE (nothing written) for short
 * buffers. One mutex serialises all calls, so the library is thread-safe as
 * NVML is. A handle is the address of its GPU's slot (by minor) in a static
 * table: stable, never NULL, and checked on every call; handles from before
 * a full shutdown are invalid until the next nvmlInit, which re-reads the
 * state file. A query on the handle of a GPU that fell off the bus answers
 * NVML_ERROR_GPU_IS_LOST.
 */
#define _GNU_SOURCE

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <stdlib.h>

#include "nvml_abi.h"
#include "shim.h"
#include "state.h"

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned int g_refs; /* nvmlInit calls not yet matched by nvmlShutdown */
struct drakit_state g_state;

/* ---- locking and handle checks ---- */

void drakit_reload(void) {
    struct drakit_state *next = malloc(sizeof *next);
    if (next == NULL) {
        return;
    }
    char root[sizeof g_state.root];
    strcpy(root, g_state.root);
    if (drakit_state_load_root(next, root) == NVML_SUCCESS) {
        drakit_state_free(&g_state);
        g_state = *next;
    } else {
        drakit_debug("reread state under %s failed; keeping the state read before", root);
    }
    free(next);
}

/*
 * enter locks and, when initialised, rereads the state file if another
 * process (the driver, the CLI, a pod) replaced it. GPU handles are
 * positions in g_state.gpus and MIG handles name (GPU, GI, CI), so handles
 * stay valid across rereads as long as what they name still exists.
 */
static nvmlReturn_t enter(void) {
    pthread_mutex_lock(&g_mu);
    if (g_refs == 0) {
        return NVML_ERROR_UNINITIALIZED;
    }
    if (drakit_state_changed(&g_state)) {
        drakit_reload();
    }
    return NVML_SUCCESS;
}

static nvmlReturn_t leave(nvmlReturn_t rc) {
    pthread_mutex_unlock(&g_mu);
    return rc;
}

nvmlReturn_t drakit_enter(void) { return enter(); }

nvmlReturn_t drakit_leave(nvmlReturn_t rc) { return leave(rc); }

/*
 * A GPU handle names a GPU by its minor: the address of the minor's slot
 * in a static table, given out in the order handles are first asked for
 * (the lock held). So a handle stays valid, and names the same GPU, across
 * rereads whatever other GPUs appear or vanish; one of a GPU that fell off
 * the bus (fault record lost=1) answers NVML_ERROR_GPU_IS_LOST.
 */
struct gpu_slot {
    int64_t minor;
};
static struct gpu_slot g_gpu_slots[DRAKIT_MAX_GPUS];
static size_t g_nslots;

struct nvmlDevice_st *drakit_gpu_handle(int64_t minor) {
    size_t i = 0;
    while (i < g_nslots && g_gpu_slots[i].minor != minor) {
        i++;
    }
    if (i == g_nslots) {
        g_gpu_slots[g_nslots++].minor = minor;
    }
    return (struct nvmlDevice_st *)(void *)&g_gpu_slots[i];
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

/* lookup returns the visible GPU behind handle h, or NULL. */
static const struct nvmlDevice_st *lookup(const struct nvmlDevice_st *h) {
    int64_t minor = handle_minor(h);
    return minor < 0 ? NULL : drakit_gpu_by_minor(&g_state, minor);
}

const struct nvmlDevice_st *drakit_lookup_gpu(const struct nvmlDevice_st *h) { return lookup(h); }

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
    nvmlReturn_t rc = enter();
    if (rc != NVML_SUCCESS) {
        return rc;
    }
    *out = lookup(device.handle);
    if (*out == NULL && drakit_lookup_mig(device.handle) != NULL) {
        return NVML_ERROR_NOT_SUPPORTED;
    }
    return *out != NULL ? NVML_SUCCESS : unresolved(device.handle);
}

nvmlReturn_t drakit_enter_any(nvmlDevice_t device, const struct nvmlDevice_st **out,
                             const struct drakit_ci **mig) {
    nvmlReturn_t rc = enter();
    if (rc != NVML_SUCCESS) {
        return rc;
    }
    *out = lookup(device.handle);
    *mig = NULL;
    if (*out == NULL && (*mig = drakit_lookup_mig(device.handle)) != NULL) {
        *out = drakit_gpu_by_minor(&g_state, (*mig)->gpu);
    }
    return *out != NULL ? NVML_SUCCESS : unresolved(device.handle);
}

static void set_handle(nvmlDevice_t *out, const struct nvmlDevice_st *d) {
    out->handle = drakit_gpu_handle(d->minor);
}

nvmlReturn_t drakit_copy_string(char *dst, unsigned int length, const char *src, size_t n) {
    if (dst == NULL) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    if ((size_t)length < n + 1) {
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    memcpy(dst, src, n);
    dst[n] = '\0';
    return NVML_SUCCESS;
}

/* ---- initialisation ---- */

static nvmlReturn_t init(void) {
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
    return leave(rc);
}

NVML_EXPORT nvmlReturn_t nvmlInit_v2(void) { return init(); }

NVML_EXPORT nvmlReturn_t nvmlInit(void) { return init(); }

/* The flags change nothing: the emulator has no GPU attach step, and
 * initialisation never fails for want of GPUs. */
NVML_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
    (void)flags;
    return init();
}

NVML_EXPORT nvmlReturn_t nvmlShutdown(void) {
    nvmlReturn_t rc = enter();
    if (rc == NVML_SUCCESS && --g_refs == 0) {
        drakit_state_free(&g_state);
    }
    return leave(rc);
}

/* ---- system ---- */

NVML_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    nvmlReturn_t rc = enter();
    if (rc == NVML_SUCCESS) {
        rc = drakit_copy_string(version, length, g_state.driver_version, g_state.driver_version_len);
    }
    return leave(rc);
}

/*
 * enter_system locks and makes the system record available even before
 * nvmlInit, as NVML answers its library and CUDA versions without
 * initialisation: it then loads the state for this one call. The caller must
 * call leave_system.
 */
static nvmlReturn_t enter_system(int *transient) {
    *transient = enter() != NVML_SUCCESS;
    return *transient ? drakit_state_load(&g_state) : NVML_SUCCESS;
}

static nvmlReturn_t leave_system(nvmlReturn_t rc, int transient) {
    if (transient) {
        drakit_state_free(&g_state);
    }
    return leave(rc);
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length) {
    int transient;
    nvmlReturn_t rc = enter_system(&transient);
    if (rc == NVML_SUCCESS) {
        rc = drakit_copy_string(version, length, g_state.nvml_version, g_state.nvml_version_len);
    }
    return leave_system(rc, transient);
}

static nvmlReturn_t cuda_driver_version(int *v) {
    int transient;
    nvmlReturn_t rc = enter_system(&transient);
    if (rc == NVML_SUCCESS) {
        if (v == NULL) {
            rc = NVML_ERROR_INVALID_ARGUMENT;
        } else {
            *v = (int)g_state.cuda_driver_version;
        }
    }
    return leave_system(rc, transient);
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion) {
    return cuda_driver_version(cudaDriverVersion);
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion) {
    return cuda_driver_version(cudaDriverVersion);
}

/* ---- enumeration ---- */

static nvmlReturn_t device_count(unsigned int *count) {
    nvmlReturn_t rc = enter();
    if (rc == NVML_SUCCESS) {
        if (count == NULL) {
            rc = NVML_ERROR_INVALID_ARGUMENT;
        } else {
            *count = g_state.count;
        }
    }
    return leave(rc);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount) {
    return device_count(deviceCount);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount) {
    return device_count(deviceCount);
}

static nvmlReturn_t handle_by_index(unsigned int index, nvmlDevice_t *device) {
    nvmlReturn_t rc = enter();
    if (rc == NVML_SUCCESS) {
        if (device == NULL || index >= g_state.count) {
            rc = NVML_ERROR_INVALID_ARGUMENT;
        } else {
            set_handle(device, &g_state.gpus[index]);
        }
    }
    return leave(rc);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
    return handle_by_index(index, device);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device) {
    return handle_by_index(index, device);
}

static int is_hex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static char lower_ascii(char c) { return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c; }

/* A GPU UUID: "GPU-" and 8-4-4-4-12 hex digits of either case. */
static int is_gpu_uuid(const char *s, size_t n) {
    static const char shape[] = "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx";
    if (n != sizeof shape - 1) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (shape[i] == 'x' ? !is_hex(s[i]) : s[i] != shape[i]) {
            return 0;
        }
    }
    return 1;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device) {
    nvmlReturn_t rc = enter();
    if (rc != NVML_SUCCESS) {
        return leave(rc);
    }
    /* NVML_DEVICE_UUID_V2_BUFFER_SIZE (96) bounds every UUID, NUL included. */
    size_t n = uuid != NULL ? strnlen(uuid, 96) : 0;
    if (device == NULL || uuid == NULL || n == 96) {
        return leave(NVML_ERROR_INVALID_ARGUMENT);
    }
    if (strncmp(uuid, "MIG-", 4) == 0) {
        /* A visible MIG device by its UUID (either case); anything else
         * starting with MIG- is a MIG UUID no device has. */
        rc = NVML_ERROR_NOT_FOUND;
        for (size_t i = 0; i < g_state.ncis && rc != NVML_SUCCESS; i++) {
            const struct drakit_ci *c = &g_state.cis[i];
            size_t j = 0;
            while (j < n && j < c->uuid_len && lower_ascii(uuid[j]) == lower_ascii(c->uuid[j])) {
                j++;
            }
            if (c->visible && j == n && n == c->uuid_len) {
                device->handle = drakit_mig_handle(c);
                rc = NVML_SUCCESS;
            }
        }
        return leave(rc);
    }
    if (!is_gpu_uuid(uuid, n)) {
        return leave(NVML_ERROR_INVALID_ARGUMENT);
    }
    rc = NVML_ERROR_NOT_FOUND;
    for (unsigned int i = 0; i < g_state.count && rc != NVML_SUCCESS; i++) {
        size_t j = 0;
        while (j < n && lower_ascii(uuid[j]) == lower_ascii(g_state.gpus[i].uuid[j])) {
            j++;
        }
        if (j == n) {
            set_handle(device, &g_state.gpus[i]);
            rc = NVML_SUCCESS;
        }
    }
    return leave(rc);
}

/* hex_field reads 1..max hex digits at *p (up to end) and advances *p. */
static int hex_field(const char **p, const char *end, size_t max, unsigned int *out) {
    size_t n = 0;
    unsigned int v = 0;
    while (*p < end && is_hex(**p)) {
        if (++n > max) {
            return -1;
        }
        char c = lower_ascii(**p);
        v = v * 16 + (unsigned int)(c <= '9' ? c - '0' : c - 'a' + 10);
        (*p)++;
    }
    *out = v;
    return n > 0 ? 0 : -1;
}

/*
 * parse_bus_id accepts the forms nvml.h documents, in hexadecimal of either
 * case: domain:bus:device.function, domain:bus:device (function 0) and
 * bus:device.function (domain 0).
 */
static int parse_bus_id(const char *s, unsigned int id[4]) {
    size_t n = strnlen(s, NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE);
    const char *p = s, *end = s + n;
    unsigned int v[4];
    char sep[3];
    size_t k = 0;
    if (n == NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE) {
        return -1;
    }
    for (;;) {
        if (hex_field(&p, end, 8, &v[k]) != 0) {
            return -1;
        }
        k++;
        if (p == end) {
            break;
        }
        if (k == 4 || (*p != ':' && *p != '.')) {
            return -1;
        }
        sep[k - 1] = *p++;
    }
    if (k == 4 && sep[0] == ':' && sep[1] == ':' && sep[2] == '.') {
        memcpy(id, v, sizeof v);
    } else if (k == 3 && sep[0] == ':' && sep[1] == ':') {
        id[0] = v[0], id[1] = v[1], id[2] = v[2], id[3] = 0;
    } else if (k == 3 && sep[0] == ':' && sep[1] == '.') {
        id[0] = 0, id[1] = v[0], id[2] = v[1], id[3] = v[2];
    } else {
        return -1;
    }
    return id[1] <= 0xff && id[2] <= 0xff && id[3] <= 0xf ? 0 : -1;
}

static nvmlReturn_t handle_by_bus_id(const char *pciBusId, nvmlDevice_t *device) {
    unsigned int id[4];
    nvmlReturn_t rc = enter();
    if (rc != NVML_SUCCESS) {
        return leave(rc);
    }
    if (device == NULL || pciBusId == NULL || parse_bus_id(pciBusId, id) != 0) {
        return leave(NVML_ERROR_INVALID_ARGUMENT);
    }
    rc = NVML_ERROR_NOT_FOUND;
    for (unsigned int i = 0; i < g_state.count && rc != NVML_SUCCESS; i++) {
        const struct nvmlDevice_st *d = &g_state.gpus[i];
        if (d->domain == id[0] && d->bus == id[1] && d->device == id[2] && d->function == id[3]) {
            set_handle(device, d);
            rc = NVML_SUCCESS;
        }
    }
    return leave(rc);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId,
                                                          nvmlDevice_t *device) {
    return handle_by_bus_id(pciBusId, device);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *pciBusId, nvmlDevice_t *device) {
    return handle_by_bus_id(pciBusId, device);
}

