/*
 * The records of the emulated node's NVML state as the state core holds them
 * once parsed (struct drakit_state and its parts, with the file format's
 * limits), and the lookups among them. state.c loads them; state_parse.c,
 * state_validate.c and state_nvlink.c fill and check them; the rest of the
 * shim reads them. The lookups live with the code that also uses them while
 * validating: state_validate.c (GPUs, MIG, faults, lists), state_nvlink.c
 * (NVLink) and state_fields.c (list elements).
 */
#ifndef DRAKIT_NVML_STATE_RECORDS_H
#define DRAKIT_NVML_STATE_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
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
    const char *mig_mode_val; /* the migMode field's value in the file, for rewriting it */
    size_t mig_mode_len;
};

/* A comma-separated list of non-negative integers in the file (syntax checked). */
struct drakit_list {
    const char *p;
    size_t n;
    size_t count;
};

/* drakit_list_get returns element i of l (i < l->count). */
int64_t drakit_list_get(const struct drakit_list *l, size_t i);

/* The MIG records (nvmlstate's mig.go): one struct per record, in file order. */
struct drakit_mig {
    int64_t gpu, max_devices, memory_slices;
};

struct drakit_giprofile {
    int64_t gpu, id, index, slices, memory_slices, instances;
    const char *name;
    size_t name_len;
    uint64_t memory_mb;
    int64_t sms, copy_engines, decoders, encoders, jpegs, ofas;
    int p2p;
    struct drakit_list placements;
};

struct drakit_ciprofile {
    int64_t gpu, gi_profile, id, slices, instances, sms;
    const char *name;
    size_t name_len;
    struct drakit_list placements;
};

struct drakit_gi {
    int64_t gpu, id, profile, start, size, cap_minor;
    int visible; /* its cap node exists (set by drakit_state_load) */
};

struct drakit_ci {
    int64_t gpu, gi, id, profile, start, size, cap_minor;
    const char *uuid; /* DRAKIT_UUID_LEN bytes once validated */
    size_t uuid_len;
    int visible; /* its GI's and its own cap nodes exist */
};

/* A fault record (nvmlstate's fault.go): one GPU's health. */
struct drakit_fault {
    int64_t gpu;
    uint64_t sbe_volatile, dbe_volatile, sbe_aggregate, dbe_aggregate;
    int64_t retired_sbe, retired_dbe, remapped_cor, remapped_unc, recovery_action, temperature;
    int retired_pending, remap_pending, remap_failure, lost;
    uint64_t clocks_event_reasons;
};

/* The temperature of a GPU without a fault record (nvmlstate.DefaultTemperature). */
#define DRAKIT_DEFAULT_TEMPERATURE 35
/* The GI or CI id of an event that is not a MIG instance's. */
#define DRAKIT_NO_INSTANCE 0xFFFFFFFFull
/* nvmlstate.MaxEvents. */
#define DRAKIT_MAX_EVENTS 256

/* An event record; type is its nvmlEventType bit (0 for an unknown type
 * word, which validation refuses). */
struct drakit_event {
    uint64_t seq, gi, ci, data, time;
    unsigned long long type;
    int64_t gpu;
};

/* The NVLink records (nvmlstate's nvlink.go). */
#define DRAKIT_MAX_NVLINKS 18 /* nvmlstate.MaxNVLinks: NVML_NVLINK_MAX_LINKS of driver 570 */
#define DRAKIT_FABRIC_UUID_LEN 36 /* xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx */

struct drakit_nvlink {
    int64_t gpu, link, version, remote_type;
    int active;
    const char *remote_bus; /* DRAKIT_BUS_ID_LEN bytes once validated */
    size_t remote_bus_len;
    uint64_t remote_device_id;
    unsigned int domain, bus, device, function; /* decoded from remote_bus */
};

struct drakit_fabric {
    int64_t gpu, state, status;
    const char *uuid; /* DRAKIT_FABRIC_UUID_LEN bytes once validated */
    size_t uuid_len;
    uint64_t clique, health_mask;
};

struct drakit_peer {
    int64_t gpu, peer, ancestor;
    int nvlink;
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
    size_t len;         /* bytes in buf */
    struct drakit_mig *migs;
    size_t nmigs;
    struct drakit_giprofile *giprofiles;
    size_t ngiprofiles;
    struct drakit_ciprofile *ciprofiles;
    size_t nciprofiles;
    struct drakit_gi *gis;
    size_t ngis;
    struct drakit_ci *cis;
    size_t ncis;
    struct drakit_fault *faults;
    size_t nfaults;
    struct drakit_event *events; /* in file order: ascending seq */
    size_t nevents;
    struct drakit_nvlink *nvlinks;
    size_t nnvlinks;
    struct drakit_fabric *fabrics;
    size_t nfabrics;
    struct drakit_peer *peers;
    size_t npeers;
    /* By minor: 1 + the index in gpus of the visible GPU, 0 for none
     * (drakit_state_load_root builds it; drakit_gpu_by_minor reads it). */
    unsigned char gpu_at[DRAKIT_MAX_GPUS];
    char root[4096];     /* the emulator root the state was read from */
    /* Identity of the file read, to notice when another process replaced it
     * (where the root has no generation file). */
    unsigned long long st_dev, st_ino, st_size;
    long long mtime_sec, mtime_nsec;
    /* The generation counter read before the file (have_generation: the
     * generation file was mapped then). */
    uint64_t generation;
    int have_generation;
};

/* Lookups among the records of s (NULL when absent); drakit_gpu_by_minor
 * finds the visible GPUs of a state drakit_state_load_root read, in one
 * indexing. */
const struct nvmlDevice_st *drakit_gpu_by_minor(const struct drakit_state *s, int64_t minor);
const struct drakit_mig *drakit_mig_of(const struct drakit_state *s, int64_t gpu);
const struct drakit_gi *drakit_gi_of(const struct drakit_state *s, int64_t gpu, int64_t id);
const struct drakit_giprofile *drakit_giprofile_of(const struct drakit_state *s, int64_t gpu,
                                                   int64_t id);
const struct drakit_ciprofile *drakit_ciprofile_of(const struct drakit_state *s, int64_t gpu,
                                                   int64_t gi_profile, int64_t id);
int drakit_list_contains(const struct drakit_list *l, int64_t v);
/* The NVLink records of GPU minor gpu (NULL when absent): link's, its
 * fabric record, and the peer record of the pair (gpu, peer) in either
 * order (state_nvlink.c). */
const struct drakit_nvlink *drakit_nvlink_of(const struct drakit_state *s, int64_t gpu, int64_t link);
const struct drakit_fabric *drakit_fabric_of(const struct drakit_state *s, int64_t gpu);
const struct drakit_peer *drakit_peer_of(const struct drakit_state *s, int64_t gpu, int64_t peer);
/* drakit_fault_of returns the fault record of GPU minor gpu, or NULL (healthy). */
const struct drakit_fault *drakit_fault_of(const struct drakit_state *s, int64_t gpu);

#endif /* DRAKIT_NVML_STATE_RECORDS_H */
