/* hil-att-flood: the kernel's raw notification rate for the log-transfer benchmark
 * (scenario 61-bench-log-transfer): what the kernel, btvirt and the VM carry over one LE ATT
 * link when nothing but a tight loop makes the notifications, the ceiling beside which the
 * lock's log transfer is printed. Two sides, one on each controller:
 *
 *   hil-att-flood serve LOCAL-ADDRESS N [MTU]   accepts one LE link on the ATT channel,
 *                                               answers its Exchange MTU with MTU (247), then
 *                                               sends N Handle Value Notifications of MTU - 3
 *                                               octets (the size of the lock's chunks at that
 *                                               MTU) as fast as the socket takes them (a full
 *                                               send queue blocks: back-pressure), and waits
 *                                               for the peer to close
 *   hil-att-flood count LOCAL SERVER-ADDRESS N [MTU]   connects, exchanges the MTU, counts N
 *
 * Each notification's value starts with its number (32 bits, little-endian), the rest a
 * pattern, so the counter sees a lost, repeated or reordered one. `count` prints
 *
 *   ATT-FLOOD notifications=N octets=O seconds=S notifications_per_s=R kb_per_s=K first_ms=F streaming_kb_per_s=T lost=L out_of_order=X value_len=V mtu=M
 *
 * timed from the MTU response (the server starts at once after sending it) to the last
 * notification, as the phone times its log fetch from the request to the last chunk; kb_per_s
 * is octets of values (1 KB = 1,000 octets) per second. first_ms: the MTU response to the
 * first notification; streaming_kb_per_s: the octets after the first over the time from the
 * first to the last (the rate once the stream runs). `serve` prints `ATT-FLOOD-SERVE
 * sent=N seconds=S`. Exit status 0 when all N crossed in order, 1 otherwise (the reason on
 * stderr); a silent peer ends either side after 10 s (SO_RCVTIMEO / SO_SNDTIMEO). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "hil-att.h"

#define MAX_MTU 517  /* the largest ATT_MTU (Core 5.x, Vol 3, Part F, 3.2.8) */
#define HANDLE 0x0003  /* any handle: the counter subscribes to nothing, it only counts */

static void bounded(int fd) {
    struct timeval limit = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
}

static int serve(const char *local_text, long n, int mtu) {
    struct sockaddr_l2_ local;
    if (att_address(local_text, &local)) { fprintf(stderr, "bad address\n"); return 2; }
    int listener = socket(AF_BLUETOOTH_, SOCK_SEQPACKET, BTPROTO_L2CAP_);
    if (listener < 0) { perror("socket"); return 1; }
    if (bind(listener, (struct sockaddr *)&local, sizeof local) < 0) { perror("bind"); return 1; }
    if (listen(listener, 1) < 0) { perror("listen"); return 1; }
    int fd = accept(listener, NULL, NULL);
    if (fd < 0) { perror("accept"); return 1; }
    close(listener);
    bounded(fd);

    uint8_t pdu[MAX_MTU + 8];
    for (;;) {  /* the peer's Exchange MTU Request; anything else before it is refused */
        ssize_t r = recv(fd, pdu, sizeof pdu, 0);
        if (r <= 0) { fprintf(stderr, "recv: %s\n", r == 0 ? "end of stream" : strerror(errno)); return 1; }
        if (pdu[0] == 0x02) break;
        if (!(pdu[0] & 0x40) && (pdu[0] & 1) == 0) {
            uint8_t e[5] = {0x01, pdu[0], 0, 0, 0x06};  /* Request Not Supported */
            send(fd, e, sizeof e, 0);
        }
    }
    uint8_t answer[3] = {0x03, mtu & 0xFF, mtu >> 8};
    if (send(fd, answer, sizeof answer, 0) < 0) { perror("send MTU"); return 1; }

    pdu[0] = 0x1B;
    pdu[1] = HANDLE & 0xFF;
    pdu[2] = HANDLE >> 8;
    for (int i = 7; i < mtu; i++) pdu[i] = (uint8_t)i;
    double start = now_us();
    for (long i = 0; i < n; i++) {
        uint32_t s = (uint32_t)i;
        memcpy(pdu + 3, &s, 4);  /* little-endian on every machine this runs on (x86-64, arm64) */
        if (send(fd, pdu, mtu, 0) != mtu) {
            fprintf(stderr, "send %ld: %s\n", i, strerror(errno));
            return 1;
        }
    }
    printf("ATT-FLOOD-SERVE sent=%ld seconds=%.3f\n", n, (now_us() - start) / 1e6);
    fflush(stdout);
    /* Closing now could drop what the kernel still queues: wait for the counter to close. */
    while (recv(fd, pdu, sizeof pdu, 0) > 0) {}
    close(fd);
    return 0;
}

