/*
 * probe drives the NVML shim through its C ABI, the way C clients (and
 * go-nvml's cgo calls) do, for the Go tests in emulator/nvml. It is compiled
 * against go-nvml's nvml.h, so every call uses NVML's real prototypes and
 * struct layouts.
 *
 *   probe LIB abi          run the fixed sequence of ABI checks below
 *   probe LIB count        nvmlInit and nvmlDeviceGetCount only
 *   probe LIB stubs NAME…  call each named stub (they take no arguments)
 *
 * Each step prints one line "<step> rc=<nvmlReturn_t>[ <value>]" on stdout;
 * the Go test compares the lines with its expectations. The probe itself
 * asserts nothing, except that buffers beyond the length it passes stay
 * untouched ("canary=intact").
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nvml.h>

static void *lib;

static void *sym(const char *name) {
    void *p = dlsym(lib, name);
    if (p == NULL) {
        fprintf(stderr, "probe: dlsym %s: %s\n", name, dlerror());
        exit(2);
    }
    return p;
}

#define FN(name) ((__typeof__(&name))sym(#name))

static void out(const char *step, nvmlReturn_t rc, const char *value) {
    printf("%s rc=%d%s%s\n", step, (int)rc, value ? " " : "", value ? value : "");
}

static void out_uint(const char *step, nvmlReturn_t rc, unsigned long long v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", v);
    out(step, rc, rc == NVML_SUCCESS ? buf : NULL);
}

/* canary_intact reports whether buf[from..128) still holds the 'Z' bytes the
 * caller filled it with before a call allowed to write only buf[0..from). */
static int canary_intact(const char *buf, size_t from) {
    for (size_t i = from; i < 128; i++) {
        if (buf[i] != 'Z') {
            return 0;
        }
    }
    return 1;
}

static void string_steps(const char *step, nvmlReturn_t (*get)(nvmlDevice_t, char *, unsigned int),
                         nvmlDevice_t d) {
    char buf[128], name[96];
    memset(buf, 'Z', sizeof buf);
    nvmlReturn_t rc = get(d, buf, 96);
    size_t n = rc == NVML_SUCCESS ? strlen(buf) : 0;
    snprintf(name, sizeof name, "%s", step);
    out(name, rc, rc == NVML_SUCCESS ? buf : NULL);

    memset(buf, 'Z', sizeof buf);
    snprintf(name, sizeof name, "%s.exact", step);
    rc = get(d, buf, (unsigned int)n + 1);
    out(name, rc, canary_intact(buf, n + 1) ? "canary=intact" : "canary=broken");

    memset(buf, 'Z', sizeof buf);
    snprintf(name, sizeof name, "%s.short", step);
    rc = get(d, buf, (unsigned int)n);
    out(name, rc, canary_intact(buf, 0) ? "canary=intact" : "canary=broken");

    snprintf(name, sizeof name, "%s.zero", step);
    out(name, get(d, buf, 0), NULL);
    snprintf(name, sizeof name, "%s.nullbuf", step);
    out(name, get(d, NULL, 96), NULL);
}

static void system_string_steps(const char *step, nvmlReturn_t (*get)(char *, unsigned int)) {
    char buf[128], name[96];
    memset(buf, 'Z', sizeof buf);
    nvmlReturn_t rc = get(buf, 80);
    size_t n = rc == NVML_SUCCESS ? strlen(buf) : 0;
    out(step, rc, rc == NVML_SUCCESS ? buf : NULL);
    memset(buf, 'Z', sizeof buf);
    snprintf(name, sizeof name, "%s.short", step);
    rc = get(buf, (unsigned int)n);
    out(name, rc, canary_intact(buf, 0) ? "canary=intact" : "canary=broken");
    snprintf(name, sizeof name, "%s.nullbuf", step);
    out(name, get(NULL, 80), NULL);
}

static void index_of(const char *step, nvmlReturn_t rc, nvmlDevice_t d) {
    unsigned int i = 0;
    if (rc == NVML_SUCCESS && FN(nvmlDeviceGetIndex)(d, &i) != NVML_SUCCESS) {
        rc = NVML_ERROR_UNKNOWN;
    }
    out_uint(step, rc, i);
}

