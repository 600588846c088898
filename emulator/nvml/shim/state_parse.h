/*
 * The state file's records, read into a struct drakit_state (state_parse.c).
 */
#ifndef DRAKIT_NVML_STATE_PARSE_H
#define DRAKIT_NVML_STATE_PARSE_H

#include "state_fields.h"

/* drakit_parse_text parses the state file's len bytes at buf
 * into s, validating them (nvmlstate.Parse); 0, or -1 with e set. */
int drakit_parse_text(struct drakit_state *s, const char *buf, size_t len, errbuf *e);

#endif /* DRAKIT_NVML_STATE_PARSE_H */
