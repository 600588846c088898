/*
 * Health queries, as GPU health checkers call them (NVIDIA's device plugin
 * and DRA driver, DCGM-style exporters): ECC counters and mode, retired
 * pages, remapped rows, clocks event (throttle) reasons, temperature and
 * field values, from the GPU's fault record (nvmlstate's fault.go; a GPU
 * without one is healthy). A MIG device answers with its GPU's values.
 * Every query on the handle of a GPU that fell off the bus answers
 * NVML_ERROR_GPU_IS_LOST (drakit_enter_any). Semantics as in shim.c.
 */
#define _GNU_SOURCE

#include <stdint.h>
#include <string.h>
#include <time.h>

#include "nvml_abi.h"
#include "shim.h"
#include "state.h"

/* enter_health locks and resolves a GPU or MIG device handle into its GPU's
 * fault state; the caller must call drakit_leave. */
static nvmlReturn_t enter_health(nvmlDevice_t device, struct drakit_fault *f) {
    const struct nvmlDevice_st *d;
    const struct drakit_ci *mig;
    nvmlReturn_t rc = drakit_enter_any(device, &d, &mig);
    if (rc == NVML_SUCCESS) {
        const struct drakit_fault *r = drakit_fault_of(&g_state, d->minor);
        if (r != NULL) {
            *f = *r;
        } else {
            memset(f, 0, sizeof *f);
            f->gpu = d->minor;
            f->temperature = DRAKIT_DEFAULT_TEMPERATURE;
        }
    }
    return rc;
}

/* ecc_count is the count of errorType (corrected = single-bit) of
 * counterType, or -1 for an argument NVML does not define. */
static long long ecc_count(const struct drakit_fault *f, int errorType, int counterType) {
    if (errorType < 0 || errorType >= NVML_MEMORY_ERROR_TYPE_COUNT || counterType < 0 ||
        counterType >= NVML_ECC_COUNTER_TYPE_COUNT) {
        return -1;
    }
    int sbe = errorType == NVML_MEMORY_ERROR_TYPE_CORRECTED;
    if (counterType == NVML_VOLATILE_ECC) {
        return (long long)(sbe ? f->sbe_volatile : f->dbe_volatile);
    }
    return (long long)(sbe ? f->sbe_aggregate : f->dbe_aggregate);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, nvmlMemoryErrorType_t errorType,
                                                     nvmlEccCounterType_t counterType,
                                                     unsigned long long *eccCounts) {
    struct drakit_fault f;
    nvmlReturn_t rc = enter_health(device, &f);
    long long n = ecc_count(&f, (int)errorType, (int)counterType);
    if (rc == NVML_SUCCESS && (eccCounts == NULL || n < 0)) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    } else if (rc == NVML_SUCCESS) {
        *eccCounts = (unsigned long long)n;
    }
    return drakit_leave(rc);
}

/* Every error is in device memory (DRAM); the other locations count 0. */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryErrorCounter(nvmlDevice_t device, nvmlMemoryErrorType_t errorType,
                                                         nvmlEccCounterType_t counterType,
                                                         nvmlMemoryLocation_t locationType,
                                                         unsigned long long *count) {
    struct drakit_fault f;
    nvmlReturn_t rc = enter_health(device, &f);
    long long n = ecc_count(&f, (int)errorType, (int)counterType);
    if (rc == NVML_SUCCESS &&
        (count == NULL || n < 0 || (int)locationType < 0 || locationType >= NVML_MEMORY_LOCATION_COUNT)) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    } else if (rc == NVML_SUCCESS) {
        *count = locationType == NVML_MEMORY_LOCATION_DEVICE_MEMORY ? (unsigned long long)n : 0;
    }
    return drakit_leave(rc);
}

/* ECC is on, as on every data-centre GPU by default. */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, nvmlEnableState_t *current,
                                              nvmlEnableState_t *pending) {
    struct drakit_fault f;
    nvmlReturn_t rc = enter_health(device, &f);
    if (rc == NVML_SUCCESS && (current == NULL || pending == NULL)) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    } else if (rc == NVML_SUCCESS) {
        *current = *pending = NVML_FEATURE_ENABLED;
    }
    return drakit_leave(rc);
}

/*
 * retired_pages answers the two-call protocol: *pageCount in is the room in
 * addresses (and timestamps), out the number of pages of cause. Page i of a
 * cause is at 0x100000000 · (cause + 1) + 0x1000 · i; timestamps are 0
 * (unknown).
 */
