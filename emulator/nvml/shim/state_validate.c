/*
 * nvmlstate.Validate's checks, rule for rule, and lookups among the MIG
 * records.
 */
#define _GNU_SOURCE

#include <stdint.h>

#include "state_nvlink.h"
#include "state_validate.h"

/* ---- validation (nvmlstate.Validate) ---- */

/* is_version reports whether p matches ^[0-9]+(\.[0-9]+){1,3}$. */
static int is_version(const char *p, size_t n) {
    size_t parts = 1, digits = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] >= '0' && p[i] <= '9') {
            digits++;
        } else if (p[i] == '.' && digits > 0) {
            parts++;
            digits = 0;
        } else {
            return 0;
        }
    }
    return digits > 0 && parts >= 2 && parts <= 4;
}

#define UUID_PATTERN "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
#define BUS_ID_PATTERN DRAKIT_BUS_ID_PATTERN

static int validate_mig(const struct drakit_state *s, errbuf *e);
static int validate_faults(const struct drakit_state *s, errbuf *e);

int drakit_validate(struct drakit_state *s, errbuf *e) {
    unsigned char minors[DRAKIT_MAX_GPUS] = {0};
    if (!is_version(s->driver_version, s->driver_version_len) ||
        s->driver_version_len > DRAKIT_MAX_VERSION_LEN) {
        return fail(e, "system.driverVersion is not a version");
    }
    if (!is_version(s->nvml_version, s->nvml_version_len) ||
        s->nvml_version_len > DRAKIT_MAX_VERSION_LEN) {
        return fail(e, "system.nvmlVersion is not a version");
    }
    if (s->cuda_driver_version <= 0) {
        return fail(e, "system.cudaDriverVersion must be positive");
    }
    for (unsigned int i = 0; i < s->count; i++) {
        struct nvmlDevice_st *g = &s->gpus[i];
        if (g->minor < 0 || g->minor > 254) {
            return fail(e, "gpu[%u].minor %lld out of range 0..254", i, (long long)g->minor);
        }
        if (minors[g->minor]) {
            return fail(e, "gpu[%u].minor %lld used twice", i, (long long)g->minor);
        }
        if (!drakit_matches(g->uuid, g->uuid_len, UUID_PATTERN)) {
            return fail(e, "gpu[%u].uuid is not GPU-<uuid>", i);
        }
        for (unsigned int j = 0; j < i; j++) {
            if (memcmp(s->gpus[j].uuid, g->uuid, DRAKIT_UUID_LEN) == 0) {
                return fail(e, "gpu[%u].uuid %.*s used twice", i, DRAKIT_UUID_LEN, g->uuid);
            }
        }
        if (g->name_len == 0 || g->name_len >= 96 || memchr(g->name, '\t', g->name_len) ||
            memchr(g->name, '\n', g->name_len)) {
            return fail(e, "gpu[%u].name must be 1..95 characters without tab or newline", i);
        }
        if (!drakit_matches(g->bus_id, g->bus_id_len, BUS_ID_PATTERN)) {
            return fail(e, "gpu[%u].busId is not DDDDDDDD:BB:DD.F (upper-case hex)", i);
        }
        for (unsigned int j = 0; j < i; j++) {
            if (memcmp(s->gpus[j].bus_id, g->bus_id, DRAKIT_BUS_ID_LEN) == 0) {
                return fail(e, "gpu[%u].busId %.*s used twice", i, DRAKIT_BUS_ID_LEN, g->bus_id);
            }
        }
        if (g->memory_total == 0) {
            return fail(e, "gpu[%u].memoryTotal must be positive", i);
        }
        if (g->memory_reserved > g->memory_total) {
            return fail(e, "gpu[%u].memoryReserved exceeds memoryTotal", i);
        }
        if (g->mig_mode != 0 && g->mig_mode != 1) {
            return fail(e, "gpu[%u].migMode must be 0 or 1", i);
        }
        if (g->mig_mode == 1 && !g->mig_capable) {
            return fail(e, "gpu[%u].migMode is 1 on a GPU that is not MIG capable", i);
        }
        minors[g->minor] = 1;
        g->domain = drakit_hex_value(g->bus_id, 8);
        g->bus = drakit_hex_value(g->bus_id + 9, 2);
        g->device = drakit_hex_value(g->bus_id + 12, 2);
        g->function = drakit_hex_value(g->bus_id + 15, 1);
    }
    if (validate_mig(s, e) != 0 || drakit_validate_nvlink(s, e) != 0) {
        return -1;
    }
    return validate_faults(s, e);
}


