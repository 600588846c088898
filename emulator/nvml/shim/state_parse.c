/*
 * The state file's records (nvmlstate.Parse): system, gpu, the MIG
 * records and the fault and event records (the nvlink, fabric and peer
 * records: state_nvlink.c), read line by line up to the end record, then validated.
 */
#define _GNU_SOURCE

#include <stdint.h>

#include "state_nvlink.h"
#include "state_parse.h"
#include "state_validate.h"

/* Field indexes of the system and gpu records. */
enum {
    S_DRIVER_VERSION,
    S_NVML_VERSION,
    S_CUDA_DRIVER_VERSION,
    S_COUNT
};

enum {
    G_MINOR,
    G_UUID,
    G_NAME,
    G_BUS_ID,
    G_PCI_DEVICE_ID,
    G_PCI_SUBSYSTEM_ID,
    G_MEMORY_TOTAL,
    G_MEMORY_RESERVED,
    G_ARCHITECTURE,
    G_BRAND,
    G_CC_MAJOR,
    G_CC_MINOR,
    G_NUMA_NODE,
    G_MIG_CAPABLE,
    G_MIG_MODE,
    G_COUNT
};

#define STATE_HEADER "drakit-nvml-state v2"
#define STATE_HEADER_V1 "drakit-nvml-state v1"
#define END_RECORD "end"

static const char *const system_keys[S_COUNT] = {"driverVersion", "nvmlVersion",
                                                 "cudaDriverVersion"};
static const char *const gpu_keys[G_COUNT] = {
    "minor",        "uuid",          "name",         "busId",       "pciDeviceId",
    "pciSubSystemId", "memoryTotal", "memoryReserved", "architecture", "brand",
    "ccMajor",      "ccMinor",       "numaNode",     "migCapable",  "migMode"};

/* MIG record keys, in the order the parse functions read them. */
static const char *const mig_keys[] = {"gpu", "maxDevices", "memorySlices"};
static const char *const giprofile_keys[] = {
    "gpu",      "id",  "index",       "name",     "slices",   "memorySlices",
    "instances", "memoryMB", "sms", "copyEngines", "decoders", "encoders",
    "jpegs",    "ofas", "p2p",        "placements"};
static const char *const ciprofile_keys[] = {"gpu",       "giProfile", "id",  "name",
                                             "slices",    "instances", "sms", "placements"};
static const char *const gi_keys[] = {"gpu", "id", "profile", "start", "size", "capMinor"};
static const char *const ci_keys[] = {"gpu",  "gi",   "id",      "profile",
                                      "start", "size", "uuid", "capMinor"};
static const char *const fault_keys[] = {
    "gpu",          "sbeVolatile",  "dbeVolatile",    "sbeAggregate", "dbeAggregate", "retiredSbe",
    "retiredDbe",   "retiredPending", "remappedCor",  "remappedUnc",  "remapPending", "remapFailure",
    "recoveryAction", "clocksEventReasons", "temperature", "lost"};
static const char *const event_keys[] = {"seq", "type", "gpu", "gi", "ci", "data", "time"};
_Static_assert(NKEYS(fault_keys) <= FIELDS_MAX, "FIELDS_MAX");
_Static_assert(NKEYS(giprofile_keys) <= FIELDS_MAX && G_COUNT <= FIELDS_MAX, "FIELDS_MAX");

static int parse_system(struct drakit_state *s, fields *f, errbuf *e) {
    span dv = {NULL, 0}, nv = {NULL, 0};
    if (drakit_field_str(f, e, S_DRIVER_VERSION, &dv) != 0 ||
        drakit_field_str(f, e, S_NVML_VERSION, &nv) != 0 ||
        drakit_field_int(f, e, S_CUDA_DRIVER_VERSION, &s->cuda_driver_version) != 0) {
        return -1;
    }
    s->driver_version = dv.p;
    s->driver_version_len = dv.n;
    s->nvml_version = nv.p;
    s->nvml_version_len = nv.n;
    return 0;
}

