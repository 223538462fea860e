#if canImport(Glibc)
import Glibc
#endif
import LatchkeyAgents
import Logging
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeyPosix

/// `latchkey phone`: the phone agent on the real-time loop until SIGTERM/SIGINT, with a
/// local control socket for scripted commands (`lock`, `unlock`, `status`, `probe N`).
public enum PhoneDaemon {
    public static func run(_ settings: PhoneSettings, logger: Logger) throws(RuntimeError) {
        logger.info("phone agent starting", metadata: ["transport": "\(settings.transport)",
                                                       "lock": "\(settings.lockAddress)",
                                                       "state": "\(settings.stateDirectory)"])
        let keyID: UInt32, secret: [UInt8]
        if let id = settings.keyID {
            (keyID, secret) = (id, try readSecret(settings.keySecretFile))
        } else {
            (keyID, secret) = try PairedKeyFile.read(settings.keySecretFile)
        }
        let loop = PosixEventLoop()
        let printer = EventPrinter(format: settings.eventFormat)
        let service = ServiceReadiness(notifier: SystemdNotifier(environment: ProcessEnvironment.current),
                                       readyEvent: "phone.connect_pending", loop: loop, logger: logger)
        service.observe(printer)
        let (store, restoration) = try StateStores.openPhone(settings.stateDirectory) { message in
            printer.emit(AgentEvent("phone.store_recovered", time: loop.now, [("detail", message)]))
        }
        logger.info("relaunch", metadata: [
            "restoring": "\(RestorationRegistry(storage: restoration).identifiersWithPendingWork(.central))"])
        let transport = try openTransport(settings.transport, loop: loop, role: "phone", logger: logger)
        let agent: PhoneAgent
        do {
            agent = try PhoneAgent(transport: transport,
                                   configuration: PhoneAgentConfiguration(lockAddress: settings.lockAddress,
                                                                          keyID: keyID, secret: secret,
                                                                          gracePeriod: settings.gracePeriod,
                                                                          connectOptions: settings.connectOptions),
                                   store: store, events: printer, restoration: restoration)
        } catch { throw RuntimeError("phone state in \(settings.stateDirectory): \(error)") }
        agent.central.trace = { peer, direction, pdu in logger.trace("ATT \(direction) \(peer): \(hex(pdu))") }
        let gates = try AgentGates.phone(agent, lock: settings.lockAddress, settings: settings.execution, loop: loop,
                                         events: printer, logger: logger)

        let control: LocalControlServer
        do {
            control = try LocalControlServer(path: settings.stateDirectory + "/control.sock", loop: loop) { words, reply in
                if gates.control.handle(words, reply: reply) { return }
                handle(words, agent: agent, reply: reply)
            }
        } catch { throw RuntimeError("control socket in \(settings.stateDirectory): \(error)") }

        try runUntilSignalled(loop) {
            logger.info("phone agent stopping")
            service.stopping()
            printer.emit(AgentEvent("phone.stopping", time: loop.now))
            agent.stop()
        }
        control.close()
        withExtendedLifetime((agent, transport, gates, service)) {}
    }

    static func handle(_ words: [String], agent: PhoneAgent, reply: @escaping (String) -> Void) {
        switch words.first {
        case "status":
            reply("ok presence=\(agent.presence.rawValue) linked=\(agent.isLinked)")
        case "lock", "unlock":
            agent.perform(words[0] == "lock" ? .lock : .unlock) { result in
                switch result {
                case .success: reply("ok \(words[0])")
                case .failure(let e): reply("error \(e)")
                }
            }
        case "mode":
            // Admin keys only: the lock refuses it from a user key (not authorized).
            let modes: [String: UInt8] = ["normal": 0, "no-remote": 3, "passage": 4]  // Matter OperatingMode
            guard words.count == 2, let mode = modes[words[1]] else {
                reply("error usage: mode normal|no-remote|passage"); return
            }
            agent.setOperatingMode(mode) { result in
                switch result {
                case .success: reply("ok mode \(words[1])")
                case .failure(let e): reply("error \(e)")
                }
            }
        case "probe":
            // N authenticated commands, alternating unlock and lock. Each waits until the lock
            // reports the bolt at its target (a command during a movement is refused as busy).
            guard words.count == 2, let n = Int(words[1]), (1...10_000).contains(n) else {
                reply("error usage: probe N (1...10000)"); return
            }
            var failures = 0
            var waitingFor: UInt8?
            var continueWith: (() -> Void)?
            agent.onStatus = { frame in
                guard let target = waitingFor, frame.lockState == target else { return }
                waitingFor = nil
                let next = continueWith
                continueWith = nil
                next?()
            }
            func step(_ i: Int) {
                guard i < n else {
                    agent.onStatus = nil
                    reply(failures == 0 ? "ok probe \(n) commands" : "error probe \(n) commands, \(failures) failed")
                    return
                }
                let unlock = i % 2 == 0
                agent.perform(unlock ? .unlock : .lock) { result in
                    switch result {
                    case .success:
                        waitingFor = unlock ? 2 : 1  // Matter LockState: Unlocked 2, Locked 1
                        continueWith = { step(i + 1) }
                    case .failure(let e):
                        failures += 1
                        reply("note command \(i): \(e)")
                        step(i + 1)
                    }
                }
            }
            step(0)
        default:
            reply("error unknown command; use lock, unlock, status, probe N, mode normal|no-remote|passage, "
                  + "suspend, resume or execution foreground|background")
        }
    }

    /// Reads a key file: 64 hex digits (whitespace ignored).
    static func readSecret(_ path: String) throws(RuntimeError) -> [UInt8] {
        guard let text = try? readTextFile(path) else { throw RuntimeError("cannot read key file \(path)") }
        let hex = text.filter { !$0.isWhitespace }
        guard hex.count == 64 else { throw RuntimeError("key file \(path): expected 64 hex digits") }
        var out: [UInt8] = []
        var it = hex.makeIterator()
        while let a = it.next(), let b = it.next() {
            guard let v = UInt8(String([a, b]), radix: 16) else { throw RuntimeError("key file \(path): not hex") }
            out.append(v)
        }
        return out
    }
}

/// Reads a whole file as UTF-8.
public func readTextFile(_ path: String) throws -> String {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw RuntimeError(String(cString: strerror(errno))) }
    defer { close(fd) }
    var out: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n < 0 && errno == EINTR { continue }
        guard n > 0 else { break }
        out += buffer[0..<n]
    }
    return String(decoding: out, as: UTF8.self)
}

/// Writes a key secret as 64 hex digits, readable by the owner only (0600).
public func writeSecretFile(_ path: String, _ secret: [UInt8]) throws(RuntimeError) {
    unlink(path)
    try writeFile(path, hexString(secret), mode: 0o600)
}
