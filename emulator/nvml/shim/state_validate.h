/*
 * nvmlstate.Validate's checks of a parsed state (state_validate.c).
 */
#ifndef DRAKIT_NVML_STATE_VALIDATE_H
#define DRAKIT_NVML_STATE_VALIDATE_H

#include "state_fields.h"

/* drakit_validate applies nvmlstate.Validate's checks to a
 * parsed state and decodes the bus ids; 0, or -1 with e set. */
int drakit_validate(struct drakit_state *s, errbuf *e);

#endif /* DRAKIT_NVML_STATE_VALIDATE_H */
