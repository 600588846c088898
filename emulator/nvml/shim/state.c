/*
 * State core of the NVML shim; see state.h. The parser mirrors
 * nvmlstate.Parse and nvmlstate.Validate (Go) rule for rule, including the
 * integer syntax (decimal, or 0x and hex digits) and ranges, so that both accept
 * the same files; the Go tests check that with a differential fuzz test.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
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
#define STATE_HEADER "drakit-nvml-state v1"

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

/* fields holds the values of one record's known keys. */
typedef struct {
    const char *const *keys;
    size_t nkeys;
    span val[G_COUNT];
    int have[G_COUNT];
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
    s->count++;
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
    return 0;
}

/* ---- the file ---- */

static int parse(struct drakit_state *s, const char *buf, size_t len, errbuf *e) {
    size_t pos = 0;
    unsigned long line = 0;
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
        if (line == 1) {
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
        }
        if (split_fields(text, tab, &f, e) != 0) {
            return -1;
        }
        if (f.keys == system_keys) {
            if (saw_system) {
                return fail(e, "line %lu: second system record", line);
            }
            saw_system = 1;
            if (parse_system(s, &f, e) != 0) {
                return -1;
            }
        } else if (f.keys == gpu_keys && parse_gpu(s, &f, e) != 0) {
            return -1;
        }
    }
    if (line == 0) {
        return fail(e, "empty file");
    }
    if (!saw_system) {
        return fail(e, "no system record");
    }
    return validate(s, e);
}

static nvmlReturn_t read_file(const char *path, char **out, size_t *outlen, errbuf *e) {
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

static void debug(const errbuf *e) {
    const char *v = getenv("DRAKIT_NVML_DEBUG");
    if (v != NULL && *v != '\0') {
        fprintf(stderr, "drakit NVML shim: nvmlInit: %s\n", e->msg);
    }
}

nvmlReturn_t drakit_state_load(struct drakit_state *s) {
    errbuf e;
    char root[PATH_MAX], path[PATH_MAX];
    char *buf = NULL;
    size_t len = 0;
    memset(&e, 0, sizeof e);
    memset(s, 0, sizeof *s);
    if (resolve_root(root, sizeof root, &e) != 0) {
        debug(&e);
        return NVML_ERROR_UNKNOWN;
    }
    if (join(path, sizeof path, root, STATE_RELATIVE_PATH) != 0) {
        fail(&e, "emulator root %.128s...: path too long", root);
        debug(&e);
        return NVML_ERROR_UNKNOWN;
    }
    nvmlReturn_t rc = read_file(path, &buf, &len, &e);
    if (rc != NVML_SUCCESS) {
        debug(&e);
        return rc;
    }
    if (parse(s, buf, len, &e) != 0) {
        errbuf where;
        snprintf(where.msg, sizeof where.msg, "%.200s: %.300s", path, e.msg);
        debug(&where);
        free(buf);
        memset(s, 0, sizeof *s);
        return NVML_ERROR_UNKNOWN;
    }
    s->buf = buf;
    unsigned int visible = 0;
    for (unsigned int i = 0; i < s->count; i++) {
        char rel[32], dev[PATH_MAX];
        snprintf(rel, sizeof rel, "dev/nvidia%u", (unsigned int)s->gpus[i].minor);
        /* Cannot fail: the state file's path under the same root is longer. */
        if (join(dev, sizeof dev, root, rel) == 0 && access(dev, F_OK) == 0) {
            if (visible != i) {
                s->gpus[visible] = s->gpus[i];
            }
            s->gpus[visible].index = visible;
            visible++;
        }
    }
    s->count = visible;
    return NVML_SUCCESS;
}

void drakit_state_free(struct drakit_state *s) {
    free(s->buf);
    memset(s, 0, sizeof *s);
}
