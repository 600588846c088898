/*
 * The state file's field syntax, as nvmlstate.Parse reads it: integers
 * (decimal, -decimal, or 0x and hex digits, with nvmlstate's ranges), a
 * record's TAB-separated key=value fields, and lists.
 */
#define _GNU_SOURCE

#include <stdint.h>
#include <stdlib.h>

#include "state_fields.h"

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

int drakit_field_str(fields *f, errbuf *e, size_t k, span *out) {
    if (!f->have[k]) {
        return fail(e, "line %lu: missing field %s", f->line, f->keys[k]);
    }
    *out = f->val[k];
    return 0;
}

int drakit_field_int(fields *f, errbuf *e, size_t k, int64_t *out) {
    span v = {NULL, 0};
    if (drakit_field_str(f, e, k, &v) != 0) {
        return -1;
    }
    if (parse_int32(v.p, v.n, out) != NUM_OK) {
        return fail(e, "line %lu: field %s=%.*s is not a 32-bit integer", f->line, f->keys[k],
                    (int)(v.n > 64 ? 64 : v.n), v.p);
    }
    return 0;
}

/* field_flag reads an integer field that must be 0 or 1. */
int drakit_field_flag(fields *f, errbuf *e, size_t k, int *out) {
    int64_t v;
    if (drakit_field_int(f, e, k, &v) != 0) {
        return -1;
    }
    if (v != 0 && v != 1) {
        return fail(e, "line %lu: field %s=%lld must be 0 or 1", f->line, f->keys[k], (long long)v);
    }
    *out = v == 1;
    return 0;
}

int drakit_field_uint(fields *f, errbuf *e, size_t k, unsigned bits, uint64_t *out) {
    span v = {NULL, 0};
    if (drakit_field_str(f, e, k, &v) != 0) {
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
int drakit_split_fields(span line, const char *tab, fields *f, errbuf *e) {
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

/* list_next reads the next element of a list at *p (before end); 0 or -1. */
int drakit_list_next(const char **p, const char *end, int64_t *out) {
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
        drakit_list_next(&p, end, &v);
    }
    return v;
}

/* field_list mirrors fieldParser.list: one or more non-negative 31-bit integers. */
int drakit_field_list(fields *f, errbuf *e, size_t k, struct drakit_list *out) {
    span v = {NULL, 0};
    if (drakit_field_str(f, e, k, &v) != 0) {
        return -1;
    }
    out->p = v.p;
    out->n = v.n;
    out->count = 0;
    const char *p = v.p, *end = v.p + v.n;
    for (;;) {
        int64_t x;
        if (drakit_list_next(&p, end, &x) != 0) {
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
void *drakit_grow(void **arr, size_t *n, size_t sz, errbuf *e, unsigned long line) {
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
