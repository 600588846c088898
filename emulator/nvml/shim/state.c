/*
 * State core of the NVML shim; see state.h. The parser mirrors
 * nvmlstate.Parse and nvmlstate.Validate (Go) rule for rule, including the
 * integer syntax (decimal, or 0x and hex digits) and ranges, so that both accept
 * the same files; the Go tests check that with a differential fuzz test.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <limits.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "state.h"

#if defined(__x86_64__)
#define DRAKIT_LIBDIR "/usr/lib/x86_64-linux-gnu/"
#elif defined(__aarch64__)
#define DRAKIT_LIBDIR "/usr/lib/aarch64-linux-gnu/"
#else
#error "unsupported architecture: the emulator root layout names the multiarch directory"
#endif

#define STATE_RELATIVE_PATH "run/drakit-emulator/nvml.state"
#define STATE_HEADER "drakit-nvml-state v2"
#define STATE_HEADER_V1 "drakit-nvml-state v1"
#define END_RECORD "end"

typedef struct {
    const char *p;
    size_t n;
} span;

static int span_is(span s, const char *lit) {
    size_t n = strlen(lit);
    return s.n == n && memcmp(s.p, lit, n) == 0;
}

typedef struct {
    char msg[512];
} errbuf;

__attribute__((format(printf, 2, 3))) static int fail(errbuf *e, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- integer syntax of the state file: decimal, -decimal, or 0x + hex digits ---- */

enum { NUM_OK = 0, NUM_SYNTAX = -1, NUM_RANGE = -2 };

