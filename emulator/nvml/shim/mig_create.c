/*
 * MIG mutations: MIG mode, GPU and compute instance creation (with and
 * without placement) and destruction, each a transaction under the state
 * file's lock; see mig.c.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "caps.h"
#include "mig_ids.h"
#include "mig_internal.h"
#include "state_write.h"

/*
 * struct txn is one mutation: the lock on <state>.lock and the state read
 * under it. begin takes the lock (blocking) and reads the state of the
 * root g_state came from; the caller must call end.
 */
struct txn {
    int lock_fd;
    struct drakit_state *s;
};

static nvmlReturn_t begin(struct txn *t) {
    char path[PATH_MAX];
    t->lock_fd = -1;
    t->s = NULL;
    if (drakit_join(path, sizeof path, g_state.root, "run/drakit-emulator/nvml.state.lock") != 0) {
        return NVML_ERROR_UNKNOWN;
    }
    char cap[PATH_MAX];
    /* MIG management needs the config capability, as on a host. */
    if (drakit_join(cap, sizeof cap, g_state.root, "dev/nvidia-caps/nvidia-cap1") != 0 ||
        access(cap, R_OK) != 0) {
        drakit_debug("MIG management needs %s", cap);
        return NVML_ERROR_NO_PERMISSION;
    }
    t->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (t->lock_fd < 0) {
        return drakit_errno_rc(errno);
    }
    while (flock(t->lock_fd, LOCK_EX) != 0) {
        if (errno != EINTR) {
            return drakit_errno_rc(errno);
        }
    }
    t->s = malloc(sizeof *t->s);
    if (t->s == NULL) {
        return NVML_ERROR_MEMORY;
    }
    nvmlReturn_t rc = drakit_state_load_root(t->s, g_state.root);
    if (rc != NVML_SUCCESS) {
        free(t->s);
        t->s = NULL;
    }
    return rc;
}

/* end releases the lock and rereads the state into g_state. */
static void end(struct txn *t) {
    if (t->s != NULL) {
        drakit_state_free(t->s);
        free(t->s);
    }
    if (t->lock_fd >= 0) {
        close(t->lock_fd);
    }
    drakit_reload();
}

/* insert_gi adds g to s's GIs before the first one ordered after it by
 * (GPU, id), so a file in that order stays in it. */
static int insert_gi(struct drakit_state *s, const struct drakit_gi *g) {
    struct drakit_gi *gis = realloc(s->gis, (s->ngis + 1) * sizeof *gis);
    if (gis == NULL) {
        return -1;
    }
    size_t at = 0;
    while (at < s->ngis && (gis[at].gpu < g->gpu || (gis[at].gpu == g->gpu && gis[at].id < g->id))) {
        at++;
    }
    memmove(&gis[at + 1], &gis[at], (s->ngis - at) * sizeof *gis);
    gis[at] = *g;
    s->gis = gis;
    s->ngis++;
    return 0;
}

/* insert_ci is insert_gi for CIs, ordered by (GPU, GI id, CI id). */
static int insert_ci(struct drakit_state *s, const struct drakit_ci *c) {
    struct drakit_ci *cis = realloc(s->cis, (s->ncis + 1) * sizeof *cis);
    if (cis == NULL) {
        return -1;
    }
    size_t at = 0;
    while (at < s->ncis &&
           (cis[at].gpu < c->gpu || (cis[at].gpu == c->gpu && cis[at].gi < c->gi) ||
            (cis[at].gpu == c->gpu && cis[at].gi == c->gi && cis[at].id < c->id))) {
        at++;
    }
    memmove(&cis[at + 1], &cis[at], (s->ncis - at) * sizeof *cis);
    cis[at] = *c;
    s->cis = cis;
    s->ncis++;
    return 0;
}

/* commit_add creates the capability files and node of a new instance, then
 * saves s; on failure it removes what it created. */
static nvmlReturn_t commit_add(struct drakit_state *s, int64_t gpu, int64_t gi, int64_t ci,
                               int64_t minor) {
    nvmlReturn_t rc = drakit_add_cap(s->root, gpu, gi, ci, minor);
    if (rc == NVML_SUCCESS) {
        rc = drakit_save_state(s, NULL, 0);
    }
    if (rc != NVML_SUCCESS) {
        drakit_remove_cap(s->root, gpu, gi, ci, minor);
    }
    return rc;
}

