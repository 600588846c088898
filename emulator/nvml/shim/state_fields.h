/*
 * The state file's syntax, shared by the state core's readers
 * (state_parse.c, state_nvlink.c, state_validate.c): spans of the file's
 * bytes, error messages, a record's fields and their integer, flag and list
 * values (state_fields.c), and the shapes of ids. Nothing here is exported
 * from the library.
 */
#ifndef DRAKIT_NVML_STATE_FIELDS_H
#define DRAKIT_NVML_STATE_FIELDS_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "state_records.h"

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

#endif /* DRAKIT_NVML_STATE_FIELDS_H */
