/*
 * The nvlink, fabric and peer records (nvmlstate's nvlink.go): their keys,
 * parsing, nvmlstate's validateNVLink rule for rule, and lookups.
 */
#define _GNU_SOURCE

#include <stdint.h>

#include "state_nvlink.h"

static const char *const nvlink_keys[] = {"gpu",        "link",        "state",
                                          "version",    "remoteType",  "remoteBusId",
                                          "remotePciDeviceId"};
static const char *const fabric_keys[] = {"gpu", "clusterUuid", "cliqueId", "state", "status",
                                          "healthMask"};
static const char *const peer_keys[] = {"gpu", "peer", "ancestor", "nvlink"};

#define FABRIC_UUID_PATTERN "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
#define MIN_NVLINK_VERSION 1 /* NVML_NVLINK_VERSION_1_0 */
#define MAX_NVLINK_VERSION 8 /* NVML_NVLINK_VERSION_6_0 */
#define REMOTE_GPU 0
#define REMOTE_SWITCH 2
#define TOPOLOGY_SYSTEM 50
#define FABRIC_STATE_COMPLETED 3

const char *const *drakit_nvlink_keys(span type, size_t *n) {
    if (span_is(type, "nvlink")) {
        *n = NKEYS(nvlink_keys);
        return nvlink_keys;
    }
    if (span_is(type, "fabric")) {
        *n = NKEYS(fabric_keys);
        return fabric_keys;
    }
    if (span_is(type, "peer")) {
        *n = NKEYS(peer_keys);
        return peer_keys;
    }
    return NULL;
}

int drakit_parse_nvlink(struct drakit_state *s, fields *f, errbuf *e) {
    span str = {NULL, 0};
    if (f->keys == nvlink_keys) {
        struct drakit_nvlink *l = drakit_grow((void **)&s->nvlinks, &s->nnvlinks, sizeof *l, e, f->line);
        if (l == NULL || drakit_field_int(f, e, 0, &l->gpu) != 0 ||
            drakit_field_int(f, e, 1, &l->link) != 0 || drakit_field_flag(f, e, 2, &l->active) != 0 ||
            drakit_field_int(f, e, 3, &l->version) != 0 ||
            drakit_field_int(f, e, 4, &l->remote_type) != 0 || drakit_field_str(f, e, 5, &str) != 0 ||
            drakit_field_uint(f, e, 6, 32, &l->remote_device_id) != 0) {
            return -1;
        }
        l->remote_bus = str.p;
        l->remote_bus_len = str.n;
        return 0;
    }
    if (f->keys == fabric_keys) {
        struct drakit_fabric *x = drakit_grow((void **)&s->fabrics, &s->nfabrics, sizeof *x, e, f->line);
        if (x == NULL || drakit_field_int(f, e, 0, &x->gpu) != 0 || drakit_field_str(f, e, 1, &str) != 0 ||
            drakit_field_uint(f, e, 2, 32, &x->clique) != 0 || drakit_field_int(f, e, 3, &x->state) != 0 ||
            drakit_field_int(f, e, 4, &x->status) != 0 ||
            drakit_field_uint(f, e, 5, 32, &x->health_mask) != 0) {
            return -1;
        }
        x->uuid = str.p;
        x->uuid_len = str.n;
        return 0;
    }
    struct drakit_peer *p = drakit_grow((void **)&s->peers, &s->npeers, sizeof *p, e, f->line);
    return p == NULL || drakit_field_int(f, e, 0, &p->gpu) != 0 ||
                   drakit_field_int(f, e, 1, &p->peer) != 0 ||
                   drakit_field_int(f, e, 2, &p->ancestor) != 0 ||
                   drakit_field_flag(f, e, 3, &p->nvlink) != 0
               ? -1
               : 0;
}

/* gpu_record returns the gpu record of minor (every record: validation
 * runs before the visibility checks), or NULL. */
static const struct nvmlDevice_st *gpu_record(const struct drakit_state *s, int64_t minor) {
    for (unsigned int i = 0; i < s->count; i++) {
        if (s->gpus[i].minor == minor) {
            return &s->gpus[i];
        }
    }
    return NULL;
}

static const struct nvmlDevice_st *gpu_at_bus(const struct drakit_state *s, const char *bus) {
    for (unsigned int i = 0; i < s->count; i++) {
        if (memcmp(s->gpus[i].bus_id, bus, DRAKIT_BUS_ID_LEN) == 0) {
            return &s->gpus[i];
        }
    }
    return NULL;
}

