// Compiled against a real gpiod.h by Tests/gpiod-prototypes/run, never built into
// Latchkey: each hand-written prototype of gpiod1.h / gpiod2.h is declared again after the
// real header, which C rejects ("conflicting types") unless they match, and each constant
// and the v1 event layout are asserted equal. LATCHKEY_CHECK_API picks the header: 1 (1.6) or 2 (2.x).
#include <gpiod.h>
#include <stddef.h>

#define REDECLARE(ret, name, params) extern ret name params;

#if LATCHKEY_CHECK_API == 1
#include "../../Sources/CGPIOD/gpiod1.h"
LATCHKEY_GPIOD1_FUNCTIONS(REDECLARE)
_Static_assert((int)LATCHKEY_GPIOD1_FLAG_ACTIVE_LOW == (int)GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW, "ACTIVE_LOW");
_Static_assert((int)LATCHKEY_GPIOD1_FLAG_BIAS_DISABLE == (int)GPIOD_LINE_REQUEST_FLAG_BIAS_DISABLE, "BIAS_DISABLE");
_Static_assert((int)LATCHKEY_GPIOD1_FLAG_BIAS_PULL_DOWN == (int)GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_DOWN, "BIAS_PULL_DOWN");
_Static_assert((int)LATCHKEY_GPIOD1_FLAG_BIAS_PULL_UP == (int)GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_UP, "BIAS_PULL_UP");
_Static_assert((int)LATCHKEY_GPIOD1_EVENT_RISING_EDGE == (int)GPIOD_LINE_EVENT_RISING_EDGE, "RISING_EDGE");
_Static_assert((int)LATCHKEY_GPIOD1_EVENT_FALLING_EDGE == (int)GPIOD_LINE_EVENT_FALLING_EDGE, "FALLING_EDGE");
_Static_assert(sizeof(struct latchkey_gpiod1_line_event) == sizeof(struct gpiod_line_event), "event size");
_Static_assert(offsetof(struct latchkey_gpiod1_line_event, ts) == offsetof(struct gpiod_line_event, ts), "event ts");
_Static_assert(offsetof(struct latchkey_gpiod1_line_event, event_type) == offsetof(struct gpiod_line_event, event_type),
               "event type");
#elif LATCHKEY_CHECK_API == 2
#include "../../Sources/CGPIOD/gpiod2.h"
LATCHKEY_GPIOD2_FUNCTIONS(REDECLARE)
_Static_assert((int)LATCHKEY_GPIOD2_VALUE_INACTIVE == (int)GPIOD_LINE_VALUE_INACTIVE, "VALUE_INACTIVE");
_Static_assert((int)LATCHKEY_GPIOD2_VALUE_ACTIVE == (int)GPIOD_LINE_VALUE_ACTIVE, "VALUE_ACTIVE");
_Static_assert((int)LATCHKEY_GPIOD2_DIRECTION_INPUT == (int)GPIOD_LINE_DIRECTION_INPUT, "DIRECTION_INPUT");
_Static_assert((int)LATCHKEY_GPIOD2_DIRECTION_OUTPUT == (int)GPIOD_LINE_DIRECTION_OUTPUT, "DIRECTION_OUTPUT");
_Static_assert((int)LATCHKEY_GPIOD2_EDGE_BOTH == (int)GPIOD_LINE_EDGE_BOTH, "EDGE_BOTH");
_Static_assert((int)LATCHKEY_GPIOD2_BIAS_AS_IS == (int)GPIOD_LINE_BIAS_AS_IS, "BIAS_AS_IS");
_Static_assert((int)LATCHKEY_GPIOD2_BIAS_DISABLED == (int)GPIOD_LINE_BIAS_DISABLED, "BIAS_DISABLED");
_Static_assert((int)LATCHKEY_GPIOD2_BIAS_PULL_UP == (int)GPIOD_LINE_BIAS_PULL_UP, "BIAS_PULL_UP");
_Static_assert((int)LATCHKEY_GPIOD2_BIAS_PULL_DOWN == (int)GPIOD_LINE_BIAS_PULL_DOWN, "BIAS_PULL_DOWN");
_Static_assert((int)LATCHKEY_GPIOD2_CLOCK_MONOTONIC == (int)GPIOD_LINE_CLOCK_MONOTONIC, "CLOCK_MONOTONIC");
_Static_assert((int)LATCHKEY_GPIOD2_EVENT_RISING_EDGE == (int)GPIOD_EDGE_EVENT_RISING_EDGE, "RISING_EDGE");
_Static_assert((int)LATCHKEY_GPIOD2_EVENT_FALLING_EDGE == (int)GPIOD_EDGE_EVENT_FALLING_EDGE, "FALLING_EDGE");
#else
#error "LATCHKEY_CHECK_API must be 1 or 2"
#endif
