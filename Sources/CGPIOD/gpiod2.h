// libgpiod 2.x (libgpiod.so.3, Debian package libgpiod3: Debian 13 / Raspberry Pi OS trixie,
// bookworm-backports has 2.1), the v2 API, as the calls Latchkey makes. Hand-written for the
// reason gpiod1.h gives; checked against the real 2.x header the same way. The v2 enums are
// passed as their integer type (GCC and Clang give an enum without negative values
// `unsigned int`, and `enum gpiod_line_value` with its -1 `int`); the check proves it.
#ifndef LATCHKEY_CGPIOD_GPIOD2_H
#define LATCHKEY_CGPIOD_GPIOD2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gpiod_chip;
struct gpiod_chip_info;
struct gpiod_line_info;
struct gpiod_line_settings;
struct gpiod_line_config;
struct gpiod_request_config;
struct gpiod_line_request;
struct gpiod_edge_event;
struct gpiod_edge_event_buffer;

// The enum values Latchkey uses (gpiod.h 2.x: enum gpiod_line_*, gpiod_edge_event_type).
enum {
    LATCHKEY_GPIOD2_VALUE_INACTIVE = 0,
    LATCHKEY_GPIOD2_VALUE_ACTIVE = 1,
    LATCHKEY_GPIOD2_DIRECTION_INPUT = 2,
    LATCHKEY_GPIOD2_DIRECTION_OUTPUT = 3,
    LATCHKEY_GPIOD2_EDGE_BOTH = 4,
    LATCHKEY_GPIOD2_BIAS_AS_IS = 1,
    LATCHKEY_GPIOD2_BIAS_DISABLED = 3,
    LATCHKEY_GPIOD2_BIAS_PULL_UP = 4,
    LATCHKEY_GPIOD2_BIAS_PULL_DOWN = 5,
    LATCHKEY_GPIOD2_CLOCK_MONOTONIC = 1,
    LATCHKEY_GPIOD2_EVENT_RISING_EDGE = 1,
    LATCHKEY_GPIOD2_EVENT_FALLING_EDGE = 2,
};

#define LATCHKEY_GPIOD2_FUNCTIONS(X) \
    X(struct gpiod_chip *, gpiod_chip_open, (const char *path)) \
    X(void, gpiod_chip_close, (struct gpiod_chip *chip)) \
    X(struct gpiod_chip_info *, gpiod_chip_get_info, (struct gpiod_chip *chip)) \
    X(void, gpiod_chip_info_free, (struct gpiod_chip_info *info)) \
    X(const char *, gpiod_chip_info_get_label, (struct gpiod_chip_info *info)) \
    X(size_t, gpiod_chip_info_get_num_lines, (struct gpiod_chip_info *info)) \
    X(struct gpiod_line_info *, gpiod_chip_get_line_info, (struct gpiod_chip *chip, unsigned int offset)) \
    X(void, gpiod_line_info_free, (struct gpiod_line_info *info)) \
    X(const char *, gpiod_line_info_get_name, (struct gpiod_line_info *info)) \
    X(int, gpiod_chip_get_line_offset_from_name, (struct gpiod_chip *chip, const char *name)) \
    X(struct gpiod_line_settings *, gpiod_line_settings_new, (void)) \
    X(void, gpiod_line_settings_free, (struct gpiod_line_settings *settings)) \
    X(int, gpiod_line_settings_set_direction, (struct gpiod_line_settings *settings, unsigned int direction)) \
    X(int, gpiod_line_settings_set_edge_detection, (struct gpiod_line_settings *settings, unsigned int edge)) \
    X(int, gpiod_line_settings_set_bias, (struct gpiod_line_settings *settings, unsigned int bias)) \
    X(void, gpiod_line_settings_set_active_low, (struct gpiod_line_settings *settings, bool active_low)) \
    X(void, gpiod_line_settings_set_debounce_period_us, (struct gpiod_line_settings *settings, unsigned long period)) \
    X(int, gpiod_line_settings_set_event_clock, (struct gpiod_line_settings *settings, unsigned int event_clock)) \
    X(int, gpiod_line_settings_set_output_value, (struct gpiod_line_settings *settings, int value)) \
    X(struct gpiod_line_config *, gpiod_line_config_new, (void)) \
    X(void, gpiod_line_config_free, (struct gpiod_line_config *config)) \
    X(int, gpiod_line_config_add_line_settings, (struct gpiod_line_config *config, const unsigned int *offsets, size_t num_offsets, struct gpiod_line_settings *settings)) \
    X(struct gpiod_request_config *, gpiod_request_config_new, (void)) \
    X(void, gpiod_request_config_free, (struct gpiod_request_config *config)) \
    X(void, gpiod_request_config_set_consumer, (struct gpiod_request_config *config, const char *consumer)) \
    X(struct gpiod_line_request *, gpiod_chip_request_lines, (struct gpiod_chip *chip, struct gpiod_request_config *req_cfg, struct gpiod_line_config *line_cfg)) \
    X(void, gpiod_line_request_release, (struct gpiod_line_request *request)) \
    X(int, gpiod_line_request_get_value, (struct gpiod_line_request *request, unsigned int offset)) \
    X(int, gpiod_line_request_set_value, (struct gpiod_line_request *request, unsigned int offset, int value)) \
    X(int, gpiod_line_request_get_fd, (struct gpiod_line_request *request)) \
    X(int, gpiod_line_request_read_edge_events, (struct gpiod_line_request *request, struct gpiod_edge_event_buffer *buffer, size_t max_events)) \
    X(struct gpiod_edge_event_buffer *, gpiod_edge_event_buffer_new, (size_t capacity)) \
    X(void, gpiod_edge_event_buffer_free, (struct gpiod_edge_event_buffer *buffer)) \
    X(struct gpiod_edge_event *, gpiod_edge_event_buffer_get_event, (struct gpiod_edge_event_buffer *buffer, unsigned long index)) \
    X(unsigned int, gpiod_edge_event_get_event_type, (struct gpiod_edge_event *event)) \
    X(uint64_t, gpiod_edge_event_get_timestamp_ns, (struct gpiod_edge_event *event)) \
    X(const char *, gpiod_api_version, (void))

#define LATCHKEY_GPIOD_FIELD(ret, name, params) ret (*name) params;
/// The library's functions, filled by latchkey_gpiod2_resolve (or by a test's fakes).
struct latchkey_gpiod2 {
    LATCHKEY_GPIOD2_FUNCTIONS(LATCHKEY_GPIOD_FIELD)
};
#undef LATCHKEY_GPIOD_FIELD

#endif
