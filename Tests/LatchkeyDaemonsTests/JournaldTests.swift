#if canImport(Glibc)
import Glibc
#endif
import LatchkeyAgents
import LatchkeyEvents
import LatchkeyPosix
import LatchkeyTransport
@testable import LatchkeyDaemons
import Logging
import Testing

/// A datagram socket standing in for journald's /run/systemd/journal/socket: what the agent
/// sends is read back and parsed as journald would (native protocol).
final class FakeJournald {
    let directory: String
    let path: String
    let fd: CInt

    init() throws {
        directory = try RuntimeDirectory.makeTemporary(prefix: "latchkey-journal")
        path = directory + "/socket"
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in for (i, b) in path.utf8.enumerated() { raw[i] = b } }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(fd >= 0 && bound == 0, "bind \(path): errno \(errno)")
    }

    deinit {
        close(fd)
        RuntimeDirectory.remove(directory)
    }

    /// Every datagram received so far, each as its fields (the binary form decoded too).
    func entries() -> [[String: String]] {
        var out: [[String: String]] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { return out }
            out.append(Self.parse(Array(buffer[..<n])))
        }
    }

    static func parse(_ bytes: [UInt8]) -> [String: String] {
        var fields: [String: String] = [:]
        var i = 0
        while i < bytes.count {
            var j = i
            while j < bytes.count, bytes[j] != 0x3D, bytes[j] != 0x0A { j += 1 }
            let name = String(decoding: bytes[i..<j], as: UTF8.self)
            if j < bytes.count, bytes[j] == 0x3D {
                var end = j + 1
                while end < bytes.count, bytes[end] != 0x0A { end += 1 }
                fields[name] = String(decoding: bytes[(j + 1)..<end], as: UTF8.self)
                i = end + 1
            } else {
                var length: UInt64 = 0
                for k in 0..<8 { length |= UInt64(bytes[j + 1 + k]) << (8 * UInt64(k)) }
                let start = j + 9
                fields[name] = String(decoding: bytes[start..<(start + Int(length))], as: UTF8.self)
                i = start + Int(length) + 1
            }
        }
        return fields
    }
}

/// Under systemd the agents log to journald with priorities `journalctl -p` reads
/// and fields `journalctl -o json` shows, and without timestamps of their own.
@Suite struct JournaldTests {
    @Test func theLogHandlerSendsPriorityFieldsAndNoTimestamp() throws {
        let journald = try FakeJournald()
        let journal = JournaldSocket(path: journald.path)
        var logger = Logger(label: "latchkey.lock") { JournaldLogHandler(label: $0, journal: journal) }
        logger.logLevel = .debug
        logger.warning("kernel transport: adapter gone", metadata: ["adapter": "hci0", "retry-in": "2s"])
        logger.info("lock agent starting")
        logger.debug("detail")
        logger.trace("not at this level")
        let entries = journald.entries()
        #expect(entries.count == 3)
        #expect(entries.map { $0["PRIORITY"] } == ["4", "6", "7"])
        let warning = try #require(entries.first)
        #expect(warning["MESSAGE"] == "kernel transport: adapter gone adapter=hci0 retry-in=2s")
        #expect(warning["LATCHKEY_ADAPTER"] == "hci0")
        #expect(warning["LATCHKEY_RETRY_IN"] == "2s")
        #expect(warning["LATCHKEY_LOGGER"] == "latchkey.lock")
        #expect(warning["SYSLOG_IDENTIFIER"] == "latchkey")
        #expect(warning["CODE_FILE"]?.hasSuffix("JournaldTests.swift") == true)
        // StreamLogHandler starts each line with its own time; journald adds one already.
        #expect(entries.allSatisfy { !($0["MESSAGE"] ?? "").hasPrefix("20") })
    }

    @Test(arguments: [(Logger.Level.trace, 7), (.debug, 7), (.info, 6), (.notice, 5), (.warning, 4), (.error, 3), (.critical, 2)])
    func levelsMapToSyslogPriorities(_ level: Logger.Level, _ priority: Int) {
        #expect(JournaldLogHandler.priority(level).rawValue == priority)
    }

