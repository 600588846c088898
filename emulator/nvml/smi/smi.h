/*
 * The emulator's nvidia-smi: an NVML client, linked statically with the
 * shim's sources (emulator/nvml/shim), so it answers from the emulated
 * node's NVML state exactly as libnvidia-ml.so.1 does and runs anywhere,
 * even chrooted into an emulator root that has no C library. smi_main.c
 * parses the command line, finds the emulator root and dispatches;
 * smi_report.c lists GPUs (-L, the default table, --query-gpu); smi_set.c
 * changes settings (-c, -pm, compute-policy --set-timeslice). Both use
 * smi_devices.c (the GPUs -i selects, bus ids, exit codes) and
 * smi_compute_mode.c (compute mode names).
 */
#ifndef DRAKIT_SMI_H
#define DRAKIT_SMI_H

#include <stdio.h>

#include "nvml_abi.h"

#ifndef DRAKIT_NVML_HEADER
/* The NVML functions nvidia-smi calls, declared as nvml.h declares them (with
 * -DDRAKIT_NVML_HEADER the real header declares them and checks the calls). */
nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlShutdown(void);
const char *nvmlErrorString(nvmlReturn_t result);
nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length);
nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length);
nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index);
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length);
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci);
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory);
nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor);
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode,
                                  unsigned int *pendingMode);
nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count);
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                 nvmlDevice_t *migDevice);
nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int *isMigDevice);
nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, nvmlComputeMode_t *mode);
nvmlReturn_t nvmlDeviceSetComputeMode(nvmlDevice_t device, nvmlComputeMode_t mode);
nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, nvmlEnableState_t *mode);
nvmlReturn_t nvmlDeviceSetPersistenceMode(nvmlDevice_t device, nvmlEnableState_t mode);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                     nvmlProcessInfo_t *infos);
#endif

/* NVML's compute modes (nvmlComputeMode_t); the bundled ABI subset names only
 * DEFAULT. */
enum { SMI_COMPUTE_DEFAULT = 0, SMI_COMPUTE_EXCLUSIVE_THREAD = 1, SMI_COMPUTE_PROHIBITED = 2,
       SMI_COMPUTE_EXCLUSIVE_PROCESS = 3, SMI_COMPUTE_MODES = 4 };

/* nvidia-smi's exit codes (nvidia-smi(1), RETURN VALUE). */
enum { SMI_OK = 0, SMI_EXIT_ARGUMENT = 2, SMI_EXIT_NOT_SUPPORTED = 3, SMI_EXIT_NOT_FOUND = 6,
       SMI_EXIT_OTHER = 255 };

/* smi_exit_code is the exit code nvidia-smi gives for an NVML error. */
int smi_exit_code(nvmlReturn_t rc);

/* The GPUs a command works on: every visible GPU in NVML order, or those -i
 * names. */
#define SMI_MAX_DEVICES 256
struct smi_devices {
    unsigned int n;
    nvmlDevice_t handle[SMI_MAX_DEVICES];
};

/*
 * smi_select fills out with the GPUs -i names (ids: comma-separated indexes,
 * UUIDs or PCI bus ids; NULL: all visible GPUs). A MIG device UUID is kept
 * as a MIG device handle when allow_mig is set and refused otherwise. On an
 * error it prints the message and returns the exit code; 0 on success.
 */
int smi_select(const char *ids, int allow_mig, struct smi_devices *out);

/* smi_bus_id writes the device's PCI bus id in NVML's form into buf (size
 * NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE), or "[N/A]". */
void smi_bus_id(nvmlDevice_t d, char *buf);

/* smi_compute_mode_name is nvidia-smi's name of a compute mode ("Default",
 * "Exclusive_Process", ...) and smi_compute_mode_arg the name -c takes
 * ("DEFAULT", ...); smi_parse_compute_mode reads the 0..3 or
 * DEFAULT/EXCLUSIVE_THREAD/PROHIBITED/EXCLUSIVE_PROCESS forms -c takes (-1:
 * none). */
const char *smi_compute_mode_name(int mode);
const char *smi_compute_mode_arg(int mode);
int smi_parse_compute_mode(const char *s);

/* The commands. Each returns nvidia-smi's exit code. */
int smi_list(const struct smi_devices *devs);
int smi_table(const struct smi_devices *devs);
int smi_query(const struct smi_devices *devs, const char *fields, const char *format);
int smi_set_compute_mode(const struct smi_devices *devs, const char *mode);
int smi_set_persistence_mode(const struct smi_devices *devs, const char *mode);
int smi_set_timeslice(const struct smi_devices *devs, const char *slice);

#endif /* DRAKIT_SMI_H */
