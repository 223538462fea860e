// libgpiod 1.6 (libgpiod.so.2, Debian package libgpiod2: Debian 12 / Raspberry Pi OS
// bookworm), the v1 API, as the few calls Latchkey makes. Hand-written instead of
// #include <gpiod.h> because the library is loaded at run time (dlopen) and the 1.6 and 2.x
// headers cannot be installed together. Every prototype and constant here is checked against
// the real header by Tests/gpiod-prototypes/run (CI), which compiles Tests/gpiod-prototypes/check.c
// with it: a prototype that drifts is a compile error, never a wrong call.
#ifndef LATCHKEY_CGPIOD_GPIOD1_H
#define LATCHKEY_CGPIOD_GPIOD1_H

#include <time.h>

struct gpiod_chip;
struct gpiod_line;
struct gpiod_line_event;

// struct gpiod_line_event's layout (gpiod.h 1.6): read into this, passed as the real type.
struct latchkey_gpiod1_line_event {
    struct timespec ts;
    int event_type;
};

// GPIOD_LINE_REQUEST_FLAG_* (GPIOD_BIT(n)) and GPIOD_LINE_EVENT_*.
enum {
    LATCHKEY_GPIOD1_FLAG_ACTIVE_LOW = 1 << 2,
    LATCHKEY_GPIOD1_FLAG_BIAS_DISABLE = 1 << 3,
    LATCHKEY_GPIOD1_FLAG_BIAS_PULL_DOWN = 1 << 4,
    LATCHKEY_GPIOD1_FLAG_BIAS_PULL_UP = 1 << 5,
    LATCHKEY_GPIOD1_EVENT_RISING_EDGE = 1,
    LATCHKEY_GPIOD1_EVENT_FALLING_EDGE = 2,
};

// X(return type, name, parameters): one line per function, the table's field and its symbol.
#define LATCHKEY_GPIOD1_FUNCTIONS(X) \
    X(struct gpiod_chip *, gpiod_chip_open_by_name, (const char *name)) \
    X(void, gpiod_chip_close, (struct gpiod_chip *chip)) \
    X(const char *, gpiod_chip_label, (struct gpiod_chip *chip)) \
    X(unsigned int, gpiod_chip_num_lines, (struct gpiod_chip *chip)) \
    X(struct gpiod_line *, gpiod_chip_get_line, (struct gpiod_chip *chip, unsigned int offset)) \
    X(struct gpiod_line *, gpiod_chip_find_line, (struct gpiod_chip *chip, const char *name)) \
    X(const char *, gpiod_line_name, (struct gpiod_line *line)) \
    X(int, gpiod_line_request_output_flags, (struct gpiod_line *line, const char *consumer, int flags, int default_val)) \
    X(int, gpiod_line_request_both_edges_events_flags, (struct gpiod_line *line, const char *consumer, int flags)) \
    X(int, gpiod_line_set_value, (struct gpiod_line *line, int value)) \
    X(int, gpiod_line_get_value, (struct gpiod_line *line)) \
    X(int, gpiod_line_event_get_fd, (struct gpiod_line *line)) \
    X(int, gpiod_line_event_read_fd, (int fd, struct gpiod_line_event *event)) \
    X(const char *, gpiod_version_string, (void))

#define LATCHKEY_GPIOD_FIELD(ret, name, params) ret (*name) params;
/// The library's functions, filled by latchkey_gpiod1_resolve (or by a test's fakes).
struct latchkey_gpiod1 {
    LATCHKEY_GPIOD1_FUNCTIONS(LATCHKEY_GPIOD_FIELD)
};
#undef LATCHKEY_GPIOD_FIELD

#endif