/*
 * create_gi_on creates a GI of profile pid on gpu in s, at start or (start
 * < 0) at the highest free placement, where the driver puts a GI created
 * without one (profile.autoPlace follows the same rule); *id is its id.
 */
static nvmlReturn_t create_gi_on(struct drakit_state *s, int64_t gpu, int64_t pid, int64_t start,
                                 int64_t *id) {
    const struct nvmlDevice_st *d = drakit_gpu_by_minor(s, gpu);
    const struct drakit_mig *mig = drakit_mig_of(s, gpu);
    const struct drakit_giprofile *p = drakit_giprofile_of(s, gpu, pid);
    if (d == NULL || mig == NULL || p == NULL || d->mig_mode != 1) {
        return NVML_ERROR_NOT_SUPPORTED; /* changed by another process */
    }
    if (drakit_gis_of_profile(s, gpu, pid) >= p->instances) {
        return NVML_ERROR_INSUFFICIENT_RESOURCES;
    }
    if (start >= 0 && !drakit_gi_free(s, gpu, start, p->memory_slices)) {
        return NVML_ERROR_INSUFFICIENT_RESOURCES;
    }
    for (size_t i = p->placements.count; start < 0 && i > 0; i--) {
        int64_t st = drakit_list_get(&p->placements, i - 1);
        if (drakit_gi_free(s, gpu, st, p->memory_slices)) {
            start = st;
        }
    }
    if (start < 0 ||
        (*id = drakit_new_gi_id(s, gpu, start, p->memory_slices, mig->memory_slices)) < 0) {
        return NVML_ERROR_INSUFFICIENT_RESOURCES;
    }
    struct drakit_gi g = {gpu, *id, pid, start, p->memory_slices,
                          drakit_gi_access_minor(gpu, *id), 1};
    if (insert_gi(s, &g) != 0) {
        return NVML_ERROR_MEMORY;
    }
    return commit_add(s, gpu, *id, -1, g.cap_minor);
}

