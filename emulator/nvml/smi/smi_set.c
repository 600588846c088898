/*
 * Settings: -c (compute mode), -pm (persistence mode) and compute-policy
 * --set-timeslice, the invocations NVIDIA's GPU kubelet plugin makes
 * (time-slicing, MPS, passthrough). Each reads the current value through
 * NVML: a setting the GPU already has succeeds without a change, anything
 * else goes to NVML's setter, which the shim does not implement
 * (NVML_ERROR_NOT_SUPPORTED, exit code 3): the emulated state has no other
 * compute mode, persistence mode or time slice to change to.
 */
#define _GNU_SOURCE

#include <string.h>
#include <strings.h>

#include "smi.h"

/* describe writes "GPU <bus id>" (or the MIG device's UUID) into buf. */
static void describe(nvmlDevice_t d, char *buf, size_t n) {
    unsigned int is_mig = 0;
    char id[96];
    if (nvmlDeviceIsMigDeviceHandle(d, &is_mig) == NVML_SUCCESS && is_mig &&
        nvmlDeviceGetUUID(d, id, sizeof id) == NVML_SUCCESS) {
        snprintf(buf, n, "MIG device %s", id);
        return;
    }
    smi_bus_id(d, id);
    snprintf(buf, n, "GPU %s", id);
}

int smi_set_compute_mode(const struct smi_devices *devs, const char *arg) {
    int want = smi_parse_compute_mode(arg);
    if (want < 0) {
        fprintf(stderr, "Invalid compute mode \"%s\": DEFAULT (0), EXCLUSIVE_THREAD (1), PROHIBITED (2) "
                        "or EXCLUSIVE_PROCESS (3)\n",
                arg);
        return SMI_EXIT_ARGUMENT;
    }
    int code = SMI_OK;
    for (unsigned int i = 0; i < devs->n; i++) {
        char what[128];
        nvmlComputeMode_t cur;
        describe(devs->handle[i], what, sizeof what);
        nvmlReturn_t rc = nvmlDeviceGetComputeMode(devs->handle[i], &cur);
        if (rc == NVML_SUCCESS && (int)cur == want) {
            printf("Compute mode is already set to %s for %s.\n", smi_compute_mode_arg(want), what);
            continue;
        }
        if (rc == NVML_SUCCESS) {
            rc = nvmlDeviceSetComputeMode(devs->handle[i], (nvmlComputeMode_t)want);
        }
        if (rc == NVML_SUCCESS) {
            printf("Set compute mode to %s for %s.\n", smi_compute_mode_arg(want), what);
            continue;
        }
        printf("Unable to set the compute mode to %s for %s: %s\n", smi_compute_mode_arg(want), what, nvmlErrorString(rc));
        code = smi_exit_code(rc);
    }
    if (code == SMI_OK) {
        printf("All done.\n");
    }
    return code;
}

int smi_set_persistence_mode(const struct smi_devices *devs, const char *arg) {
    int want;
    if (strcmp(arg, "0") == 0 || strcasecmp(arg, "DISABLED") == 0) {
        want = NVML_FEATURE_DISABLED;
    } else if (strcmp(arg, "1") == 0 || strcasecmp(arg, "ENABLED") == 0) {
        want = NVML_FEATURE_ENABLED;
    } else {
        fprintf(stderr, "Invalid persistence mode \"%s\": 0 (disabled) or 1 (enabled)\n", arg);
        return SMI_EXIT_ARGUMENT;
    }
    const char *name = want == NVML_FEATURE_ENABLED ? "Enabled" : "Disabled";
    int code = SMI_OK;
    for (unsigned int i = 0; i < devs->n; i++) {
        char what[128];
        nvmlEnableState_t cur;
        describe(devs->handle[i], what, sizeof what);
        nvmlReturn_t rc = nvmlDeviceGetPersistenceMode(devs->handle[i], &cur);
        if (rc == NVML_SUCCESS && (int)cur == want) {
            printf("Persistence mode is already %s for %s.\n", name, what);
            continue;
        }
        if (rc == NVML_SUCCESS) {
            rc = nvmlDeviceSetPersistenceMode(devs->handle[i], (nvmlEnableState_t)want);
        }
        if (rc == NVML_SUCCESS) {
            printf("%s persistence mode for %s.\n", name, what);
            continue;
        }
        printf("Unable to set persistence mode to %s for %s: %s\n", name, what, nvmlErrorString(rc));
        code = smi_exit_code(rc);
    }
    if (code == SMI_OK) {
        printf("All done.\n");
    }
    return code;
}

/*
 * The time slice of compute-policy: 0 Default, 1 Short, 2 Medium, 3 Long.
 * NVML has no call for it and the state file no field: the emulated GPUs
 * run the default time slice, so 0 is what a GPU has and succeeds, and the
 * others are not supported. A MIG device has no time slice of its own.
 */
int smi_set_timeslice(const struct smi_devices *devs, const char *arg) {
    static const char *const names[] = {"Default", "Short", "Medium", "Long"};
    if (!(arg[0] >= '0' && arg[0] <= '3' && arg[1] == '\0')) {
        fprintf(stderr, "Invalid time slice \"%s\": 0 (Default), 1 (Short), 2 (Medium) or 3 (Long)\n", arg);
        return SMI_EXIT_ARGUMENT;
    }
    int want = arg[0] - '0';
    int code = SMI_OK;
    for (unsigned int i = 0; i < devs->n; i++) {
        char what[128];
        unsigned int is_mig = 0;
        describe(devs->handle[i], what, sizeof what);
        nvmlReturn_t rc = nvmlDeviceIsMigDeviceHandle(devs->handle[i], &is_mig);
        if (rc == NVML_SUCCESS && (is_mig || want != 0)) {
            rc = NVML_ERROR_NOT_SUPPORTED;
        }
        if (rc == NVML_SUCCESS) {
            printf("Time slice is already %s (0) for %s.\n", names[0], what);
            continue;
        }
        printf("Unable to set the time slice to %s (%d) for %s: %s\n", names[want], want, what,
               nvmlErrorString(rc));
        code = smi_exit_code(rc);
    }
    if (code == SMI_OK) {
        printf("All done.\n");
    }
    return code;
}
