/*
 * nvmlbench: times an NVML library (a libnvidia-ml.so.1, loaded with
 * dlopen) the way a DRA driver uses it; scripts/bench-nvml.sh runs it on
 * drakit's NVML shim and on a mock NVML in the same run.
 *
 *   nvmlbench LIB [ITERATIONS]
 *
 * prints one line per measurement, "name median_ns", where the median is
 * over ITERATIONS samples (default 2000):
 *
 *   init        dlopen and nvmlInit_v2 from scratch, in a fresh process
 *               (this program run again with NVMLBENCH_INIT=1), so the
 *               library's own start-up (a Go runtime, reading state) counts
 *   count       one nvmlDeviceGetCount_v2 (a sample is 100 calls, averaged)
 *   uuid        one nvmlDeviceGetUUID of GPU 0 (a sample is 100 calls)
 *   enumerate   nvmlDeviceGetCount_v2, then for every GPU
 *               nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetUUID,
 *               nvmlDeviceGetName, nvmlDeviceGetMemoryInfo and
 *               nvmlDeviceGetPciInfo_v3 (a sample is one enumeration)
 *   gpus        the GPU count (not a time)
 *
 * Only the functions above are called, so any library exporting them works.
 * The structures are nvml.h's layouts.
 */
#define _GNU_SOURCE

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

static struct {
    nvmlReturn_t (*init)(void);
    nvmlReturn_t (*shutdown)(void);
    nvmlReturn_t (*count)(unsigned int *);
    nvmlReturn_t (*handle)(unsigned int, nvmlDevice_t *);
    nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned int);
    nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned int);
    nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t *);
    nvmlReturn_t (*pci)(nvmlDevice_t, nvmlPciInfo_t *);
} nv;

static void die(const char *what, const char *detail) {
    fprintf(stderr, "nvmlbench: %s: %s\n", what, detail);
    exit(1);
}

static void check(const char *what, nvmlReturn_t rc) {
    if (rc != 0) {
        char buf[32];
        snprintf(buf, sizeof buf, "NVML return %d", rc);
        die(what, buf);
    }
}

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *sym(void *lib, const char *name) {
    void *p = dlsym(lib, name);
    if (p == NULL) {
        die("dlsym", name);
    }
    return p;
}

static void load(const char *path) {
    /* go-nvml's flags: a Go c-shared mock leaves the NVML functions it does
     * not export unresolved (go-nvml's own cgo calls), which lazy binding
     * allows. */
    void *lib = dlopen(path, RTLD_LAZY | RTLD_GLOBAL);
    if (lib == NULL) {
        die("dlopen", dlerror());
    }
    nv.init = (nvmlReturn_t(*)(void))sym(lib, "nvmlInit_v2");
    nv.shutdown = (nvmlReturn_t(*)(void))sym(lib, "nvmlShutdown");
    nv.count = (nvmlReturn_t(*)(unsigned int *))sym(lib, "nvmlDeviceGetCount_v2");
    nv.handle = (nvmlReturn_t(*)(unsigned int, nvmlDevice_t *))sym(lib, "nvmlDeviceGetHandleByIndex_v2");
    nv.uuid = (nvmlReturn_t(*)(nvmlDevice_t, char *, unsigned int))sym(lib, "nvmlDeviceGetUUID");
    nv.name = (nvmlReturn_t(*)(nvmlDevice_t, char *, unsigned int))sym(lib, "nvmlDeviceGetName");
    nv.memory = (nvmlReturn_t(*)(nvmlDevice_t, nvmlMemory_t *))sym(lib, "nvmlDeviceGetMemoryInfo");
    nv.pci = (nvmlReturn_t(*)(nvmlDevice_t, nvmlPciInfo_t *))sym(lib, "nvmlDeviceGetPciInfo_v3");
}