/* ---- MIG validation (nvmlstate's validateMIG) ---- */

#define MIG_MAX_GI_ID 14
#define MIG_MAX_CI_ID 7

static int64_t gi_access_minor(int64_t gpu, int64_t gi) { return 3 + gpu * 135 + gi * 9; }

/* valid_name: 1..95 bytes without tab or newline. */
static int valid_name(const char *p, size_t n) {
    return n > 0 && n < 96 && memchr(p, '\t', n) == NULL && memchr(p, '\n', n) == NULL;
}

static int list_contains(const struct drakit_list *l, int64_t v) {
    const char *p = l->p, *end = l->p + l->n;
    for (size_t i = 0; i < l->count; i++) {
        int64_t x;
        drakit_list_next(&p, end, &x);
        if (x == v) {
            return 1;
        }
    }
    return 0;
}

/* valid_placements mirrors validPlacements. */
static int valid_placements(const struct drakit_list *l, int64_t size, int64_t limit) {
    if (l->count == 0 || size < 1) {
        return 0;
    }
    const char *p = l->p, *end = l->p + l->n;
    int64_t prev = -1;
    for (size_t i = 0; i < l->count; i++) {
        int64_t st;
        drakit_list_next(&p, end, &st);
        if (st < 0 || st + size > limit || (i > 0 && st <= prev)) {
            return 0;
        }
        prev = st;
    }
    return 1;
}

static const struct nvmlDevice_st *gpu_by_minor(const struct drakit_state *s, int64_t minor) {
    for (unsigned int i = 0; i < s->count; i++) {
        if (s->gpus[i].minor == minor) {
            return &s->gpus[i];
        }
    }
    return NULL;
}

static const struct drakit_mig *mig_of(const struct drakit_state *s, size_t upto, int64_t gpu) {
    for (size_t i = 0; i < upto; i++) {
        if (s->migs[i].gpu == gpu) {
            return &s->migs[i];
        }
    }
    return NULL;
}

static const struct drakit_giprofile *giprofile_of(const struct drakit_state *s, size_t upto,
                                                   int64_t gpu, int64_t id) {
    for (size_t i = 0; i < upto; i++) {
        if (s->giprofiles[i].gpu == gpu && s->giprofiles[i].id == id) {
            return &s->giprofiles[i];
        }
    }
    return NULL;
}

static const struct drakit_ciprofile *ciprofile_of(const struct drakit_state *s, size_t upto,
                                                   int64_t gpu, int64_t gi_profile, int64_t id) {
    for (size_t i = 0; i < upto; i++) {
        const struct drakit_ciprofile *p = &s->ciprofiles[i];
        if (p->gpu == gpu && p->gi_profile == gi_profile && p->id == id) {
            return p;
        }
    }
    return NULL;
}

static const struct drakit_gi *gi_of(const struct drakit_state *s, size_t upto, int64_t gpu,
                                     int64_t id) {
    for (size_t i = 0; i < upto; i++) {
        if (s->gis[i].gpu == gpu && s->gis[i].id == id) {
            return &s->gis[i];
        }
    }
    return NULL;
}

#define MIG_UUID_PATTERN "MIG-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"

