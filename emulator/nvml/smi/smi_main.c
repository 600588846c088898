/*
 * nvidia-smi for the emulated node: the command line, the emulator root and
 * the dispatch to the commands. See smi.h.
 */
#define _GNU_SOURCE

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "smi.h"

#define ROOT_ENV "DRAKIT_EMULATOR_ROOT"

/* Where render installs nvidia-smi below the emulator root. */
#define SMI_DIR "/usr/bin"

/*
 * resolve_root sets $DRAKIT_EMULATOR_ROOT, which the linked-in shim reads,
 * unless it is set: to this program's own path minus /usr/bin/nvidia-smi
 * (where render installs it, so R/usr/bin/nvidia-smi answers for R), else it
 * stays unset and the root is "/" (a container or a chroot: the state file
 * is /run/drakit-emulator/nvml.state). /proc/self/exe is the path with its
 * symbolic links resolved; without /proc (a chroot) the root is "/".
 */
static void resolve_root(void) {
    const char *env = getenv(ROOT_ENV);
    if (env != NULL && *env != '\0') {
        return;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        return;
    }
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash == NULL) {
        return;
    }
    *slash = '\0';
    size_t len = (size_t)(slash - exe), dl = strlen(SMI_DIR);
    if (len >= dl && strcmp(exe + len - dl, SMI_DIR) == 0 && len > dl) {
        exe[len - dl] = '\0';
        setenv(ROOT_ENV, exe, 1);
    }
}

static const char *root_name(void) {
    const char *env = getenv(ROOT_ENV);
    return env != NULL && *env != '\0' ? env : "/";
}


static void usage(FILE *f) {
    fputs("NVIDIA System Management Interface -- drakit emulator\n"
          "\n"
          "The emulated node's nvidia-smi: an NVML client answering from the emulator\n"
          "root's NVML state (DRAKIT_EMULATOR_ROOT, else this program's path minus\n"
          "/usr/bin/nvidia-smi, else /). Only these options are emulated:\n"
          "\n"
          "    nvidia-smi [-i ID]                     the GPU table\n"
          "    nvidia-smi -L | --list-gpus [-i ID]    GPUs and MIG devices with UUIDs\n"
          "    nvidia-smi --version\n"
          "    nvidia-smi --query-gpu=FIELD[,...] --format=csv[,noheader][,nounits] [-i ID]\n"
          "        fields: index count name uuid pci.bus_id pci.device_id pci.sub_device_id\n"
          "        driver_version memory.total memory.reserved memory.used memory.free\n"
          "        compute_cap compute_mode persistence_mode mig.mode.current mig.mode.pending\n"
          "    nvidia-smi [-i ID] -c | --compute-mode=MODE\n"
          "        the emulated GPUs run in DEFAULT only: setting DEFAULT succeeds, the\n"
          "        other modes fail with code 3 (NVML: Not Supported)\n"
          "    nvidia-smi [-i ID] -pm | --persistence-mode=0|1\n"
          "        persistence mode is off: 0 succeeds, 1 fails with code 3\n"
          "    nvidia-smi compute-policy [-i ID] --set-timeslice=N\n"
          "        the emulated GPUs have the default time slice only: 0 succeeds,\n"
          "        1-3 fail with code 3\n"
          "\n"
          "ID: comma-separated indexes, UUIDs or PCI bus ids. Exit codes as nvidia-smi's:\n"
          "2 invalid argument, 3 not supported, 6 not found, 9 no NVML state.\n",
          f);
}

struct args {
    const char *id, *compute_mode, *persistence_mode, *query, *format, *timeslice;
    int list, help, version, policy;
};

/*
 * option matches arg against -s and --l (also --l=value). A value option
 * takes "=value" or the next argument. Returns 1 on a match, 0 on none, -1
 * when the value is missing.
 */
static int option(int argc, char **argv, int *i, const char *s, const char *l, int takes_value,
                  const char **value) {
    const char *arg = argv[*i];
    size_t ll = l != NULL ? strlen(l) : 0;
    int matched = (s != NULL && strcmp(arg, s) == 0) || (l != NULL && strcmp(arg, l) == 0);
    if (!matched && l != NULL && takes_value && strncmp(arg, l, ll) == 0 && arg[ll] == '=') {
        *value = arg + ll + 1;
        return 1;
    }
    if (!matched) {
        return 0;
    }
    if (!takes_value) {
        *value = arg;
        return 1;
    }
    if (*i + 1 >= argc) {
        return -1;
    }
    *value = argv[++*i];
    return 1;
}

