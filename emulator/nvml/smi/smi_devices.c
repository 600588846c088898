/*
 * What every command shares: the GPUs it works on (-i, smi_select), a
 * device's PCI bus id as NVML gives it, and NVML's errors as nvidia-smi's
 * exit codes.
 */
#define _GNU_SOURCE

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "smi.h"

int smi_exit_code(nvmlReturn_t rc) {
    switch ((int)rc) {
    case NVML_SUCCESS:
        return SMI_OK;
    case NVML_ERROR_INVALID_ARGUMENT:
        return SMI_EXIT_ARGUMENT;
    case NVML_ERROR_NOT_SUPPORTED:
        return SMI_EXIT_NOT_SUPPORTED;
    case NVML_ERROR_NO_PERMISSION:
        return 4;
    case NVML_ERROR_NOT_FOUND:
        return SMI_EXIT_NOT_FOUND;
    case NVML_ERROR_INSUFFICIENT_POWER:
        return 8;
    case NVML_ERROR_DRIVER_NOT_LOADED:
        return 9;
    case NVML_ERROR_IRQ_ISSUE:
        return 10;
    case NVML_ERROR_LIBRARY_NOT_FOUND:
        return 12;
    case NVML_ERROR_FUNCTION_NOT_FOUND:
        return 13;
    case NVML_ERROR_CORRUPTED_INFOROM:
        return 14;
    case NVML_ERROR_GPU_IS_LOST:
        return 15;
    default:
        return SMI_EXIT_OTHER;
    }
}

void smi_bus_id(nvmlDevice_t d, char *buf) {
    nvmlPciInfo_t pci;
    memset(&pci, 0, sizeof pci);
    if (nvmlDeviceGetPciInfo_v3(d, &pci) == NVML_SUCCESS) {
        memcpy(buf, pci.busId, NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE);
        buf[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE - 1] = '\0';
    } else {
        strcpy(buf, "[N/A]");
    }
}

static int all_digits(const char *s) {
    if (*s == '\0') {
        return 0;
    }
    for (; *s != '\0'; s++) {
        if (!isdigit((unsigned char)*s)) {
            return 0;
        }
    }
    return 1;
}

/* select_one resolves one -i id as nvidia-smi does: an index, a GPU or MIG
 * UUID, or a PCI bus id in any form NVML accepts. */
static nvmlReturn_t select_one(const char *id, unsigned int count, nvmlDevice_t *h) {
    if (all_digits(id)) {
        unsigned long idx = strtoul(id, NULL, 10);
        return idx < count ? nvmlDeviceGetHandleByIndex_v2((unsigned int)idx, h) : NVML_ERROR_NOT_FOUND;
    }
    if (strncmp(id, "GPU-", 4) == 0 || strncmp(id, "MIG-", 4) == 0) {
        return nvmlDeviceGetHandleByUUID(id, h);
    }
    if (strchr(id, ':') != NULL) {
        return nvmlDeviceGetHandleByPciBusId_v2(id, h);
    }
    return NVML_ERROR_INVALID_ARGUMENT;
}

int smi_select(const char *ids, int allow_mig, struct smi_devices *out) {
    unsigned int count = 0;
    nvmlReturn_t rc = nvmlDeviceGetCount_v2(&count);
    if (rc != NVML_SUCCESS) {
        fprintf(stderr, "Unable to determine the device count: %s\n", nvmlErrorString(rc));
        return smi_exit_code(rc);
    }
    out->n = 0;
    if (ids == NULL) {
        for (unsigned int i = 0; i < count && i < SMI_MAX_DEVICES; i++) {
            rc = nvmlDeviceGetHandleByIndex_v2(i, &out->handle[out->n]);
            if (rc != NVML_SUCCESS) {
                fprintf(stderr, "Unable to get the handle of GPU %u: %s\n", i, nvmlErrorString(rc));
                return smi_exit_code(rc);
            }
            out->n++;
        }
        if (out->n == 0) {
            printf("No devices were found\n");
            return SMI_EXIT_NOT_FOUND;
        }
        return SMI_OK;
    }
    char *list = strdup(ids), *save = NULL;
    if (list == NULL) {
        fprintf(stderr, "out of memory\n");
        return SMI_EXIT_OTHER;
    }
    int code = SMI_OK;
    for (char *id = strtok_r(list, ",", &save); id != NULL && code == SMI_OK;
         id = strtok_r(NULL, ",", &save)) {
        nvmlDevice_t h;
        unsigned int is_mig = 0;
        rc = select_one(id, count, &h);
        if (rc == NVML_SUCCESS && nvmlDeviceIsMigDeviceHandle(h, &is_mig) == NVML_SUCCESS && is_mig &&
            !allow_mig) {
            fprintf(stderr, "%s is a MIG device: give its GPU's id (nvidia-smi -L lists them)\n", id);
            code = SMI_EXIT_ARGUMENT;
        } else if (rc == NVML_ERROR_NOT_FOUND) {
            printf("No devices were found (-i %s)\n", id);
            code = SMI_EXIT_NOT_FOUND;
        } else if (rc == NVML_ERROR_INVALID_ARGUMENT) {
            fprintf(stderr, "Invalid device id: %s (an index, a UUID or a PCI bus id)\n", id);
            code = SMI_EXIT_ARGUMENT;
        } else if (rc != NVML_SUCCESS) {
            fprintf(stderr, "Unable to find device %s: %s\n", id, nvmlErrorString(rc));
            code = smi_exit_code(rc);
        } else if (out->n == SMI_MAX_DEVICES) {
            fprintf(stderr, "too many device ids\n");
            code = SMI_EXIT_ARGUMENT;
        } else {
            out->handle[out->n++] = h;
        }
    }
    free(list);
    if (code == SMI_OK && out->n == 0) {
        fprintf(stderr, "Invalid device id: %s\n", ids);
        code = SMI_EXIT_ARGUMENT;
    }
    return code;
}
