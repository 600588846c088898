/*
 * The NVML functions the emulator implements, over the state core (state.h):
 * here locking, initialisation, error strings, system versions, enumeration
 * and lookups; device queries in device.c, event sets in events.c, the MIG
 * API in mig*.c. Every other function nvml.h declares is a weak stub in
 * nvml_stubs_gen.c that returns NVML_ERROR_NOT_SUPPORTED; the definitions
 * override those.
 *
 * Semantics follow nvml.h's documentation: NVML_ERROR_UNINITIALIZED before
 * nvmlInit, NVML_ERROR_INVALID_ARGUMENT for NULL pointers, unknown handles
 * and bad indices, NVML_ERROR_INSUFFICIENT_SIZE (nothing written) for short
 * buffers. One mutex serialises all calls, so the library is thread-safe as
 * NVML is. A handle is the address of its GPU in a static table: stable,
 * never NULL, and checked on every call; handles from before a full shutdown
 * are invalid until the next nvmlInit, which re-reads the state file.
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

const struct nvmlDevice_st *drakit_lookup_gpu(const struct nvmlDevice_st *h);

/* lookup returns the visible GPU behind handle h, or NULL. */
static const struct nvmlDevice_st *lookup(const struct nvmlDevice_st *h) {
    uintptr_t p = (uintptr_t)h, base = (uintptr_t)&g_state.gpus[0];
    if (p < base || (p - base) % sizeof(struct nvmlDevice_st) != 0) {
        return NULL;
    }
    uintptr_t i = (p - base) / sizeof(struct nvmlDevice_st);
    return i < g_state.count ? &g_state.gpus[i] : NULL;
}

const struct nvmlDevice_st *drakit_lookup_gpu(const struct nvmlDevice_st *h) { return lookup(h); }

nvmlReturn_t drakit_enter_device(nvmlDevice_t device, const struct nvmlDevice_st **out) {
    nvmlReturn_t rc = enter();
    if (rc != NVML_SUCCESS) {
        return rc;
    }
    *out = lookup(device.handle);
    if (*out == NULL && drakit_lookup_mig(device.handle) != NULL) {
        return NVML_ERROR_NOT_SUPPORTED;
    }
    return *out != NULL ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
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
    return *out != NULL ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

static void set_handle(nvmlDevice_t *out, const struct nvmlDevice_st *d) {
    out->handle = (struct nvmlDevice_st *)d;
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
        drakit_gen_detach();
    }
    return leave(rc);
}

NVML_EXPORT const char *nvmlErrorString(nvmlReturn_t result) {
    switch ((int)result) {
    case NVML_SUCCESS:
        return "Success";
    case NVML_ERROR_UNINITIALIZED:
        return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
        return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
        return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
        return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED:
        return "Already Initialized";
    case NVML_ERROR_NOT_FOUND:
        return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
        return "Insufficient Size";
    case NVML_ERROR_INSUFFICIENT_POWER:
        return "Insufficient External Power";
    case NVML_ERROR_DRIVER_NOT_LOADED:
        return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT:
        return "Timeout";
    case NVML_ERROR_IRQ_ISSUE:
        return "Interrupt Request Issue";
    case NVML_ERROR_LIBRARY_NOT_FOUND:
        return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
        return "Function Not Found";
    case NVML_ERROR_CORRUPTED_INFOROM:
        return "Corrupted infoROM";
    case NVML_ERROR_GPU_IS_LOST:
        return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED:
        return "GPU requires restart";
    case NVML_ERROR_OPERATING_SYSTEM:
        return "The operating system has blocked the request.";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
        return "RM has detected an NVML/RM version mismatch.";
    case NVML_ERROR_IN_USE:
        return "In use by another client";
    case NVML_ERROR_MEMORY:
        return "Insufficient Memory";
    case NVML_ERROR_NO_DATA:
        return "No data";
    case NVML_ERROR_VGPU_ECC_NOT_SUPPORTED:
        return "The requested vgpu operation is not available on target device, because ECC is "
               "enabled";
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
        return "Insufficient Resources";
    case NVML_ERROR_FREQ_NOT_SUPPORTED:
        return "Frequency not supported";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
        return "Argument version mismatch";
    case NVML_ERROR_DEPRECATED:
        return "Deprecated";
    case NVML_ERROR_NOT_READY:
        return "System is not in ready state";
    case NVML_ERROR_GPU_NOT_FOUND:
        return "GPU not found";
    case NVML_ERROR_INVALID_STATE:
        return "Invalid state";
    case NVML_ERROR_RESET_TYPE_NOT_SUPPORTED:
        return "Reset type not supported";
    default:
        return "Unknown Error";
    }
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
        drakit_gen_detach();
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

