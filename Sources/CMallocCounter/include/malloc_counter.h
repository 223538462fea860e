// Counts calls to malloc in the process, for latchkey-bench's allocations-per-PDU figure.
// Linked into the benchmark executable only; nothing else in the package uses it.
#ifndef LATCHKEY_MALLOC_COUNTER_H
#define LATCHKEY_MALLOC_COUNTER_H

#include <stdint.h>

/// malloc calls since the process started.
uint64_t latchkey_malloc_calls(void);

#endif
