#define _GNU_SOURCE
#include "CLinuxShims.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int latchkey_ppoll(struct pollfd *fds, unsigned long nfds, int64_t timeout_ns) {
    if (timeout_ns < 0) return ppoll(fds, nfds, NULL, NULL);
    struct timespec ts = { .tv_sec = timeout_ns / 1000000000, .tv_nsec = timeout_ns % 1000000000 };
    return ppoll(fds, nfds, &ts, NULL);
}

int latchkey_accept_nonblocking(int fd) {
    return accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

int latchkey_peer_credentials(int fd, int32_t *pid, uint32_t *uid, uint32_t *gid) {
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return -1;
    *pid = cred.pid; *uid = cred.uid; *gid = cred.gid;
    return 0;
}

int latchkey_pipe_nonblocking(int fds[2]) {
    return pipe2(fds, O_NONBLOCK | O_CLOEXEC);
}

static int unix_address(struct sockaddr_un *sa, const char *path) {
    size_t len = strlen(path);
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    if (len == 0 || len >= sizeof sa->sun_path) { errno = ENAMETOOLONG; return -1; }
    memcpy(sa->sun_path, path, len);
    return 0;
}

int latchkey_unix_bind(int fd, const char *path) {
    struct sockaddr_un sa;
    if (unix_address(&sa, path) < 0) return -1;
    return bind(fd, (struct sockaddr *)&sa, sizeof sa);
}

int latchkey_unix_connect(int fd, const char *path) {
    struct sockaddr_un sa;
    if (unix_address(&sa, path) < 0) return -1;
    return connect(fd, (struct sockaddr *)&sa, sizeof sa);
}

long latchkey_send_with_fd(int sock, const char *name, unsigned long name_length, const void *message,
                           unsigned long length, int fd) {
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (name_length == 0 || name_length > sizeof sa.sun_path) { errno = ENAMETOOLONG; return -1; }
    memcpy(sa.sun_path, name, name_length);
    socklen_t sa_length = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + name_length
                                      + (name[0] == 0 ? 0 : 1));
    if (sa_length > sizeof sa) sa_length = sizeof sa;
    struct iovec iov = { .iov_base = (void *)message, .iov_len = length };
    union {
        struct cmsghdr header;
        char space[CMSG_SPACE(sizeof(int))];
    } control;
    memset(&control, 0, sizeof control);
    struct msghdr msg = {
        .msg_name = &sa, .msg_namelen = sa_length, .msg_iov = &iov, .msg_iovlen = 1,
        .msg_control = control.space, .msg_controllen = sizeof control.space,
    };
    struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
    return (long)sendmsg(sock, &msg, MSG_NOSIGNAL);
}

int latchkey_set_cloexec(int fd) {
    int flags = fcntl(fd, F_GETFD);
    if (flags < 0) return -1;
    return fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

int latchkey_get_cloexec(int fd) {
    int flags = fcntl(fd, F_GETFD);
    if (flags < 0) return -1;
    return (flags & FD_CLOEXEC) ? 1 : 0;
}

int64_t latchkey_monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// One write fd per signal number; -1 when not forwarded. Read from the handler, so
// it is an atomic int (async-signal-safe, lock-free on Linux targets).
static atomic_int forward_fd[NSIG] = { [0 ... NSIG - 1] = -1 };
static struct sigaction saved_action[NSIG];

static void forward_signal(int signo) {
    int saved_errno = errno;  // the interrupted code may be about to read errno
    int fd = atomic_load(&forward_fd[signo]);
    if (fd >= 0) {
        unsigned char byte = (unsigned char)signo;
        (void)!write(fd, &byte, 1);
    }
    errno = saved_errno;
}

int latchkey_signal_forward(int signo, int write_fd) {
    if (signo <= 0 || signo >= NSIG) { errno = EINVAL; return -1; }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;  // other blocking calls resume; ppoll still returns EINTR
    // Threads inherit masks, and runtimes (Dispatch workers, test runners) block most
    // signals in theirs; the loop's own thread must be able to take it.
    sigset_t unblock;
    sigemptyset(&unblock);
    sigaddset(&unblock, signo);
    pthread_sigmask(SIG_UNBLOCK, &unblock, NULL);
    int previous = atomic_exchange(&forward_fd[signo], write_fd);
    if (previous >= 0) return 0;  // handler already installed; only the target fd changed
    if (sigaction(signo, &sa, &saved_action[signo]) < 0) {
        atomic_store(&forward_fd[signo], -1);
        return -1;
    }
    return 0;
}

int latchkey_signal_restore(int signo) {
    if (signo <= 0 || signo >= NSIG) { errno = EINVAL; return -1; }
    if (atomic_exchange(&forward_fd[signo], -1) < 0) return 0;
    return sigaction(signo, &saved_action[signo], NULL);
}

int latchkey_memfd_create(const char *name) {
    return memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
}

static const int latchkey_size_seals = F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL;

int latchkey_seal_size(int fd) {
    return fcntl(fd, F_ADD_SEALS, latchkey_size_seals);
}

int latchkey_is_size_sealed(int fd) {
    int seals = fcntl(fd, F_GET_SEALS);
    if (seals < 0) return -1;
    return (seals & latchkey_size_seals) == latchkey_size_seals;
}

int latchkey_sched_fifo(int priority) {
    struct sched_param param = { .sched_priority = priority };
    return sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &param);
}

int latchkey_sched_current(int pid, int *priority) {
    int policy = sched_getscheduler(pid);
    if (policy < 0) return -1;
    struct sched_param param;
    if (sched_getparam(pid, &param) < 0) return -1;
    *priority = param.sched_priority;
    return policy & ~SCHED_RESET_ON_FORK;
}

int latchkey_forbid_realtime(void) {
    struct rlimit none = { .rlim_cur = 0, .rlim_max = 0 };
    return setrlimit(RLIMIT_RTPRIO, &none);
}

uint64_t latchkey_malloc_in_use(void) {
    struct mallinfo2 info = mallinfo2();
    return (uint64_t)info.uordblks + (uint64_t)info.hblkhd;
}
