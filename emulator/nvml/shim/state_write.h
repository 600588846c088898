/*
 * Writing the state file (state_write.c), next to the state reader, for the
 * MIG mutations. Nothing here is exported from the library.
 */
#ifndef DRAKIT_NVML_STATE_WRITE_H
#define DRAKIT_NVML_STATE_WRITE_H

#include <stdint.h>

#include "state.h"

/*
 * drakit_save_state writes s as nvmlstate.Write would after a MIG change:
 * every line of the file s was read from except the gi, ci and end records,
 * the migMode value at mode_val (a pointer into s->buf; NULL: none) replaced
 * by mode, then s's gi and ci records and the end record. It writes a
 * temporary file next to the state file, fsyncs it, renames it over the
 * state file and bumps the generation (the caller holds the state lock).
 */
nvmlReturn_t drakit_save_state(const struct drakit_state *s, const char *mode_val, int64_t mode);

#endif /* DRAKIT_NVML_STATE_WRITE_H */
