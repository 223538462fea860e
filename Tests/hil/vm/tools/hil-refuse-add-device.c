/*
 * hil-refuse-add-device: an LD_PRELOAD shim that makes the kernel refuse a process's mgmt
 * Add Device commands for as long as a flag file exists (HIL scenario 12).
 *
 *   LD_PRELOAD=/usr/lib/hil-refuse-add-device.so \
 *   HIL_REFUSE_FLAG=/run/hil/refuse-add-device HIL_REFUSE_LOG=/tmp/refusals latchkey phone ...
 *
 * It wraps send(2), the one call latchkey writes its mgmt commands with
 * (LatchkeyKernelSockets/Internal/Syscalls.swift; the binary links glibc dynamically, so the
 * preloaded definition wins). A message on an HCI control-channel socket that is an Add
 * Device (opcode 0x0033, 8 octets of parameters: address, address type, action) goes out
 * with its address type set to 0xFF while HIL_REFUSE_FLAG exists. No such type exists
 * (0 BR/EDR, 1 LE public, 2 LE random), so the kernel itself answers Command Complete with
 * Invalid Parameters (net/bluetooth/mgmt.c add_device, bdaddr_type_is_valid) and installs
 * nothing: a real refusal from the real kernel, through the agent's own socket. Each
 * rewritten command appends one line to HIL_REFUSE_LOG, so the scenario can hold the
 * agent's reported refusals against the commands that were refused. Everything else passes
 * through untouched; without both variables it does nothing.
 *
 * Built by Tests/hil/host/initramfs.sh (gcc -shared) against the host's glibc, the one the
 * initramfs carries.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define HIL_AF_BLUETOOTH 31
#define HIL_BTPROTO_HCI 1
#define HIL_HCI_CHANNEL_CONTROL 3
#define MGMT_OP_ADD_DEVICE 0x0033
#define MGMT_HEADER 6
#define ADD_DEVICE_PARAMETERS 8
#define INVALID_ADDRESS_TYPE 0xFF

struct hil_sockaddr_hci {  /* <bluetooth/hci.h>'s sockaddr_hci, without the header */
    sa_family_t hci_family;
    unsigned short hci_dev;
    unsigned short hci_channel;
};

typedef ssize_t (*send_function)(int, const void *, size_t, int);

/* An HCI socket (AF_BLUETOOTH, BTPROTO_HCI) on the control channel. getsockname cannot say
 * so for the mgmt socket itself: hci_sock_getname answers EBADFD for a socket bound to no
 * controller, which the control channel's is; one bound to a controller must name the
 * control channel. */
static int is_mgmt_socket(int fd) {
    int domain = 0, protocol = -1;
    socklen_t length = sizeof domain;
    if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &length) != 0 || domain != HIL_AF_BLUETOOTH) return 0;
    length = sizeof protocol;
    if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &length) != 0 || protocol != HIL_BTPROTO_HCI) return 0;
    struct hil_sockaddr_hci address;
    length = sizeof address;
    memset(&address, 0, sizeof address);
    if (getsockname(fd, (struct sockaddr *)&address, &length) == 0) return address.hci_channel == HIL_HCI_CHANNEL_CONTROL;
    return 1;
}

static int is_add_device(const uint8_t *m, size_t length) {
    return length == MGMT_HEADER + ADD_DEVICE_PARAMETERS
        && (m[0] | m[1] << 8) == MGMT_OP_ADD_DEVICE
        && (m[4] | m[5] << 8) == ADD_DEVICE_PARAMETERS;
}

static void log_refusal(const uint8_t *m) {
    const char *path = getenv("HIL_REFUSE_LOG");
    if (!path) return;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return;
    char line[96];
    /* the address as mgmt carries it (little-endian) printed the usual way, and the type sent */
    int n = snprintf(line, sizeof line, "add-device %02X:%02X:%02X:%02X:%02X:%02X type %u -> %u\n",
                     m[11], m[10], m[9], m[8], m[7], m[6], m[12], INVALID_ADDRESS_TYPE);
    if (n > 0) (void)!write(fd, line, (size_t)n);
    close(fd);
}

ssize_t send(int fd, const void *buffer, size_t length, int flags) {
    static send_function real_send;
    if (!real_send) real_send = (send_function)dlsym(RTLD_NEXT, "send");
    const char *flag = getenv("HIL_REFUSE_FLAG");
    if (flag && is_add_device(buffer, length) && access(flag, F_OK) == 0 && is_mgmt_socket(fd)) {
        uint8_t copy[MGMT_HEADER + ADD_DEVICE_PARAMETERS];
        memcpy(copy, buffer, sizeof copy);
        copy[MGMT_HEADER + 6] = INVALID_ADDRESS_TYPE;
        ssize_t sent = real_send(fd, copy, sizeof copy, flags);
        if (sent == (ssize_t)sizeof copy) log_refusal(buffer);
        return sent;
    }
    return real_send(fd, buffer, length, flags);
}
