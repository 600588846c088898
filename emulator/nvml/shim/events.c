/*
 * Event sets, as health monitors use them (NVIDIA's DRA driver and device
 * plugin register XID and ECC events and wait in a loop), over the state
 * file's event records (nvmlstate's fault.go).
 *
 * A set remembers the sequence number of the newest event when it was
 * created and sees only later events, one per wait, of the types registered
 * for their device: on a GPU handle, the GPU's events (those of its MIG
 * instances too, with their GI and CI ids); on a MIG device handle, its
 * instance's events and the GPU-wide ones. A wait that finds none blocks,
 * without the library's lock, on inotify on the state file's directory (the
 * file is replaced by rename: IN_MOVED_TO, or IN_CLOSE_WRITE of a plain
 * write), rereads the state when the file changed and looks again, until
 * its timeout: NVML_ERROR_TIMEOUT. Sets live in a static table, so a
 * handle is checked like a GPU handle (an address into the table, of a set
 * not freed); they outlive nvmlShutdown, but every call needs the library
 * initialised.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

#include "nvml_abi.h"
#include "shim.h"
#include "state.h"

/* More sets than any client keeps: a health monitor holds one. */
#define DRAKIT_MAX_EVENT_SETS 64
/* MIG devices one set can register: a GPU has at most 7. */
#define DRAKIT_MAX_MIG_REGISTRATIONS 64
#define STATE_DIR "run/drakit-emulator"
#define STATE_NAME "nvml.state"

struct mig_registration {
    int64_t gpu, gi, ci;
    unsigned long long types;
};

struct nvmlEventSet_st {
    int live;
    uint64_t cursor;                               /* newest event seq seen or skipped */
    unsigned long long gpu_types[DRAKIT_MAX_GPUS]; /* registered types by GPU minor */
    struct mig_registration migs[DRAKIT_MAX_MIG_REGISTRATIONS];
    size_t nmigs;
};

static struct nvmlEventSet_st g_sets[DRAKIT_MAX_EVENT_SETS];

/* The events an emulated data-centre GPU supports: ECC errors, P-state and
 * clock changes, XID errors, and MIG configuration changes when it is MIG
 * capable; a MIG device: XID and ECC errors. */
static unsigned long long supported_events(const struct nvmlDevice_st *d, int mig) {
    unsigned long long errors = nvmlEventTypeSingleBitEccError | nvmlEventTypeDoubleBitEccError |
                                nvmlEventTypeXidCriticalError;
    if (mig) {
        return errors;
    }
    unsigned long long types = errors | nvmlEventTypePState | nvmlEventTypeClock;
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

static uint64_t newest_seq(void) {
    return g_state.nevents == 0 ? 0 : g_state.events[g_state.nevents - 1].seq;
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
            memset(&g_sets[i], 0, sizeof g_sets[i]);
            g_sets[i].live = 1;
            g_sets[i].cursor = newest_seq();
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
    const struct drakit_ci *mig;
    nvmlReturn_t rc = drakit_enter_any(device, &d, &mig);
    if (rc == NVML_SUCCESS) {
        if (eventTypes == NULL) {
            rc = NVML_ERROR_INVALID_ARGUMENT;
        } else {
            *eventTypes = supported_events(d, mig != NULL);
        }
    }
    return drakit_leave(rc);
}

/* register_mig adds types to s's registration of MIG device c. */
static nvmlReturn_t register_mig(struct nvmlEventSet_st *s, const struct drakit_ci *c,
                                 unsigned long long types) {
    for (size_t i = 0; i < s->nmigs; i++) {
        struct mig_registration *r = &s->migs[i];
        if (r->gpu == c->gpu && r->gi == c->gi && r->ci == c->id) {
            r->types |= types;
            return NVML_SUCCESS;
        }
    }
    if (s->nmigs == DRAKIT_MAX_MIG_REGISTRATIONS) {
        return NVML_ERROR_MEMORY;
    }
    s->migs[s->nmigs++] = (struct mig_registration){c->gpu, c->gi, c->id, types};
    return NVML_SUCCESS;
}

/* Registering types the device does not support registers none of them
 * (NOT_SUPPORTED; the set stays usable), as nvml.h documents. */
NVML_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes,
                                                  nvmlEventSet_t set) {
    const struct nvmlDevice_st *d;
    const struct drakit_ci *mig;
    nvmlReturn_t rc = drakit_enter_any(device, &d, &mig);
    if (rc == NVML_SUCCESS) {
        struct nvmlEventSet_st *s = lookup_set(set);
        if (s == NULL) {
            rc = NVML_ERROR_INVALID_ARGUMENT;
        } else if ((eventTypes & ~supported_events(d, mig != NULL)) != 0) {
            rc = NVML_ERROR_NOT_SUPPORTED;
        } else if (mig != NULL) {
            rc = register_mig(s, mig, eventTypes);
        } else {
            s->gpu_types[d->minor] |= eventTypes;
        }
    }
    return drakit_leave(rc);
}

/* deliver fills data with e if s registered it, for the device it
 * registered; 1 then, else 0. */
