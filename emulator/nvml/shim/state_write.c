/*
 * Writing the state file, next to the state reader: the MIG mutations'
 * rewrite (rendered as nvmlstate.Write would, written to a temporary file,
 * fsynced and renamed over the state file, then the generation bumped).
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
#include <sys/stat.h>
#include <unistd.h>

#include "state_write.h"

/* A growable output buffer; err is set when memory ran out. */
struct out {
    char *p;
    size_t n, cap;
    int err;
};

static void out_bytes(struct out *o, const char *p, size_t n) {
    if (o->err) {
        return;
    }
    if (o->n + n > o->cap) {
        size_t cap = (o->n + n) * 2 + 256;
        char *q = realloc(o->p, cap);
        if (q == NULL) {
            o->err = 1;
            return;
        }
        o->p = q;
        o->cap = cap;
    }
    memcpy(o->p + o->n, p, n);
    o->n += n;
}

__attribute__((format(printf, 2, 3))) static void out_fmt(struct out *o, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof buf) {
        o->err = 1;
        return;
    }
    out_bytes(o, buf, (size_t)n);
}

/*
 * render_state writes s as nvmlstate.Write would after the change: every
 * line of the file read except the gi and ci records and the end record,
 * migMode of the gpu record whose value is at mode_val replaced by mode
 * (mode_val NULL: none), then s's gi records and ci records, then the end
 * record.
 */
static void render_state(struct out *o, const struct drakit_state *s, const char *mode_val,
                         int64_t mode) {
    const char *p = s->buf, *end = s->buf + s->len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *q = nl != NULL ? nl : end;
        /* The record type ends at a TAB or at the line's end, before a CR
         * (the reader drops one before the newline). */
        const char *text_end = q > p && q[-1] == '\r' ? q - 1 : q;
        size_t word = 0;
        while (p + word < text_end && p[word] != '\t') {
            word++;
        }
        int skip = (word == 2 && (memcmp(p, "gi", 2) == 0 || memcmp(p, "ci", 2) == 0)) ||
                   (word == 3 && memcmp(p, "end", 3) == 0);
        if (!skip && mode_val != NULL && mode_val >= p && mode_val < q) {
            const char *after = mode_val;
            while (after < q && *after != '\t') {
                after++;
            }
            out_bytes(o, p, (size_t)(mode_val - p));
            out_fmt(o, "%lld", (long long)mode);
            out_bytes(o, after, (size_t)(q - after));
            out_bytes(o, "\n", 1);
        } else if (!skip) {
            out_bytes(o, p, (size_t)(q - p));
            out_bytes(o, "\n", 1);
        }
        p = q + 1;
    }
    for (size_t i = 0; i < s->ngis; i++) {
        const struct drakit_gi *g = &s->gis[i];
        out_fmt(o, "gi\tgpu=%lld\tid=%lld\tprofile=%lld\tstart=%lld\tsize=%lld\tcapMinor=%lld\n",
                (long long)g->gpu, (long long)g->id, (long long)g->profile, (long long)g->start,
                (long long)g->size, (long long)g->cap_minor);
    }
    for (size_t i = 0; i < s->ncis; i++) {
        const struct drakit_ci *c = &s->cis[i];
        out_fmt(o,
                "ci\tgpu=%lld\tgi=%lld\tid=%lld\tprofile=%lld\tstart=%lld\tsize=%lld\tuuid=%.*s"
                "\tcapMinor=%lld\n",
                (long long)c->gpu, (long long)c->gi, (long long)c->id, (long long)c->profile,
                (long long)c->start, (long long)c->size, (int)c->uuid_len, c->uuid,
                (long long)c->cap_minor);
    }
    out_bytes(o, "end\n", 4);
}

/* save writes s (changed as render_state says) to a temporary file next to
 * the state file, fsyncs it and renames it over the state file. */
nvmlReturn_t drakit_save_state(const struct drakit_state *s, const char *mode_val, int64_t mode) {
    char path[PATH_MAX], tmp[PATH_MAX];
    struct out o = {NULL, 0, 0, 0};
    render_state(&o, s, mode_val, mode);
    if (o.err) {
        free(o.p);
        return NVML_ERROR_MEMORY;
    }
    if (drakit_join(path, sizeof path, s->root, "run/drakit-emulator/nvml.state") != 0 ||
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp) {
        free(o.p);
        return NVML_ERROR_UNKNOWN;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        int err = errno;
        free(o.p);
        drakit_debug("create %s: %s", tmp, strerror(err));
        return drakit_errno_rc(err);
    }
    int ok = fchmod(fd, 0644) == 0 && drakit_write_all(fd, o.p, o.n) == 0 && fsync(fd) == 0;
    int err = errno;
    free(o.p);
    if (close(fd) != 0 && ok) {
        ok = 0;
        err = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = 0;
        err = errno;
    }
    if (!ok) {
        drakit_debug("write %s: %s", path, strerror(err));
        unlink(tmp);
        return drakit_errno_rc(err);
    }
    /* Tell the other clients, still under the lock. The change is made
     * either way; a failed bump is explained with $DRAKIT_NVML_DEBUG. */
    drakit_gen_bump(s->root);
    return NVML_SUCCESS;
}
