/*
 * Capability files and nodes of MIG instances, as the renderer creates them
 * for a static layout: the access file below
 * <root>/proc/driver/nvidia/capabilities and the node
 * <root>/dev/nvidia-caps/nvidia-cap<minor>.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "caps.h"

#define CAPS_DIR "proc/driver/nvidia/capabilities"
/* render.NvidiaCapsMajor: used when <root>/proc/devices names no nvidia-caps major. */
#define DEFAULT_NVIDIA_CAPS_MAJOR 235
#define CAP_MODE 0444

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
    int ok = fchmod(fd, 0444) == 0 && drakit_write_all(fd, body, (size_t)n) == 0;
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