static nvmlReturn_t retired_pages(nvmlDevice_t device, nvmlPageRetirementCause_t cause,
                                  unsigned int *pageCount, unsigned long long *addresses,
                                  unsigned long long *timestamps) {
    struct drakit_fault f;
    nvmlReturn_t rc = enter_health(device, &f);
    if (rc != NVML_SUCCESS) {
        return drakit_leave(rc);
    }
    if (pageCount == NULL || (int)cause < 0 || cause >= NVML_PAGE_RETIREMENT_CAUSE_COUNT) {
        return drakit_leave(NVML_ERROR_INVALID_ARGUMENT);
    }
    int dbe = cause == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR;
    unsigned int n = (unsigned int)(dbe ? f.retired_dbe : f.retired_sbe), room = *pageCount;
    *pageCount = n;
    if (room < n) {
        return drakit_leave(NVML_ERROR_INSUFFICIENT_SIZE);
    }
    if (n > 0 && addresses == NULL) {
        return drakit_leave(NVML_ERROR_INVALID_ARGUMENT);
    }
    for (unsigned int i = 0; i < n; i++) {
        addresses[i] = 0x100000000ull * (unsigned long long)(dbe + 1) + 0x1000ull * i;
        if (timestamps != NULL) {
            timestamps[i] = 0;
        }
    }
    return drakit_leave(NVML_SUCCESS);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t device, nvmlPageRetirementCause_t cause,
                                                   unsigned int *pageCount, unsigned long long *addresses) {
    return retired_pages(device, cause, pageCount, addresses, NULL);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPages_v2(nvmlDevice_t device, nvmlPageRetirementCause_t cause,
                                                      unsigned int *pageCount, unsigned long long *addresses,
                                                      unsigned long long *timestamps) {
    return retired_pages(device, cause, pageCount, addresses, timestamps);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device,
                                                                nvmlEnableState_t *isPending) {
    struct drakit_fault f;
    nvmlReturn_t rc = enter_health(device, &f);
    if (rc == NVML_SUCCESS && isPending == NULL) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    } else if (rc == NVML_SUCCESS) {
        *isPending = f.retired_pending ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    }
    return drakit_leave(rc);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int *corrRows,
                                                   unsigned int *uncRows, unsigned int *isPending,
                                                   unsigned int *failureOccurred) {
    struct drakit_fault f;
    nvmlReturn_t rc = enter_health(device, &f);
    if (rc == NVML_SUCCESS &&
        (corrRows == NULL || uncRows == NULL || isPending == NULL || failureOccurred == NULL)) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    } else if (rc == NVML_SUCCESS) {
        *corrRows = (unsigned int)f.remapped_cor;
        *uncRows = (unsigned int)f.remapped_unc;
        *isPending = (unsigned int)f.remap_pending;
        *failureOccurred = (unsigned int)f.remap_failure;
    }
    return drakit_leave(rc);
}

static nvmlReturn_t clocks_event_reasons(nvmlDevice_t device, unsigned long long *reasons) {
    struct drakit_fault f;
    nvmlReturn_t rc = enter_health(device, &f);
    if (rc == NVML_SUCCESS && reasons == NULL) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    } else if (rc == NVML_SUCCESS) {
        *reasons = f.clocks_event_reasons;
    }
    return drakit_leave(rc);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                                unsigned long long *clocksEventReasons) {
    return clocks_event_reasons(device, clocksEventReasons);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device,
                                                                   unsigned long long *clocksThrottleReasons) {
    return clocks_event_reasons(device, clocksThrottleReasons);
}

/* Only the GPU die's sensor exists. */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
                                                  unsigned int *temp) {
    struct drakit_fault f;
    nvmlReturn_t rc = enter_health(device, &f);
    if (rc == NVML_SUCCESS && (temp == NULL || sensorType != NVML_TEMPERATURE_GPU)) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    } else if (rc == NVML_SUCCESS) {
        *temp = (unsigned int)f.temperature;
    }
    return drakit_leave(rc);
}

/* field_value fills v from f: ECC mode and counts, retired pages, remapped
 * rows and the recovery action; any other field id NOT_SUPPORTED. */
static void field_value(const struct drakit_fault *f, nvmlFieldValue_t *v) {
    unsigned long long u;
    v->valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
    v->nvmlReturn = NVML_SUCCESS;
    switch (v->fieldId) {
    case NVML_FI_DEV_ECC_CURRENT:
    case NVML_FI_DEV_ECC_PENDING:
        u = 1;
        break;
    case NVML_FI_DEV_ECC_SBE_VOL_TOTAL:
    case NVML_FI_DEV_ECC_SBE_VOL_DEV:
        u = f->sbe_volatile;
        break;
    case NVML_FI_DEV_ECC_DBE_VOL_TOTAL:
    case NVML_FI_DEV_ECC_DBE_VOL_DEV:
        u = f->dbe_volatile;
        break;
    case NVML_FI_DEV_ECC_SBE_AGG_TOTAL:
    case NVML_FI_DEV_ECC_SBE_AGG_DEV:
        u = f->sbe_aggregate;
        break;
    case NVML_FI_DEV_ECC_DBE_AGG_TOTAL:
    case NVML_FI_DEV_ECC_DBE_AGG_DEV:
        u = f->dbe_aggregate;
        break;
    case NVML_FI_DEV_RETIRED_SBE:
        u = (unsigned long long)f->retired_sbe;
        break;
    case NVML_FI_DEV_RETIRED_DBE:
        u = (unsigned long long)f->retired_dbe;
        break;
    case NVML_FI_DEV_RETIRED_PENDING:
        u = (unsigned long long)f->retired_pending;
        break;
    case NVML_FI_DEV_REMAPPED_COR:
        u = (unsigned long long)f->remapped_cor;
        break;
    case NVML_FI_DEV_REMAPPED_UNC:
        u = (unsigned long long)f->remapped_unc;
        break;
    case NVML_FI_DEV_REMAPPED_PENDING:
        u = (unsigned long long)f->remap_pending;
        break;
    case NVML_FI_DEV_REMAPPED_FAILURE:
        u = (unsigned long long)f->remap_failure;
        break;
    case NVML_FI_DEV_GET_GPU_RECOVERY_ACTION:
        v->valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
        v->value.uiVal = (unsigned int)f->recovery_action;
        return;
    default:
        v->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
        return;
    }
    v->value.ullVal = u;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount,
                                                  nvmlFieldValue_t *values) {
    struct drakit_fault f;
    nvmlReturn_t rc = enter_health(device, &f);
    if (rc == NVML_SUCCESS && (values == NULL || valuesCount < 0)) {
        rc = NVML_ERROR_INVALID_ARGUMENT;
    }
    if (rc == NVML_SUCCESS) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        for (int i = 0; i < valuesCount; i++) {
            values[i].timestamp = (long long)now.tv_sec * 1000000 + now.tv_nsec / 1000;
            values[i].latencyUsec = 0;
            field_value(&f, &values[i]);
        }
    }
    return drakit_leave(rc);
}