static int count(const char *local_text, const char *server_text, long n, int mtu) {
    struct sockaddr_l2_ local, remote;
    if (att_address(local_text, &local) || att_address(server_text, &remote)) { fprintf(stderr, "bad address\n"); return 2; }
    int fd = socket(AF_BLUETOOTH_, SOCK_SEQPACKET, BTPROTO_L2CAP_);
    if (fd < 0) { perror("socket"); return 1; }
    bounded(fd);
    if (bind(fd, (struct sockaddr *)&local, sizeof local) < 0) { perror("bind"); return 1; }
    if (connect(fd, (struct sockaddr *)&remote, sizeof remote) < 0) { perror("connect"); return 1; }

    uint8_t pdu[MAX_MTU + 8];
    uint8_t request[3] = {0x02, mtu & 0xFF, mtu >> 8};
    if (send(fd, request, sizeof request, 0) < 0) { perror("send MTU"); return 1; }
    ssize_t r;
    do { r = recv(fd, pdu, sizeof pdu, 0); } while (r > 0 && pdu[0] != 0x03);
    if (r <= 0) { fprintf(stderr, "no Exchange MTU Response: %s\n", r == 0 ? "end of stream" : strerror(errno)); return 1; }

    double start = now_us(), first = start, last = start;
    long received = 0, out_of_order = 0, octets = 0;
    int value_len = -1, status = 0;
    while (received < n) {
        r = recv(fd, pdu, sizeof pdu, 0);
        if (r <= 0) {
            fprintf(stderr, "after %ld notifications: %s\n", received, r == 0 ? "end of stream" : strerror(errno));
            status = 1;
            break;
        }
        if (pdu[0] != 0x1B || r < 7) continue;  /* not one of ours */
        uint32_t s;
        memcpy(&s, pdu + 3, 4);
        if (s != (uint32_t)received) out_of_order++;
        received++;
        octets += r - 3;
        value_len = (int)(r - 3);
        last = now_us();
        if (received == 1) first = last;
    }
    double seconds = (last - start) / 1e6;
    if (seconds <= 0) seconds = 1e-6;
    long lost = n - received;
    double streaming = (last - first) / 1e6;
    printf("ATT-FLOOD notifications=%ld octets=%ld seconds=%.4f notifications_per_s=%.0f kb_per_s=%.1f first_ms=%.1f "
           "streaming_kb_per_s=%.1f lost=%ld out_of_order=%ld value_len=%d mtu=%d\n",
           received, octets, seconds, received / seconds, octets / seconds / 1000, (first - start) / 1e3,
           streaming > 0 ? (octets - value_len) / streaming / 1000 : 0, lost, out_of_order, value_len, mtu);
    close(fd);
    return status || lost || out_of_order ? 1 : 0;
}

int main(int argc, char **argv) {
    int serving = argc >= 4 && strcmp(argv[1], "serve") == 0, counting = argc >= 5 && strcmp(argv[1], "count") == 0;
    int extra = serving ? 4 : 5;  /* where the optional MTU is */
    int mtu = argc > extra ? atoi(argv[extra]) : MTU;
    long n = argc > extra - 1 ? atol(argv[extra - 1]) : 0;
    if ((serving || counting) && argc <= extra + 1 && n > 0 && mtu >= 23 + 4 && mtu <= MAX_MTU)
        return serving ? serve(argv[2], n, mtu) : count(argv[2], argv[3], n, mtu);
    fprintf(stderr, "usage: hil-att-flood serve LOCAL N [MTU] | hil-att-flood count LOCAL SERVER N [MTU] (MTU 27...517, 247)\n");
    return 2;
}
