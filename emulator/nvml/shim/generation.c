/*
 * The generation file <root>/run/drakit-emulator/nvml.generation (package
 * nvmlstate, "Generation file"): one page, the magic "drkgen01" and a
 * uint64 counter at offset 8 that every writer of the state file increments
 * atomically after renaming the new file into place. The shim maps it
 * read-only and shared, so noticing another process's change costs one
 * atomic load per call instead of a stat(2) of the state file; a root
 * without a valid file falls back to the stat. Not thread-safe by itself:
 * callers hold the library's mutex.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "state.h"

#define GEN_RELATIVE_PATH "run/drakit-emulator/nvml.generation"
#define GEN_MAGIC "drkgen01"
#define GEN_MAGIC_LEN 8
#define GEN_FILE_SIZE 4096

static struct {
    char root[PATH_MAX]; /* "" when detached */
    void *map;           /* GEN_MAGIC_LEN + 8 bytes of the file, read-only */
    unsigned long long dev, ino;
} g_gen;

static const uint64_t *gen_counter(void *map) {
    return (const uint64_t *)(void *)((char *)map + GEN_MAGIC_LEN);
}

/* fstat and stat through the system calls: glibc's wrappers are versioned
 * GLIBC_2.33, and the library must load on glibc 2.17. */
static int gen_fstat(int fd, struct stat *st) { return (int)syscall(SYS_fstat, fd, st); }

void drakit_gen_detach(void) {
    if (g_gen.map != NULL) {
        munmap(g_gen.map, GEN_MAGIC_LEN + 8);
    }
    memset(&g_gen, 0, sizeof g_gen);
}

void drakit_gen_attach(const char *root) {
    char path[PATH_MAX];
    struct stat st;
    if (drakit_join(path, sizeof path, root, GEN_RELATIVE_PATH) != 0 || strlen(root) >= sizeof g_gen.root) {
        drakit_gen_detach();
        return;
    }
    /* Still the same file? Rendering a root again replaces it (and bumps
     * the old one, which brought this caller here). */
    if (g_gen.map != NULL && strcmp(g_gen.root, root) == 0 &&
        syscall(SYS_newfstatat, AT_FDCWD, path, &st, 0) == 0 &&
        (unsigned long long)st.st_dev == g_gen.dev && (unsigned long long)st.st_ino == g_gen.ino) {
        return;
    }
    drakit_gen_detach();
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        drakit_debug("open %s: %s: every call stats the state file instead", path, strerror(errno));
        return;
    }
    void *map = MAP_FAILED;
    if (gen_fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        drakit_debug("%s is not a regular file: every call stats the state file instead", path);
    } else if (st.st_size < GEN_MAGIC_LEN + 8) {
        /* Mapping beyond the end of a file faults on access (SIGBUS). */
        drakit_debug("%s: %lld bytes, shorter than %d: every call stats the state file instead", path,
                     (long long)st.st_size, GEN_MAGIC_LEN + 8);
    } else if ((map = mmap(NULL, GEN_MAGIC_LEN + 8, PROT_READ, MAP_SHARED, fd, 0)) == MAP_FAILED) {
        drakit_debug("map %s: %s: every call stats the state file instead", path, strerror(errno));
    } else if (memcmp(map, GEN_MAGIC, GEN_MAGIC_LEN) != 0) {
        drakit_debug("%s: not a generation file (no magic \"" GEN_MAGIC
                     "\"): every call stats the state file instead",
                     path);
        munmap(map, GEN_MAGIC_LEN + 8);
        map = MAP_FAILED;
    }
    close(fd);
    if (map != MAP_FAILED) {
        strcpy(g_gen.root, root);
        g_gen.map = map;
        g_gen.dev = (unsigned long long)st.st_dev;
        g_gen.ino = (unsigned long long)st.st_ino;
    }
}

int drakit_gen_load(uint64_t *v) {
    if (g_gen.map == NULL) {
        return 0;
    }
    *v = __atomic_load_n(gen_counter(g_gen.map), __ATOMIC_ACQUIRE);
    return 1;
}

int drakit_gen_bump(const char *root) {
    char path[PATH_MAX];
    struct stat st;
    if (drakit_join(path, sizeof path, root, GEN_RELATIVE_PATH) != 0) {
        return -1;
    }
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
        fchmod(fd, 0644); /* whatever the umask: every client reads it */
    } else if (errno == EEXIST) {
        fd = open(path, O_RDWR | O_CLOEXEC);
    }
    if (fd < 0) {
        drakit_debug("bump %s: %s", path, strerror(errno));
        return -1;
    }
    /* Never truncated or replaced: readers map this inode. */
    void *map = MAP_FAILED;
    int ok = gen_fstat(fd, &st) == 0 && (st.st_size >= GEN_FILE_SIZE || ftruncate(fd, GEN_FILE_SIZE) == 0) &&
             (map = mmap(NULL, GEN_FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) != MAP_FAILED;
    if (!ok) {
        drakit_debug("bump %s: %s", path, strerror(errno));
    } else {
        if (memcmp(map, GEN_MAGIC, GEN_MAGIC_LEN) != 0) {
            memcpy(map, GEN_MAGIC, GEN_MAGIC_LEN);
        }
        __atomic_fetch_add((uint64_t *)(void *)((char *)map + GEN_MAGIC_LEN), 1, __ATOMIC_SEQ_CST);
        munmap(map, GEN_FILE_SIZE);
    }
    close(fd);
    return ok ? 0 : -1;
}