static nvmlReturn_t create_gi(nvmlDevice_t device, unsigned int profileId,
                              const nvmlGpuInstancePlacement_t *placement, int with_placement,
                              nvmlGpuInstance_t *gpuInstance) {
    const struct nvmlDevice_st *d;
    const struct drakit_giprofile *p;
    nvmlReturn_t rc = drakit_gi_profile_by_id(device, profileId, 1, &d, &p);
    if (rc == NVML_SUCCESS &&
        (gpuInstance == NULL || (with_placement && placement == NULL) ||
         (with_placement && (!drakit_list_contains(&p->placements, placement->start) ||
                             placement->size != (unsigned int)p->memory_slices)))) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc != NVML_SUCCESS) {
        return drakit_leave(rc);
    }
    int64_t gpu = d->minor, pid = p->id, start = with_placement ? (int64_t)placement->start : -1, id = 0;
    struct txn t;
    rc = begin(&t);
    if (rc == NVML_SUCCESS) {
        rc = create_gi_on(t.s, gpu, pid, start, &id);
    }
    end(&t);
    if (rc == NVML_SUCCESS) {
        *gpuInstance = drakit_gi_handle(gpu, id);
    }
    return drakit_leave(rc);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceCreateGpuInstance(nvmlDevice_t device, unsigned int profileId,
                                                     nvmlGpuInstance_t *gpuInstance) {
    return create_gi(device, profileId, NULL, 0, gpuInstance);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(
    nvmlDevice_t device, unsigned int profileId, const nvmlGpuInstancePlacement_t *placement,
    nvmlGpuInstance_t *gpuInstance) {
    return create_gi(device, profileId, placement, 1, gpuInstance);
}

static char g_new_uuid[DRAKIT_UUID_LEN + 1]; /* the UUID of the CI being created */

/* create_ci_on creates a CI of profile pid in GI gi of gpu in s, at start
 * or (start < 0) at the lowest free placement, with the lowest free id. */
static nvmlReturn_t create_ci_on(struct drakit_state *s, int64_t gpu, int64_t gi, int64_t pid,
                                 int64_t start, int64_t *id) {
    const struct nvmlDevice_st *d = drakit_gpu_by_minor(s, gpu);
    const struct drakit_gi *g = drakit_gi_of(s, gpu, gi);
    if (d == NULL || g == NULL) {
        return NVML_ERROR_INVALID_ARGUMENT; /* destroyed by another process */
    }
    const struct drakit_ciprofile *p = drakit_ciprofile_of(s, gpu, g->profile, pid);
    if (drakit_count_cis(s, gpu, gi, pid) >= p->instances ||
        drakit_count_cis(s, gpu, -1, 0) >= drakit_mig_of(s, gpu)->max_devices ||
        (start >= 0 && !drakit_ci_free(s, gpu, gi, start, p->slices))) {
        return NVML_ERROR_INSUFFICIENT_RESOURCES;
    }
    for (size_t i = 0; start < 0 && i < p->placements.count; i++) {
        int64_t st = drakit_list_get(&p->placements, i);
        if (drakit_ci_free(s, gpu, gi, st, p->slices)) {
            start = st;
        }
    }
    if (start < 0 || (*id = drakit_new_ci_id(s, gpu, gi)) < 0) {
        return NVML_ERROR_INSUFFICIENT_RESOURCES;
    }
    drakit_new_mig_uuid(d, gi, *id, g_new_uuid);
    struct drakit_ci c = {gpu, gi, *id, pid, start, p->slices,
                          drakit_gi_access_minor(gpu, gi) + 1 + *id, g_new_uuid, DRAKIT_UUID_LEN, 1};
    if (insert_ci(s, &c) != 0) {
        return NVML_ERROR_MEMORY;
    }
    return commit_add(s, gpu, gi, *id, c.cap_minor);
}

static nvmlReturn_t create_ci(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                              const nvmlComputeInstancePlacement_t *placement, int with_placement,
                              nvmlComputeInstance_t *computeInstance) {
    const struct drakit_gi *g;
    const struct drakit_ciprofile *p;
    nvmlReturn_t rc = drakit_ci_profile_by_id(gpuInstance, profileId, &g, &p);
    if (rc == NVML_SUCCESS &&
        (computeInstance == NULL || (with_placement && placement == NULL) ||
         (with_placement && (!drakit_list_contains(&p->placements, placement->start) ||
                             placement->size != (unsigned int)p->slices)))) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc != NVML_SUCCESS) {
        return drakit_leave(rc);
    }
    int64_t gpu = g->gpu, gi = g->id, pid = p->id, id = 0;
    int64_t start = with_placement ? (int64_t)placement->start : -1;
    struct txn t;
    rc = begin(&t);
    if (rc == NVML_SUCCESS) {
        rc = create_ci_on(t.s, gpu, gi, pid, start, &id);
    }
    end(&t);
    if (rc == NVML_SUCCESS) {
        *computeInstance = drakit_ci_handle(gpu, gi, id);
    }
    return drakit_leave(rc);
}

NVML_EXPORT nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(
    nvmlGpuInstance_t gpuInstance, unsigned int profileId, nvmlComputeInstance_t *computeInstance) {
    return create_ci(gpuInstance, profileId, NULL, 0, computeInstance);
}

NVML_EXPORT nvmlReturn_t nvmlGpuInstanceCreateComputeInstanceWithPlacement(
    nvmlGpuInstance_t gpuInstance, unsigned int profileId,
    const nvmlComputeInstancePlacement_t *placement, nvmlComputeInstance_t *computeInstance) {
    return create_ci(gpuInstance, profileId, placement, 1, computeInstance);
}

/* destroy_on removes GI gi (ci < 0) or CI ci of gpu from s, saves s and
 * removes the instance's capability files and node. A GI that still has
 * CIs is NVML_ERROR_IN_USE. */
