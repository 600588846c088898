/*
 * The shim's state core: it finds the emulator root, reads
 * <root>/run/drakit-emulator/nvml.state (format: Go package
 * drakit.dev/drakit/emulator/nvmlstate, whose Parse is the reference this
 * reader mirrors: it accepts exactly the files Parse accepts), and keeps the
 * GPUs whose device node <root>/dev/nvidia<minor> exists.
 *
 * Not thread-safe by itself: shim.c serialises every call with one mutex.
 */
#ifndef DRAKIT_NVML_STATE_H
#define DRAKIT_NVML_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "nvml_abi.h"

/* Minors are unique and 0..254, so a valid file holds at most 255 GPUs. */
#define DRAKIT_MAX_GPUS 255
/* Longest driver or NVML version string: NVML's version buffers hold 80 bytes with the NUL. */
#define DRAKIT_MAX_VERSION_LEN 79
#define DRAKIT_UUID_LEN 40   /* GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx */
#define DRAKIT_BUS_ID_LEN 16 /* DDDDDDDD:BB:DD.F */
/* Larger state files are refused; real ones are a few kilobytes. */
#define DRAKIT_STATE_MAX_BYTES (16u << 20)
/* nvmlstate.Parse reads lines with a bufio.Scanner whose buffer holds at most
 * 1 MiB, terminator included: longer lines make it fail, and so they do here. */
#define DRAKIT_LINE_MAX_BYTES ((1u << 20) - 1)

/*
 * One GPU of the state file; a visible GPU's nvmlDevice_t handle is its
 * address in drakit_state.gpus. The strings point into the state's file
 * buffer and are not NUL-terminated.
 */
struct nvmlDevice_st {
    unsigned int index; /* position among the visible GPUs */
    int64_t minor;      /* 0..254 once validated */
    const char *uuid;   /* uuid_len bytes; DRAKIT_UUID_LEN once validated */
    size_t uuid_len;
    const char *name;   /* name_len bytes, 1..95 once validated; may contain NUL bytes */
    size_t name_len;
    const char *bus_id; /* bus_id_len bytes; DRAKIT_BUS_ID_LEN once validated */
    size_t bus_id_len;
    unsigned int domain, bus, device, function; /* decoded from bus_id */
    uint32_t pci_device_id, pci_subsystem_id;
    uint64_t memory_total, memory_reserved;
    int64_t architecture, brand, cc_major, cc_minor, numa_node, mig_mode;
    int mig_capable;
};

struct drakit_state {
    char *buf; /* the state file's bytes; every string points into it */
    const char *driver_version;
    size_t driver_version_len;
    const char *nvml_version;
    size_t nvml_version_len;
    int64_t cuda_driver_version;
    unsigned int count; /* visible GPUs: gpus[0..count) */
    struct nvmlDevice_st gpus[DRAKIT_MAX_GPUS];
};

/*
 * drakit_state_load fills s (which must be empty) from the emulator root:
 * $DRAKIT_EMULATOR_ROOT when set and non-empty; otherwise the directory the
 * shim was loaded from, minus /usr/lib/<multiarch>/<file>; otherwise "/".
 * It returns NVML_SUCCESS, or NVML_ERROR_DRIVER_NOT_LOADED when there is no
 * state file, NVML_ERROR_NO_PERMISSION when it cannot be read for lack of
 * permission, NVML_ERROR_MEMORY when memory runs out, and NVML_ERROR_UNKNOWN
 * for anything else (a malformed file included); s is empty then. It never
 * writes to stdout; with $DRAKIT_NVML_DEBUG set it explains a failure on
 * stderr.
 */
nvmlReturn_t drakit_state_load(struct drakit_state *s);

/* drakit_state_free releases what drakit_state_load acquired and empties s. */
void drakit_state_free(struct drakit_state *s);

#endif /* DRAKIT_NVML_STATE_H */
