/*
 * Event sets, as health monitors use them (NVIDIA's DRA driver and device
 * plugin register XID and ECC events and wait in a loop): an emulated GPU
 * never has an event, so a wait sleeps for its timeout and returns
 * NVML_ERROR_TIMEOUT. Sets live in a static table, so a handle is checked
 * like a GPU handle (an address into the table, of a set not freed); they
 * outlive nvmlShutdown, but every call needs the library initialised.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <stdint.h>
#include <time.h>

#include "nvml_abi.h"
#include "shim.h"
#include "state.h"

/* More sets than any client keeps: a health monitor holds one. */
#define DRAKIT_MAX_EVENT_SETS 64

struct nvmlEventSet_st {
    int live;
    unsigned long long registered; /* event types registered on some GPU */
};

static struct nvmlEventSet_st g_sets[DRAKIT_MAX_EVENT_SETS];

/* The events an emulated data-centre GPU supports: ECC errors, P-state and
 * clock changes, XID errors, and MIG configuration changes when it is MIG
 * capable. */
static unsigned long long supported_events(const struct nvmlDevice_st *d) {
    unsigned long long types = nvmlEventTypeSingleBitEccError | nvmlEventTypeDoubleBitEccError |
                               nvmlEventTypePState | nvmlEventTypeXidCriticalError |
                               nvmlEventTypeClock;
    return d->mig_capable ? types | nvmlEventMigConfigChange : types;
}

/* lookup_set returns the live set behind handle h, or NULL. */
static struct nvmlEventSet_st *lookup_set(nvmlEventSet_t set) {
    uintptr_t p = (uintptr_t)set.handle, base = (uintptr_t)&g_sets[0];
    if (p < base || (p - base) % sizeof g_sets[0] != 0 ||
        (p - base) / sizeof g_sets[0] >= DRAKIT_MAX_EVENT_SETS) {
        return NULL;
    }
    struct nvmlEventSet_st *s = &g_sets[(p - base) / sizeof g_sets[0]];
    return s->live ? s : NULL;
}

NVML_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set) {
    nvmlReturn_t rc = drakit_enter();
    if (rc != NVML_SUCCESS) {
        return drakit_leave(rc);
    }
    if (set == NULL) {
        return drakit_leave(NVML_ERROR_INVALID_ARGUMENT);
    }
    for (size_t i = 0; i < DRAKIT_MAX_EVENT_SETS; i++) {
        if (!g_sets[i].live) {
            g_sets[i].live = 1;
            g_sets[i].registered = 0;
            set->handle = &g_sets[i];
            return drakit_leave(NVML_SUCCESS);
        }
    }
    drakit_debug("nvmlEventSetCreate: all %d event sets are in use", DRAKIT_MAX_EVENT_SETS);
    return drakit_leave(NVML_ERROR_MEMORY);
}

NVML_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
    nvmlReturn_t rc = drakit_enter();
    if (rc == NVML_SUCCESS) {
        struct nvmlEventSet_st *s = lookup_set(set);
        if (s == NULL) {
            rc = NVML_ERROR_INVALID_ARGUMENT;
        } else {
            s->live = 0;
        }
    }
    return drakit_leave(rc);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device,
                                                          unsigned long long *eventTypes) {
    const struct nvmlDevice_st *d;
    nvmlReturn_t rc = drakit_enter_device(device, &d);
    if (rc == NVML_SUCCESS) {
        if (eventTypes == NULL) {
            rc = NVML_ERROR_INVALID_ARGUMENT;
        } else {
            *eventTypes = supported_events(d);
        }
    }
    return drakit_leave(rc);
}

/* Registering types the GPU does not support registers none of them
 * (NOT_SUPPORTED; the set stays usable), as nvml.h documents. */
NVML_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes,
                                                  nvmlEventSet_t set) {
    const struct nvmlDevice_st *d;
    nvmlReturn_t rc = drakit_enter_device(device, &d);
    if (rc == NVML_SUCCESS) {
        struct nvmlEventSet_st *s = lookup_set(set);
        if (s == NULL) {
            rc = NVML_ERROR_INVALID_ARGUMENT;
        } else if ((eventTypes & ~supported_events(d)) != 0) {
            rc = NVML_ERROR_NOT_SUPPORTED;
        } else {
            s->registered |= eventTypes;
        }
    }
    return drakit_leave(rc);
}

/* wait_for_event checks its arguments under the lock, then sleeps for timeoutms
 * without it (other calls go on meanwhile): no event ever arrives. */
static nvmlReturn_t wait_for_event(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms) {
    nvmlReturn_t rc = drakit_enter();
    if (rc == NVML_SUCCESS && (data == NULL || lookup_set(set) == NULL)) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    drakit_leave(rc);
    if (rc != NVML_SUCCESS) {
        return rc;
    }
    struct timespec left = {.tv_sec = timeoutms / 1000, .tv_nsec = (long)(timeoutms % 1000) * 1000000L};
    while (nanosleep(&left, &left) != 0 && errno == EINTR) {
    }
    return NVML_ERROR_TIMEOUT;
}

NVML_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data,
                                             unsigned int timeoutms) {
    return wait_for_event(set, data, timeoutms);
}

NVML_EXPORT nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data,
                                          unsigned int timeoutms) {
    return wait_for_event(set, data, timeoutms);
}
