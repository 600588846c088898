/*
 * The NVML functions the emulator implements, over handles and locking
 * (shim.h, handles.c) and the state core (state.h): here initialisation,
 * system versions, enumeration and lookups; error strings in
 * error_string.c, device queries in device.c, health queries in health.c,
 * event sets in events.c, the MIG API in mig*.c. Every other function
 * nvml.h declares is a weak stub in nvml_stubs_gen.c that returns
 * NVML_ERROR_NOT_SUPPORTED; the definitions override those.
 *
 * The rooms, bottom up; a file calls only into the rooms below it (a test,
 * house_test.go, checks that no two files call each other):
 *   common.c, error_string.c debug messages, paths, string copy, errno;
 *                            nvmlErrorString (calls nothing)
 *   state*.c, generation.c   the state core: reading, parsing, validating
 *                            the state file (fault and event records too);
 *                            the generation counter. Inside it, bottom up:
 *                            the records (state_records.h), their field
 *                            syntax (state_fields.c), the NVLink records,
 *                            validation, parsing, loading (state.c)
 *   state_write.c            writing the state file (MIG mutations)
 *   handles.c                the lock, g_state, GPU and MIG handles, lost
 *                            GPUs (NVML_ERROR_GPU_IS_LOST)
 *   shim.c, device.c,        init, system, enumeration, device queries,
 *   health.c                 health queries (ECC, pages, rows, clocks)
 *   mig_enter.c              MIG entry points: a GPU, GI or profile resolved
 *   mig.c, mig_profiles.c    MIG queries: instances, MIG devices, profiles
 *   caps.c, mig_ids.c        capability files and nodes; new ids and UUIDs
 *   mig_create.c             MIG mutations
 *   events.c                 event sets and event delivery
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

#include <stdint.h>
#include <string.h>

#include "shim.h"

static void set_handle(nvmlDevice_t *out, const struct nvmlDevice_st *d) {
    *out = drakit_gpu_handle(d->minor);
}

/* ---- initialisation ---- */

NVML_EXPORT nvmlReturn_t nvmlInit_v2(void) { return drakit_init(); }

NVML_EXPORT nvmlReturn_t nvmlInit(void) { return drakit_init(); }

/* The flags change nothing: the emulator has no GPU attach step, and
 * initialisation never fails for want of GPUs. */
NVML_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
    (void)flags;
    return drakit_init();
}

NVML_EXPORT nvmlReturn_t nvmlShutdown(void) { return drakit_shutdown(); }

/* ---- system ---- */

NVML_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    nvmlReturn_t rc = drakit_enter();
    if (rc == NVML_SUCCESS) {
        rc = drakit_copy_string(version, length, g_state.driver_version, g_state.driver_version_len);
    }
    return drakit_leave(rc);
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length) {
    int transient;
    nvmlReturn_t rc = drakit_enter_system(&transient);
    if (rc == NVML_SUCCESS) {
        rc = drakit_copy_string(version, length, g_state.nvml_version, g_state.nvml_version_len);
    }
    return drakit_leave_system(rc, transient);
}

static nvmlReturn_t cuda_driver_version(int *v) {
    int transient;
    nvmlReturn_t rc = drakit_enter_system(&transient);
    if (rc == NVML_SUCCESS) {
        if (v == NULL) {
            rc = NVML_ERROR_INVALID_ARGUMENT;
        } else {
            *v = (int)g_state.cuda_driver_version;
        }
    }
    return drakit_leave_system(rc, transient);
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion) {
    return cuda_driver_version(cudaDriverVersion);
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion) {
    return cuda_driver_version(cudaDriverVersion);
}

/* ---- enumeration ---- */

static nvmlReturn_t device_count(unsigned int *count) {
    nvmlReturn_t rc = drakit_enter();
    if (rc == NVML_SUCCESS) {
        if (count == NULL) {
            rc = NVML_ERROR_INVALID_ARGUMENT;
        } else {
            *count = g_state.count;
        }
    }
    return drakit_leave(rc);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount) {
    return device_count(deviceCount);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount) {
    return device_count(deviceCount);
}

static nvmlReturn_t handle_by_index(unsigned int index, nvmlDevice_t *device) {
    nvmlReturn_t rc = drakit_enter();
    if (rc == NVML_SUCCESS) {
        if (device == NULL || index >= g_state.count) {
            rc = NVML_ERROR_INVALID_ARGUMENT;
        } else {
            set_handle(device, &g_state.gpus[index]);
        }
    }
    return drakit_leave(rc);
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
    nvmlReturn_t rc = drakit_enter();
    if (rc != NVML_SUCCESS) {
        return drakit_leave(rc);
    }
    /* NVML_DEVICE_UUID_V2_BUFFER_SIZE (96) bounds every UUID, NUL included. */
    size_t n = uuid != NULL ? strnlen(uuid, 96) : 0;
    if (device == NULL || uuid == NULL || n == 96) {
        return drakit_leave(NVML_ERROR_INVALID_ARGUMENT);
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
        return drakit_leave(rc);
    }
    if (!is_gpu_uuid(uuid, n)) {
        return drakit_leave(NVML_ERROR_INVALID_ARGUMENT);
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
    return drakit_leave(rc);
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
    nvmlReturn_t rc = drakit_enter();
    if (rc != NVML_SUCCESS) {
        return drakit_leave(rc);
    }
    if (device == NULL || pciBusId == NULL || parse_bus_id(pciBusId, id) != 0) {
        return drakit_leave(NVML_ERROR_INVALID_ARGUMENT);
    }
    rc = NVML_ERROR_NOT_FOUND;
    for (unsigned int i = 0; i < g_state.count && rc != NVML_SUCCESS; i++) {
        const struct nvmlDevice_st *d = &g_state.gpus[i];
        if (d->domain == id[0] && d->bus == id[1] && d->device == id[2] && d->function == id[3]) {
            set_handle(device, d);
            rc = NVML_SUCCESS;
        }
    }
    return drakit_leave(rc);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId,
                                                          nvmlDevice_t *device) {
    return handle_by_bus_id(pciBusId, device);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *pciBusId, nvmlDevice_t *device) {
    return handle_by_bus_id(pciBusId, device);
}

