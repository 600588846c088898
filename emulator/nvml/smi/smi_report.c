/*
 * Reports: -L (GPUs and MIG devices with UUIDs), the default table and
 * --query-gpu. Every value comes from an NVML call; what NVML does not
 * support on the emulated node (temperatures, power, utilisation, ECC, the
 * display) shows as N/A, as nvidia-smi shows it on hardware without it.
 */
#define _GNU_SOURCE

#include <stdlib.h>
#include <string.h>

#include "smi.h"

#define NAME_SIZE 96 /* NVML_DEVICE_NAME_V2_BUFFER_SIZE */
#define UUID_SIZE 96 /* NVML_DEVICE_UUID_V2_BUFFER_SIZE */

static int fail(const char *what, nvmlReturn_t rc) {
    fprintf(stderr, "Unable to read %s: %s\n", what, nvmlErrorString(rc));
    return smi_exit_code(rc);
}

/* mig_enabled reports whether d's current MIG mode is enabled (0 for a GPU
 * that is not MIG capable). */
static int mig_enabled(nvmlDevice_t d) {
    unsigned int cur = 0, pending = 0;
    return nvmlDeviceGetMigMode(d, &cur, &pending) == NVML_SUCCESS && cur == NVML_DEVICE_MIG_ENABLE;
}

/* list_migs prints d's MIG devices as nvidia-smi -L does: the profile is the
 * MIG device's name without its GPU's name and " MIG ". */
static int list_migs(nvmlDevice_t d, const char *gpu_name) {
    unsigned int max = 0, k = 0;
    nvmlReturn_t rc = nvmlDeviceGetMaxMigDeviceCount(d, &max);
    if (rc != NVML_SUCCESS) {
        return fail("the MIG device count", rc);
    }
    size_t gl = strlen(gpu_name);
    for (unsigned int i = 0; i < max; i++) {
        nvmlDevice_t m;
        char name[NAME_SIZE], uuid[UUID_SIZE];
        rc = nvmlDeviceGetMigDeviceHandleByIndex(d, i, &m);
        if (rc == NVML_ERROR_NOT_FOUND) {
            continue;
        }
        if (rc == NVML_SUCCESS) {
            rc = nvmlDeviceGetName(m, name, sizeof name);
        }
        if (rc == NVML_SUCCESS) {
            rc = nvmlDeviceGetUUID(m, uuid, sizeof uuid);
        }
        if (rc != NVML_SUCCESS) {
            return fail("a MIG device", rc);
        }
        const char *profile = name;
        if (strncmp(name, gpu_name, gl) == 0 && strncmp(name + gl, " MIG ", 5) == 0) {
            profile = name + gl + 5;
        }
        printf("  MIG %-11s Device %2u: (UUID: %s)\n", profile, k++, uuid);
    }
    return SMI_OK;
}

int smi_list(const struct smi_devices *devs) {
    for (unsigned int i = 0; i < devs->n; i++) {
        nvmlDevice_t d = devs->handle[i];
        unsigned int index = 0;
        char name[NAME_SIZE], uuid[UUID_SIZE];
        nvmlReturn_t rc = nvmlDeviceGetIndex(d, &index);
        if (rc == NVML_SUCCESS) {
            rc = nvmlDeviceGetName(d, name, sizeof name);
        }
        if (rc == NVML_SUCCESS) {
            rc = nvmlDeviceGetUUID(d, uuid, sizeof uuid);
        }
        if (rc != NVML_SUCCESS) {
            return fail("a GPU", rc);
        }
        printf("GPU %u: %s (UUID: %s)\n", index, name, uuid);
        if (mig_enabled(d)) {
            int code = list_migs(d, name);
            if (code != SMI_OK) {
                return code;
            }
        }
    }
    return SMI_OK;
}

/* ---- the table ---- */

#define WIDTH 89 /* between the outer bars */

/* rule prints a horizontal line; mid, when set, marks the column borders. */
static void rule(char start, char fill, char mid, char end) {
    putchar(start);
    for (int i = 0; i < WIDTH; i++) {
        putchar(mid != 0 && (i == 41 || i == 66) ? mid : fill);
    }
    putchar(end);
    putchar('\n');
}

/* cell prints left (cut to fit) and right aligned in a cell of width w,
 * its one-space margins included. */
static void cell(const char *left, const char *right, int w) {
    int inner = w - 2, rl = (int)strlen(right), ll = (int)strlen(left);
    int room = inner - rl - (ll > 0 && rl > 0 ? 1 : 0);
    if (ll > room) {
        ll = room > 0 ? room : 0;
    }
    printf(" %.*s%*s ", ll, left, inner - ll, right);
}