static int cmp_ll(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

static long long median(long long *v, int n) {
    qsort(v, (size_t)n, sizeof v[0], cmp_ll);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* init_child: the child's side of the init measurement; prints nanoseconds. */
static int init_child(const char *path) {
    long long t0 = now_ns();
    load(path);
    check("nvmlInit_v2", nv.init());
    printf("%lld\n", now_ns() - t0);
    return 0;
}

/* time_init runs this program n times as the init child. */
static long long time_init(const char *self, const char *path, int n) {
    long long *v = malloc((size_t)n * sizeof *v);
    if (v == NULL || setenv("NVMLBENCH_INIT", "1", 1) != 0) {
        die("init", "out of memory");
    }
    for (int i = 0; i < n; i++) {
        int fds[2];
        if (pipe(fds) != 0) {
            die("pipe", strerror(errno));
        }
        pid_t pid = fork();
        if (pid == 0) {
            dup2(fds[1], 1);
            close(fds[0]);
            close(fds[1]);
            execl(self, self, path, (char *)NULL);
            _exit(127);
        }
        close(fds[1]);
        char buf[64] = {0};
        ssize_t r = read(fds[0], buf, sizeof buf - 1);
        close(fds[0]);
        int status;
        waitpid(pid, &status, 0);
        if (r <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            die("init child", "failed");
        }
        v[i] = atoll(buf);
    }
    unsetenv("NVMLBENCH_INIT");
    long long m = median(v, n);
    free(v);
    return m;
}

static void enumerate(void) {
    unsigned int n;
    check("nvmlDeviceGetCount_v2", nv.count(&n));
    for (unsigned int i = 0; i < n; i++) {
        nvmlDevice_t d;
        char uuid[96], name[96];
        nvmlMemory_t mem;
        nvmlPciInfo_t pci;
        check("nvmlDeviceGetHandleByIndex_v2", nv.handle(i, &d));
        check("nvmlDeviceGetUUID", nv.uuid(d, uuid, sizeof uuid));
        check("nvmlDeviceGetName", nv.name(d, name, sizeof name));
        check("nvmlDeviceGetMemoryInfo", nv.memory(d, &mem));
        check("nvmlDeviceGetPciInfo_v3", nv.pci(d, &pci));
    }
}

#define BATCH 100

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: nvmlbench LIB [ITERATIONS]\n");
        return 2;
    }
    if (getenv("NVMLBENCH_INIT") != NULL) {
        return init_child(argv[1]);
    }
    int iters = argc > 2 ? atoi(argv[2]) : 2000;
    if (iters < 1) {
        die("iterations", argv[2]);
    }
    char self[4096];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl <= 0) {
        die("readlink /proc/self/exe", strerror(errno));
    }
    self[sl] = '\0';
    /* Fewer init samples: each is a process. */
    int init_iters = iters / 10 > 20 ? iters / 10 : 20;
    printf("init %lld\n", time_init(self, argv[1], init_iters));

    load(argv[1]);
    check("nvmlInit_v2", nv.init());
    unsigned int gpus;
    check("nvmlDeviceGetCount_v2", nv.count(&gpus));
    if (gpus == 0) {
        die("nvmlDeviceGetCount_v2", "no GPUs");
    }
    nvmlDevice_t d0;
    check("nvmlDeviceGetHandleByIndex_v2", nv.handle(0, &d0));
    long long *v = malloc((size_t)iters * sizeof *v);
    if (v == NULL) {
        die("samples", "out of memory");
    }
    for (int warm = 0; warm < 100; warm++) {
        enumerate();
    }

    for (int i = 0; i < iters; i++) {
        long long t0 = now_ns();
        for (int j = 0; j < BATCH; j++) {
            check("nvmlDeviceGetCount_v2", nv.count(&gpus));
        }
        v[i] = (now_ns() - t0) / BATCH;
    }
    printf("count %lld\n", median(v, iters));

    for (int i = 0; i < iters; i++) {
        char uuid[96];
        long long t0 = now_ns();
        for (int j = 0; j < BATCH; j++) {
            check("nvmlDeviceGetUUID", nv.uuid(d0, uuid, sizeof uuid));
        }
        v[i] = (now_ns() - t0) / BATCH;
    }
    printf("uuid %lld\n", median(v, iters));

    for (int i = 0; i < iters; i++) {
        long long t0 = now_ns();
        enumerate();
        v[i] = now_ns() - t0;
    }
    printf("enumerate %lld\n", median(v, iters));
    printf("gpus %u\n", gpus);
    free(v);
    check("nvmlShutdown", nv.shutdown());
    return 0;
}
