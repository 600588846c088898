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

/* state_validate.c: drakit_validate applies nvmlstate.Validate's checks to a
 * parsed state and decodes the bus ids; 0, or -1 with e set. */
int drakit_validate(struct drakit_state *s, errbuf *e);

#endif /* DRAKIT_NVML_STATE_INTERNAL_H */