static void row(const char *a, const char *ar, const char *b, const char *br, const char *c, const char *cr) {
    putchar('|');
    cell(a, ar, 41);
    putchar('|');
    cell(b, br, 24);
    putchar('|');
    cell(c, cr, 22);
    puts("|");
}

static void wide(const char *text) { printf("| %-*s |\n", WIDTH - 2, text); }

static const char *enabled(nvmlReturn_t rc, unsigned int v, const char *on, const char *off) {
    return rc != NVML_SUCCESS ? "N/A" : v ? on : off;
}

static int table_gpu(nvmlDevice_t d) {
    unsigned int index = 0, mig = 0, pending = 0;
    char name[NAME_SIZE], bus[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE], left[160], mem[64];
    nvmlReturn_t rc = nvmlDeviceGetIndex(d, &index);
    if (rc == NVML_SUCCESS) {
        rc = nvmlDeviceGetName(d, name, sizeof name);
    }
    if (rc != NVML_SUCCESS) {
        return fail("a GPU", rc);
    }
    smi_bus_id(d, bus);
    nvmlEnableState_t pm = NVML_FEATURE_DISABLED;
    nvmlReturn_t pmrc = nvmlDeviceGetPersistenceMode(d, &pm);
    nvmlComputeMode_t cm = NVML_COMPUTEMODE_DEFAULT;
    nvmlReturn_t cmrc = nvmlDeviceGetComputeMode(d, &cm);
    nvmlReturn_t migrc = nvmlDeviceGetMigMode(d, &mig, &pending);
    nvmlMemory_v2_t m;
    memset(&m, 0, sizeof m);
    m.version = nvmlMemory_v2;
    if (nvmlDeviceGetMemoryInfo_v2(d, &m) == NVML_SUCCESS) {
        snprintf(mem, sizeof mem, "%lluMiB / %lluMiB", m.used >> 20, m.total >> 20);
    } else {
        strcpy(mem, "N/A");
    }
    snprintf(left, sizeof left, "%3u  %s", index, name);
    row(left, enabled(pmrc, pm == NVML_FEATURE_ENABLED, "On", "Off"), "", strcat(bus, "  N/A"), "", "N/A");
    row("N/A   N/A  N/A", "N/A /  N/A", "", mem, "N/A",
        cmrc == NVML_SUCCESS ? smi_compute_mode_name((int)cm) : "N/A");
    row("", "", "", "", "", enabled(migrc, mig == NVML_DEVICE_MIG_ENABLE, "Enabled", "Disabled"));
    rule('+', '-', '+', '+');
    return SMI_OK;
}

int smi_table(const struct smi_devices *devs) {
    char driver[80], head[256];
    int cuda = 0;
    nvmlReturn_t rc = nvmlSystemGetDriverVersion(driver, sizeof driver);
    if (rc == NVML_SUCCESS) {
        rc = nvmlSystemGetCudaDriverVersion(&cuda);
    }
    if (rc != NVML_SUCCESS) {
        return fail("the driver version", rc);
    }
    rule('+', '-', 0, '+');
    snprintf(head, sizeof head, "NVIDIA-SMI %-22s Driver Version: %-14s CUDA Version: %d.%d", driver, driver,
             cuda / 1000, cuda % 1000 / 10);
    wide(head);
    rule('|', '-', '+', '+');
    row("GPU  Name", "Persistence-M", "Bus-Id", "Disp.A", "Volatile Uncorr. ECC", "");
    row("Fan  Temp   Perf", "Pwr:Usage/Cap", "", "Memory-Usage", "GPU-Util", "Compute M.");
    row("", "", "", "", "", "MIG M.");
    rule('|', '=', '+', '|');
    unsigned int procs = 0;
    for (unsigned int i = 0; i < devs->n; i++) {
        int code = table_gpu(devs->handle[i]);
        if (code != SMI_OK) {
            return code;
        }
        unsigned int n = 0;
        if (nvmlDeviceGetComputeRunningProcesses_v3(devs->handle[i], &n, NULL) != NVML_SUCCESS || n > 0) {
            procs++;
        }
    }
    putchar('\n');
    rule('+', '-', 0, '+');
    wide("Processes:");
    wide(" GPU   GI   CI              PID   Type   Process name                        GPU Memory");
    wide("       ID   ID                                                               Usage");
    rule('|', '=', 0, '|');
    wide(procs == 0 ? " No running processes found" : " (processes are not listed by the drakit emulator)");
    rule('+', '-', 0, '+');
    return SMI_OK;
}

