/*
 * The shim's common helpers (common.c), below every room. Nothing here is
 * exported from the library.
 */
#ifndef DRAKIT_NVML_COMMON_H
#define DRAKIT_NVML_COMMON_H

#include <stddef.h>

#include "nvml_abi.h"

/* drakit_debug explains something on stderr when $DRAKIT_NVML_DEBUG is set. */
void drakit_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* drakit_join writes root/rel into out; 0, or -1 when it does not fit. */
int drakit_join(char *out, size_t n, const char *root, const char *rel);

/* drakit_copy_string writes n bytes of src and a NUL into dst if length
 * allows: NVML_ERROR_INSUFFICIENT_SIZE (nothing written) otherwise,
 * NVML_ERROR_INVALID_ARGUMENT for a NULL dst. */
nvmlReturn_t drakit_copy_string(char *dst, unsigned int length, const char *src, size_t n);

/* drakit_write_all writes n bytes of p to fd, retrying short writes; 0 or -1. */
int drakit_write_all(int fd, const char *p, size_t n);

/* drakit_errno_rc maps a failed file operation's errno to an NVML return code. */
nvmlReturn_t drakit_errno_rc(int err);

#endif /* DRAKIT_NVML_COMMON_H */
