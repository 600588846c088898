/*
 * State core of the NVML shim; see state.h. Here: finding the emulator root,
 * reading the state file and loading it with the device node checks. The
 * parser (state_fields.c, state_parse.c, state_validate.c) mirrors
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
#include "state_parse.h"

#if defined(__x86_64__)
#define DRAKIT_LIBDIR "/usr/lib/x86_64-linux-gnu/"
#elif defined(__aarch64__)
#define DRAKIT_LIBDIR "/usr/lib/aarch64-linux-gnu/"
#else
#error "unsupported architecture: the emulator root layout names the multiarch directory"
#endif

#define STATE_RELATIVE_PATH "run/drakit-emulator/nvml.state"

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

static void free_records(struct drakit_state *s) {
    free(s->migs);
    free(s->giprofiles);
    free(s->ciprofiles);
    free(s->gis);
    free(s->cis);
    free(s->faults);
    free(s->events);
    free(s->nvlinks);
    free(s->fabrics);
    free(s->peers);
}

static int parse_owned(struct drakit_state *s, char *buf, size_t len, errbuf *e) {
    if (drakit_parse_text(s, buf, len, e) != 0) {
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
    return drakit_join(path, sizeof path, root, rel) == 0 && access(path, F_OK) == 0;
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
    if (strlen(root) >= sizeof s->root || drakit_join(path, sizeof path, root, STATE_RELATIVE_PATH) != 0) {
        drakit_debug("nvmlInit: emulator root %.128s...: path too long", root);
        return NVML_ERROR_UNKNOWN;
    }
    struct stat st;
    /* Before the file: a change made while it is read moves the counter
     * again, and the next call rereads. */
    uint64_t generation = 0;
    int have_generation = drakit_gen_load(&generation);
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
    s->generation = generation;
    s->have_generation = have_generation;
    s->st_dev = (unsigned long long)st.st_dev;
    s->st_ino = (unsigned long long)st.st_ino;
    s->st_size = (unsigned long long)st.st_size;
    s->mtime_sec = (long long)st.st_mtim.tv_sec;
    s->mtime_nsec = (long long)st.st_mtim.tv_nsec;
    unsigned int visible = 0;
    for (unsigned int i = 0; i < s->count; i++) {
        char rel[32];
        snprintf(rel, sizeof rel, "dev/nvidia%u", (unsigned int)s->gpus[i].minor);
        /* A GPU that fell off the bus is gone even where its node stays
         * (a container's bind-mounted /dev). */
        const struct drakit_fault *f = drakit_fault_of(s, s->gpus[i].minor);
        if (exists(root, rel) && (f == NULL || !f->lost)) {
            if (visible != i) {
                s->gpus[visible] = s->gpus[i];
            }
            s->gpus[visible].index = visible;
            s->gpu_at[s->gpus[visible].minor] = (unsigned char)(visible + 1);
            visible++;
        }
    }
    s->count = visible;
    /* As on a host or in a container: an instance is visible only through
     * its capability device nodes (and its GPU's node). */
    for (size_t i = 0; i < s->ngis; i++) {
        struct drakit_gi *g = &s->gis[i];
        g->visible = drakit_gpu_by_minor(s, g->gpu) != NULL && cap_node_exists(root, g->cap_minor);
    }
    for (size_t i = 0; i < s->ncis; i++) {
        struct drakit_ci *c = &s->cis[i];
        const struct drakit_gi *g = drakit_gi_of(s, c->gpu, c->gi);
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
    drakit_gen_attach(root);
    return drakit_state_load_root(s, root);
}

int drakit_state_changed(const struct drakit_state *s) {
    uint64_t generation;
    if (drakit_gen_load(&generation)) {
        return !s->have_generation || generation != s->generation;
    }
    return drakit_state_file_changed(s);
}

int drakit_state_file_changed(const struct drakit_state *s) {
    char path[PATH_MAX];
    struct stat st;
    if (s->root[0] == '\0' || drakit_join(path, sizeof path, s->root, STATE_RELATIVE_PATH) != 0 ||
        syscall(SYS_newfstatat, AT_FDCWD, path, &st, 0) != 0) {
        return 0; /* nothing better to read */
    }
    return (unsigned long long)st.st_dev != s->st_dev ||
           (unsigned long long)st.st_ino != s->st_ino ||
           (unsigned long long)st.st_size != s->st_size ||
           (long long)st.st_mtim.tv_sec != s->mtime_sec ||
           (long long)st.st_mtim.tv_nsec != s->mtime_nsec;
}

void drakit_state_free(struct drakit_state *s) {
    free_records(s);
    free(s->buf);
    memset(s, 0, sizeof *s);
}