/* ---- --query-gpu ---- */

struct ctx {
    nvmlDevice_t d;
    unsigned int count;
    char *buf;
    size_t n;
};

static nvmlReturn_t mem(struct ctx *c, int which) {
    nvmlMemory_v2_t m;
    memset(&m, 0, sizeof m);
    m.version = nvmlMemory_v2;
    nvmlReturn_t rc = nvmlDeviceGetMemoryInfo_v2(c->d, &m);
    unsigned long long v[] = {m.total, m.reserved, m.used, m.free};
    if (rc == NVML_SUCCESS) {
        snprintf(c->buf, c->n, "%llu", v[which] >> 20);
    }
    return rc;
}

static nvmlReturn_t q_index(struct ctx *c) {
    unsigned int i = 0;
    nvmlReturn_t rc = nvmlDeviceGetIndex(c->d, &i);
    snprintf(c->buf, c->n, "%u", i);
    return rc;
}
static nvmlReturn_t q_count(struct ctx *c) {
    snprintf(c->buf, c->n, "%u", c->count);
    return NVML_SUCCESS;
}
static nvmlReturn_t q_name(struct ctx *c) { return nvmlDeviceGetName(c->d, c->buf, (unsigned int)c->n); }
static nvmlReturn_t q_uuid(struct ctx *c) { return nvmlDeviceGetUUID(c->d, c->buf, (unsigned int)c->n); }
static nvmlReturn_t q_pci(struct ctx *c, int which) {
    nvmlPciInfo_t p;
    memset(&p, 0, sizeof p);
    nvmlReturn_t rc = nvmlDeviceGetPciInfo_v3(c->d, &p);
    if (rc == NVML_SUCCESS && which == 0) {
        snprintf(c->buf, c->n, "%.*s", NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE, p.busId);
    } else if (rc == NVML_SUCCESS) {
        snprintf(c->buf, c->n, "0x%08X", which == 1 ? p.pciDeviceId : p.pciSubSystemId);
    }
    return rc;
}
static nvmlReturn_t q_bus_id(struct ctx *c) { return q_pci(c, 0); }
static nvmlReturn_t q_device_id(struct ctx *c) { return q_pci(c, 1); }
static nvmlReturn_t q_sub_device_id(struct ctx *c) { return q_pci(c, 2); }
static nvmlReturn_t q_driver(struct ctx *c) { return nvmlSystemGetDriverVersion(c->buf, (unsigned int)c->n); }
static nvmlReturn_t q_mem_total(struct ctx *c) { return mem(c, 0); }
static nvmlReturn_t q_mem_reserved(struct ctx *c) { return mem(c, 1); }
static nvmlReturn_t q_mem_used(struct ctx *c) { return mem(c, 2); }
static nvmlReturn_t q_mem_free(struct ctx *c) { return mem(c, 3); }
static nvmlReturn_t q_compute_cap(struct ctx *c) {
    int major = 0, minor = 0;
    nvmlReturn_t rc = nvmlDeviceGetCudaComputeCapability(c->d, &major, &minor);
    snprintf(c->buf, c->n, "%d.%d", major, minor);
    return rc;
}
static nvmlReturn_t q_compute_mode(struct ctx *c) {
    nvmlComputeMode_t m = NVML_COMPUTEMODE_DEFAULT;
    nvmlReturn_t rc = nvmlDeviceGetComputeMode(c->d, &m);
    snprintf(c->buf, c->n, "%s", smi_compute_mode_name((int)m));
    return rc;
}
static nvmlReturn_t q_persistence(struct ctx *c) {
    nvmlEnableState_t m = NVML_FEATURE_DISABLED;
    nvmlReturn_t rc = nvmlDeviceGetPersistenceMode(c->d, &m);
    snprintf(c->buf, c->n, "%s", m == NVML_FEATURE_ENABLED ? "Enabled" : "Disabled");
    return rc;
}
static nvmlReturn_t q_mig(struct ctx *c, int pending) {
    unsigned int cur = 0, pend = 0;
    nvmlReturn_t rc = nvmlDeviceGetMigMode(c->d, &cur, &pend);
    snprintf(c->buf, c->n, "%s", (pending ? pend : cur) == NVML_DEVICE_MIG_ENABLE ? "Enabled" : "Disabled");
    return rc;
}
static nvmlReturn_t q_mig_current(struct ctx *c) { return q_mig(c, 0); }
static nvmlReturn_t q_mig_pending(struct ctx *c) { return q_mig(c, 1); }

