// libmosquitto 2.0 (apt: libmosquitto-dev; at run time libmosquitto1), MQTT 5, for LatchkeyMQTT only.
#include <mosquitto.h>
#include <mqtt_protocol.h>