static int parse_gpu(struct drakit_state *s, fields *f, errbuf *e) {
    if (s->count == DRAKIT_MAX_GPUS) {
        /* nvmlstate.Validate rejects such a file: minors are unique in 0..254. */
        return fail(e, "line %lu: more than %d gpu records", f->line, DRAKIT_MAX_GPUS);
    }
    struct nvmlDevice_st *g = &s->gpus[s->count];
    span uuid = {NULL, 0}, name = {NULL, 0}, bus = {NULL, 0};
    uint64_t dev_id, subsys_id;
    if (drakit_field_int(f, e, G_MINOR, &g->minor) != 0 ||
        drakit_field_str(f, e, G_UUID, &uuid) != 0 ||
        drakit_field_str(f, e, G_NAME, &name) != 0 || drakit_field_str(f, e, G_BUS_ID, &bus) != 0 ||
        drakit_field_uint(f, e, G_PCI_DEVICE_ID, 32, &dev_id) != 0 ||
        drakit_field_uint(f, e, G_PCI_SUBSYSTEM_ID, 32, &subsys_id) != 0 ||
        drakit_field_uint(f, e, G_MEMORY_TOTAL, 64, &g->memory_total) != 0 ||
        drakit_field_uint(f, e, G_MEMORY_RESERVED, 64, &g->memory_reserved) != 0 ||
        drakit_field_int(f, e, G_ARCHITECTURE, &g->architecture) != 0 ||
        drakit_field_int(f, e, G_BRAND, &g->brand) != 0 ||
        drakit_field_int(f, e, G_CC_MAJOR, &g->cc_major) != 0 ||
        drakit_field_int(f, e, G_CC_MINOR, &g->cc_minor) != 0 ||
        drakit_field_int(f, e, G_NUMA_NODE, &g->numa_node) != 0 ||
        drakit_field_flag(f, e, G_MIG_CAPABLE, &g->mig_capable) != 0 ||
        drakit_field_int(f, e, G_MIG_MODE, &g->mig_mode) != 0) {
        return -1;
    }
    g->uuid = uuid.p;
    g->uuid_len = uuid.n;
    g->name = name.p;
    g->name_len = name.n;
    g->bus_id = bus.p;
    g->bus_id_len = bus.n;
    g->pci_device_id = (uint32_t)dev_id;
    g->pci_subsystem_id = (uint32_t)subsys_id;
    g->mig_mode_val = f->val[G_MIG_MODE].p;
    g->mig_mode_len = f->val[G_MIG_MODE].n;
    s->count++;
    return 0;
}

static int parse_mig(struct drakit_state *s, const char *const *keys, fields *f, errbuf *e) {
    if (keys == mig_keys) {
        struct drakit_mig *m = drakit_grow((void **)&s->migs, &s->nmigs, sizeof *m, e, f->line);
        if (m == NULL) {
            return -1;
        }
        return drakit_field_int(f, e, 0, &m->gpu) != 0 ||
               drakit_field_int(f, e, 1, &m->max_devices) != 0 ||
                       drakit_field_int(f, e, 2, &m->memory_slices) != 0
                   ? -1
                   : 0;
    }
    if (keys == giprofile_keys) {
        struct drakit_giprofile *p =
            drakit_grow((void **)&s->giprofiles, &s->ngiprofiles, sizeof *p, e, f->line);
        span name = {NULL, 0};
        if (p == NULL || drakit_field_int(f, e, 0, &p->gpu) != 0 ||
            drakit_field_int(f, e, 1, &p->id) != 0 ||
            drakit_field_int(f, e, 2, &p->index) != 0 || drakit_field_str(f, e, 3, &name) != 0 ||
            drakit_field_int(f, e, 4, &p->slices) != 0 ||
            drakit_field_int(f, e, 5, &p->memory_slices) != 0 ||
            drakit_field_int(f, e, 6, &p->instances) != 0 ||
            drakit_field_uint(f, e, 7, 64, &p->memory_mb) != 0 ||
            drakit_field_int(f, e, 8, &p->sms) != 0 ||
            drakit_field_int(f, e, 9, &p->copy_engines) != 0 ||
            drakit_field_int(f, e, 10, &p->decoders) != 0 ||
            drakit_field_int(f, e, 11, &p->encoders) != 0 ||
            drakit_field_int(f, e, 12, &p->jpegs) != 0 ||
            drakit_field_int(f, e, 13, &p->ofas) != 0 ||
            drakit_field_flag(f, e, 14, &p->p2p) != 0 ||
            drakit_field_list(f, e, 15, &p->placements) != 0) {
            return -1;
        }
        p->name = name.p;
        p->name_len = name.n;
        return 0;
    }
    if (keys == ciprofile_keys) {
        struct drakit_ciprofile *p =
            drakit_grow((void **)&s->ciprofiles, &s->nciprofiles, sizeof *p, e, f->line);
        span name = {NULL, 0};
        if (p == NULL || drakit_field_int(f, e, 0, &p->gpu) != 0 ||
            drakit_field_int(f, e, 1, &p->gi_profile) != 0 ||
            drakit_field_int(f, e, 2, &p->id) != 0 ||
            drakit_field_str(f, e, 3, &name) != 0 || drakit_field_int(f, e, 4, &p->slices) != 0 ||
            drakit_field_int(f, e, 5, &p->instances) != 0 ||
            drakit_field_int(f, e, 6, &p->sms) != 0 ||
            drakit_field_list(f, e, 7, &p->placements) != 0) {
            return -1;
        }
        p->name = name.p;
        p->name_len = name.n;
        return 0;
    }
    if (keys == gi_keys) {
        struct drakit_gi *g = drakit_grow((void **)&s->gis, &s->ngis, sizeof *g, e, f->line);
        return g == NULL || drakit_field_int(f, e, 0, &g->gpu) != 0 ||
               drakit_field_int(f, e, 1, &g->id) != 0 ||
                       drakit_field_int(f, e, 2, &g->profile) != 0 ||
                       drakit_field_int(f, e, 3, &g->start) != 0 ||
                       drakit_field_int(f, e, 4, &g->size) != 0 ||
                       drakit_field_int(f, e, 5, &g->cap_minor) != 0
                   ? -1
                   : 0;
    }
    struct drakit_ci *c = drakit_grow((void **)&s->cis, &s->ncis, sizeof *c, e, f->line);
    span uuid = {NULL, 0};
    if (c == NULL || drakit_field_int(f, e, 0, &c->gpu) != 0 ||
        drakit_field_int(f, e, 1, &c->gi) != 0 ||
        drakit_field_int(f, e, 2, &c->id) != 0 || drakit_field_int(f, e, 3, &c->profile) != 0 ||
        drakit_field_int(f, e, 4, &c->start) != 0 || drakit_field_int(f, e, 5, &c->size) != 0 ||
        drakit_field_str(f, e, 6, &uuid) != 0 || drakit_field_int(f, e, 7, &c->cap_minor) != 0) {
        return -1;
    }
    c->uuid = uuid.p;
    c->uuid_len = uuid.n;
    return 0;
}

