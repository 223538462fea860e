// The executable that links this file defines `malloc` itself. With the symbol exported
// (--export-dynamic-symbol=malloc, set for latchkey-bench in Package.swift), the dynamic
// linker binds every library's malloc calls to it, the Swift runtime's swift_slowAlloc
// included; it counts and forwards to glibc's allocator. calloc, realloc and the aligned
// allocators are not counted: Swift objects and array buffers (alignment <= 16) come
// through malloc. The benchmark is single-threaded, so a plain counter is enough.
#include "malloc_counter.h"

#include <stddef.h>

extern void *__libc_malloc(size_t size);

static uint64_t calls;

void *malloc(size_t size) {
    calls++;
    return __libc_malloc(size);
}

uint64_t latchkey_malloc_calls(void) { return calls; }
