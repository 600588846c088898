/*
 * What a new MIG instance is called: MIG UUIDs (gpu.DeriveMIGUUID), new GI
 * and CI ids (gpu.GIID, the lowest free one) and capability minors, over a
 * state (no lock, no handles).
 */
#define _GNU_SOURCE

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mig_ids.h"

/* SHA-256 (FIPS 180-4), for MIG UUIDs as gpu.DeriveMIGUUID derives them. */
static const uint32_t sha_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t ror(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void sha256_block(uint32_t h[8], const unsigned char *b) {
    uint32_t w[64], v[8];
    for (int i = 0; i < 16; i++) {
        w[i] = (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16 | (uint32_t)b[4 * i + 2] << 8 |
               (uint32_t)b[4 * i + 3];
    }
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    memcpy(v, h, sizeof v);
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = v[7] + (ror(v[4], 6) ^ ror(v[4], 11) ^ ror(v[4], 25)) +
                      ((v[4] & v[5]) ^ (~v[4] & v[6])) + sha_k[i] + w[i];
        uint32_t t2 = (ror(v[0], 2) ^ ror(v[0], 13) ^ ror(v[0], 22)) +
                      ((v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]));
        memmove(&v[1], &v[0], 7 * sizeof v[0]);
        v[4] += t1;
        v[0] = t1 + t2;
    }
    for (int i = 0; i < 8; i++) {
        h[i] += v[i];
    }
}

static void sha256(const unsigned char *msg, size_t n, unsigned char out[32]) {
    uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                     0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    unsigned char tail[128];
    size_t full = n / 64 * 64, rest = n - full;
    for (size_t i = 0; i < full; i += 64) {
        sha256_block(h, msg + i);
    }
    memset(tail, 0, sizeof tail);
    memcpy(tail, msg + full, rest);
    tail[rest] = 0x80;
    size_t tn = rest + 9 <= 64 ? 64 : 128;
    uint64_t bits = (uint64_t)n * 8;
    for (int i = 0; i < 8; i++) {
        tail[tn - 1 - i] = (unsigned char)(bits >> (8 * i));
    }
    for (size_t i = 0; i < tn; i += 64) {
        sha256_block(h, tail + i);
    }
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (unsigned char)(h[i] >> 24);
        out[4 * i + 1] = (unsigned char)(h[i] >> 16);
        out[4 * i + 2] = (unsigned char)(h[i] >> 8);
        out[4 * i + 3] = (unsigned char)h[i];
    }
}

/* mig_uuid writes gpu.DeriveMIGUUID(gpu UUID, gi, ci) and a NUL into out. */
void drakit_new_mig_uuid(const struct nvmlDevice_st *d, int64_t gi, int64_t ci,
                     char out[DRAKIT_UUID_LEN + 1]) {
    char in[DRAKIT_UUID_LEN + 32];
    int n = snprintf(in, sizeof in, "%.*s/gi%lld/ci%lld", (int)d->uuid_len, d->uuid, (long long)gi,
                     (long long)ci);
    unsigned char h[32];
    sha256((const unsigned char *)in, (size_t)n, h);
    static const char hex[] = "0123456789abcdef";
    char *p = out;
    memcpy(p, "MIG-", 4);
    p += 4;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) {
            *p++ = '-';
        }
        *p++ = hex[h[i] >> 4];
        *p++ = hex[h[i] & 15];
    }
    *p = '\0';
}

/* gi_access_minor is nvmlstate.GIAccessMinor; a CI's is it + 1 + CI id. */
int64_t drakit_gi_access_minor(int64_t gpu, int64_t gi) { return 3 + gpu * 135 + gi * 9; }

/* giid is gpu.GIID: the GI id of placement start:size on a GPU with
 * eight memory slices, or -1 for another geometry. */
static int64_t giid(int64_t start, int64_t size, int64_t memory_slices) {
    if (memory_slices != 8 || (size != 1 && size != 2 && size != 4 && size != 8) ||
        start % size != 0 || start + size > 8) {
        return -1;
    }
    return 8 / size - 1 + (start ^ 4) / size;
}

/* new_gi_id is the id a new GI at start:size gets: giid, or the lowest free
 * id when that is taken or undefined; -1 when none is free. */
int64_t drakit_new_gi_id(const struct drakit_state *s, int64_t gpu, int64_t start, int64_t size,
                         int64_t memory_slices) {
    int64_t id = giid(start, size, memory_slices);
    if (id >= 0 && drakit_gi_of(s, gpu, id) == NULL) {
        return id;
    }
    for (id = 0; id < NUM_GIS; id++) {
        if (drakit_gi_of(s, gpu, id) == NULL) {
            return id;
        }
    }
    return -1;
}

int64_t drakit_new_ci_id(const struct drakit_state *s, int64_t gpu, int64_t gi) {
    for (int64_t id = 0; id < NUM_CIS; id++) {
        int taken = 0;
        for (size_t i = 0; i < s->ncis; i++) {
            taken |= s->cis[i].gpu == gpu && s->cis[i].gi == gi && s->cis[i].id == id;
        }
        if (!taken) {
            return id;
        }
    }
    return -1;
}

