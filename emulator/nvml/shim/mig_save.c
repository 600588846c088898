/*
 * What MIG mutations write: MIG UUIDs (gpu.DeriveMIGUUID), new GI and
 * CI ids, the state file (rendered, written to a temporary file, fsynced
 * and renamed) and the capability access files and /dev/nvidia-caps nodes;
 * see mig.c.
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
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mig_internal.h"

/* ---- mutations: MIG mode, create and destroy ---- */

#define CAPS_DIR "proc/driver/nvidia/capabilities"

/* SHA-256 (FIPS 180-4), for MIG UUIDs as gpu.DeriveMIGUUID derives them. */
static const uint32_t sha_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t ror(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void sha256_block(uint32_t h[8], const unsigned char *b) {
    uint32_t w[64], v[8];
    for (int i = 0; i < 16; i++) {
        w[i] = (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16 | (uint32_t)b[4 * i + 2] << 8 |
               (uint32_t)b[4 * i + 3];
    }
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    memcpy(v, h, sizeof v);
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = v[7] + (ror(v[4], 6) ^ ror(v[4], 11) ^ ror(v[4], 25)) +
                      ((v[4] & v[5]) ^ (~v[4] & v[6])) + sha_k[i] + w[i];
        uint32_t t2 = (ror(v[0], 2) ^ ror(v[0], 13) ^ ror(v[0], 22)) +
                      ((v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]));
        memmove(&v[1], &v[0], 7 * sizeof v[0]);
        v[4] += t1;
        v[0] = t1 + t2;
    }
    for (int i = 0; i < 8; i++) {
        h[i] += v[i];
    }
}

static void sha256(const unsigned char *msg, size_t n, unsigned char out[32]) {
    uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                     0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    unsigned char tail[128];
    size_t full = n / 64 * 64, rest = n - full;
    for (size_t i = 0; i < full; i += 64) {
        sha256_block(h, msg + i);
    }
    memset(tail, 0, sizeof tail);
    memcpy(tail, msg + full, rest);
    tail[rest] = 0x80;
    size_t tn = rest + 9 <= 64 ? 64 : 128;
    uint64_t bits = (uint64_t)n * 8;
    for (int i = 0; i < 8; i++) {
        tail[tn - 1 - i] = (unsigned char)(bits >> (8 * i));
    }
    for (size_t i = 0; i < tn; i += 64) {
        sha256_block(h, tail + i);
    }
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (unsigned char)(h[i] >> 24);
        out[4 * i + 1] = (unsigned char)(h[i] >> 16);
        out[4 * i + 2] = (unsigned char)(h[i] >> 8);
        out[4 * i + 3] = (unsigned char)h[i];
    }
}

/* mig_uuid writes gpu.DeriveMIGUUID(gpu UUID, gi, ci) and a NUL into out. */
void drakit_new_mig_uuid(const struct nvmlDevice_st *d, int64_t gi, int64_t ci,
                     char out[DRAKIT_UUID_LEN + 1]) {
    char in[DRAKIT_UUID_LEN + 32];
    int n = snprintf(in, sizeof in, "%.*s/gi%lld/ci%lld", (int)d->uuid_len, d->uuid, (long long)gi,
                     (long long)ci);
    unsigned char h[32];
    sha256((const unsigned char *)in, (size_t)n, h);
    static const char hex[] = "0123456789abcdef";
    char *p = out;
    memcpy(p, "MIG-", 4);
    p += 4;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) {
            *p++ = '-';
        }
        *p++ = hex[h[i] >> 4];
        *p++ = hex[h[i] & 15];
    }
    *p = '\0';
}

/* gi_access_minor is nvmlstate.GIAccessMinor; a CI's is it + 1 + CI id. */
int64_t drakit_gi_access_minor(int64_t gpu, int64_t gi) { return 3 + gpu * 135 + gi * 9; }

/* giid is gpu.GIID: the GI id of placement start:size on a GPU with
 * eight memory slices, or -1 for another geometry. */
static int64_t giid(int64_t start, int64_t size, int64_t memory_slices) {
    if (memory_slices != 8 || (size != 1 && size != 2 && size != 4 && size != 8) ||
        start % size != 0 || start + size > 8) {
        return -1;
    }
    return 8 / size - 1 + (start ^ 4) / size;
}

/* new_gi_id is the id a new GI at start:size gets: giid, or the lowest free
 * id when that is taken or undefined; -1 when none is free. */
int64_t drakit_new_gi_id(const struct drakit_state *s, int64_t gpu, int64_t start, int64_t size,
                         int64_t memory_slices) {
    int64_t id = giid(start, size, memory_slices);
    if (id >= 0 && drakit_gi_of(s, gpu, id) == NULL) {
        return id;
    }
    for (id = 0; id < NUM_GIS; id++) {
        if (drakit_gi_of(s, gpu, id) == NULL) {
            return id;
        }
    }
    return -1;
}

int64_t drakit_new_ci_id(const struct drakit_state *s, int64_t gpu, int64_t gi) {
    for (int64_t id = 0; id < NUM_CIS; id++) {
        int taken = 0;
        for (size_t i = 0; i < s->ncis; i++) {
            taken |= s->cis[i].gpu == gpu && s->cis[i].gi == gi && s->cis[i].id == id;
        }
        if (!taken) {
            return id;
        }
    }
    return -1;
}

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