static nvmlReturn_t destroy_on(struct drakit_state *s, int64_t gpu, int64_t gi, int64_t ci) {
    int64_t minor = -1;
    if (ci < 0) {
        if (drakit_count_cis(s, gpu, -1, 0) > 0) {
            for (size_t i = 0; i < s->ncis; i++) {
                if (s->cis[i].gpu == gpu && s->cis[i].gi == gi) {
                    return NVML_ERROR_IN_USE;
                }
            }
        }
        for (size_t i = 0; i < s->ngis && minor < 0; i++) {
            if (s->gis[i].gpu == gpu && s->gis[i].id == gi) {
                minor = s->gis[i].cap_minor;
                memmove(&s->gis[i], &s->gis[i + 1], (s->ngis - i - 1) * sizeof s->gis[0]);
                s->ngis--;
            }
        }
    } else {
        for (size_t i = 0; i < s->ncis && minor < 0; i++) {
            const struct drakit_ci *c = &s->cis[i];
            if (c->gpu == gpu && c->gi == gi && c->id == ci) {
                minor = c->cap_minor;
                memmove(&s->cis[i], &s->cis[i + 1], (s->ncis - i - 1) * sizeof s->cis[0]);
                s->ncis--;
            }
        }
    }
    if (minor < 0) {
        return NVML_ERROR_INVALID_ARGUMENT; /* destroyed by another process */
    }
    nvmlReturn_t rc = drakit_save_state(s, NULL, 0);
    if (rc == NVML_SUCCESS) {
        drakit_remove_cap(s->root, gpu, gi, ci, minor);
    }
    return rc;
}

static nvmlReturn_t destroy(int64_t gpu, int64_t gi, int64_t ci) {
    struct txn t;
    nvmlReturn_t rc = begin(&t);
    if (rc == NVML_SUCCESS) {
        rc = destroy_on(t.s, gpu, gi, ci);
    }
    end(&t);
    return drakit_leave(rc);
}

NVML_EXPORT nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t computeInstance) {
    nvmlReturn_t rc = drakit_enter();
    const struct drakit_ci *c = NULL;
    if (rc == NVML_SUCCESS && (c = drakit_lookup_ci(computeInstance)) == NULL) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc != NVML_SUCCESS) {
        return drakit_leave(rc);
    }
    return destroy(c->gpu, c->gi, c->id);
}

NVML_EXPORT nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance) {
    const struct drakit_gi *g;
    nvmlReturn_t rc = drakit_enter_gi(gpuInstance, &g);
    if (rc != NVML_SUCCESS) {
        return drakit_leave(rc);
    }
    return destroy(g->gpu, g->id, -1);
}

/*
 * MIG mode takes effect at once (*activationStatus NVML_SUCCESS: no GPU
 * reset is emulated). Disabling it while the GPU has GPU instances is
 * NVML_ERROR_IN_USE; a GPU that is not MIG capable NOT_SUPPORTED.
 */
NVML_EXPORT nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t device, unsigned int mode,
                                              nvmlReturn_t *activationStatus) {
    const struct nvmlDevice_st *d;
    const struct drakit_mig *mig;
    nvmlReturn_t rc = drakit_enter_gpu(device, &d, &mig);
    if (rc == NVML_SUCCESS && (activationStatus == NULL || mode > 1)) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc != NVML_SUCCESS) {
        return drakit_leave(rc);
    }
    int64_t gpu = d->minor;
    struct txn t;
    rc = begin(&t);
    const struct nvmlDevice_st *cur = rc == NVML_SUCCESS ? drakit_gpu_by_minor(t.s, gpu) : NULL;
    if (rc == NVML_SUCCESS && cur == NULL) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc == NVML_SUCCESS && cur->mig_mode != (int64_t)mode) {
        for (size_t i = 0; i < t.s->ngis; i++) {
            if (t.s->gis[i].gpu == gpu) {
                rc = NVML_ERROR_IN_USE;
            }
        }
        if (rc == NVML_SUCCESS) {
            rc = drakit_save_state(t.s, cur->mig_mode_val, (int64_t)mode);
        }
    }
    end(&t);
    if (rc == NVML_SUCCESS) {
        *activationStatus = NVML_SUCCESS;
    }
    return drakit_leave(rc);
}
