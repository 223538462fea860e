/* What the HIL's plain ATT tools share (hil-att-bench.c, hil-att-flood.c): an LE L2CAP
 * socket on the ATT channel without libbluetooth (the few definitions it needs are here, so
 * the tools build static with gcc alone: Tests/hil/host/initramfs.sh), and a monotonic clock. */
#ifndef HIL_ATT_H
#define HIL_ATT_H
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <time.h>

#define AF_BLUETOOTH_ 31
#define BTPROTO_L2CAP_ 0
#define BDADDR_LE_PUBLIC_ 0x01
#define ATT_CID 4
#define MTU 247

struct sockaddr_l2_ {
    sa_family_t l2_family;
    unsigned short l2_psm;
    uint8_t l2_bdaddr[6];
    unsigned short l2_cid;
    uint8_t l2_bdaddr_type;
} __attribute__((packed));

static inline int parse_address(const char *text, uint8_t out[6]) {
    unsigned b[6];
    if (sscanf(text, "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]) != 6) return -1;
    for (int i = 0; i < 6; i++) out[i] = (uint8_t)b[5 - i];  /* bdaddr_t is little-endian */
    return 0;
}

/* An LE public address on the ATT channel, for bind() and connect(). */
static inline int att_address(const char *text, struct sockaddr_l2_ *out) {
    struct sockaddr_l2_ a = {AF_BLUETOOTH_, 0, {0}, ATT_CID, BDADDR_LE_PUBLIC_};
    *out = a;
    return parse_address(text, out->l2_bdaddr);
}

static inline double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
#endif