static int write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* errno_rc maps a failed file operation's errno to an NVML return code. */
nvmlReturn_t drakit_errno_rc(int err) {
    return err == EPERM || err == EACCES || err == EROFS ? NVML_ERROR_NO_PERMISSION
                                                          : NVML_ERROR_UNKNOWN;
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
    int ok = fchmod(fd, 0644) == 0 && write_all(fd, o.p, o.n) == 0 && fsync(fd) == 0;
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

/* nvidia_caps_major is the nvidia-caps major of <root>/proc/devices (the
 * renderer's default when absent). */
static unsigned int nvidia_caps_major(const char *root) {
    char path[PATH_MAX], buf[8192];
    unsigned int major = DEFAULT_NVIDIA_CAPS_MAJOR;
    if (drakit_join(path, sizeof path, root, "proc/devices") != 0) {
        return major;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return major;
    }
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) {
        return major;
    }
    buf[n] = '\0';
    for (char *line = buf; line != NULL && *line != '\0';) {
        char *nl = strchr(line, '\n');
        if (nl != NULL) {
            *nl = '\0';
        }
        char *p = line;
        while (*p == ' ') {
            p++;
        }
        char *num = p;
        unsigned long v = 0;
        while (*p >= '0' && *p <= '9' && v < 4096) {
            v = v * 10 + (unsigned long)(*p++ - '0');
        }
        if (p > num && *p == ' ' && strcmp(p + 1, "nvidia-caps") == 0 && v < 4096) {
            return (unsigned int)v;
        }
        line = nl != NULL ? nl + 1 : NULL;
    }
    return major;
}

/* mkdirs creates root/rel and its missing parents (0755, as the renderer). */
static int mkdirs(const char *root, const char *rel) {
    char path[PATH_MAX];
    if (drakit_join(path, sizeof path, root, rel) != 0) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')) != NULL; p++) {
        *p = '\0';
        int r = mkdir(path, 0755);
        *p = '/';
        if (r != 0 && errno != EEXIST) {
            return -1;
        }
    }
    return mkdir(path, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* Capability paths of GI gi (ci < 0) or CI ci of gpu, relative to the root. */
static void cap_dir(char *out, size_t n, int64_t gpu, int64_t gi, int64_t ci) {
    if (ci < 0) {
        snprintf(out, n, CAPS_DIR "/gpu%lld/mig/gi%lld", (long long)gpu, (long long)gi);
    } else {
        snprintf(out, n, CAPS_DIR "/gpu%lld/mig/gi%lld/ci%lld", (long long)gpu, (long long)gi,
                 (long long)ci);
    }
}

/*
 * add_cap creates what the renderer creates for an instance: the access file
 * (0444, "DeviceFileMinor: m\nDeviceFileMode: 292\nDeviceFileModify: 1\n")
 * in its capability directory and the node /dev/nvidia-caps/nvidia-cap<m>
 * (character device, nvidia-caps major, 0444).
 */
nvmlReturn_t drakit_add_cap(const char *root, int64_t gpu, int64_t gi, int64_t ci, int64_t minor) {
    char dir[128], rel[160], path[PATH_MAX], body[96];
    cap_dir(dir, sizeof dir, gpu, gi, ci);
    snprintf(rel, sizeof rel, "%s/access", dir);
    int n = snprintf(body, sizeof body, "DeviceFileMinor: %lld\nDeviceFileMode: %d\nDeviceFileModify: 1\n",
                     (long long)minor, CAP_MODE);
    if (mkdirs(root, dir) != 0 || drakit_join(path, sizeof path, root, rel) != 0) {
        return drakit_errno_rc(errno);
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
    if (fd < 0) {
        return drakit_errno_rc(errno);
    }
    int ok = fchmod(fd, 0444) == 0 && write_all(fd, body, (size_t)n) == 0;
    int err = errno;
    if (close(fd) != 0 || !ok) {
        return drakit_errno_rc(ok ? errno : err);
    }
    snprintf(rel, sizeof rel, "dev/nvidia-caps/nvidia-cap%lld", (long long)minor);
    if (mkdirs(root, "dev/nvidia-caps") != 0 || drakit_join(path, sizeof path, root, rel) != 0) {
        return drakit_errno_rc(errno);
    }
    unsigned int major = nvidia_caps_major(root), mi = (unsigned int)minor;
    /* The kernel's device number encoding (new_encode_dev); the system call,
     * not glibc's mknod, which is versioned GLIBC_2.33. */
    unsigned long dev = (mi & 0xffu) | (major << 8) | ((mi & ~0xffu) << 12);
    unlink(path); /* a stale node of an earlier instance */
    if (syscall(SYS_mknodat, AT_FDCWD, path, (unsigned long)(S_IFCHR | 0444), dev) != 0 ||
        chmod(path, 0444) != 0) {
        int e = errno;
        drakit_debug("create %s: %s (mknod needs root or CAP_MKNOD)", path, strerror(e));
        return drakit_errno_rc(e);
    }
    return NVML_SUCCESS;
}

/* remove_cap removes what add_cap created, and the GPU's capability
 * directories once they are empty. */
void drakit_remove_cap(const char *root, int64_t gpu, int64_t gi, int64_t ci, int64_t minor) {
    char rel[160], path[PATH_MAX];
    snprintf(rel, sizeof rel, "dev/nvidia-caps/nvidia-cap%lld", (long long)minor);
    if (drakit_join(path, sizeof path, root, rel) == 0) {
        unlink(path);
    }
    cap_dir(rel, sizeof rel, gpu, gi, ci);
    size_t dl = strlen(rel);
    snprintf(rel + dl, sizeof rel - dl, "/access");
    if (drakit_join(path, sizeof path, root, rel) == 0) {
        unlink(path);
    }
    /* rmdir the instance's directory and the empty parents up to gpu<g>. */
    rel[dl] = '\0';
    size_t stop = strlen(CAPS_DIR);
    while (strlen(rel) > stop && drakit_join(path, sizeof path, root, rel) == 0 &&
           rmdir(path) == 0) {
        *strrchr(rel, '/') = '\0';
    }
}