static int deliver(const struct nvmlEventSet_st *s, const struct drakit_event *e,
                   nvmlEventData_t *data) {
    struct nvmlDevice_st *device = NULL;
    if ((s->gpu_types[e->gpu] & e->type) != 0) {
        device = drakit_gpu_handle(e->gpu).handle;
    }
    for (size_t i = 0; i < s->nmigs && device == NULL; i++) {
        const struct mig_registration *r = &s->migs[i];
        if (r->gpu == e->gpu && (r->types & e->type) != 0 &&
            (e->gi == DRAKIT_NO_INSTANCE ||
             ((uint64_t)r->gi == e->gi && (uint64_t)r->ci == e->ci))) {
            device = drakit_mig_handle_at(r->gpu, r->gi, r->ci);
        }
    }
    if (device == NULL) {
        return 0;
    }
    data->device.handle = device;
    data->eventType = e->type;
    data->eventData = e->data;
    data->gpuInstanceId = (unsigned int)e->gi;
    data->computeInstanceId = (unsigned int)e->ci;
    return 1;
}

/* next_event delivers s's next registered event after its cursor, moving
 * the cursor past what it looked at; 1 when it delivered one. */
static int next_event(struct nvmlEventSet_st *s, nvmlEventData_t *data) {
    for (size_t i = 0; i < g_state.nevents; i++) {
        const struct drakit_event *e = &g_state.events[i];
        if (e->seq <= s->cursor) {
            continue;
        }
        s->cursor = e->seq;
        if (deliver(s, e, data)) {
            return 1;
        }
    }
    return 0;
}

/* watch_state returns an inotify descriptor watching the state file's
 * directory under root for a replaced or rewritten file, or -1. */
static int watch_state(const char *root) {
    char dir[PATH_MAX];
    if (drakit_join(dir, sizeof dir, root, STATE_DIR) != 0) {
        return -1;
    }
    int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (fd >= 0 && inotify_add_watch(fd, dir, IN_MOVED_TO | IN_CLOSE_WRITE) < 0) {
        close(fd);
        fd = -1;
    }
    if (fd < 0) {
        drakit_debug("nvmlEventSetWait: inotify on %.400s: %s", dir, strerror(errno));
    }
    return fd;
}

/* state_replaced drains fd and reports whether an event named the state file. */
static int state_replaced(int fd) {
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    int hit = 0;
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) {
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)(void *)p;
            hit |= ev->len > 0 && strcmp(ev->name, STATE_NAME) == 0;
            p += sizeof *ev + ev->len;
        }
    }
    return hit;
}

static long long elapsed_ms(const struct timespec *start) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long long)(now.tv_sec - start->tv_sec) * 1000 + (now.tv_nsec - start->tv_nsec) / 1000000;
}

/*
 * wait_for_event looks for the set's next event under the lock; without
 * one it waits on inotify without the lock. The watch is placed before the
 * first look that can block, and the state is looked at once more after
 * it, so a file replaced in between is not missed. Without inotify it
 * sleeps out the timeout in steps of 100 ms, looking after each.
 *
 * Rereading: every look enters through drakit_enter, which rereads when the
 * generation counter moved. A writer bumps it only after its rename, so a
 * waiter woken by the rename may look before the bump: then it rereads
 * because the state file is another one (drakit_state_file_changed), not
 * whatever the counter says, and only then, so a wake after drakit_enter
 * already reread (the bump came first) reads the file once. The state keeps
 * the counter read before the file, never a newer one: a bump that lands
 * after such a reread makes the next call read once more (no change is
 * lost, and it converges: the counter then matches). The bump's own write
 * of nvml.generation wakes a waiter too, which then rereads in drakit_enter.
 */
static nvmlReturn_t wait_for_event(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms) {
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    int fd = -1, watching = 0, reread = 0;
    for (;;) {
        nvmlReturn_t rc = drakit_enter();
        struct nvmlEventSet_st *s = rc == NVML_SUCCESS ? lookup_set(set) : NULL;
        if (rc == NVML_SUCCESS && (data == NULL || s == NULL)) {
            rc = NVML_ERROR_INVALID_ARGUMENT;
        }
        if (rc == NVML_SUCCESS && reread && drakit_state_file_changed(&g_state)) {
            drakit_reload(); /* renamed in, its generation not bumped yet */
        }
        if (rc == NVML_SUCCESS && !next_event(s, data)) {
            rc = NVML_ERROR_TIMEOUT;
        }
        int first_watch = rc == NVML_ERROR_TIMEOUT && !watching;
        if (first_watch) {
            fd = watch_state(g_state.root);
            watching = 1;
        }
        drakit_leave(rc);
        long long left = (long long)timeoutms - elapsed_ms(&start);
        left = left < 0 ? 0 : left;
        if (rc != NVML_ERROR_TIMEOUT || (!first_watch && left <= 0)) {
            if (fd >= 0) {
                close(fd);
            }
            return rc;
        }
        if (first_watch && fd >= 0) {
            reread = 0;
            continue; /* look once more, now that changes wake us */
        }
        if (fd < 0) {
            struct timespec step = {0, (left < 100 ? left : 100) * 1000000L};
            nanosleep(&step, NULL);
            reread = 1;
            continue;
        }
        struct pollfd p = {fd, POLLIN, 0};
        int n = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
        reread = n > 0 && state_replaced(fd);
        if (n < 0 && errno != EINTR) {
            close(fd);
            return NVML_ERROR_UNKNOWN;
        }
    }
}

NVML_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data,
                                             unsigned int timeoutms) {
    return wait_for_event(set, data, timeoutms);
}

NVML_EXPORT nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data,
                                          unsigned int timeoutms) {
    return wait_for_event(set, data, timeoutms);
}
