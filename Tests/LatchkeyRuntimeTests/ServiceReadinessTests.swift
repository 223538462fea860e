#if canImport(Glibc)
import Glibc
#endif
import LatchkeyAgents
import LatchkeyPosix
import LatchkeyTransport
import Logging
import Testing
@testable import LatchkeyRuntime

/// READY=1 goes out once, on the agent's readiness event, never on its failure.
struct ServiceReadinessTests {
    @Test func readyOnlyOnceAdvertisingWorked() throws {
        let path = "/tmp/latchkey-ready-\(getpid())"
        unlink(path)
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        defer { close(fd); unlink(path) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { for (i, b) in path.utf8.enumerated() { $0[i] = b } }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(bound == 0)
        func received() -> [String] {
            var out: [String] = []
            var buffer = [UInt8](repeating: 0, count: 256)
            while true {
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n < 0 { return out }
                out.append(String(decoding: buffer[0..<n], as: UTF8.self))
            }
        }
        let loop = PosixEventLoop()
        let service = ServiceReadiness(notifier: SystemdNotifier(environment: ["NOTIFY_SOCKET": path]),
                                       readyEvent: "lock.advertising", loop: loop, logger: Logger(label: "test"))
        let printer = EventPrinter(format: .json)
        var seen: [String] = []
        printer.onEvent = { seen.append($0.name) }
        service.observe(printer)
        service.observe(AgentEvent("lock.started", time: loop.now))
        service.observe(AgentEvent("lock.advertising", time: loop.now, [("error", "busy")]))
        #expect(received() == [])
        #expect(!service.isReady)
        printer.emit(AgentEvent("lock.advertising", time: loop.now))
        #expect(received() == ["READY=1\nSTATUS=lock.advertising"])
        #expect(seen == ["lock.advertising"])  // the earlier observer still sees events
        printer.emit(AgentEvent("lock.advertising", time: loop.now))
        #expect(received() == [])
        service.stopping()
        #expect(received() == ["STOPPING=1"])
    }
}