    /// The jam's two entries exactly as the HIL's 85-systemd-journal-warning logged them.
    @Test func aJamsFailedUnlockIsFiledAtWarning() {
        let t = Instant(nanoseconds: 12_345_000_000)
        let failed = AgentEvent(EventKind.lockEvent.name, time: t, [
            ("kind", "lockOperationError(unlock by remote key#1 decision#1, LatchkeyLock.OperationError.jammed)"),
            ("state", "notFullyLocked"), ("door", "closed"), ("key", "1")])
        let entry = failed.journaldEntry()
        #expect(entry.priority == .warning)
        let text = String(decoding: entry.encoded, as: UTF8.self)
        #expect(text.hasPrefix("PRIORITY=4\n"), "\(text)")
        #expect(text.components(separatedBy: "PRIORITY=").count == 2, "one PRIORITY field: \(text)")
    }

    /// What `journalctl -p warning` must find: jams, lockouts, refusals, faults.
    @Test func jamsLockoutsRefusalsAndFaultsAreWarningsOrWorse() {
        let t = Instant(nanoseconds: 12_345_000_000)
        let warnings = [
            AgentEvent(EventKind.lockEvent.name, time: t, [("kind", "doorLockAlarm(LatchkeyLock.AlarmCode.lockJammed)"),
                                               ("state", "notFullyLocked"), ("door", "closed")]),
            AgentEvent(EventKind.lockEvent.name, time: t, [("kind", "lockOperationError(…)"), ("key", "3")]),
            AgentEvent(EventKind.lockLockout.name, time: t, [("principal", "key 3")]),
            AgentEvent(EventKind.lockCommandRejected.name, time: t), AgentEvent(EventKind.lockCommandRefused.name, time: t),
            AgentEvent(EventKind.lockArrivalRefused.name, time: t), AgentEvent(EventKind.lockTransportRefused.name, time: t),
            AgentEvent(EventKind.phoneCommandTimeout.name, time: t),
            // Arrival unlock refused as a suspected relay (the relay check's events).
            AgentEvent(EventKind.lockSuspectedRelay.name, time: t, [("key", "key#1"), ("reason", "tooSlow")]),
            AgentEvent(EventKind.lockEvent.name, time: t, [("kind", "suspectedRelay(tooSlow key#1)")]),
        ]
        for event in warnings { #expect(event.journaldPriority <= .warning, "\(event.name)") }
        for name in [EventKind.lockFault.name, EventKind.lockGpioError.name, EventKind.lockLogFailed.name, EventKind.phonePersistFailed.name, EventKind.lockStoreRecovered.name] {
            #expect(AgentEvent(name, time: t).journaldPriority == .error, "\(name)")
        }
        for event in [AgentEvent(EventKind.lockAdvertising.name, time: t), AgentEvent(EventKind.lockEvent.name, time: t, [("kind", "lockOperation(…)")])] {
            #expect(event.journaldPriority == .info, "\(event.name)")
        }
    }

    @Test func anEventPrinterUnderSystemdSendsStructuredEntriesOnly() throws {
        let journald = try FakeJournald()
        var pipeFDs: [CInt] = [0, 0]
        try #require(pipe(&pipeFDs) == 0 && fcntl(pipeFDs[0], F_SETFL, O_NONBLOCK) == 0)
        defer { close(pipeFDs[0]); close(pipeFDs[1]) }
        let printer = EventPrinter(format: .text, output: pipeFDs[1], journal: JournaldSocket(path: journald.path))
        var seen: [String] = []
        printer.onEvent = { seen.append($0.name) }
        printer.emit(AgentEvent(EventKind.lockEvent.name, time: Instant(nanoseconds: 12_345_000_000),
                                [("kind", "doorLockAlarm(lockJammed)"), ("state", "notFullyLocked"), ("door", "closed")]))
        printer.emit(AgentEvent(EventKind.lockArrivalRefused.name, time: .zero, [("key", "key#7"), ("reason", "disabled")]))
        let entries = journald.entries()
        #expect(entries.count == 2)
        let jam = try #require(entries.first)
        #expect(jam["PRIORITY"] == "4")
        #expect(jam["LATCHKEY_EVENT"] == EventKind.lockEvent.name)
        #expect(jam["LATCHKEY_KIND"] == "doorLockAlarm(lockJammed)")
        #expect(jam["LATCHKEY_T_MS"] == "12345")
        #expect(jam["MESSAGE"] == "lock.event kind=doorLockAlarm(lockJammed) state=notFullyLocked door=closed")
        #expect(entries[1]["KEY_ID"] == "7")
        #expect(entries[1]["LATCHKEY_REASON"] == "disabled")
        #expect(seen == [EventKind.lockEvent.name, EventKind.lockArrivalRefused.name], "observers still see every event")
        var byte: UInt8 = 0
        #expect(read(pipeFDs[0], &byte, 1) < 0, "nothing also printed on stdout: the journal would hold it twice")
    }

    /// No journald socket (or a send that fails): the line goes to stderr — journald's
    /// stream — with an sd-daemon `<N>` prefix, so its priority survives.
    @Test func withoutTheSocketTheLineCarriesASyslogPrefix() throws {
        var pipeFDs: [CInt] = [0, 0]
        try #require(pipe(&pipeFDs) == 0 && fcntl(pipeFDs[0], F_SETFL, O_NONBLOCK) == 0)
        defer { close(pipeFDs[0]); close(pipeFDs[1]) }
        let journal = JournaldSocket(path: "/nonexistent/journal/socket", fallback: pipeFDs[1])
        journal.send(JournaldEntry(.warning, "lock.lockout principal=key 3\nsecond line", fields: [("KEY_ID", "3")]))
        var buffer = [UInt8](repeating: 0, count: 256)
        let n = read(pipeFDs[0], &buffer, buffer.count)
        #expect(n > 0)
        #expect(String(decoding: buffer[..<max(0, n)], as: UTF8.self) == "<4>lock.lockout principal=key 3 second line\n")
    }

    @Test func multiLineValuesUseTheBinaryForm() {
        let entry = JournaldEntry(.error, "one\ntwo", fields: [("LATCHKEY_X", "y")])
        let parsed = FakeJournald.parse(entry.encoded)
        #expect(parsed == ["PRIORITY": "3", "MESSAGE": "one\ntwo", "LATCHKEY_X": "y"])
        #expect(Array(entry.encoded.prefix(11)) == Array("PRIORITY=3\n".utf8))
        #expect(JournaldEntry.fieldName("retry-in", prefix: "LATCHKEY_") == "LATCHKEY_RETRY_IN")
        #expect(JournaldEntry.fieldName("_hostname") == "HOSTNAME", "fields starting with _ are journald's own")
    }

    /// JOURNAL_STREAM names the stream systemd connected; only a descriptor that is that
    /// stream counts (a child with its stderr redirected inherits the variable).
    @Test func theJournalStreamMustBeThisDescriptor() throws {
        var pipeFDs: [CInt] = [0, 0]
        try #require(pipe(&pipeFDs) == 0)
        defer { close(pipeFDs[0]); close(pipeFDs[1]) }
        var info = stat()
        try #require(fstat(pipeFDs[1], &info) == 0)
        let matching = ["JOURNAL_STREAM": "\(info.st_dev):\(info.st_ino)"]
        #expect(JournaldStream.isConnected(environment: matching, fd: pipeFDs[1]))
        #expect(!JournaldStream.isConnected(environment: ["JOURNAL_STREAM": "\(info.st_dev):\(info.st_ino + 1)"], fd: pipeFDs[1]))
        #expect(!JournaldStream.isConnected(environment: [:], fd: pipeFDs[1]))
        #expect(!JournaldStream.isConnected(environment: ["JOURNAL_STREAM": "garbage"], fd: pipeFDs[1]))
    }
}