/* parse_fault reads a fault or an event record (nvmlstate's fault.go). */
static int parse_fault(struct drakit_state *s, const char *const *keys, fields *f, errbuf *e) {
    if (keys == fault_keys) {
        struct drakit_fault *x = drakit_grow((void **)&s->faults, &s->nfaults, sizeof *x, e, f->line);
        return x == NULL || drakit_field_int(f, e, 0, &x->gpu) != 0 ||
                       drakit_field_uint(f, e, 1, 64, &x->sbe_volatile) != 0 ||
                       drakit_field_uint(f, e, 2, 64, &x->dbe_volatile) != 0 ||
                       drakit_field_uint(f, e, 3, 64, &x->sbe_aggregate) != 0 ||
                       drakit_field_uint(f, e, 4, 64, &x->dbe_aggregate) != 0 ||
                       drakit_field_int(f, e, 5, &x->retired_sbe) != 0 ||
                       drakit_field_int(f, e, 6, &x->retired_dbe) != 0 ||
                       drakit_field_flag(f, e, 7, &x->retired_pending) != 0 ||
                       drakit_field_int(f, e, 8, &x->remapped_cor) != 0 ||
                       drakit_field_int(f, e, 9, &x->remapped_unc) != 0 ||
                       drakit_field_flag(f, e, 10, &x->remap_pending) != 0 ||
                       drakit_field_flag(f, e, 11, &x->remap_failure) != 0 ||
                       drakit_field_int(f, e, 12, &x->recovery_action) != 0 ||
                       drakit_field_uint(f, e, 13, 64, &x->clocks_event_reasons) != 0 ||
                       drakit_field_int(f, e, 14, &x->temperature) != 0 ||
                       drakit_field_flag(f, e, 15, &x->lost) != 0
                   ? -1
                   : 0;
    }
    struct drakit_event *x = drakit_grow((void **)&s->events, &s->nevents, sizeof *x, e, f->line);
    span type = {NULL, 0};
    if (x == NULL || drakit_field_uint(f, e, 0, 64, &x->seq) != 0 ||
        drakit_field_str(f, e, 1, &type) != 0 || drakit_field_int(f, e, 2, &x->gpu) != 0 ||
        drakit_field_uint(f, e, 3, 32, &x->gi) != 0 || drakit_field_uint(f, e, 4, 32, &x->ci) != 0 ||
        drakit_field_uint(f, e, 5, 64, &x->data) != 0 ||
        drakit_field_uint(f, e, 6, 64, &x->time) != 0) {
        return -1;
    }
    x->type = span_is(type, "xid") ? nvmlEventTypeXidCriticalError
              : span_is(type, "sbe") ? nvmlEventTypeSingleBitEccError
              : span_is(type, "dbe") ? nvmlEventTypeDoubleBitEccError
                                     : 0;
    return 0;
}

