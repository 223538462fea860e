#if canImport(Glibc)
import Glibc
#endif
import LatchkeyPosix
import LatchkeyTransport
import Testing

/// sd_notify's wire format, received on a real datagram socket bound where $NOTIFY_SOCKET
/// says (a path, then an abstract name).
struct SystemdNotifierTests {
    func receiver(_ name: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(name.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }
        withUnsafeMutableBytes(of: &address.sun_path) { for (i, b) in bytes.enumerated() { $0[i] = b } }
        let length = MemoryLayout<sa_family_t>.size + bytes.count + (bytes.first == 0 ? 0 : 1)
        let r = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(length)) }
        }
        try #require(r == 0)
        return fd
    }

    func receive(_ fd: Int32) -> String? {
        var buffer = [UInt8](repeating: 0, count: 512)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        return n < 0 ? nil : String(decoding: buffer[0..<n], as: UTF8.self)
    }

    @Test func sendsToAPathSocket() throws {
        let path = "/tmp/latchkey-notify-\(getpid())"
        unlink(path)
        let fd = try receiver(path)
        defer { close(fd); unlink(path) }
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": path])
        #expect(notifier.notify(["READY=1", "STATUS=lock.advertising"]))
        #expect(receive(fd) == "READY=1\nSTATUS=lock.advertising")
    }

    @Test func sendsToAnAbstractSocket() throws {
        let name = "@latchkey-notify-test-\(getpid())"
        let fd = try receiver(name)
        defer { close(fd) }
        #expect(SystemdNotifier(environment: ["NOTIFY_SOCKET": name]).notify(["WATCHDOG=1"]))
        #expect(receive(fd) == "WATCHDOG=1")
    }

    @Test func outsideSystemdNothingIsSent() {
        let notifier = SystemdNotifier(environment: [:])
        #expect(notifier.socketPath == nil)
        #expect(!notifier.notify(["READY=1"]))
        #expect(notifier.watchdogPingInterval == nil)
    }

    @Test func theWatchdogIsPingedAtHalfItsInterval() {
        #expect(SystemdNotifier(environment: ["WATCHDOG_USEC": "20000000"]).watchdogPingInterval == .seconds(10))
        // WATCHDOG_PID names the process the watchdog is for (sd_watchdog_enabled(3)).
        #expect(SystemdNotifier(environment: ["WATCHDOG_USEC": "20000000", "WATCHDOG_PID": "1"], pid: 42)
            .watchdogPingInterval == nil)
        #expect(SystemdNotifier(environment: ["WATCHDOG_USEC": "20000000", "WATCHDOG_PID": "42"], pid: 42)
            .watchdogPingInterval == .seconds(10))
    }

    @Test func theWatchdogFeederPingsFromTheLoop() throws {
        let path = "/tmp/latchkey-watchdog-\(getpid())"
        unlink(path)
        let fd = try receiver(path)
        defer { close(fd); unlink(path) }
        let loop = PosixEventLoop()
        // 2 ms WATCHDOG_USEC → a ping every 1 ms; the loop runs until three pings arrived.
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": path, "WATCHDOG_USEC": "2000"])
        let feeder = try #require(notifier.feedWatchdog(on: loop))
        var received: [String] = []
        let stopper = loop.schedule(after: .seconds(5)) { loop.stop() }
        func poll() {
            while let m = receive(fd) { received.append(m) }
            if received.count >= 3 { loop.stop() } else { _ = loop.schedule(after: .milliseconds(1), poll) }
        }
        _ = loop.schedule(after: .milliseconds(1), poll)
        try loop.run()
        stopper.cancel()
        feeder.cancel()
        #expect(received.prefix(3) == ["WATCHDOG=1", "WATCHDOG=1", "WATCHDOG=1"])
        #expect(feeder.pings >= 3)
        #expect(SystemdNotifier(environment: ["NOTIFY_SOCKET": path]).feedWatchdog(on: loop) == nil)
    }
}