static int parse(int argc, char **argv, struct args *a) {
    int first = 1;
    if (argc > 1 && strcmp(argv[1], "compute-policy") == 0) {
        a->policy = 1;
        first = 2;
    }
    for (int i = first; i < argc; i++) {
        const char *v = NULL;
        int r;
/* VALUE stores an option's value, FLAG sets a flag; both go to the next argument. */
#define VALUE(s, l, dst)                                                      \
    if ((r = option(argc, argv, &i, s, l, 1, &v)) != 0) {                     \
        if (r < 0) {                                                          \
            fprintf(stderr, "Option %s needs a value.\n", argv[i]);           \
            return SMI_EXIT_ARGUMENT;                                         \
        }                                                                     \
        dst = v;                                                              \
        continue;                                                             \
    }
#define FLAG(s, l, dst)                                                       \
    if (option(argc, argv, &i, s, l, 0, &v) != 0) {                           \
        dst = 1;                                                              \
        continue;                                                             \
    }
        VALUE("-i", "--id", a->id)
        FLAG("-h", "--help", a->help)
        if (a->policy) {
            VALUE(NULL, "--set-timeslice", a->timeslice)
        } else {
            VALUE("-c", "--compute-mode", a->compute_mode)
            VALUE("-pm", "--persistence-mode", a->persistence_mode)
            VALUE(NULL, "--query-gpu", a->query)
            VALUE(NULL, "--format", a->format)
            FLAG("-L", "--list-gpus", a->list)
            FLAG(NULL, "--version", a->version)
        }
#undef VALUE
#undef FLAG
        fprintf(stderr, "Invalid combination of input arguments (%s is not emulated). Please run "
                        "'nvidia-smi -h' for help.\n",
                argv[i]);
        return SMI_EXIT_ARGUMENT;
    }
    return SMI_OK;
}

static int print_version(void) {
    char driver[80], nvml[80];
    int cuda = 0;
    nvmlReturn_t rc = nvmlSystemGetDriverVersion(driver, sizeof driver);
    if (rc == NVML_SUCCESS) {
        rc = nvmlSystemGetNVMLVersion(nvml, sizeof nvml);
    }
    if (rc == NVML_SUCCESS) {
        rc = nvmlSystemGetCudaDriverVersion(&cuda);
    }
    if (rc != NVML_SUCCESS) {
        fprintf(stderr, "Unable to read the driver's versions: %s\n", nvmlErrorString(rc));
        return smi_exit_code(rc);
    }
    printf("NVIDIA-SMI version  : %s\n", driver);
    printf("NVML version        : %s\n", nvml);
    printf("DRIVER version      : %s\n", driver);
    printf("CUDA Version        : %d.%d\n", cuda / 1000, cuda % 1000 / 10);
    return SMI_OK;
}

/* run does what the parsed command line asks, NVML initialised. */
static int run(const struct args *a) {
    if (a->version) {
        return print_version();
    }
    struct smi_devices devs;
    int setting = a->policy || a->compute_mode != NULL || a->persistence_mode != NULL;
    int code = smi_select(a->id, setting, &devs);
    if (code != SMI_OK) {
        return code;
    }
    if (a->policy) {
        return smi_set_timeslice(&devs, a->timeslice);
    }
    if (a->compute_mode != NULL) {
        code = smi_set_compute_mode(&devs, a->compute_mode);
    }
    if (code == SMI_OK && a->persistence_mode != NULL) {
        code = smi_set_persistence_mode(&devs, a->persistence_mode);
    }
    if (setting) {
        return code;
    }
    if (a->query != NULL) {
        return smi_query(&devs, a->query, a->format);
    }
    return a->list ? smi_list(&devs) : smi_table(&devs);
}

int main(int argc, char **argv) {
    struct args a;
    memset(&a, 0, sizeof a);
    int code = parse(argc, argv, &a);
    if (code != SMI_OK) {
        return code;
    }
    if (a.help) {
        usage(stdout);
        return SMI_OK;
    }
    if (a.policy && a.timeslice == NULL) {
        fprintf(stderr, "compute-policy: only --set-timeslice=N is emulated. Please run 'nvidia-smi -h' for help.\n");
        return SMI_EXIT_ARGUMENT;
    }
    if ((a.query == NULL) != (a.format == NULL)) {
        fprintf(stderr, "--query-gpu and --format=csv go together. Please run 'nvidia-smi -h' for help.\n");
        return SMI_EXIT_ARGUMENT;
    }
    resolve_root();
    nvmlReturn_t rc = nvmlInit_v2();
    if (rc != NVML_SUCCESS) {
        if (rc == NVML_ERROR_DRIVER_NOT_LOADED) {
            printf("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
                   "Make sure that the latest NVIDIA driver is installed and running.\n");
        } else {
            printf("Failed to initialize NVML: %s\n", nvmlErrorString(rc));
        }
        fprintf(stderr, "drakit emulator: no usable NVML state below the emulator root %s "
                        "(run/drakit-emulator/nvml.state); DRAKIT_NVML_DEBUG=1 says why\n",
                root_name());
        return smi_exit_code(rc);
    }
    code = run(&a);
    nvmlShutdown();
    if (fflush(stdout) != 0 && code == SMI_OK) {
        code = SMI_EXIT_OTHER;
    }
    return code;
}