/* ---- the file ---- */

int drakit_parse_text(struct drakit_state *s, const char *buf, size_t len, errbuf *e) {
    size_t pos = 0;
    unsigned long line = 0, end_line = 0;
    int saw_system = 0;
    while (pos < len) {
        const char *start = buf + pos;
        const char *nl = memchr(start, '\n', len - pos);
        size_t raw = nl ? (size_t)(nl - start) : len - pos;
        pos += raw + (nl != NULL);
        line++;
        if (raw > DRAKIT_LINE_MAX_BYTES) {
            return fail(e, "line %lu: longer than %u bytes", line, DRAKIT_LINE_MAX_BYTES);
        }
        span text = {start, raw};
        if (text.n > 0 && text.p[text.n - 1] == '\r') {
            text.n--;
        }
        /* Every line ends with a newline and the end record is the last
         * one, so a file cut short anywhere is refused. */
        if (nl == NULL) {
            return fail(e, "line %lu: no newline at the end of the file: the file is truncated", line);
        }
        if (end_line != 0) {
            return fail(e, "line %lu: content after the end record on line %lu", line, end_line);
        }
        if (line == 1) {
            if (span_is(text, STATE_HEADER_V1)) {
                return fail(e, "line 1: \"%s\" is a version-1 file, which has no end record: "
                               "render the root again", STATE_HEADER_V1);
            }
            if (!span_is(text, STATE_HEADER)) {
                return fail(e, "line 1: expected \"%s\"", STATE_HEADER);
            }
            continue;
        }
        if (text.n == 0 || text.p[0] == '#') {
            continue;
        }
        const char *tab = memchr(text.p, '\t', text.n);
        span type = {text.p, tab ? (size_t)(tab - text.p) : text.n};
        fields f;
        memset(&f, 0, sizeof f);
        f.line = line;
        if (span_is(type, "system")) {
            f.keys = system_keys;
            f.nkeys = S_COUNT;
        } else if (span_is(type, "gpu")) {
            f.keys = gpu_keys;
            f.nkeys = G_COUNT;
        } else if (span_is(type, "mig")) {
            f.keys = mig_keys;
            f.nkeys = NKEYS(mig_keys);
        } else if (span_is(type, "giprofile")) {
            f.keys = giprofile_keys;
            f.nkeys = NKEYS(giprofile_keys);
        } else if (span_is(type, "ciprofile")) {
            f.keys = ciprofile_keys;
            f.nkeys = NKEYS(ciprofile_keys);
        } else if (span_is(type, "gi")) {
            f.keys = gi_keys;
            f.nkeys = NKEYS(gi_keys);
        } else if (span_is(type, "ci")) {
            f.keys = ci_keys;
            f.nkeys = NKEYS(ci_keys);
        } else if (span_is(type, "fault")) {
            f.keys = fault_keys;
            f.nkeys = NKEYS(fault_keys);
        } else if (span_is(type, "event")) {
            f.keys = event_keys;
            f.nkeys = NKEYS(event_keys);
        } else {
            f.keys = drakit_nvlink_keys(type, &f.nkeys);
        }
        if (drakit_split_fields(text, tab, &f, e) != 0) {
            return -1;
        }
        if (span_is(type, END_RECORD)) {
            end_line = line;
        } else if (f.keys == system_keys) {
            if (saw_system) {
                return fail(e, "line %lu: second system record", line);
            }
            saw_system = 1;
            if (parse_system(s, &f, e) != 0) {
                return -1;
            }
        } else if (f.keys == gpu_keys) {
            if (parse_gpu(s, &f, e) != 0) {
                return -1;
            }
        } else if (f.keys == fault_keys || f.keys == event_keys) {
            if (parse_fault(s, f.keys, &f, e) != 0) {
                return -1;
            }
        } else if (drakit_nvlink_keys(type, &f.nkeys) != NULL) {
            if (drakit_parse_nvlink(s, &f, e) != 0) {
                return -1;
            }
        } else if (f.keys != NULL && parse_mig(s, f.keys, &f, e) != 0) {
            return -1;
        }
    }
    if (line == 0) {
        return fail(e, "empty file");
    }
    if (end_line == 0) {
        return fail(e, "line %lu: end of file before the end record \"%s\": the file is truncated",
                    line + 1, END_RECORD);
    }
    if (!saw_system) {
        return fail(e, "no system record");
    }
    return drakit_validate(s, e);
}
