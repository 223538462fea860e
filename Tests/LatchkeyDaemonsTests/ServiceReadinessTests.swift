#if canImport(Glibc)
import Glibc
#endif
import LatchkeyAgents
import LatchkeyEvents
import LatchkeyPosix
import LatchkeyTransport
import Logging
import Testing
@testable import LatchkeyDaemons

/// READY=1 goes out once, on the agent's readiness event, never on its failure.
struct ServiceReadinessTests {
    /// A bound NOTIFY_SOCKET: what the service manager would receive.
    final class NotifySocket {
        let path = "/tmp/latchkey-ready-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        let fd: CInt
        init() throws {
            unlink(path)
            fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { for (i, b) in path.utf8.enumerated() { $0[i] = b } }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            try #require(bound == 0)
        }
        deinit { close(fd); unlink(path) }
        func received() -> [String] {
            var out: [String] = []
            var buffer = [UInt8](repeating: 0, count: 256)
            while true {
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n < 0 { return out }
                out.append(String(decoding: buffer[0..<n], as: UTF8.self))
            }
        }
    }

    @Test func readyOnlyOnceAdvertisingWorked() throws {
        let socket = try NotifySocket()
        let loop = PosixEventLoop()
        let service = ServiceReadiness(notifier: SystemdNotifier(environment: ["NOTIFY_SOCKET": socket.path]),
                                       readyEvent: EventKind.lockAdvertising.name, loop: loop, logger: Logger(label: "test"))
        let printer = EventPrinter(format: .json)
        var seen: [String] = []
        printer.onEvent = { seen.append($0.name) }
        service.observe(printer)
        service.observe(AgentEvent(EventKind.lockStarted.name, time: loop.now))
        service.observe(AgentEvent(EventKind.lockAdvertising.name, time: loop.now, [("error", "busy")]))
        #expect(socket.received() == [])
        #expect(!service.isReady)
        printer.emit(AgentEvent(EventKind.lockAdvertising.name, time: loop.now))
        #expect(socket.received() == ["READY=1\nSTATUS=lock.advertising"])
        #expect(seen == [EventKind.lockAdvertising.name])  // the earlier observer still sees events
        printer.emit(AgentEvent(EventKind.lockAdvertising.name, time: loop.now))
        #expect(socket.received() == [])
        service.stopping()
        #expect(socket.received() == ["STOPPING=1"])
    }

    /// Asked for is not registered: READY waits for the transport's answers, then for what
    /// must hold (the bolt at rest), re-checking after each later event.
    @Test func readyWaitsForTheAnswersAndForWhatMustHold() throws {
        let socket = try NotifySocket()
        let loop = PosixEventLoop()
        let service = ServiceReadiness(notifier: SystemdNotifier(environment: ["NOTIFY_SOCKET": socket.path]),
                                       readyEvent: EventKind.lockAdvertising.name, loop: loop, logger: Logger(label: "test"))
        var waiting: [() -> Void] = []
        service.afterRequestsAnswered = { waiting.append($0) }
        var atRest = false
        var registered = true
        service.isSettled = { atRest && registered }

        service.observe(AgentEvent(EventKind.lockStarted.name, time: loop.now))
        #expect(waiting.isEmpty, "nothing to confirm before the ready event")
        service.observe(AgentEvent(EventKind.lockAdvertising.name, time: loop.now))
        #expect(waiting.count == 1)
        #expect(socket.received() == [], "the kernel has not answered yet")
        waiting.removeFirst()()
        #expect(socket.received() == [], "answered, but the bolt is still moving")

        service.observe(AgentEvent(EventKind.lockEvent.name, time: loop.now))  // the bolt reached locked
        atRest = true
        registered = false  // ...and the kernel refused the advertising meanwhile
        waiting.removeFirst()()
        #expect(socket.received() == [] && !service.isReady)

        registered = true
        service.observe(AgentEvent(EventKind.lockAdvertising.name, time: loop.now))  // asked again, taken
        waiting.removeFirst()()
        #expect(socket.received() == ["READY=1\nSTATUS=lock.advertising"], "named after the ready event")
        #expect(service.isReady)
        service.observe(AgentEvent(EventKind.lockEvent.name, time: loop.now))
        #expect(waiting.isEmpty, "once ready, nothing more is checked")
    }
}
