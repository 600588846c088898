/*
 * The nvlink, fabric and peer records of the state file (state_nvlink.c).
 */
#ifndef DRAKIT_NVML_STATE_NVLINK_H
#define DRAKIT_NVML_STATE_NVLINK_H

#include "state_fields.h"

/* the nvlink, fabric and peer records. drakit_nvlink_keys
 * returns the keys of record type type (and their count in *n), or NULL for
 * another type; drakit_parse_nvlink reads a record of those keys;
 * drakit_validate_nvlink applies nvmlstate's validateNVLink (after the gpu
 * records are validated) and decodes the remote bus ids. 0, or -1 with e set. */
const char *const *drakit_nvlink_keys(span type, size_t *n);
int drakit_parse_nvlink(struct drakit_state *s, fields *f, errbuf *e);
int drakit_validate_nvlink(struct drakit_state *s, errbuf *e);

#endif /* DRAKIT_NVML_STATE_NVLINK_H */
