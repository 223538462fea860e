import LatchkeyTransport
import Testing

@testable import LatchkeyPosix

@Suite struct PacketChannelTests {
    @Test func queuesWhileFullAndDeliversEverythingInOrder() throws {
        let loop = PosixEventLoop()
        let (a, b) = try SeqPacketSocket.pair()
        let sender = PacketChannel(socket: a, loop: loop)
        let count = 2000
        for i in 0..<count { sender.send([UInt8(i & 0xFF), UInt8(i >> 8)] + [UInt8](repeating: 0, count: 200)) }
        #expect(sender.queuedCount > 0, "the socket filled and the rest waits in order")

        var received: [Int] = []
        let receiver = PacketChannel(socket: b, loop: loop)
        receiver.onMessage = { received.append(Int($0[0]) | Int($0[1]) << 8) }
        #expect(try loop.run(until: { received.count == count }, timeout: .seconds(5)))
        #expect(received == Array(0..<count))
        #expect(sender.queuedCount == 0)
    }

    @Test func endOfStreamClosesOnce() throws {
        let loop = PosixEventLoop()
        let (a, b) = try SeqPacketSocket.pair()
        let channel = PacketChannel(socket: b, loop: loop)
        var closes: [SystemError?] = []
        var messages = 0
        channel.onMessage = { _ in messages += 1 }
        channel.onClose = { closes.append($0) }
        _ = try a.send([1])
        a.close()
        #expect(try loop.run(until: { !closes.isEmpty }, timeout: .seconds(2)))
        #expect(messages == 1, "messages sent before the close are delivered first")
        #expect(closes.count == 1 && closes[0] == nil)
        #expect(!channel.isOpen && !b.isOpen)
        channel.send([2])  // ignored, no crash
    }

    @Test func aPeerThatNeverReadsIsCutOffAtTheQueueBound() throws {
        let loop = PosixEventLoop()
        let (a, peer) = try SeqPacketSocket.pair()
        defer { withExtendedLifetime(peer) {} }
        let channel = PacketChannel(socket: a, loop: loop, maximumQueuedMessages: 8)
        var closedWith: SystemError?
        channel.onClose = { closedWith = $0 }
        for _ in 0..<100_000 where channel.isOpen { channel.send([UInt8](repeating: 1, count: 512)) }
        #expect(!channel.isOpen)
        #expect(closedWith?.errno == .wouldBlock)
    }
}
