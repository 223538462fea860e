/*
 * hil-clock: the HIL VM's stopwatch, on CLOCK_MONOTONIC, the clock the agents stamp their
 * timeline events with ("t_ms"), so a shell-side action and an agent's event compare.
 *
 *   hil-clock now                          print the time in ms (microsecond digits)
 *   hil-clock wait FILE VALUE TIMEOUT_MS   wait until FILE reads VALUE; print the time it did
 *
 * `wait` exists because gpio-sim's sysfs `value` attribute never notifies (no
 * sysfs_notify), so the only way to see an output line change from outside the process
 * that drives it is to read it again and again; 100 us between reads bounds the error of
 * the actuator figure. Exits 1 on timeout, after printing the last value read.
 *
 * Built static by Tests/hil/host/initramfs.sh (gcc -static), so it needs nothing in the VM.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Reads FILE into buf without the trailing newline; returns 0 when it could not. */
static int read_value(const char *path, char *buf, size_t size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, size - 1);
    close(fd);
    if (n < 0) return 0;
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ')) n--;
    buf[n] = 0;
    return 1;
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "now") == 0) {
        printf("%.3f\n", now_ms());
        return 0;
    }
    if (argc == 5 && strcmp(argv[1], "wait") == 0) {
        double deadline = now_ms() + atof(argv[4]);
        char value[256] = "";
        /* gpio-sim's sysfs `value` raises no change notification (no sysfs_notify), so the
         * only way to see the line move from outside is to read it: every 100 us, bounded by
         * the caller's timeout. This is the VM's logic analyser, not a unit test's wait. */
        const struct timespec pause = {0, 100 * 1000};
        for (;;) {
            double t = now_ms();
            if (read_value(argv[2], value, sizeof value) && strcmp(value, argv[3]) == 0) {
                printf("%.3f\n", t);
                return 0;
            }
            if (t > deadline) {
                fprintf(stderr, "hil-clock: %s still reads '%s' (waited for '%s')\n", argv[2], value, argv[3]);
                return 1;
            }
            nanosleep(&pause, NULL);
        }
    }
    fprintf(stderr, "usage: hil-clock now | hil-clock wait FILE VALUE TIMEOUT_MS\n");
    return 2;
}