static int digit_value(unsigned char c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

/* parse_uint reads digits in base (10 or 16) into a value of at most max. */
static int parse_digits(const char *s, size_t n, unsigned base, uint64_t max, uint64_t *out) {
    uint64_t v = 0;
    if (n == 0) {
        return NUM_SYNTAX;
    }
    for (size_t i = 0; i < n; i++) {
        int d = digit_value((unsigned char)s[i]);
        if (d < 0 || (unsigned)d >= base) {
            return NUM_SYNTAX;
        }
        if (v > (max - (uint64_t)d) / base) {
            return NUM_RANGE;
        }
        v = v * base + (uint64_t)d;
    }
    *out = v;
    return NUM_OK;
}

/* parse_uint mirrors nvmlstate's parseUint: decimal digits, or 0x and hex digits. */
static int parse_uint(const char *s, size_t n, unsigned bits, uint64_t *out) {
    const uint64_t max = bits >= 64 ? UINT64_MAX : (((uint64_t)1 << bits) - 1);
    if (n >= 2 && s[0] == '0' && s[1] == 'x') {
        return parse_digits(s + 2, n - 2, 16, max, out);
    }
    return parse_digits(s, n, 10, max, out);
}

/* parse_int mirrors nvmlstate's parseInt for 32-bit signed fields. */
static int parse_int32(const char *s, size_t n, int64_t *out) {
    uint64_t u;
    if (n >= 1 && s[0] == '-') {
        int rc = parse_digits(s + 1, n - 1, 10, (uint64_t)1 << 31, &u);
        if (rc == NUM_OK) {
            *out = -(int64_t)u;
        }
        return rc;
    }
    int rc = parse_uint(s, n, 31, &u);
    if (rc == NUM_OK) {
        *out = (int64_t)u;
    }
    return rc;
}

/* ---- records ---- */

enum {
    S_DRIVER_VERSION,
    S_NVML_VERSION,
    S_CUDA_DRIVER_VERSION,
    S_COUNT
};
static const char *const system_keys[S_COUNT] = {"driverVersion", "nvmlVersion",
                                                 "cudaDriverVersion"};

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
#define NKEYS(a) (sizeof(a) / sizeof(a[0]))
#define FIELDS_MAX 16
_Static_assert(NKEYS(giprofile_keys) <= FIELDS_MAX && G_COUNT <= FIELDS_MAX, "FIELDS_MAX");

/* fields holds the values of one record's known keys. */
typedef struct {
    const char *const *keys;
    size_t nkeys;
    span val[FIELDS_MAX];
    int have[FIELDS_MAX];
    unsigned long line;
} fields;

static int field_str(fields *f, errbuf *e, size_t k, span *out) {
    if (!f->have[k]) {
        return fail(e, "line %lu: missing field %s", f->line, f->keys[k]);
    }
    *out = f->val[k];
    return 0;
}

static int field_int(fields *f, errbuf *e, size_t k, int64_t *out) {
    span v = {NULL, 0};
    if (field_str(f, e, k, &v) != 0) {
        return -1;
    }
    if (parse_int32(v.p, v.n, out) != NUM_OK) {
        return fail(e, "line %lu: field %s=%.*s is not a 32-bit integer", f->line, f->keys[k],
                    (int)(v.n > 64 ? 64 : v.n), v.p);
    }
    return 0;
}

/* field_flag reads an integer field that must be 0 or 1. */
static int field_flag(fields *f, errbuf *e, size_t k, int *out) {
    int64_t v;
    if (field_int(f, e, k, &v) != 0) {
        return -1;
    }
    if (v != 0 && v != 1) {
        return fail(e, "line %lu: field %s=%lld must be 0 or 1", f->line, f->keys[k], (long long)v);
    }
    *out = v == 1;
    return 0;
}

static int field_uint(fields *f, errbuf *e, size_t k, unsigned bits, uint64_t *out) {
    span v = {NULL, 0};
    if (field_str(f, e, k, &v) != 0) {
        return -1;
    }
    if (parse_uint(v.p, v.n, bits, out) != NUM_OK) {
        return fail(e, "line %lu: field %s=%.*s is not an unsigned %u-bit integer", f->line,
                    f->keys[k], (int)(v.n > 64 ? 64 : v.n), v.p, bits);
    }
    return 0;
}

static int span_cmp(const void *a, const void *b) {
    const span *x = a, *y = b;
    int c = memcmp(x->p, y->p, x->n < y->n ? x->n : y->n);
    return c != 0 ? c : (x->n > y->n) - (x->n < y->n);
}

/*
 * split_fields checks, for any record type as nvmlstate.Parse does, that
 * every TAB-separated field after the record type is key=value and that no
 * key repeats; for a known record type it collects the known keys' values.
 */
static int split_fields(span line, const char *tab, fields *f, errbuf *e) {
    const char *end = line.p + line.n;
    span small[32], *keys = small;
    size_t nkeys = 0, cap = sizeof small / sizeof small[0];
    int rc = 0;
    for (const char *p = tab; p != NULL && rc == 0;) {
        p++; /* past the TAB */
        const char *next = memchr(p, '\t', (size_t)(end - p));
        const char *stop = next ? next : end;
        const char *eq = memchr(p, '=', (size_t)(stop - p));
        if (eq == NULL) {
            rc = fail(e, "line %lu: field %.*s is not key=value", f->line,
                      (int)(stop - p > 64 ? 64 : stop - p), p);
            break;
        }
        span key = {p, (size_t)(eq - p)};
        for (size_t k = 0; k < f->nkeys; k++) {
            if (span_is(key, f->keys[k])) {
                f->val[k] = (span){eq + 1, (size_t)(stop - eq - 1)};
                f->have[k] = 1;
                break;
            }
        }
        if (nkeys == cap) {
            span *grown = malloc(2 * cap * sizeof *grown);
            if (grown == NULL) {
                rc = fail(e, "line %lu: out of memory", f->line);
                break;
            }
            memcpy(grown, keys, nkeys * sizeof *keys);
            if (keys != small) {
                free(keys);
            }
            keys = grown;
            cap *= 2;
        }
        keys[nkeys++] = key;
        p = next;
    }
    if (rc == 0 && nkeys > 1) {
        qsort(keys, nkeys, sizeof *keys, span_cmp);
        for (size_t i = 1; i < nkeys; i++) {
            if (span_cmp(&keys[i - 1], &keys[i]) == 0) {
                rc = fail(e, "line %lu: field %.*s given twice", f->line,
                          (int)(keys[i].n > 64 ? 64 : keys[i].n), keys[i].p);
                break;
            }
        }
    }
    if (keys != small) {
        free(keys);
    }
    return rc;
}

static int parse_system(struct drakit_state *s, fields *f, errbuf *e) {
    span dv = {NULL, 0}, nv = {NULL, 0};
    if (field_str(f, e, S_DRIVER_VERSION, &dv) != 0 || field_str(f, e, S_NVML_VERSION, &nv) != 0 ||
        field_int(f, e, S_CUDA_DRIVER_VERSION, &s->cuda_driver_version) != 0) {
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
    if (field_int(f, e, G_MINOR, &g->minor) != 0 || field_str(f, e, G_UUID, &uuid) != 0 ||
        field_str(f, e, G_NAME, &name) != 0 || field_str(f, e, G_BUS_ID, &bus) != 0 ||
        field_uint(f, e, G_PCI_DEVICE_ID, 32, &dev_id) != 0 ||
        field_uint(f, e, G_PCI_SUBSYSTEM_ID, 32, &subsys_id) != 0 ||
        field_uint(f, e, G_MEMORY_TOTAL, 64, &g->memory_total) != 0 ||
        field_uint(f, e, G_MEMORY_RESERVED, 64, &g->memory_reserved) != 0 ||
        field_int(f, e, G_ARCHITECTURE, &g->architecture) != 0 ||
        field_int(f, e, G_BRAND, &g->brand) != 0 || field_int(f, e, G_CC_MAJOR, &g->cc_major) != 0 ||
        field_int(f, e, G_CC_MINOR, &g->cc_minor) != 0 ||
        field_int(f, e, G_NUMA_NODE, &g->numa_node) != 0 ||
        field_flag(f, e, G_MIG_CAPABLE, &g->mig_capable) != 0 ||
        field_int(f, e, G_MIG_MODE, &g->mig_mode) != 0) {
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


/* ---- MIG records (nvmlstate's parseMIGRecord) ---- */

/* list_next reads the next element of a list at *p (before end); 0 or -1. */
static int list_next(const char **p, const char *end, int64_t *out) {
    const char *comma = memchr(*p, ',', (size_t)(end - *p));
    const char *stop = comma ? comma : end;
    uint64_t v;
    if (parse_uint(*p, (size_t)(stop - *p), 31, &v) != NUM_OK) {
        return -1;
    }
    *out = (int64_t)v;
    *p = comma ? comma + 1 : end;
    return 0;
}

int64_t drakit_list_get(const struct drakit_list *l, size_t i) {
    const char *p = l->p, *end = l->p + l->n;
    int64_t v = 0;
    for (size_t k = 0; k <= i && k < l->count; k++) {
        list_next(&p, end, &v);
    }
    return v;
}

/* field_list mirrors fieldParser.list: one or more non-negative 31-bit integers. */
static int field_list(fields *f, errbuf *e, size_t k, struct drakit_list *out) {
    span v = {NULL, 0};
    if (field_str(f, e, k, &v) != 0) {
        return -1;
    }
    out->p = v.p;
    out->n = v.n;
    out->count = 0;
    const char *p = v.p, *end = v.p + v.n;
    for (;;) {
        int64_t x;
        if (list_next(&p, end, &x) != 0) {
            return fail(e, "line %lu: field %s is not a comma-separated list of integers", f->line,
                        f->keys[k]);
        }
        out->count++;
        if (p == end) {
            /* "1," leaves p at end after the comma: an empty last element. */
            if (v.n > 0 && v.p[v.n - 1] == ',') {
                return fail(e, "line %lu: field %s has an empty element", f->line, f->keys[k]);
            }
            return 0;
        }
    }
}

/* grow makes room for one more element of size sz in *arr holding *n. */
static void *grow(void **arr, size_t *n, size_t sz, errbuf *e, unsigned long line) {
    if ((*n & (*n - 1)) == 0) { /* 0, 1, 2, 4, ...: double */
        size_t cap = *n == 0 ? 4 : *n * 2;
        void *next = realloc(*arr, cap * sz);
        if (next == NULL) {
            fail(e, "line %lu: out of memory", line);
            return NULL;
        }
        *arr = next;
    }
    void *slot = (char *)*arr + (*n) * sz;
    memset(slot, 0, sz);
    (*n)++;
    return slot;
}

static int parse_mig(struct drakit_state *s, const char *const *keys, fields *f, errbuf *e) {
    if (keys == mig_keys) {
        struct drakit_mig *m = grow((void **)&s->migs, &s->nmigs, sizeof *m, e, f->line);
        if (m == NULL) {
            return -1;
        }
        return field_int(f, e, 0, &m->gpu) != 0 || field_int(f, e, 1, &m->max_devices) != 0 ||
                       field_int(f, e, 2, &m->memory_slices) != 0
                   ? -1
                   : 0;
    }
    if (keys == giprofile_keys) {
        struct drakit_giprofile *p =
            grow((void **)&s->giprofiles, &s->ngiprofiles, sizeof *p, e, f->line);
        span name = {NULL, 0};
        if (p == NULL || field_int(f, e, 0, &p->gpu) != 0 || field_int(f, e, 1, &p->id) != 0 ||
            field_int(f, e, 2, &p->index) != 0 || field_str(f, e, 3, &name) != 0 ||
            field_int(f, e, 4, &p->slices) != 0 || field_int(f, e, 5, &p->memory_slices) != 0 ||
            field_int(f, e, 6, &p->instances) != 0 ||
            field_uint(f, e, 7, 64, &p->memory_mb) != 0 || field_int(f, e, 8, &p->sms) != 0 ||
            field_int(f, e, 9, &p->copy_engines) != 0 || field_int(f, e, 10, &p->decoders) != 0 ||
            field_int(f, e, 11, &p->encoders) != 0 || field_int(f, e, 12, &p->jpegs) != 0 ||
            field_int(f, e, 13, &p->ofas) != 0 || field_flag(f, e, 14, &p->p2p) != 0 ||
            field_list(f, e, 15, &p->placements) != 0) {
            return -1;
        }
        p->name = name.p;
        p->name_len = name.n;
        return 0;
    }
    if (keys == ciprofile_keys) {
        struct drakit_ciprofile *p =
            grow((void **)&s->ciprofiles, &s->nciprofiles, sizeof *p, e, f->line);
        span name = {NULL, 0};
        if (p == NULL || field_int(f, e, 0, &p->gpu) != 0 ||
            field_int(f, e, 1, &p->gi_profile) != 0 || field_int(f, e, 2, &p->id) != 0 ||
            field_str(f, e, 3, &name) != 0 || field_int(f, e, 4, &p->slices) != 0 ||
            field_int(f, e, 5, &p->instances) != 0 || field_int(f, e, 6, &p->sms) != 0 ||
            field_list(f, e, 7, &p->placements) != 0) {
            return -1;
        }
        p->name = name.p;
        p->name_len = name.n;
        return 0;
    }
    if (keys == gi_keys) {
        struct drakit_gi *g = grow((void **)&s->gis, &s->ngis, sizeof *g, e, f->line);
        return g == NULL || field_int(f, e, 0, &g->gpu) != 0 || field_int(f, e, 1, &g->id) != 0 ||
                       field_int(f, e, 2, &g->profile) != 0 ||
                       field_int(f, e, 3, &g->start) != 0 || field_int(f, e, 4, &g->size) != 0 ||
                       field_int(f, e, 5, &g->cap_minor) != 0
                   ? -1
                   : 0;
    }
    struct drakit_ci *c = grow((void **)&s->cis, &s->ncis, sizeof *c, e, f->line);
    span uuid = {NULL, 0};
    if (c == NULL || field_int(f, e, 0, &c->gpu) != 0 || field_int(f, e, 1, &c->gi) != 0 ||
        field_int(f, e, 2, &c->id) != 0 || field_int(f, e, 3, &c->profile) != 0 ||
        field_int(f, e, 4, &c->start) != 0 || field_int(f, e, 5, &c->size) != 0 ||
        field_str(f, e, 6, &uuid) != 0 || field_int(f, e, 7, &c->cap_minor) != 0) {
        return -1;
    }
    c->uuid = uuid.p;
    c->uuid_len = uuid.n;
    return 0;
}

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

/*
 * matches reports whether p has pattern's length and shape: in pattern, 'x'
 * stands for a lower-case hex digit, 'X' for an upper-case one, '7' for a
 * digit 0..7; every other character stands for itself.
 */
static int matches(const char *p, size_t n, const char *pattern) {
    if (n != strlen(pattern)) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        int digit = c >= '0' && c <= '9';
        switch (pattern[i]) {
        case 'x':
            if (!digit && !(c >= 'a' && c <= 'f')) {
                return 0;
            }
            break;
        case 'X':
            if (!digit && !(c >= 'A' && c <= 'F')) {
                return 0;
            }
            break;
        case '7':
            if (!(c >= '0' && c <= '7')) {
                return 0;
            }
            break;
        default:
            if (c != pattern[i]) {
                return 0;
            }
        }
    }
    return 1;
}

#define UUID_PATTERN "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
#define BUS_ID_PATTERN "XXXXXXXX:XX:XX.7"

static unsigned int hex_value(const char *p, size_t n) {
    unsigned int v = 0;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        v = v * 16 + (unsigned int)(c >= '0' && c <= '9' ? c - '0' : c - 'A' + 10);
    }
    return v;
}

static int validate_mig(const struct drakit_state *s, errbuf *e);

static int validate(struct drakit_state *s, errbuf *e) {
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
        if (!matches(g->uuid, g->uuid_len, UUID_PATTERN)) {
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
        if (!matches(g->bus_id, g->bus_id_len, BUS_ID_PATTERN)) {
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
        g->domain = hex_value(g->bus_id, 8);
        g->bus = hex_value(g->bus_id + 9, 2);
        g->device = hex_value(g->bus_id + 12, 2);
        g->function = hex_value(g->bus_id + 15, 1);
    }
    return validate_mig(s, e);
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
        list_next(&p, end, &x);
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
        list_next(&p, end, &st);
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
            !matches(c->uuid, c->uuid_len, MIG_UUID_PATTERN) ||
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

/* ---- the file ---- */

static int parse(struct drakit_state *s, const char *buf, size_t len, errbuf *e) {
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
        }
        if (split_fields(text, tab, &f, e) != 0) {
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
    return validate(s, e);
}

static nvmlReturn_t read_file(const char *path, char **out, size_t *outlen, struct stat *st,
                              errbuf *e) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        int err = errno;
        fail(e, "open %s: %s", path, strerror(err));
        if (err == ENOENT || err == ENOTDIR) {
            return NVML_ERROR_DRIVER_NOT_LOADED;
        }
        return err == EACCES || err == EPERM ? NVML_ERROR_NO_PERMISSION : NVML_ERROR_UNKNOWN;
    }
    size_t cap = 0, n = 0;
    char *buf = NULL;
    for (;;) {
        if (n == cap) {
            if (cap > DRAKIT_STATE_MAX_BYTES) {
                fail(e, "read %s: larger than %u bytes", path, DRAKIT_STATE_MAX_BYTES);
                break;
            }
            size_t next = cap == 0 ? 4096 : cap * 2;
            if (next > DRAKIT_STATE_MAX_BYTES + 1u) {
                next = DRAKIT_STATE_MAX_BYTES + 1u;
            }
            char *grown = realloc(buf, next);
            if (grown == NULL) {
                free(buf);
                close(fd);
                fail(e, "read %s: out of memory", path);
                return NVML_ERROR_MEMORY;
            }
            buf = grown;
            cap = next;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0) {
            fail(e, "read %s: %s", path, strerror(errno));
            break;
        }
        if (r == 0) {
            /* The system calls, not glibc's wrappers: those are versioned
             * GLIBC_2.33, and the library must load on glibc 2.17. */
            if (syscall(SYS_fstat, fd, st) != 0) {
                memset(st, 0, sizeof *st);
            }
            close(fd);
            *out = buf;
            *outlen = n;
            return NVML_SUCCESS;
        }
        n += (size_t)r;
    }
    free(buf);
    close(fd);
    return NVML_ERROR_UNKNOWN;
}

/* ---- the root ---- */

static int join(char *out, size_t n, const char *root, const char *rel) {
    size_t rl = strlen(root);
    const char *sep = rl > 0 && root[rl - 1] == '/' ? "" : "/";
    int w = snprintf(out, n, "%s%s%s", root, sep, rel);
    return w < 0 || (size_t)w >= n ? -1 : 0;
}

struct self_query {
    uintptr_t addr;
    int found;
    char path[PATH_MAX];
};

static int find_self(struct dl_phdr_info *info, size_t size, void *data) {
    struct self_query *q = data;
    (void)size;
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = (uintptr_t)info->dlpi_addr + (uintptr_t)ph->p_vaddr;
        if (ph->p_type == PT_LOAD && q->addr >= lo && q->addr - lo < (uintptr_t)ph->p_memsz) {
            if (info->dlpi_name != NULL && strlen(info->dlpi_name) < sizeof q->path) {
                strcpy(q->path, info->dlpi_name);
                q->found = 1;
            }
            return 1;
        }
    }
    return 0;
}

static int resolve_root(char *root, size_t n, errbuf *e) {
    const char *env = getenv("DRAKIT_EMULATOR_ROOT");
    if (env != NULL && *env != '\0') {
        if (strlen(env) >= n) {
            return fail(e, "DRAKIT_EMULATOR_ROOT is longer than %zu bytes", n - 1);
        }
        strcpy(root, env);
        return 0;
    }
    struct self_query q;
    memset(&q, 0, sizeof q);
    q.addr = (uintptr_t)&drakit_state_load;
    dl_iterate_phdr(find_self, &q);
    strcpy(root, "/");
    const char *slash = q.found ? strrchr(q.path, '/') : NULL;
    if (slash == NULL || slash[1] == '\0') {
        return 0;
    }
    size_t dirlen = (size_t)(slash - q.path) + 1, libdir = strlen(DRAKIT_LIBDIR);
    if (dirlen >= libdir && memcmp(q.path + dirlen - libdir, DRAKIT_LIBDIR, libdir) == 0 &&
        dirlen > libdir) {
        memcpy(root, q.path, dirlen - libdir);
        root[dirlen - libdir] = '\0';
    }
    return 0;
}

/* ---- load ---- */

void drakit_debug(const char *fmt, ...) {
    const char *v = getenv("DRAKIT_NVML_DEBUG");
    if (v != NULL && *v != '\0') {
        va_list ap;
        va_start(ap, fmt);
        fputs("drakit NVML shim: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
}

static void free_records(struct drakit_state *s) {
    free(s->migs);
    free(s->giprofiles);
    free(s->ciprofiles);
    free(s->gis);
    free(s->cis);
}

static int parse_owned(struct drakit_state *s, char *buf, size_t len, errbuf *e) {
    if (parse(s, buf, len, e) != 0) {
        free_records(s);
        free(buf);
        memset(s, 0, sizeof *s);
        return -1;
    }
    s->buf = buf;
    s->len = len;
    for (size_t i = 0; i < s->ngis; i++) {
        s->gis[i].visible = 1;
    }
    for (size_t i = 0; i < s->ncis; i++) {
        s->cis[i].visible = 1;
    }
    return 0;
}

int drakit_state_parse(struct drakit_state *s, char *buf, size_t len) {
    errbuf e;
    memset(s, 0, sizeof *s);
    if (parse_owned(s, buf, len, &e) != 0) {
        drakit_debug("parse state: %.400s", e.msg);
        return -1;
    }
    return 0;
}

/* exists reports whether root/rel exists. */
static int exists(const char *root, const char *rel) {
    char path[PATH_MAX];
    return join(path, sizeof path, root, rel) == 0 && access(path, F_OK) == 0;
}

static int cap_node_exists(const char *root, int64_t minor) {
    char rel[64];
    snprintf(rel, sizeof rel, "dev/nvidia-caps/nvidia-cap%lld", (long long)minor);
    return exists(root, rel);
}

nvmlReturn_t drakit_state_load_root(struct drakit_state *s, const char *root) {
    errbuf e;
    char path[PATH_MAX];
    char *buf = NULL;
    size_t len = 0;
    memset(&e, 0, sizeof e);
    memset(s, 0, sizeof *s);
    if (strlen(root) >= sizeof s->root || join(path, sizeof path, root, STATE_RELATIVE_PATH) != 0) {
        drakit_debug("nvmlInit: emulator root %.128s...: path too long", root);
        return NVML_ERROR_UNKNOWN;
    }
    struct stat st;
    nvmlReturn_t rc = read_file(path, &buf, &len, &st, &e);
    if (rc != NVML_SUCCESS) {
        drakit_debug("nvmlInit: %.400s", e.msg);
        return rc;
    }
    if (parse_owned(s, buf, len, &e) != 0) {
        drakit_debug("nvmlInit: %.200s: %.300s", path, e.msg);
        return NVML_ERROR_UNKNOWN;
    }
    strcpy(s->root, root);
    s->st_dev = (unsigned long long)st.st_dev;
    s->st_ino = (unsigned long long)st.st_ino;
    s->st_size = (unsigned long long)st.st_size;
    s->mtime_sec = (long long)st.st_mtim.tv_sec;
    s->mtime_nsec = (long long)st.st_mtim.tv_nsec;
    unsigned int visible = 0;
    for (unsigned int i = 0; i < s->count; i++) {
        char rel[32];
        snprintf(rel, sizeof rel, "dev/nvidia%u", (unsigned int)s->gpus[i].minor);
        if (exists(root, rel)) {
            if (visible != i) {
                s->gpus[visible] = s->gpus[i];
            }
            s->gpus[visible].index = visible;
            visible++;
        }
    }
    s->count = visible;
    /* As on a host or in a container: an instance is visible only through
     * its capability device nodes (and its GPU's node). */
    for (size_t i = 0; i < s->ngis; i++) {
        struct drakit_gi *g = &s->gis[i];
        g->visible = gpu_by_minor(s, g->gpu) != NULL && cap_node_exists(root, g->cap_minor);
    }
    for (size_t i = 0; i < s->ncis; i++) {
        struct drakit_ci *c = &s->cis[i];
        const struct drakit_gi *g = gi_of(s, s->ngis, c->gpu, c->gi);
        c->visible = g->visible && cap_node_exists(root, c->cap_minor);
    }
    return NVML_SUCCESS;
}

nvmlReturn_t drakit_state_load(struct drakit_state *s) {
    errbuf e;
    char root[PATH_MAX];
    memset(&e, 0, sizeof e);
    memset(s, 0, sizeof *s);
    if (resolve_root(root, sizeof root, &e) != 0) {
        drakit_debug("nvmlInit: %.400s", e.msg);
        return NVML_ERROR_UNKNOWN;
    }
    return drakit_state_load_root(s, root);
}

int drakit_state_changed(const struct drakit_state *s) {
    char path[PATH_MAX];
    struct stat st;
    if (s->root[0] == '\0' || join(path, sizeof path, s->root, STATE_RELATIVE_PATH) != 0 ||
        syscall(SYS_newfstatat, AT_FDCWD, path, &st, 0) != 0) {
        return 0; /* nothing better to read */
    }
    return (unsigned long long)st.st_dev != s->st_dev ||
           (unsigned long long)st.st_ino != s->st_ino ||
           (unsigned long long)st.st_size != s->st_size ||
           (long long)st.st_mtim.tv_sec != s->mtime_sec ||
           (long long)st.st_mtim.tv_nsec != s->mtime_nsec;
}

const struct nvmlDevice_st *drakit_gpu_by_minor(const struct drakit_state *s, int64_t minor) {
    return gpu_by_minor(s, minor);
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

int drakit_join(char *out, size_t n, const char *root, const char *rel) {
    return join(out, n, root, rel);
}

void drakit_state_free(struct drakit_state *s) {
    free_records(s);
    free(s->buf);
    memset(s, 0, sizeof *s);
}
