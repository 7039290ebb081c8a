#ifndef CAMPAIGN_RELAY_CZLIB_SHIM_H
#define CAMPAIGN_RELAY_CZLIB_SHIM_H
#include <zlib.h>

/* deflateInit/inflateInit are macros (they pass ZLIB_VERSION and the struct size): Swift cannot call them. */
static inline int czlib_deflateInit(z_streamp stream, int level) {
    return deflateInit(stream, level);
}

static inline int czlib_inflateInit(z_streamp stream) {
    return inflateInit(stream);
}
#endif