static int validate_mig(const struct drakit_state *s, errbuf *e) {
    for (size_t i = 0; i < s->nmigs; i++) {
        const struct drakit_mig *m = &s->migs[i];
        const struct nvmlDevice_st *g = gpu_by_minor(s, m->gpu);
        if (g == NULL || !g->mig_capable || mig_of(s, i, m->gpu) != NULL) {
            return fail(e, "mig[%zu].gpu %lld: no MIG-capable gpu record, or a second mig record", i,
                        (long long)m->gpu);
        }
        if (m->max_devices < 1 || m->max_devices > MIG_MAX_CI_ID + 1 || m->memory_slices < 1 ||
            m->memory_slices > 8) {
            return fail(e, "mig[%zu]: maxDevices and memorySlices must be 1..8", i);
        }
    }
    for (size_t i = 0; i < s->ngiprofiles; i++) {
        const struct drakit_giprofile *p = &s->giprofiles[i];
        const struct drakit_mig *m = mig_of(s, s->nmigs, p->gpu);
        int index_used = 0;
        for (size_t j = 0; j < i; j++) {
            index_used |= s->giprofiles[j].gpu == p->gpu && s->giprofiles[j].index == p->index;
        }
        if (m == NULL) {
            return fail(e, "giprofile[%zu].gpu %lld: no mig record for the GPU", i, (long long)p->gpu);
        }
        if (p->id < 0 || giprofile_of(s, i, p->gpu, p->id) != NULL || p->index < 0 || index_used) {
            return fail(e, "giprofile[%zu]: id or index negative or used twice", i);
        }
        if (!valid_name(p->name, p->name_len)) {
            return fail(e, "giprofile[%zu].name must be 1..95 characters without tab or newline", i);
        }
        if (p->slices < 1 || p->memory_slices < 1 || p->memory_slices > m->memory_slices ||
            !valid_placements(&p->placements, p->memory_slices, m->memory_slices) ||
            p->instances < 1 || (uint64_t)p->instances > p->placements.count) {
            return fail(e, "giprofile[%zu]: bad slices, placements or instances", i);
        }
        if (p->memory_mb == 0 || p->sms < 0 || p->copy_engines < 0 || p->decoders < 0 ||
            p->encoders < 0 || p->jpegs < 0 || p->ofas < 0) {
            return fail(e, "giprofile[%zu]: memoryMB must be positive, engine counts non-negative", i);
        }
    }
    for (size_t i = 0; i < s->nciprofiles; i++) {
        const struct drakit_ciprofile *p = &s->ciprofiles[i];
        const struct drakit_giprofile *gp = giprofile_of(s, s->ngiprofiles, p->gpu, p->gi_profile);
        if (gp == NULL) {
            return fail(e, "ciprofile[%zu]: no giprofile %lld on gpu %lld", i,
                        (long long)p->gi_profile, (long long)p->gpu);
        }
        if (p->id < 0 || ciprofile_of(s, i, p->gpu, p->gi_profile, p->id) != NULL ||
            !valid_name(p->name, p->name_len) || p->slices < 1 || p->slices > gp->slices ||
            !valid_placements(&p->placements, p->slices, gp->slices) || p->instances < 1 ||
            (uint64_t)p->instances > p->placements.count || p->sms < 0) {
            return fail(e, "ciprofile[%zu]: bad id, name, slices, placements, instances or sms", i);
        }
    }
    for (size_t i = 0; i < s->ngis; i++) {
        const struct drakit_gi *g = &s->gis[i];
        const struct drakit_giprofile *p = giprofile_of(s, s->ngiprofiles, g->gpu, g->profile);
        if (p == NULL || gpu_by_minor(s, g->gpu)->mig_mode != 1 || g->id < 0 ||
            g->id > MIG_MAX_GI_ID || gi_of(s, i, g->gpu, g->id) != NULL ||
            !list_contains(&p->placements, g->start) || g->size != p->memory_slices ||
            g->cap_minor != gi_access_minor(g->gpu, g->id)) {
            return fail(e, "gi[%zu]: bad profile, mode, id, placement or capMinor", i);
        }
        for (size_t j = 0; j < i; j++) {
            const struct drakit_gi *o = &s->gis[j];
            if (o->gpu == g->gpu && o->start < g->start + g->size && g->start < o->start + o->size) {
                return fail(e, "gi[%zu]: placement overlaps gi[%zu]", i, j);
            }
        }
    }
    for (size_t i = 0; i < s->ncis; i++) {
        const struct drakit_ci *c = &s->cis[i];
        const struct drakit_gi *g = gi_of(s, s->ngis, c->gpu, c->gi);
        if (g == NULL) {
            return fail(e, "ci[%zu]: no gi %lld on gpu %lld", i, (long long)c->gi, (long long)c->gpu);
        }
        const struct drakit_ciprofile *p =
            ciprofile_of(s, s->nciprofiles, c->gpu, g->profile, c->profile);
        int dup = 0;
        int64_t devices = 1;
        for (size_t j = 0; j < i; j++) {
            const struct drakit_ci *o = &s->cis[j];
            dup |= o->gpu == c->gpu && o->gi == c->gi && o->id == c->id;
            dup |= o->uuid_len == c->uuid_len && memcmp(o->uuid, c->uuid, c->uuid_len) == 0;
            devices += o->gpu == c->gpu;
        }
        if (p == NULL || c->id < 0 || c->id > MIG_MAX_CI_ID || dup ||
            !list_contains(&p->placements, c->start) || c->size != p->slices ||
            !drakit_matches(c->uuid, c->uuid_len, MIG_UUID_PATTERN) ||
            c->cap_minor != gi_access_minor(c->gpu, c->gi) + 1 + c->id) {
            return fail(e, "ci[%zu]: bad profile, id, placement, uuid or capMinor", i);
        }
        for (size_t j = 0; j < i; j++) {
            const struct drakit_ci *o = &s->cis[j];
            if (o->gpu == c->gpu && o->gi == c->gi && o->start < c->start + c->size &&
                c->start < o->start + o->size) {
                return fail(e, "ci[%zu]: placement overlaps ci[%zu]", i, j);
            }
        }
        if (devices > mig_of(s, s->nmigs, c->gpu)->max_devices) {
            return fail(e, "ci[%zu]: more MIG devices than maxDevices on gpu %lld", i,
                        (long long)c->gpu);
        }
    }
    return 0;
}

