/*
 * Capability files and nodes of MIG instances (caps.c), for the MIG
 * mutations. Nothing here is exported from the library.
 */
#ifndef DRAKIT_NVML_CAPS_H
#define DRAKIT_NVML_CAPS_H

#include <stdint.h>

#include "common.h"

/*
 * drakit_add_cap creates what the renderer creates for GI gi (ci < 0) or CI
 * ci of gpu: the access file in its capability directory and the node
 * /dev/nvidia-caps/nvidia-cap<minor>; drakit_remove_cap removes them and the
 * GPU's capability directories once empty.
 */
nvmlReturn_t drakit_add_cap(const char *root, int64_t gpu, int64_t gi, int64_t ci, int64_t minor);
void drakit_remove_cap(const char *root, int64_t gpu, int64_t gi, int64_t ci, int64_t minor);

#endif /* DRAKIT_NVML_CAPS_H */
