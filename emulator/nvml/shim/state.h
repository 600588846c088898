/*
 * The shim's state core: it finds the emulator root, reads
 * <root>/run/drakit-emulator/nvml.state (format: Go package
 * drakit.dev/drakit/emulator/nvmlstate, whose Parse is the reference this
 * reader mirrors: it accepts exactly the files Parse accepts), and keeps the
 * GPUs whose device node <root>/dev/nvidia<minor> exists and whose fault
 * record (if any) does not say lost.
 *
 * Not thread-safe by itself: handles.c serialises every call with one mutex.
 */
#ifndef DRAKIT_NVML_STATE_H
#define DRAKIT_NVML_STATE_H

#include <stdint.h>

#include "nvml_abi.h"
#include "state_records.h"

/*
 * drakit_state_changed reports whether s's state file is no longer the one s
 * was read from: with the generation file mapped, whether its counter moved
 * (an atomic load, no system call); without it, whether a stat of the state
 * file differs (drakit_state_file_changed).
 */
int drakit_state_changed(const struct drakit_state *s);

/* drakit_state_file_changed reports whether a stat of s's state file differs
 * from the file s was read from (device, inode, size, mtime); 0 when it
 * cannot be stat'ed. It ignores the generation counter, which a writer bumps
 * only after its rename. */
int drakit_state_file_changed(const struct drakit_state *s);

/*
 * The generation file (generation.c). drakit_gen_attach maps root's
 * read-only, unless the mapping is of that file already; without a valid one
 * (missing, short, no magic: explained with $DRAKIT_NVML_DEBUG) it leaves
 * none. drakit_gen_detach unmaps it. drakit_gen_load stores the counter in
 * *v and returns 1, or returns 0 when none is mapped. drakit_gen_bump adds
 * one to root's counter (creating the file if missing), as every writer does
 * after renaming a new state file into place; 0, or -1.
 */
void drakit_gen_attach(const char *root);
void drakit_gen_detach(void);
int drakit_gen_load(uint64_t *v);
int drakit_gen_bump(const char *root);

/*
 * drakit_state_load fills s (which must be empty) from the emulator root:
 * $DRAKIT_EMULATOR_ROOT when set and non-empty; otherwise the directory the
 * shim was loaded from, minus /usr/lib/<multiarch>/<file>; otherwise "/".
 * It attaches the root's generation file first (drakit_gen_attach).
 * It returns NVML_SUCCESS, or NVML_ERROR_DRIVER_NOT_LOADED when there is no
 * state file, NVML_ERROR_NO_PERMISSION when it cannot be read for lack of
 * permission, NVML_ERROR_MEMORY when memory runs out, and NVML_ERROR_UNKNOWN
 * for anything else (a malformed file included, and a truncated one: without
 * the end record as its last line, or with a last line without a newline);
 * s is empty then. It never writes to stdout; with $DRAKIT_NVML_DEBUG set it
 * explains a failure on stderr.
 */
nvmlReturn_t drakit_state_load(struct drakit_state *s);

/*
 * drakit_state_load_root is drakit_state_load from a known root (s->root is
 * set to it): mutations reread the state under their lock with it.
 */
nvmlReturn_t drakit_state_load_root(struct drakit_state *s, const char *root);

/*
 * drakit_state_parse parses len bytes of buf (taking ownership of buf, which
 * must come from malloc) into s, which must be empty, without the device
 * node checks: every GPU, GI and CI counts as visible. It returns 0, or -1
 * (s empty, buf freed) when nvmlstate.Parse would reject the bytes.
 */
int drakit_state_parse(struct drakit_state *s, char *buf, size_t len);

/* drakit_state_free releases what drakit_state_load acquired and empties s. */
void drakit_state_free(struct drakit_state *s);

#endif /* DRAKIT_NVML_STATE_H */