/* ---- fault and event validation (nvmlstate's validateFaults) ---- */

#define MAX_RECOVERY_ACTION 7
#define ALL_CLOCKS_EVENT_REASONS 0x1FFull
#define MAX_TEMPERATURE 200

static int validate_faults(const struct drakit_state *s, errbuf *e) {
    for (size_t i = 0; i < s->nfaults; i++) {
        const struct drakit_fault *f = &s->faults[i];
        int dup = 0;
        for (size_t j = 0; j < i; j++) {
            dup |= s->faults[j].gpu == f->gpu;
        }
        if (gpu_by_minor(s, f->gpu) == NULL || dup) {
            return fail(e, "fault[%zu].gpu %lld: no gpu record, or a second fault record", i,
                        (long long)f->gpu);
        }
        if (f->sbe_aggregate < f->sbe_volatile || f->dbe_aggregate < f->dbe_volatile ||
            f->retired_sbe < 0 || f->retired_dbe < 0 || f->remapped_cor < 0 || f->remapped_unc < 0) {
            return fail(e, "fault[%zu]: aggregate below volatile, or a negative count", i);
        }
        if (f->recovery_action < 0 || f->recovery_action > MAX_RECOVERY_ACTION ||
            (f->clocks_event_reasons & ~ALL_CLOCKS_EVENT_REASONS) != 0 || f->temperature < 0 ||
            f->temperature > MAX_TEMPERATURE) {
            return fail(e, "fault[%zu]: bad recoveryAction, clocksEventReasons or temperature", i);
        }
    }
    if (s->nevents > DRAKIT_MAX_EVENTS) {
        return fail(e, "%zu event records, more than %d", s->nevents, DRAKIT_MAX_EVENTS);
    }
    for (size_t i = 0; i < s->nevents; i++) {
        const struct drakit_event *v = &s->events[i];
        if (v->seq == 0 || (i > 0 && v->seq <= s->events[i - 1].seq) || v->type == 0 ||
            gpu_by_minor(s, v->gpu) == NULL) {
            return fail(e, "event[%zu]: bad seq, type or gpu", i);
        }
        if ((v->gi != DRAKIT_NO_INSTANCE && v->gi > MIG_MAX_GI_ID) ||
            (v->ci != DRAKIT_NO_INSTANCE && (v->ci > MIG_MAX_CI_ID || v->gi == DRAKIT_NO_INSTANCE))) {
            return fail(e, "event[%zu]: bad gi or ci", i);
        }
    }
    return 0;
}

const struct drakit_fault *drakit_fault_of(const struct drakit_state *s, int64_t gpu) {
    for (size_t i = 0; i < s->nfaults; i++) {
        if (s->faults[i].gpu == gpu) {
            return &s->faults[i];
        }
    }
    return NULL;
}

const struct nvmlDevice_st *drakit_gpu_by_minor(const struct drakit_state *s, int64_t minor) {
    if (minor < 0 || minor >= DRAKIT_MAX_GPUS || s->gpu_at[minor] == 0) {
        return NULL;
    }
    return &s->gpus[s->gpu_at[minor] - 1];
}

const struct drakit_mig *drakit_mig_of(const struct drakit_state *s, int64_t gpu) {
    return mig_of(s, s->nmigs, gpu);
}

const struct drakit_gi *drakit_gi_of(const struct drakit_state *s, int64_t gpu, int64_t id) {
    return gi_of(s, s->ngis, gpu, id);
}

const struct drakit_giprofile *drakit_giprofile_of(const struct drakit_state *s, int64_t gpu,
                                                   int64_t id) {
    return giprofile_of(s, s->ngiprofiles, gpu, id);
}

const struct drakit_ciprofile *drakit_ciprofile_of(const struct drakit_state *s, int64_t gpu,
                                                   int64_t gi_profile, int64_t id) {
    return ciprofile_of(s, s->nciprofiles, gpu, gi_profile, id);
}

int drakit_list_contains(const struct drakit_list *l, int64_t v) { return list_contains(l, v); }