static int abi(void) {
    unsigned int count = 0, u = 0;
    int i1 = 0;
    char buf[128];
    nvmlDevice_t d0, d1, bad;

    /* Before nvmlInit. */
    out("preinit.count", FN(nvmlDeviceGetCount_v2)(&count), NULL);
    out("preinit.handle", FN(nvmlDeviceGetHandleByIndex_v2)(0, &d0), NULL);
    out("preinit.shutdown", FN(nvmlShutdown)(), NULL);
    out("preinit.driverversion", FN(nvmlSystemGetDriverVersion)(buf, sizeof buf), NULL);
    nvmlReturn_t rc = FN(nvmlSystemGetNVMLVersion)(buf, sizeof buf);
    out("preinit.nvmlversion", rc, rc == NVML_SUCCESS ? buf : NULL);
    rc = FN(nvmlSystemGetCudaDriverVersion_v2)(&i1);
    out_uint("preinit.cudaversion", rc, (unsigned long long)i1);
    nvmlEventSet_t set;
    out("preinit.eventset", FN(nvmlEventSetCreate)(&set), NULL);

    /* Reference counting. */
    out("init", FN(nvmlInit_v2)(), NULL);
    out("init.flags", FN(nvmlInitWithFlags)(1), NULL);
    out("init.v1", FN(nvmlInit)(), NULL);
    out("shutdown.1", FN(nvmlShutdown)(), NULL);
    out("shutdown.2", FN(nvmlShutdown)(), NULL);

    rc = FN(nvmlDeviceGetCount_v2)(&count);
    out_uint("count", rc, count);
    rc = FN(nvmlDeviceGetCount)(&u);
    out_uint("count.v1", rc, u);
    out("count.null", FN(nvmlDeviceGetCount_v2)(NULL), NULL);
    out("handle.oob", FN(nvmlDeviceGetHandleByIndex_v2)(count, &d0), NULL);
    out("handle.huge", FN(nvmlDeviceGetHandleByIndex_v2)(0xffffffffu, &d0), NULL);
    out("handle.null", FN(nvmlDeviceGetHandleByIndex_v2)(0, NULL), NULL);
    if (count < 2) {
        fprintf(stderr, "probe: abi needs at least 2 GPUs, have %u\n", count);
        return 2;
    }
    out("handle.0", FN(nvmlDeviceGetHandleByIndex_v2)(0, &d0), NULL);
    out("handle.1", FN(nvmlDeviceGetHandleByIndex)(1, &d1), NULL);
    out("handle.nonnull", d0.handle != NULL && d1.handle != NULL ? NVML_SUCCESS : NVML_ERROR_UNKNOWN,
        NULL);

    /* Strings. */
    string_steps("name", FN(nvmlDeviceGetName), d0);
    string_steps("uuid", FN(nvmlDeviceGetUUID), d0);
    system_string_steps("driverversion", FN(nvmlSystemGetDriverVersion));
    system_string_steps("nvmlversion", FN(nvmlSystemGetNVMLVersion));

    /* Handles that are not a visible GPU's. */
    size_t stride = (size_t)((char *)d1.handle - (char *)d0.handle);
    bad.handle = NULL;
    out("badhandle.null", FN(nvmlDeviceGetName)(bad, buf, sizeof buf), NULL);
    bad.handle = (struct nvmlDevice_st *)((char *)d0.handle + 1);
    out("badhandle.misaligned", FN(nvmlDeviceGetName)(bad, buf, sizeof buf), NULL);
    bad.handle = (struct nvmlDevice_st *)((char *)d0.handle + stride * count);
    out("badhandle.past", FN(nvmlDeviceGetMinorNumber)(bad, &u), NULL);
    bad.handle = (struct nvmlDevice_st *)((char *)d0.handle - stride);
    out("badhandle.before", FN(nvmlDeviceGetMinorNumber)(bad, &u), NULL);
    bad.handle = (struct nvmlDevice_st *)&count;
    out("badhandle.foreign", FN(nvmlDeviceGetUUID)(bad, buf, sizeof buf), NULL);

    /* NULL outputs. */
    out("minor.null", FN(nvmlDeviceGetMinorNumber)(d0, NULL), NULL);
    out("index.null", FN(nvmlDeviceGetIndex)(d0, NULL), NULL);
    out("memory.null", FN(nvmlDeviceGetMemoryInfo)(d0, NULL), NULL);
    out("memory_v2.null", FN(nvmlDeviceGetMemoryInfo_v2)(d0, NULL), NULL);
    out("pci.null", FN(nvmlDeviceGetPciInfo_v3)(d0, NULL), NULL);
    out("pci.v1.null", FN(nvmlDeviceGetPciInfo)(d0, NULL), NULL);
    out("arch.null", FN(nvmlDeviceGetArchitecture)(d0, NULL), NULL);
    out("brand.null", FN(nvmlDeviceGetBrand)(d0, NULL), NULL);
    out("cc.null", FN(nvmlDeviceGetCudaComputeCapability)(d0, &i1, NULL), NULL);
    out("mig.null", FN(nvmlDeviceGetMigMode)(d0, &u, NULL), NULL);
    out("maxmig.null", FN(nvmlDeviceGetMaxMigDeviceCount)(d0, NULL), NULL);
    out("ismig.null", FN(nvmlDeviceIsMigDeviceHandle)(d0, NULL), NULL);
    out("numa.null", FN(nvmlDeviceGetNumaNodeId)(d0, NULL), NULL);
    out("persistence.null", FN(nvmlDeviceGetPersistenceMode)(d0, NULL), NULL);
    out("virtualization.null", FN(nvmlDeviceGetVirtualizationMode)(d0, NULL), NULL);
    out("cuda.null", FN(nvmlSystemGetCudaDriverVersion)(NULL), NULL);
    out("addressing.null", FN(nvmlDeviceGetAddressingMode)(d0, NULL), NULL);
    out("bustype.null", FN(nvmlDeviceGetBusType)(d0, NULL), NULL);
    out("computemode.null", FN(nvmlDeviceGetComputeMode)(d0, NULL), NULL);
    out("events.supported.null", FN(nvmlDeviceGetSupportedEventTypes)(d0, NULL), NULL);
    out("processes.null", FN(nvmlDeviceGetComputeRunningProcesses_v3)(d0, NULL, NULL), NULL);
    u = 1;
    out("processes.nullinfos", FN(nvmlDeviceGetComputeRunningProcesses_v3)(d0, &u, NULL), NULL);

    /* Versioned and legacy structs. */
    nvmlMemory_v2_t m2;
    memset(&m2, 0, sizeof m2);
    m2.version = 1u << 24 | (unsigned int)sizeof(nvmlMemory_t);
    out("memory_v2.badversion", FN(nvmlDeviceGetMemoryInfo_v2)(d0, &m2), NULL);
    m2.version = nvmlMemory_v2;
    rc = FN(nvmlDeviceGetMemoryInfo_v2)(d0, &m2);
    snprintf(buf, sizeof buf, "version=%#x total=%llu reserved=%llu free=%llu used=%llu", m2.version,
             m2.total, m2.reserved, m2.free, m2.used);
    out("memory_v2", rc, buf);

    /* NVLink, fabric and topology: NULL outputs and a wrong version word
     * before anything else (d0 has no NVLink records). */
    out("nvlink.state.null", FN(nvmlDeviceGetNvLinkState)(d0, 0, NULL), NULL);
    out("nvlink.remotepci.null", FN(nvmlDeviceGetNvLinkRemotePciInfo_v2)(d0, 0, NULL), NULL);
    out("nvlink.state.nolink", FN(nvmlDeviceGetNvLinkState)(d0, 0, (nvmlEnableState_t *)&u), NULL);
    out("fabricv.null", FN(nvmlDeviceGetGpuFabricInfoV)(d0, NULL), NULL);
    nvmlGpuFabricInfoV_t fi;
    memset(&fi, 0, sizeof fi);
    fi.version = 4u << 24 | (unsigned int)sizeof fi;
    out("fabricv.badversion", FN(nvmlDeviceGetGpuFabricInfoV)(d0, &fi), NULL);
    fi.version = nvmlGpuFabricInfo_v3;
    out("fabricv.none", FN(nvmlDeviceGetGpuFabricInfoV)(d0, &fi), NULL);
    out("ancestor.null", FN(nvmlDeviceGetTopologyCommonAncestor)(d0, d1, NULL), NULL);
    out("p2p.null", FN(nvmlDeviceGetP2PStatus)(d0, d1, NVML_P2P_CAPS_INDEX_READ, NULL), NULL);

    nvmlPciInfo_t pci;
    memset(&pci, 0x5a, sizeof pci);
    rc = FN(nvmlDeviceGetPciInfo)(d0, &pci);
    int tail = 1;
    for (size_t i = 0; i < sizeof pci.busId; i++) {
        tail &= pci.busId[i] == 0x5a;
    }
    snprintf(buf, sizeof buf, "legacy=%.16s domain=%u bus=%u device=%u tail=%s", pci.busIdLegacy,
             pci.domain, pci.bus, pci.device, tail ? "intact" : "written");
    out("pci.v1", rc, buf);
    memset(&pci, 0x5a, sizeof pci);
    rc = FN(nvmlDeviceGetPciInfo_v2)(d0, &pci);
    snprintf(buf, sizeof buf, "busId=%.32s legacy=%.16s", pci.busId, pci.busIdLegacy);
    out("pci.v2", rc, buf);

    nvmlDeviceAddressingMode_t am;
    memset(&am, 0, sizeof am);
    am.version = 2u << 24 | (unsigned int)sizeof am;
    out("addressing.badversion", FN(nvmlDeviceGetAddressingMode)(d0, &am), NULL);
    am.version = nvmlDeviceAddressingMode_v1;
    rc = FN(nvmlDeviceGetAddressingMode)(d0, &am);
    out_uint("addressing", rc, am.value);

    /* Process lists: empty, and infos untouched. */
    u = 0;
    rc = FN(nvmlDeviceGetComputeRunningProcesses_v3)(d0, &u, NULL);
    out_uint("processes.count", rc, u);
    nvmlProcessInfo_t infos[4];
    memset(infos, 0x5a, sizeof infos);
    u = 4;
    rc = FN(nvmlDeviceGetMPSComputeRunningProcesses_v3)(d0, &u, infos);
    int intact = 1;
    for (size_t i = 0; i < sizeof infos; i++) {
        intact &= ((unsigned char *)infos)[i] == 0x5a;
    }
    snprintf(buf, sizeof buf, "count=%u infos=%s", u, intact ? "intact" : "written");
    out("processes.mps", rc, buf);
    nvmlProcessInfo_v1_t v1infos[2];
    u = 2;
    rc = FN(nvmlDeviceGetGraphicsRunningProcesses)(d0, &u, v1infos);
    out_uint("processes.graphics.v1", rc, u);

    /* Event sets. */
    nvmlEventData_t ev;
    unsigned long long types = 0;
    out("eventset.create.null", FN(nvmlEventSetCreate)(NULL), NULL);
    out("eventset.create", FN(nvmlEventSetCreate)(&set), NULL);
    rc = FN(nvmlDeviceGetSupportedEventTypes)(d0, &types);
    out_uint("events.supported", rc, types);
    out("events.register",
        FN(nvmlDeviceRegisterEvents)(d0, nvmlEventTypeXidCriticalError | nvmlEventTypeDoubleBitEccError, set),
        NULL);
    out("events.register.unsupported",
        FN(nvmlDeviceRegisterEvents)(d0, nvmlEventTypePowerSourceChange, set), NULL);
    bad.handle = NULL;
    out("events.register.baddevice", FN(nvmlDeviceRegisterEvents)(bad, nvmlEventTypeClock, set), NULL);
    nvmlEventSet_t badset;
    badset.handle = (struct nvmlEventSet_st *)&count;
    out("events.register.badset", FN(nvmlDeviceRegisterEvents)(d0, nvmlEventTypeClock, badset), NULL);
    out("events.wait.nulldata", FN(nvmlEventSetWait_v2)(set, NULL, 0), NULL);
    out("events.wait", FN(nvmlEventSetWait_v2)(set, &ev, 1), NULL);
    out("events.wait.v1", FN(nvmlEventSetWait)(set, &ev, 0), NULL);
    out("eventset.free", FN(nvmlEventSetFree)(set), NULL);
    out("eventset.free.again", FN(nvmlEventSetFree)(set), NULL);
    out("events.wait.freed", FN(nvmlEventSetWait_v2)(set, &ev, 0), NULL);

    /* Lookups. */
    char uuid[96];
    FN(nvmlDeviceGetUUID)(d1, uuid, sizeof uuid);
    out("uuidlookup.null", FN(nvmlDeviceGetHandleByUUID)(NULL, &bad), NULL);
    out("uuidlookup.nulldev", FN(nvmlDeviceGetHandleByUUID)(uuid, NULL), NULL);
    out("uuidlookup.malformed", FN(nvmlDeviceGetHandleByUUID)("GPU-1234", &bad), NULL);
    out("uuidlookup.unknown",
        FN(nvmlDeviceGetHandleByUUID)("GPU-00000000-0000-0000-0000-000000000000", &bad), NULL);
    out("uuidlookup.mig",
        FN(nvmlDeviceGetHandleByUUID)("MIG-00000000-0000-0000-0000-000000000000", &bad), NULL);
    for (char *c = uuid + 4; *c; c++) {
        if (*c >= 'a' && *c <= 'f') {
            *c = (char)(*c - 'a' + 'A');
        }
    }
    rc = FN(nvmlDeviceGetHandleByUUID)(uuid, &bad);
    index_of("uuidlookup.upper", rc, bad);

    FN(nvmlDeviceGetPciInfo_v3)(d1, &pci);
    char shortform[32], nofunc[32];
    snprintf(shortform, sizeof shortform, "%x:%x.%x", pci.bus, pci.device, 0u);
    snprintf(nofunc, sizeof nofunc, "%x:%x:%x", pci.domain, pci.bus, pci.device);
    rc = FN(nvmlDeviceGetHandleByPciBusId_v2)(pci.busIdLegacy, &bad);
    index_of("buslookup.legacy", rc, bad);
    rc = FN(nvmlDeviceGetHandleByPciBusId)(shortform, &bad);
    index_of("buslookup.bus-device-function", rc, bad);
    rc = FN(nvmlDeviceGetHandleByPciBusId_v2)(nofunc, &bad);
    index_of("buslookup.domain-bus-device", rc, bad);
    out("buslookup.null", FN(nvmlDeviceGetHandleByPciBusId_v2)(NULL, &bad), NULL);
    out("buslookup.nulldev", FN(nvmlDeviceGetHandleByPciBusId_v2)(pci.busId, NULL), NULL);
    out("buslookup.malformed", FN(nvmlDeviceGetHandleByPciBusId_v2)("zz:00.0", &bad), NULL);
    out("buslookup.trailing", FN(nvmlDeviceGetHandleByPciBusId_v2)("0:1b:00.0x", &bad), NULL);
    out("buslookup.toolong",
        FN(nvmlDeviceGetHandleByPciBusId_v2)("0000000000000000000000000000:1b:00.0", &bad), NULL);
    out("buslookup.unknown", FN(nvmlDeviceGetHandleByPciBusId_v2)("0000:FE:1F.7", &bad), NULL);

    /* Error strings. */
    static const int codes[] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,  12,   13, 14, 15,
                                16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
                                999, 1000, -1};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        char step[32];
        snprintf(step, sizeof step, "errorstring.%d", codes[i]);
        out(step, NVML_SUCCESS, FN(nvmlErrorString)((nvmlReturn_t)codes[i]));
    }

    /* Shutdown invalidates handles; the next nvmlInit reloads. */
    out("shutdown", FN(nvmlShutdown)(), NULL);
    out("shutdown.extra", FN(nvmlShutdown)(), NULL);
    out("post.count", FN(nvmlDeviceGetCount_v2)(&count), NULL);
    out("post.name", FN(nvmlDeviceGetName)(d0, buf, sizeof buf), NULL);
    out("post.uuidlookup", FN(nvmlDeviceGetHandleByUUID)(uuid, &bad), NULL);
    out("reinit", FN(nvmlInit_v2)(), NULL);
    rc = FN(nvmlDeviceGetName)(d0, buf, sizeof buf);
    out("reinit.name", rc, rc == NVML_SUCCESS ? buf : NULL);
    out("reinit.shutdown", FN(nvmlShutdown)(), NULL);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: probe LIB abi|count|stubs [NAME...]\n");
        return 2;
    }
    lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        fprintf(stderr, "probe: dlopen: %s\n", dlerror());
        return 2;
    }
    if (strcmp(argv[2], "abi") == 0) {
        return abi();
    }
    nvmlReturn_t rc = FN(nvmlInit_v2)();
    out("init", rc, NULL);
    if (strcmp(argv[2], "count") == 0) {
        unsigned int count = 0;
        if (rc == NVML_SUCCESS) {
            rc = FN(nvmlDeviceGetCount_v2)(&count);
            out_uint("count", rc, count);
        }
        return 0;
    }
    if (strcmp(argv[2], "stubs") == 0) {
        for (int i = 3; i < argc; i++) {
            int (*stub)(void) = (int (*)(void))sym(argv[i]);
            out(argv[i], (nvmlReturn_t)stub(), NULL);
        }
        return 0;
    }
    fprintf(stderr, "probe: unknown mode %s\n", argv[2]);
    return 2;
}
