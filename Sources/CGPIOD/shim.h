// libgpiod, loaded at run time: libgpiod.so.3 (2.x, the v2 API: Debian 13 / Raspberry Pi
// OS trixie) or libgpiod.so.2 (1.6, the v1 API: Debian 12 / bookworm). Their gpiod.h
// headers conflict and both export the same gpiod_* names, so Latchkey links neither: it
// dlopen()s the one the machine has and fills a table of function pointers with dlsym(), and
// one binary (and one .deb, `Depends: libgpiod3 | libgpiod2`) runs on both releases
// (docs/ARCHITECTURE.md, "GPIO through libgpiod"). The prototypes are
// hand-written in gpiod1.h / gpiod2.h and checked against each real header by
// Tests/gpiod-prototypes/run. Only LatchkeyKernel/Internal uses this module.
#ifndef LATCHKEY_CGPIOD_SHIM_H
#define LATCHKEY_CGPIOD_SHIM_H

#include <dlfcn.h>
#include "gpiod1.h"
#include "gpiod2.h"

#define LATCHKEY_GPIOD_RESOLVE(ret, name, params) \
    if (!(table->name = (ret (*) params)dlsym(library, #name))) return #name;

/// Fills `table` from `library` (a dlopen handle): NULL when every function resolved, else
/// the name of the first one missing.
static inline const char *latchkey_gpiod1_resolve(void *library, struct latchkey_gpiod1 *table) {
    LATCHKEY_GPIOD1_FUNCTIONS(LATCHKEY_GPIOD_RESOLVE)
    return 0;
}

static inline const char *latchkey_gpiod2_resolve(void *library, struct latchkey_gpiod2 *table) {
    LATCHKEY_GPIOD2_FUNCTIONS(LATCHKEY_GPIOD_RESOLVE)
    return 0;
}

#undef LATCHKEY_GPIOD_RESOLVE

#endif
