/*
 * Compute modes as nvidia-smi names them (the table's and --query-gpu's
 * "Default", "Exclusive_Process", ...) and as -c takes them.
 */
#define _GNU_SOURCE

#include <strings.h>

#include "smi.h"

static const char *const mode_names[SMI_COMPUTE_MODES] = {"Default", "Exclusive_Thread", "Prohibited",
                                                         "Exclusive_Process"};
static const char *const mode_args[SMI_COMPUTE_MODES] = {"DEFAULT", "EXCLUSIVE_THREAD", "PROHIBITED",
                                                        "EXCLUSIVE_PROCESS"};

const char *smi_compute_mode_name(int mode) {
    return mode >= 0 && mode < SMI_COMPUTE_MODES ? mode_names[mode] : "Unknown";
}

const char *smi_compute_mode_arg(int mode) {
    return mode >= 0 && mode < SMI_COMPUTE_MODES ? mode_args[mode] : "UNKNOWN";
}

int smi_parse_compute_mode(const char *s) {
    for (int m = 0; m < SMI_COMPUTE_MODES; m++) {
        if (strcasecmp(s, mode_args[m]) == 0 || (s[0] == (char)('0' + m) && s[1] == '\0')) {
            return m;
        }
    }
    return -1;
}
