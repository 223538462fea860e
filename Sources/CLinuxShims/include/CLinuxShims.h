// Tiny C shims for LatchkeyPosix: the calls Swift's Glibc module does not import
// (GNU extensions such as ppoll/accept4/pipe2, which need _GNU_SOURCE), the
// sockaddr_un plumbing, and an async-signal-safe signal handler that forwards a
// signal number into a self-pipe. Only LatchkeyPosix/Internal/Syscalls.swift calls these.
#ifndef LATCHKEY_CLINUXSHIMS_H
#define LATCHKEY_CLINUXSHIMS_H

#include <linux/filter.h>   /* struct sock_filter, sock_fprog: classic BPF socket filters */
#include <poll.h>
#include <stdint.h>

/// ppoll(2) with a relative timeout in nanoseconds; a negative timeout waits forever.
int latchkey_ppoll(struct pollfd *fds, unsigned long nfds, int64_t timeout_ns);

/// accept4(2) returning a non-blocking, close-on-exec socket.
int latchkey_accept_nonblocking(int fd);

/// pipe2(2) with O_NONBLOCK | O_CLOEXEC on both ends.
int latchkey_pipe_nonblocking(int fds[2]);

/// bind(2) / connect(2) an AF_UNIX socket to a filesystem path.
/// Fails with ENAMETOOLONG when the path does not fit sun_path.
int latchkey_unix_bind(int fd, const char *path);
int latchkey_unix_connect(int fd, const char *path);

/// sendto(2) of one datagram to the AF_UNIX address `name` (`name_length` bytes, a leading NUL
/// for the abstract namespace) carrying `fd` as SCM_RIGHTS (sendmsg(2), unix(7)): what
/// sd_pid_notify_with_fds does for FDSTORE=1. MSG_NOSIGNAL.
long latchkey_send_with_fd(int sock, const char *name, unsigned long name_length, const void *message,
                           unsigned long length, int fd);

/// Sets FD_CLOEXEC on `fd` (fcntl F_GETFD/F_SETFD); 0 or -1 with errno.
int latchkey_set_cloexec(int fd);

/// Whether FD_CLOEXEC is set on `fd`: 1, 0, or -1 with errno.
int latchkey_get_cloexec(int fd);

/// The credentials the kernel recorded for the peer of a connected AF_UNIX socket when it
/// connected (getsockopt SO_PEERCRED; struct ucred needs _GNU_SOURCE). 0, or -1 with errno.
int latchkey_peer_credentials(int fd, int32_t *pid, uint32_t *uid, uint32_t *gid);

/// memfd_create(2) with MFD_CLOEXEC | MFD_ALLOW_SEALING; the descriptor or -1 with errno.
int latchkey_memfd_create(const char *name);

/// Seals `fd` (a memfd) against growing, shrinking and further sealing (fcntl F_ADD_SEALS
/// with F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL); 0 or -1 with errno.
int latchkey_seal_size(int fd);

/// Whether `fd` carries the seals `latchkey_seal_size` adds: 1, 0, or -1 with errno (EINVAL:
/// not a memfd, which alone supports seals).
int latchkey_is_size_sealed(int fd);

/// sched_setscheduler(2) of the calling thread to SCHED_FIFO at `priority`, with
/// SCHED_RESET_ON_FORK (a GNU constant) so that children start under SCHED_OTHER.
/// 0, or -1 with errno.
int latchkey_sched_fifo(int priority);

/// setrlimit(2) RLIMIT_RTPRIO to 0, soft and hard: from now on neither this process's other
/// threads nor its children may ask for a real-time policy (without CAP_SYS_NICE).
/// 0, or -1 with errno.
int latchkey_forbid_realtime(void);

/// The policy of thread or process `pid` (0: the calling thread) — SCHED_OTHER 0, SCHED_FIFO 1,
/// SCHED_RR 2, ...; the reset-on-fork flag cleared — and its static priority in `*priority`;
/// -1 with errno.
int latchkey_sched_current(int pid, int *priority);

/// CLOCK_MONOTONIC in nanoseconds.
int64_t latchkey_monotonic_ns(void);

/// Installs a handler for `signo` that writes the signal number (one byte) to
/// `write_fd` (non-blocking; a full pipe drops the byte, as pending signals coalesce
/// anyway). Remembers the previous disposition for latchkey_signal_restore, and
/// unblocks `signo` in the calling thread (the loop's), which runtimes often block.
int latchkey_signal_forward(int signo, int write_fd);

/// Restores the disposition saved by latchkey_signal_forward.
int latchkey_signal_restore(int signo);

/// Bytes the process's malloc has handed out and not had back: glibc's mallinfo2()
/// uordblks (every arena's chunks in use) plus hblkhd (the chunks mmap'ed on their own).
/// Swift's Glibc module does not import mallinfo2 (malloc.h).
uint64_t latchkey_malloc_in_use(void);

#endif
