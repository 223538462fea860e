#if canImport(Glibc)
import Glibc
#endif
import LatchkeyControl
import LatchkeyDaemons
import LatchkeyEvents
import LatchkeyLock
import LatchkeyPosix
import LatchkeySimAir
import LatchkeySimGPIO
import LatchkeyTransport

/// The stage the demo and the torture play on: a scratch directory with the air socket, a
/// file-backed GPIO chip, the agents' state directories and configuration files, and the
/// three processes (copies of the running executable: `<exe> air|lock|phone ...`).
package final class AgentStage {
    /// What differs between the demo's story and the torture's.
    package struct Tuning {
        /// Scratch directory prefix.
        package var name: String
        /// The `lock:` section of the lock's configuration.
        package var lockSection: String
        package var phoneGraceSeconds: Int
        package var phoneStartsAt: Double
        /// The phone's `connection_interval_ms`; nil leaves the phone's default.
        package var phoneConnectionIntervalMs: Double?
        /// The phone's `idle_connection_interval_ms`; nil: none.
        package var phoneIdleIntervalMs: Double?

        package init(name: String, lockSection: String, phoneGraceSeconds: Int, phoneStartsAt: Double,
                     phoneConnectionIntervalMs: Double? = nil, phoneIdleIntervalMs: Double? = nil) {
            self.name = name; self.lockSection = lockSection; self.phoneGraceSeconds = phoneGraceSeconds
            self.phoneStartsAt = phoneStartsAt; self.phoneConnectionIntervalMs = phoneConnectionIntervalMs
            self.phoneIdleIntervalMs = phoneIdleIntervalMs
        }

        /// The demo: short timers, so that the whole story fits in half a minute. The phone
        /// starts out of range, so that its first link ever is timed from the moment it
        /// comes into range.
        package static let demo = Tuning(name: "latchkey-demo", lockSection: """
            lock:
              auto_relock_seconds: 4
              departure_grace_seconds: 2
              # The demo presses the inside button and comes home again seconds later.
              arrival_after_manual_unlock_seconds: 1
            """, phoneGraceSeconds: 2, phoneStartsAt: away)
    }

    package let loop = PosixEventLoop()
    package let directory: String
    package let executable = currentExecutablePath()
    package let lockAddress = BluetoothAddress(0xC0FFEE000001)
    package let phoneAddress = BluetoothAddress(0xC0FFEE000002)
    /// Out of range (the radio reaches 10 m) and next to the door.
    package static let away = 100.0, home = 2.0

    package var air: ChildProcess?
    package var lock: ChildProcess?
    package var phone: ChildProcess?
    package var control: AirControlClient?
    package var observer: LineObserver!
    /// Wakes the loop when a child exits, so waits on `isRunning` end at once.
    private var childWatch: SignalWatch?
    package private(set) var lockEvents: [(EventLine, Instant)] = []
    package private(set) var phoneEvents: [(EventLine, Instant)] = []
    package let verbose: Bool

    package var airSocket: String { directory + "/air.sock" }
    /// The simulated chip's registers, on a tmpfs (/dev/shm) when there is one: a Pi's GPIO
    /// is an ioctl that never waits for a disk. On the scratch directory's disk, the chip's
    /// writes and renames waited for the file system's journal in the middle of the path the
    /// demo times (command -> actuator line): 10-140 ms while other builds shared the disk.
    package let gpioRoot: String
    package var chipDirectory: String { gpioRoot + "/demo-lock" }
    package var lockState: String { directory + "/lock-state" }
    package var phoneState: String { directory + "/phone-state" }
    package var lockConfig: String { directory + "/lock.yaml" }
    package var phoneConfig: String { directory + "/phone.yaml" }
    package var keyFile: String { phoneState + "/key.hex" }

    package init(verbose: Bool, tuning: Tuning = .demo) throws(RuntimeError) {
        self.verbose = verbose
        do { directory = try RuntimeDirectory.makeTemporary(prefix: tuning.name) } catch {
            throw RuntimeError("cannot make a scratch directory: \(error)")
        }
        if let shared = makeTemporaryDirectory("/dev/shm/\(tuning.name)-gpio-XXXXXX") {
            gpioRoot = shared
        } else {
            gpioRoot = directory + "/gpio"  // no /dev/shm: next to the state, on its disk
        }
        for dir in [lockState, phoneState, gpioRoot] { mkdir(dir, 0o700) }
        do {
            try FileGPIOChip.create(at: chipDirectory, label: "demo-lock",
                                    lineNames: ["motor_unlock", "motor_lock", "door", "button"])
        } catch { throw RuntimeError("cannot lay out the simulated GPIO chip: \(error)") }
        try writeFile(lockConfig, """
            # Written by \(tuning.name): the lock on the shared simulated air and a simulated chip.
            name: Demo Door
            transport: sim
            sim:
              air_socket: \(airSocket)
              address: "\(lockAddress)"
              position: 0
            state_directory: \(lockState)
            event_format: json
            gpio:
              simulated_chip_root: \(gpioRoot)
              chip: demo-lock
              actuator: motor
              motor_run_ms: 300
              unlock_line: motor_unlock
              lock_line: motor_lock
              door_line: door
              button_line: button
            \(tuning.lockSection)
            """)
        try writeFile(phoneConfig, """
            # Written by \(tuning.name): the phone on the same air.
            transport: sim
            sim:
              air_socket: \(airSocket)
              address: "\(phoneAddress)"
              position: \(tuning.phoneStartsAt)
            state_directory: \(phoneState)
            event_format: json
            lock_address: "\(lockAddress)"
            key_id: 1
            key_secret_file: \(keyFile)
            grace_seconds: \(tuning.phoneGraceSeconds)
            \(tuning.phoneConnectionIntervalMs.map { "connection_interval_ms: \($0)" } ?? "")
            \(tuning.phoneIdleIntervalMs.map { "idle_connection_interval_ms: \($0)" } ?? "")
            """)
        observer = try LineObserver(chipDirectory: chipDirectory, lines: ["motor_unlock", "motor_lock"], loop: loop)
        // Only wakes the loop on SIGCHLD; without it the stage polls `isRunning` at its timeouts.
        childWatch = try? loop.onSignal(.child) {}
    }

    // MARK: Processes

    package func startAir() throws(RuntimeError) -> ChildProcess {
        let p = try ChildProcess(name: "air", executable: executable,
                                 arguments: ["air", "--socket", airSocket, "--seed", "1"], loop: loop)
        p.onLine = { [weak self] line in if self?.verbose == true { print("  air   | \(line)") } }
        air = p
        return p
    }

    package func startLock() throws(RuntimeError) -> ChildProcess {
        let p = try ChildProcess(name: "lock", executable: executable, arguments: ["lock", "--config", lockConfig, "--log-level", verbose ? "info" : "warning"], loop: loop)
        p.onLine = { [weak self] line in self?.agentLine(line, lock: true) }
        lock = p
        return p
    }

    package func startPhone() throws(RuntimeError) -> ChildProcess {
        let p = try ChildProcess(name: "phone", executable: executable, arguments: ["phone", "--config", phoneConfig, "--log-level", verbose ? "info" : "warning"], loop: loop)
        p.onLine = { [weak self] line in self?.agentLine(line, lock: false) }
        phone = p
        return p
    }

    private func agentLine(_ line: String, lock: Bool) {
        let prefixed = "  \(lock ? "lock " : "phone") | \(line)"
        guard let e = EventLine(parsing: line) else {
            // Not a timeline event: a diagnostic (warnings and errors unless verbose). It goes
            // to standard error, so standard output stays the report (and valid JSON).
            writeLine(prefixed, to: STDERR_FILENO)
            return
        }
        if verbose { print(prefixed) }
        if lock { lockEvents.append((e, loop.now)) } else { phoneEvents.append((e, loop.now)) }
    }

    /// Runs a short command of our own executable (or `program`) to completion and returns its output.
    package func runTool(_ arguments: [String], program: String? = nil, timeout: Duration = .seconds(30)) throws(RuntimeError)
        -> (status: Int32, output: String)
    {
        let p = try ChildProcess(name: program ?? arguments.first ?? "tool", executable: program ?? executable,
                                 arguments: arguments, loop: loop)
        var out: [String] = []
        p.onLine = { out.append($0) }
        // A loop error or the timeout: the caller reads `isRunning` and the collected lines either way.
        _ = try? loop.run(until: { !p.isRunning }, timeout: timeout)
        // Best effort: lines not collected are missing from the transcript, nothing else.
        _ = try? loop.runOnce(timeout: .milliseconds(10))  // collect the last lines
        return (p.exitStatus ?? -1, out.joined(separator: "\n"))
    }

    // MARK: Waiting (on events, never on a fixed sleep)

    /// Runs the loop until `condition` holds or `timeout` passes.
    @discardableResult
    // A loop error is a wait that did not succeed: false, which the caller reports.
    package func wait(_ timeout: Duration, until condition: () -> Bool) -> Bool {
        (try? loop.run(until: condition, timeout: timeout)) ?? false
    }

    package func lockEvent(_ kind: EventKind, since: Instant, where match: (EventLine) -> Bool = { _ in true }) -> (EventLine, Instant)? {
        lockEvents.first { $0.1 >= since && $0.0.name == kind.name && match($0.0) }
    }

    package func phoneEvent(_ kind: EventKind, since: Instant, where match: (EventLine) -> Bool = { _ in true }) -> (EventLine, Instant)? {
        phoneEvents.first { $0.1 >= since && $0.0.name == kind.name && match($0.0) }
    }

    package func lockEvents(_ kind: EventKind, since: Instant) -> [EventLine] {
        lockEvents.filter { $0.1 >= since && $0.0.name == kind.name }.map(\.0)
    }

    /// The CPU policy the lock's loop said it got at its last start (`lock.realtime_priority`):
    /// "fifo:10", "normal (SCHED_FIFO 10 refused: ...)", or "normal" when it asked for none.
    package var lockScheduling: String {
        let names: Set = [EventKind.lockRealtime.name, EventKind.lockRealtimeRefused.name]
        guard let e = lockEvents.last(where: { names.contains($0.0.name) })?.0 else { return "normal" }
        let priority = e.field("priority") ?? "?"
        if e.name == EventKind.lockRealtime.name { return "fifo:\(priority)" }
        return "normal (SCHED_FIFO \(priority) refused: \(e.field("error") ?? "?"))"
    }

    // MARK: The air's control channel

    package func connectControl() -> Bool {
        // Not reachable: false below, which the caller reports.
        control = try? AirControlClient(socketPath: airSocket, loop: loop)
        return control != nil
    }

    package func movePhone(to position: Double) -> Bool {
        var done: Bool?
        // The air's refusal is `done == false`, which the caller reports.
        control?.setPosition(position, of: phoneAddress) { done = (try? $0.get()) != nil }
        wait(.seconds(2)) { done != nil }
        return done == true
    }

    package func pendingConnects(of address: BluetoothAddress) -> [BluetoothAddress]? {
        var result: [BluetoothAddress]?
        var finished = false
        control?.listDevices { r in
            finished = true
            if case .success(let devices) = r { result = devices.first { $0.address == address }?.status.pendingConnections }
        }
        wait(.seconds(2)) { finished }
        return result
    }

    package func shutdown() {
        for p in [phone, lock, air].compactMap({ $0 }) { p.stop(loop: loop) }
        control?.close()
        removeTree(directory)
        removeTree(gpioRoot)
    }
}

package func writeFile(_ path: String, _ text: String, mode: mode_t = 0o600) throws(RuntimeError) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
    guard fd >= 0 else { throw RuntimeError("cannot write \(path): errno \(errno)") }
    defer { close(fd) }
    var bytes = Array((text + "\n").utf8)
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeMutableBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
        guard n > 0 else { throw RuntimeError("cannot write \(path): errno \(errno)") }
        offset += n
    }
}
