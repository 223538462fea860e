#if canImport(Glibc)
import Glibc
#endif
import LatchkeyTransport
import Testing

@testable import LatchkeyPosix

@Suite struct SeqPacketSocketTests {
    @Test func listenAcceptConnectOnAPath() throws {
        let dir = try RuntimeDirectory.makeTemporary()
        defer { RuntimeDirectory.remove(dir) }
        let loop = PosixEventLoop()
        let listener = try SeqPacketListener(path: dir + "/air.sock")
        var accepted: SeqPacketSocket?
        let watch = loop.watch(fd: listener.fileDescriptor, events: .readable) { _ in accepted = try? listener.accept() }
        #expect(try listener.accept() == nil, "no client yet: would block")
        let client = try SeqPacketSocket.connect(to: dir + "/air.sock")
        #expect(try loop.run(until: { accepted != nil }, timeout: .seconds(2)))
        watch.cancel()

        let big = [UInt8](repeating: 0xAB, count: 600)
        #expect(try client.send([1]) == .sent)
        #expect(try client.send(big) == .sent)
        #expect(try accepted?.receive() == .message([1]))
        #expect(try accepted?.receive() == .message(big))
        #expect(try accepted?.receive() == .wouldBlock)
    }

    @Test func aLiveListenerPathIsInUseAndClosingRemovesIt() throws {
        let dir = try RuntimeDirectory.makeTemporary()
        defer { RuntimeDirectory.remove(dir) }
        let path = dir + "/air.sock"
        let first = try SeqPacketListener(path: path)
        #expect(throws: SystemError.self) { _ = try SeqPacketListener(path: path) }
        first.close()
        #expect(throws: SystemError(.noSuchFileOrDirectory, call: "connect(\(path))")) {
            _ = try SeqPacketSocket.connect(to: path)
        }
        _ = try SeqPacketListener(path: path)
    }

    @Test func tooLongAPathIsNameTooLong() {
        let path = "/tmp/" + String(repeating: "x", count: 200)
        #expect(throws: SystemError(.nameTooLong, call: "connect(\(path))")) {
            _ = try SeqPacketSocket.connect(to: path)
        }
    }

    @Test func aFullSocketSaysFullThenBecomesWritable() throws {
        let loop = PosixEventLoop()
        let (a, b) = try SeqPacketSocket.pair()
        var sent = 0
        while try a.send([UInt8](repeating: 7, count: 256)) == .sent {
            sent += 1
            try #require(sent < 100_000, "the socket never filled")
        }
        #expect(sent > 0)
        #expect(try a.send([1]) == .full, "still full: nothing was read")

        var writable = false
        let watch = loop.watch(fd: a.fileDescriptor, events: []) { events in writable = events.contains(.writable) }
        try loop.runOnce(timeout: .milliseconds(5))
        #expect(!writable, "no interest, no callback")
        watch.events = .writable
        try loop.runOnce(timeout: .milliseconds(5))
        #expect(!writable, "still full")
        while case .message = try b.receive() {}
        #expect(try loop.run(until: { writable }, timeout: .seconds(2)))
        #expect(try a.send([1]) == .sent)
        watch.cancel()
    }

    @Test func anOversizedMessageIsAnErrorNotATruncation() throws {
        let (a, b) = try SeqPacketSocket.pair()
        #expect(try a.send([UInt8](repeating: 1, count: 100)) == .sent)
        #expect(throws: SystemError.self) { _ = try b.receive(maximumLength: 10) }
    }

    /// SO_PEERCRED: the kernel's record of who connected, what the control sockets decide by.
    @Test func peerCredentialsAreTheConnectingProcesses() throws {
        let dir = try RuntimeDirectory.makeTemporary()
        defer { RuntimeDirectory.remove(dir) }
        let listener = try SeqPacketListener(path: dir + "/control.sock")
        let client = try SeqPacketSocket.connect(to: dir + "/control.sock")
        let accepted = try #require(try listener.accept())
        let seen = try accepted.peerCredentials()
        #expect(seen.uid == PeerCredentials.currentUserID)
        #expect(seen.pid == getpid())
        #expect(try client.peerCredentials().uid == PeerCredentials.currentUserID)
    }
}
