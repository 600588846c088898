/*
 * Internals of the state core, shared by its files: state.c (finding,
 * reading and loading the state file), state_fields.c (the integer and
 * field syntax), state_parse.c (the records) and state_validate.c (the
 * checks of nvmlstate.Validate, and lookups among the records). Nothing here
 * is exported from the library.
 */
#ifndef DRAKIT_NVML_STATE_INTERNAL_H
#define DRAKIT_NVML_STATE_INTERNAL_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "state.h"

typedef struct {
    const char *p;
    size_t n;
} span;

static inline int span_is(span s, const char *lit) {
    size_t n = strlen(lit);
    return s.n == n && memcmp(s.p, lit, n) == 0;
}

typedef struct {
    char msg[512];
} errbuf;

/* fail formats a message into e and returns -1. */
__attribute__((format(printf, 2, 3))) static inline int fail(errbuf *e, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return -1;
}

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

#define NKEYS(a) (sizeof(a) / sizeof(a[0]))
#define FIELDS_MAX 16

/* fields holds the values of one record's known keys. */
typedef struct {
    const char *const *keys;
    size_t nkeys;
    span val[FIELDS_MAX];
    int have[FIELDS_MAX];
    unsigned long line;
} fields;

/* state_fields.c: a record's fields (each returns 0, or -1 with e set). */
int drakit_field_str(fields *f, errbuf *e, size_t k, span *out);
int drakit_field_int(fields *f, errbuf *e, size_t k, int64_t *out);
int drakit_field_flag(fields *f, errbuf *e, size_t k, int *out);
int drakit_field_uint(fields *f, errbuf *e, size_t k, unsigned bits, uint64_t *out);
int drakit_field_list(fields *f, errbuf *e, size_t k, struct drakit_list *out);
int drakit_split_fields(span line, const char *tab, fields *f, errbuf *e);
/* drakit_list_next reads the next element of a list at *p (before end); 0 or -1. */
int drakit_list_next(const char **p, const char *end, int64_t *out);
/* drakit_grow makes room for one more element of size sz in *arr holding *n. */
void *drakit_grow(void **arr, size_t *n, size_t sz, errbuf *e, unsigned long line);

/* state_parse.c: drakit_parse_text parses the state file's len bytes at buf
 * into s, validating them (nvmlstate.Parse); 0, or -1 with e set. */
int drakit_parse_text(struct drakit_state *s, const char *buf, size_t len, errbuf *e);

/* state_nvlink.c: the nvlink, fabric and peer records. drakit_nvlink_keys
 * returns the keys of record type type (and their count in *n), or NULL for
 * another type; drakit_parse_nvlink reads a record of those keys;
 * drakit_validate_nvlink applies nvmlstate's validateNVLink (after the gpu
 * records are validated) and decodes the remote bus ids. 0, or -1 with e set. */
const char *const *drakit_nvlink_keys(span type, size_t *n);
int drakit_parse_nvlink(struct drakit_state *s, fields *f, errbuf *e);
int drakit_validate_nvlink(struct drakit_state *s, errbuf *e);

/*
 * drakit_matches reports whether p has pattern's length and shape: in
 * pattern, 'x' stands for a lower-case hex digit, 'X' for an upper-case one,
 * '7' for a digit 0..7; every other character stands for itself.
 */
static inline int drakit_matches(const char *p, size_t n, const char *pattern) {
    if (n != strlen(pattern)) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        int digit = c >= '0' && c <= '9';
        int ok = pattern[i] == 'x'   ? digit || (c >= 'a' && c <= 'f')
                 : pattern[i] == 'X' ? digit || (c >= 'A' && c <= 'F')
                 : pattern[i] == '7' ? c >= '0' && c <= '7'
                                     : c == pattern[i];
        if (!ok) {
            return 0;
        }
    }
    return 1;
}

/* drakit_hex_value decodes n hex digits (validated, either case). */
static inline unsigned int drakit_hex_value(const char *p, size_t n) {
    unsigned int v = 0;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        v = v * 16 + (unsigned int)(c >= '0' && c <= '9'   ? c - '0'
                                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                                           : c - 'A' + 10);
    }
    return v;
}

#define DRAKIT_BUS_ID_PATTERN "XXXXXXXX:XX:XX.7"

/* state_validate.c: drakit_validate applies nvmlstate.Validate's checks to a
 * parsed state and decodes the bus ids; 0, or -1 with e set. */
int drakit_validate(struct drakit_state *s, errbuf *e);

#endif /* DRAKIT_NVML_STATE_INTERNAL_H */
