/*
 * The shim's common helpers, below every room: debug messages, paths below
 * the emulator root, NVML's string copy, whole writes and errno mapping.
 * They use no state and no lock.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

void drakit_debug(const char *fmt, ...) {
    const char *v = getenv("DRAKIT_NVML_DEBUG");
    if (v != NULL && *v != '\0') {
        va_list ap;
        va_start(ap, fmt);
        fputs("drakit NVML shim: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
}

int drakit_join(char *out, size_t n, const char *root, const char *rel) {
    size_t rl = strlen(root);
    const char *sep = rl > 0 && root[rl - 1] == '/' ? "" : "/";
    int w = snprintf(out, n, "%s%s%s", root, sep, rel);
    return w < 0 || (size_t)w >= n ? -1 : 0;
}

nvmlReturn_t drakit_copy_string(char *dst, unsigned int length, const char *src, size_t n) {
    if (dst == NULL) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    if ((size_t)length < n + 1) {
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    memcpy(dst, src, n);
    dst[n] = '\0';
    return NVML_SUCCESS;
}

int drakit_write_all(int fd, const char *p, size_t n) {
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
