#if canImport(Glibc)
import Glibc
#endif
import LatchkeyControl
import LatchkeyPosix

/// An agent process the demo starts: its standard output (and error) is read line by line
/// on the demo's loop, so the demo reacts to what the agent reports, as it happens.
package final class ChildProcess {
    package let name: String
    package let pid: pid_t
    private var fd: CInt
    private var watch: Watch?
    private var partial: [UInt8] = []
    package var onLine: ((String) -> Void)?
    package private(set) var exitStatus: Int32?
    /// The process closed its output (it exited or was killed) and every line was read.
    package var outputEnded: Bool { watch == nil }

    package init(name: String, executable: String, arguments: [String], loop: PosixEventLoop) throws(RuntimeError) {
        self.name = name
        var pipeFDs: [CInt] = [0, 0]
        guard pipe(&pipeFDs) == 0 else { throw RuntimeError("pipe: errno \(errno)") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], STDOUT_FILENO)
        posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], STDERR_FILENO)
        posix_spawn_file_actions_addclose(&actions, pipeFDs[0])
        posix_spawn_file_actions_addclose(&actions, pipeFDs[1])
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var child: pid_t = 0
        let rc = posix_spawn(&child, executable, &actions, nil, argv, environ)
        close(pipeFDs[1])
        guard rc == 0 else {
            close(pipeFDs[0])
            throw RuntimeError("cannot start \(name) (\(executable)): error \(rc)")
        }
        pid = child
        fd = pipeFDs[0]
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        watch = loop.watch(fd: fd, events: .readable) { [weak self] _ in self?.readAvailable() }
    }

    private func readAvailable() {
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n > 0 {
                partial += buffer[0..<n]
                while let nl = partial.firstIndex(of: 0x0A) {
                    let line = String(decoding: partial[..<nl], as: UTF8.self)
                    partial.removeSubrange(...nl)
                    onLine?(line)
                }
                continue
            }
            if n < 0 && (errno == EAGAIN || errno == EINTR) { return }
            // End of output: the process closed its side (exited or was killed).
            watch?.cancel(); watch = nil
            return
        }
    }

    /// Whether the process is still running (reaps it when it has exited).
    package var isRunning: Bool {
        guard exitStatus == nil else { return false }
        var status: Int32 = 0
        let r = waitpid(pid, &status, WNOHANG)
        if r == pid { exitStatus = status; return false }
        return r == 0
    }

    package func signal(_ signo: Int32) { if isRunning { kill(pid, signo) } }

    /// Waits for the process to end and reaps it (once its output ended, it is ending).
    package func waitForExit() -> Int32 {
        if let exitStatus { return exitStatus }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        exitStatus = status
        return status
    }

    /// SIGKILL and reap: the process gets no chance to clean up.
    package func killHard() {
        guard exitStatus == nil else { return }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        _ = waitpid(pid, &status, 0)
        exitStatus = status
    }

    /// SIGTERM, then SIGKILL if it has not gone after a moment.
    package func stop(loop: PosixEventLoop) {
        guard exitStatus == nil else { return }
        kill(pid, SIGTERM)
        // A loop error ends the grace period early: killHard below ends the process either way.
        _ = try? loop.run(until: { !self.isRunning }, timeout: .seconds(3))
        killHard()
    }

    deinit {
        watch?.cancel()
        close(fd)
    }
}

/// The path of the running executable (the demo starts copies of itself as agents).
package func currentExecutablePath() -> String {
    var buffer = [CChar](repeating: 0, count: 4096)
    let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    guard n > 0 else { return CommandLine.arguments[0] }
    return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