static int validate_links(struct drakit_state *s, errbuf *e) {
    for (size_t i = 0; i < s->nnvlinks; i++) {
        struct drakit_nvlink *l = &s->nvlinks[i];
        const struct nvmlDevice_st *own = gpu_record(s, l->gpu);
        if (own == NULL) {
            return fail(e, "nvlink[%zu].gpu %lld names no gpu record", i, (long long)l->gpu);
        }
        if (l->link < 0 || l->link >= DRAKIT_MAX_NVLINKS) {
            return fail(e, "nvlink[%zu].link %lld out of range", i, (long long)l->link);
        }
        for (size_t j = 0; j < i; j++) {
            if (s->nvlinks[j].gpu == l->gpu && s->nvlinks[j].link == l->link) {
                return fail(e, "nvlink[%zu]: link %lld of gpu %lld given twice", i, (long long)l->link,
                            (long long)l->gpu);
            }
        }
        if (l->version < MIN_NVLINK_VERSION || l->version > MAX_NVLINK_VERSION) {
            return fail(e, "nvlink[%zu].version %lld out of range", i, (long long)l->version);
        }
        if (l->remote_type != REMOTE_GPU && l->remote_type != REMOTE_SWITCH) {
            return fail(e, "nvlink[%zu].remoteType must be 0 (GPU) or 2 (switch)", i);
        }
        if (!drakit_matches(l->remote_bus, l->remote_bus_len, DRAKIT_BUS_ID_PATTERN)) {
            return fail(e, "nvlink[%zu].remoteBusId is not DDDDDDDD:BB:DD.F (upper-case hex)", i);
        }
        const struct nvmlDevice_st *peer = gpu_at_bus(s, l->remote_bus);
        if (l->remote_type == REMOTE_GPU && (peer == NULL || peer == own)) {
            return fail(e, "nvlink[%zu].remoteBusId names no other gpu record", i);
        }
        l->domain = drakit_hex_value(l->remote_bus, 8);
        l->bus = drakit_hex_value(l->remote_bus + 9, 2);
        l->device = drakit_hex_value(l->remote_bus + 12, 2);
        l->function = drakit_hex_value(l->remote_bus + 15, 1);
    }
    return 0;
}

int drakit_validate_nvlink(struct drakit_state *s, errbuf *e) {
    if (validate_links(s, e) != 0) {
        return -1;
    }
    for (size_t i = 0; i < s->nfabrics; i++) {
        const struct drakit_fabric *x = &s->fabrics[i];
        if (gpu_record(s, x->gpu) == NULL) {
            return fail(e, "fabric[%zu].gpu %lld names no gpu record", i, (long long)x->gpu);
        }
        for (size_t j = 0; j < i; j++) {
            if (s->fabrics[j].gpu == x->gpu) {
                return fail(e, "fabric[%zu]: second fabric record of gpu %lld", i, (long long)x->gpu);
            }
        }
        if (!drakit_matches(x->uuid, x->uuid_len, FABRIC_UUID_PATTERN)) {
            return fail(e, "fabric[%zu].clusterUuid is not a lower-case UUID", i);
        }
        if (x->state < 0 || x->state > FABRIC_STATE_COMPLETED) {
            return fail(e, "fabric[%zu].state %lld out of range 0..3", i, (long long)x->state);
        }
    }
    for (size_t i = 0; i < s->npeers; i++) {
        const struct drakit_peer *p = &s->peers[i];
        if (gpu_record(s, p->gpu) == NULL || gpu_record(s, p->peer) == NULL || p->gpu == p->peer) {
            return fail(e, "peer[%zu]: gpu and peer must name two gpu records", i);
        }
        for (size_t j = 0; j < i; j++) {
            const struct drakit_peer *q = &s->peers[j];
            if ((q->gpu == p->gpu && q->peer == p->peer) || (q->gpu == p->peer && q->peer == p->gpu)) {
                return fail(e, "peer[%zu]: the pair is given twice", i);
            }
        }
        if (p->ancestor < 0 || p->ancestor > TOPOLOGY_SYSTEM || p->ancestor % 10 != 0) {
            return fail(e, "peer[%zu].ancestor %lld is not a topology level", i, (long long)p->ancestor);
        }
    }
    return 0;
}

const struct drakit_nvlink *drakit_nvlink_of(const struct drakit_state *s, int64_t gpu, int64_t link) {
    for (size_t i = 0; i < s->nnvlinks; i++) {
        if (s->nvlinks[i].gpu == gpu && s->nvlinks[i].link == link) {
            return &s->nvlinks[i];
        }
    }
    return NULL;
}

const struct drakit_fabric *drakit_fabric_of(const struct drakit_state *s, int64_t gpu) {
    for (size_t i = 0; i < s->nfabrics; i++) {
        if (s->fabrics[i].gpu == gpu) {
            return &s->fabrics[i];
        }
    }
    return NULL;
}

const struct drakit_peer *drakit_peer_of(const struct drakit_state *s, int64_t gpu, int64_t peer) {
    for (size_t i = 0; i < s->npeers; i++) {
        const struct drakit_peer *p = &s->peers[i];
        if ((p->gpu == gpu && p->peer == peer) || (p->gpu == peer && p->peer == gpu)) {
            return p;
        }
    }
    return NULL;
}
