// libmosquitto 2.0 (apt: libmosquitto-dev; at run time libmosquitto1), MQTT 5, for LatchkeyMQTT
// only. Loaded at run time, not linked: only `latchkey mqtt` uses it, and linking it mapped it
// and OpenSSL (about 1.8 MB resident) into the lock and phone agents, which never speak MQTT.
// The table's field types come from the real header (__typeof__), so they cannot drift from it.
#ifndef LATCHKEY_CMOSQUITTO_SHIM_H
#define LATCHKEY_CMOSQUITTO_SHIM_H

#include <dlfcn.h>
#include <mosquitto.h>
#include <mqtt_protocol.h>

#define LATCHKEY_MOSQUITTO_FUNCTIONS(X) \
    X(mosquitto_lib_init) X(mosquitto_new) X(mosquitto_destroy) X(mosquitto_user_data_set) \
    X(mosquitto_threaded_set) X(mosquitto_int_option) X(mosquitto_connect_v5_callback_set) \
    X(mosquitto_disconnect_v5_callback_set) X(mosquitto_publish_v5_callback_set) \
    X(mosquitto_message_v5_callback_set) X(mosquitto_property_read_int32) X(mosquitto_username_pw_set) \
    X(mosquitto_tls_set) X(mosquitto_will_set_v5) X(mosquitto_connect_async) X(mosquitto_reconnect_async) \
    X(mosquitto_disconnect) X(mosquitto_socket) X(mosquitto_want_write) X(mosquitto_loop_read) \
    X(mosquitto_loop_write) X(mosquitto_loop_misc) X(mosquitto_property_free_all) \
    X(mosquitto_property_add_int32) X(mosquitto_publish_v5) X(mosquitto_subscribe_v5) X(mosquitto_strerror) \
    X(mosquitto_reason_string)

#define LATCHKEY_MOSQUITTO_FIELD(name) __typeof__(&name) name;
/// The library's functions, filled by latchkey_mosquitto_resolve.
struct latchkey_mosquitto {
    LATCHKEY_MOSQUITTO_FUNCTIONS(LATCHKEY_MOSQUITTO_FIELD)
};
#undef LATCHKEY_MOSQUITTO_FIELD

#define LATCHKEY_MOSQUITTO_RESOLVE(name) \
    if (!(table->name = (__typeof__(&name))dlsym(library, #name))) return #name;

/// Fills `table` from `library` (a dlopen handle): NULL when every function resolved, else
/// the name of the first one missing.
static inline const char *latchkey_mosquitto_resolve(void *library, struct latchkey_mosquitto *table) {
    LATCHKEY_MOSQUITTO_FUNCTIONS(LATCHKEY_MOSQUITTO_RESOLVE)
    return 0;
}
#undef LATCHKEY_MOSQUITTO_RESOLVE

#endif
