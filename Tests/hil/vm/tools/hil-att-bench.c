/* hil-att-bench: a plain ATT client for the GATT server benchmark (scenario
 * 60-bench-gatt-vs-bluez). It connects an LE L2CAP socket on the ATT channel (CID 4) from
 * the local controller's address to the server's, exchanges the MTU (247), finds the Device
 * Name (0x2A00) with one Read By Type, then sends Read Requests for it, one outstanding at a
 * time: WARMUP untimed, then N timed from send to response. It prints one line:
 *
 *   ATT-BENCH reads=N seconds=S reads_per_s=R p50_us=A p99_us=B max_us=C value_len=L handle=0xHHHH served=K
 *
 * (served: the server's own requests this client answered, see below). A server may act as
 * a GATT client on the same bearer too (bluetoothd discovers every central that connects):
 * its requests are answered as a minimal GATT server would (our MTU; Request Not Supported
 * for everything else) and the read in flight goes on waiting for its response.
 * Exit status: 0 when every read got its Read Response, 1 otherwise (the reason on stderr).
 *
 *   hil-att-bench LOCAL-ADDRESS SERVER-ADDRESS N [WARMUP]
 *
 * No libbluetooth: the few definitions it needs are in hil-att.h, so it builds static with
 * gcc alone (Tests/hil/host/initramfs.sh). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "hil-att.h"

static int fd;
static unsigned served;

/* Receives PDUs until one with `opcode` (or an Error Response) arrives; answers the server's
 * own requests on the way. Returns its length, or -1. */
static int receive(uint8_t opcode, uint8_t *pdu, size_t capacity) {
    for (;;) {
        ssize_t n = recv(fd, pdu, capacity, 0);
        if (n <= 0) { fprintf(stderr, "recv: %s\n", n == 0 ? "end of stream" : strerror(errno)); return -1; }
        if (pdu[0] == opcode || pdu[0] == 0x01) return (int)n;
        if (pdu[0] == 0x02) {                       /* Exchange MTU Request: ours */
            uint8_t r[3] = {0x03, MTU & 0xFF, MTU >> 8};
            send(fd, r, sizeof r, 0);
            served++;
        } else if (pdu[0] == 0x1D) {                /* an indication: confirmed */
            uint8_t r[1] = {0x1E};
            send(fd, r, sizeof r, 0);
        } else if (!(pdu[0] & 0x40) && pdu[0] != 0x1E && (pdu[0] & 1) == 0) {
            /* Another request (even opcode, not a command, not a confirmation): not supported. */
            uint8_t r[5] = {0x01, pdu[0], 0, 0, 0x06};
            send(fd, r, sizeof r, 0);
            served++;
        }
        /* Notifications and commands: nothing to answer. */
    }
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: hil-att-bench LOCAL SERVER N [WARMUP]\n"); return 2; }
    struct sockaddr_l2_ local, remote;
    if (att_address(argv[1], &local) || att_address(argv[2], &remote)) {
        fprintf(stderr, "bad address\n");
        return 2;
    }
    int n = atoi(argv[3]), warmup = argc > 4 ? atoi(argv[4]) : 100;
    if (n < 1 || warmup < 0) { fprintf(stderr, "bad count\n"); return 2; }

    fd = socket(AF_BLUETOOTH_, SOCK_SEQPACKET, BTPROTO_L2CAP_);
    if (fd < 0) { perror("socket"); return 1; }
    /* A server that does not link or stops answering fails the run, it does not hang it (the
     * kernel bounds an L2CAP connect by the send timeout). */
    struct timeval limit = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
    if (bind(fd, (struct sockaddr *)&local, sizeof local) < 0) { perror("bind"); return 1; }
    if (connect(fd, (struct sockaddr *)&remote, sizeof remote) < 0) { perror("connect"); return 1; }

    uint8_t pdu[MTU + 8];
    uint8_t mtu[3] = {0x02, MTU & 0xFF, MTU >> 8};
    if (send(fd, mtu, sizeof mtu, 0) < 0 || receive(0x03, pdu, sizeof pdu) < 0) return 1;
    if (pdu[0] != 0x03) { fprintf(stderr, "Exchange MTU refused (0x%02x)\n", pdu[4]); return 1; }

    /* Read By Type 0x2A00 over the whole database: its first handle. */
    uint8_t by_type[7] = {0x08, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x2A};
    int len = (send(fd, by_type, sizeof by_type, 0) < 0) ? -1 : receive(0x09, pdu, sizeof pdu);
    if (len < 4 || pdu[0] != 0x09) { fprintf(stderr, "no Device Name (Read By Type answered 0x%02x)\n", pdu[0]); return 1; }
    uint16_t handle = pdu[2] | pdu[3] << 8;

    double *times = malloc(sizeof(double) * n);
    if (!times) return 1;
    uint8_t read[3] = {0x0A, handle & 0xFF, handle >> 8};
    int value_len = -1;
    double start = 0;
    for (int i = -warmup; i < n; i++) {
        if (i == 0) start = now_us();
        double t0 = now_us();
        if (send(fd, read, sizeof read, 0) < 0) { perror("send"); return 1; }
        len = receive(0x0B, pdu, sizeof pdu);
        if (len < 0) return 1;
        if (pdu[0] != 0x0B) { fprintf(stderr, "read %d: Error Response 0x%02x\n", i, pdu[4]); return 1; }
        if (i >= 0) times[i] = now_us() - t0;
        value_len = len - 1;
    }
    double seconds = (now_us() - start) / 1e6;
    qsort(times, n, sizeof(double), compare);
    printf("ATT-BENCH reads=%d seconds=%.3f reads_per_s=%.0f p50_us=%.0f p99_us=%.0f max_us=%.0f value_len=%d handle=0x%04x served=%u\n",
           n, seconds, n / seconds, times[n / 2], times[(int)(n * 0.99)], times[n - 1], value_len, handle, served);
    close(fd);
    return 0;
}