static const struct field {
    const char *name, *alias, *unit;
    nvmlReturn_t (*value)(struct ctx *);
} fields[] = {
    {"index", NULL, NULL, q_index},
    {"count", NULL, NULL, q_count},
    {"name", "gpu_name", NULL, q_name},
    {"uuid", "gpu_uuid", NULL, q_uuid},
    {"pci.bus_id", "gpu_bus_id", NULL, q_bus_id},
    {"pci.device_id", NULL, NULL, q_device_id},
    {"pci.sub_device_id", NULL, NULL, q_sub_device_id},
    {"driver_version", NULL, NULL, q_driver},
    {"memory.total", NULL, "MiB", q_mem_total},
    {"memory.reserved", NULL, "MiB", q_mem_reserved},
    {"memory.used", NULL, "MiB", q_mem_used},
    {"memory.free", NULL, "MiB", q_mem_free},
    {"compute_cap", NULL, NULL, q_compute_cap},
    {"compute_mode", NULL, NULL, q_compute_mode},
    {"persistence_mode", NULL, NULL, q_persistence},
    {"mig.mode.current", NULL, NULL, q_mig_current},
    {"mig.mode.pending", NULL, NULL, q_mig_pending},
};
#define NFIELDS (sizeof fields / sizeof fields[0])
#define MAX_QUERY 64

static const struct field *lookup(const char *name) {
    for (size_t i = 0; i < NFIELDS; i++) {
        if (strcmp(name, fields[i].name) == 0 || (fields[i].alias != NULL && strcmp(name, fields[i].alias) == 0)) {
            return &fields[i];
        }
    }
    return NULL;
}

int smi_query(const struct smi_devices *devs, const char *query, const char *format) {
    int header = 1, units = 1, csv = 0;
    char fmt[128], q[1024], *save = NULL;
    snprintf(fmt, sizeof fmt, "%s", format);
    for (char *t = strtok_r(fmt, ", ", &save); t != NULL; t = strtok_r(NULL, ", ", &save)) {
        if (strcmp(t, "csv") == 0) {
            csv = 1;
        } else if (strcmp(t, "noheader") == 0) {
            header = 0;
        } else if (strcmp(t, "nounits") == 0) {
            units = 0;
        } else {
            fprintf(stderr, "Invalid format \"%s\": csv[,noheader][,nounits]\n", format);
            return SMI_EXIT_ARGUMENT;
        }
    }
    const struct field *sel[MAX_QUERY];
    size_t nsel = 0;
    if (snprintf(q, sizeof q, "%s", query) >= (int)sizeof q) {
        fprintf(stderr, "--query-gpu is too long\n");
        return SMI_EXIT_ARGUMENT;
    }
    for (char *t = strtok_r(q, ", ", &save); t != NULL; t = strtok_r(NULL, ", ", &save)) {
        const struct field *f = lookup(t);
        if (f == NULL || nsel == MAX_QUERY) {
            fprintf(stderr, "Field \"%s\" is not a valid field to query (nvidia-smi -h lists the emulated ones).\n", t);
            return SMI_EXIT_ARGUMENT;
        }
        sel[nsel++] = f;
    }
    if (!csv || nsel == 0) {
        fprintf(stderr, "--query-gpu needs fields and --format=csv\n");
        return SMI_EXIT_ARGUMENT;
    }
    unsigned int count = 0;
    nvmlReturn_t rc = nvmlDeviceGetCount_v2(&count);
    if (rc != NVML_SUCCESS) {
        return fail("the device count", rc);
    }
    if (header) {
        for (size_t i = 0; i < nsel; i++) {
            printf(i > 0 ? ", %s" : "%s", sel[i]->name);
            if (units && sel[i]->unit != NULL) {
                printf(" [%s]", sel[i]->unit);
            }
        }
        putchar('\n');
    }
    for (unsigned int k = 0; k < devs->n; k++) {
        for (size_t i = 0; i < nsel; i++) {
            char buf[128] = "";
            struct ctx c = {devs->handle[k], count, buf, sizeof buf};
            rc = sel[i]->value(&c);
            if (rc == NVML_ERROR_NOT_SUPPORTED) {
                strcpy(buf, "[N/A]");
            } else if (rc != NVML_SUCCESS) {
                strcpy(buf, "[Unknown Error]");
            } else if (units && sel[i]->unit != NULL) {
                strcat(strcat(buf, " "), sel[i]->unit);
            }
            printf(i > 0 ? ", %s" : "%s", buf);
        }
        putchar('\n');
    }
    return SMI_OK;
}
