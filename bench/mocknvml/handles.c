/* Device handles of the bridge: the address of a slot in this array, one per
 * mock GPU (the C side of main.go). */
#include "bridge.h"

static char handles[MOCKNVML_MAX_DEVICES];

nvmlDevice_t mocknvml_handle(int index) { return (nvmlDevice_t)(void *)&handles[index]; }

int mocknvml_index(nvmlDevice_t device) {
    const char *p = (const char *)(const void *)device;
    return p >= handles && p < handles + MOCKNVML_MAX_DEVICES ? (int)(p - handles) : -1;
}
