import LatchkeyATT
import LatchkeyGATT
import LatchkeyTestKit
import Testing

@Suite("Chunked transfer")
struct ChunkedTransferTests {
    static func payload(_ count: Int, seed: UInt64 = 9) -> [UInt8] {
        var g = SeededGenerator(seed: seed)
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &g) }
    }

    static func allChunks(_ value: [UInt8], mtu: Int) -> [[UInt8]] {
        var sender = ChunkedSender(value: value, mtu: mtu)
        var chunks: [[UInt8]] = []
        while let c = sender.peek() { chunks.append(c); sender.advance() }
        return chunks
    }

    @Test("round trip at the common MTUs, for empty, tiny, boundary and large values",
          arguments: [23, 185, 247, 517])
    func roundTrip(mtu: Int) throws {
        for size in [0, 1, mtu - 5, mtu - 4, mtu - 3, 2 * (mtu - 4), 1_000, 10_000] {
            let value = Self.payload(size, seed: UInt64(size))
            var assembler = ChunkAssembler()
            var result: [UInt8]?
            let chunks = Self.allChunks(value, mtu: mtu)
            for (i, chunk) in chunks.enumerated() {
                let r = try assembler.receive(chunk)
                if i < chunks.count - 1 { #expect(r == nil) } else { result = r }
            }
            #expect(result == value, "size \(size)")
        }
    }

    @Test("a value takes ⌈size / (MTU − 4)⌉ chunks of exactly MTU − 3 octets, the last one shorter",
          arguments: [23, 185, 247, 517])
    func chunkCountAndSize(mtu: Int) {
        for size in [1, mtu - 4, mtu - 3, 5_000] {
            let value = Self.payload(size)
            let chunks = Self.allChunks(value, mtu: mtu)
            let expectedCount = (size + mtu - 5) / (mtu - 4)
            #expect(chunks.count == expectedCount, "size \(size)")
            #expect(ChunkedSender(value: value, mtu: mtu).chunkCount == expectedCount)
            #expect(chunks.dropLast().allSatisfy { $0.count == mtu - 3 })
            #expect(chunks.last!.count <= mtu - 3 && chunks.last!.count >= 2)
            // Header: final flag on the last chunk only; sequence numbers count up from 0.
            #expect(chunks.dropLast().allSatisfy { $0[0] & ChunkHeader.finalFlag == 0 })
            #expect(chunks.last![0] & ChunkHeader.finalFlag != 0)
            #expect(chunks.enumerated().allSatisfy { Int($1[0] & ChunkHeader.sequenceMask) == $0 % 128 })
        }
        #expect(Self.allChunks([], mtu: mtu) == [[ChunkHeader.finalFlag]])
    }

    @Test("every chunk fits a notification at the negotiated MTU")
    func chunksFitNotifications() throws {
        let script = ServerScript(.small())
        try script.exchange(.in([0x12, 0x04, 0x00, 0x01, 0x00]), .out([0x13]),
                            .in([0x02, 0xB9, 0x00]), .out([0x03, 0x05, 0x02]))  // ATT_MTU 185
        for chunk in Self.allChunks(Self.payload(2_000), mtu: script.server.mtu) {
            #expect(throws: Never.self) { try script.server.notification(chunk, forValueAt: SmallDB.batteryLevel).get() }
        }
    }

    @Test("sequence numbers wrap after 127, and the value still arrives whole")
    func sequenceWraps() throws {
        let value = Self.payload(19 * 300)  // 300 chunks at MTU 23
        var assembler = ChunkAssembler()
        var result: [UInt8]?
        let chunks = Self.allChunks(value, mtu: 23)
        #expect(chunks.count == 300)
        #expect(chunks[128][0] & ChunkHeader.sequenceMask == 0)
        for c in chunks { result = try assembler.receive(c) }
        #expect(result == value)
    }

    @Test("a lost chunk is detected as out of sequence, the partial value dropped, the next value accepted")
    func lostChunk() throws {
        let chunks = Self.allChunks(Self.payload(100), mtu: 23)
        var assembler = ChunkAssembler()
        #expect(try assembler.receive(chunks[0]) == nil)
        #expect(throws: ChunkAssembler.Failure.outOfSequence(expected: 1, got: 2)) { try assembler.receive(chunks[2]) }
        let next = Self.payload(50, seed: 77)
        var result: [UInt8]?
        for c in Self.allChunks(next, mtu: 23) { result = try assembler.receive(c) }
        #expect(result == next)
    }

    @Test("a repeated chunk is detected as out of sequence")
    func repeatedChunk() throws {
        let chunks = Self.allChunks(Self.payload(100), mtu: 23)
        var assembler = ChunkAssembler()
        _ = try assembler.receive(chunks[0])
        _ = try assembler.receive(chunks[1])
        #expect(throws: ChunkAssembler.Failure.outOfSequence(expected: 2, got: 1)) { try assembler.receive(chunks[1]) }
    }

    @Test("a value over the receiver's limit is refused; an empty chunk is refused")
    func limits() throws {
        var assembler = ChunkAssembler(maximumSize: 100)
        var failure: ChunkAssembler.Failure?
        do {
            for c in Self.allChunks(Self.payload(150), mtu: 23) { _ = try assembler.receive(c) }
        } catch {
            failure = error
        }
        #expect(failure == .tooLarge(limit: 100))
        var exact = ChunkAssembler(maximumSize: 100)
        var result: [UInt8]?
        for c in Self.allChunks(Self.payload(100), mtu: 23) { result = try exact.receive(c) }
        #expect(result?.count == 100)
        #expect(throws: ChunkAssembler.Failure.emptyChunk) { try exact.receive([UInt8]()) }
    }

    /// A transmit queue of notifications, as the link gives it: `send` refuses when full
    /// (Core Bluetooth's `updateValue` returning false), and draining one frees a slot and
    /// signals "ready" (`peripheralManagerIsReady(toUpdateSubscribers:)`).
    final class TransmitQueue {
        let capacity: Int
        var queued: [[UInt8]] = []
        var refusals = 0
        var onReady: (() -> Void)?
        init(capacity: Int) { self.capacity = capacity }
        func send(_ pdu: [UInt8]) -> Bool {
            guard queued.count < capacity else { refusals += 1; return false }
            queued.append(pdu)
            return true
        }
        func transmitOne() -> [UInt8]? {
            guard !queued.isEmpty else { return nil }
            let pdu = queued.removeFirst()
            onReady?()
            return pdu
        }
    }

    /// Streams `value` as notifications from a server to a client through a queue of
    /// `capacity`, resuming the sender on every "ready", and returns what the client reassembled.
    static func stream(_ value: [UInt8], mtu: Int, capacity: Int) throws -> (received: [UInt8]?, queue: TransmitQueue) {
        let server = GATTServer(database: Fixture.small().database, preferredMTU: mtu)
        _ = server.handle([0x12, 0x04, 0x00, 0x01, 0x00][...])
        _ = server.handle([0x02] + UInt16(mtu).le)
        let client = GATTClient(preferredMTU: mtu)
        var assembler = ChunkAssembler(maximumSize: 1 << 20)
        var received: [UInt8]?
        var failures: [ChunkAssembler.Failure] = []
        client.onValue = { _, value, _ in
            do throws(ChunkAssembler.Failure) {
                if let whole = try assembler.receive(value) { received = whole }
            } catch { failures.append(error) }
        }
        let queue = TransmitQueue(capacity: capacity)
        var sender = ChunkedSender(value: value, mtu: server.mtu)
        func pumpSender() {
            while let chunk = sender.peek() {
                let pdu = try! server.notification(chunk, forValueAt: SmallDB.batteryLevel).get()
                guard queue.send(pdu) else { return }  // full: wait for ready
                sender.advance()
            }
        }
        queue.onReady = pumpSender
        pumpSender()
        while let pdu = queue.transmitOne() { client.receive(pdu[...]) }
        #expect(failures.isEmpty)
        #expect(sender.isFinished)
        return (received, queue)
    }

    @Test("zero loss at full rate: the queue never fills", arguments: [23, 185, 247, 517])
    func fullRate(mtu: Int) throws {
        let value = Self.payload(50_000)
        let (received, queue) = try Self.stream(value, mtu: mtu, capacity: Int.max)
        #expect(received == value)
        #expect(queue.refusals == 0)
    }

    @Test("zero loss with a deliberately tiny queue: one chunk outstanding, resumed on ready",
          arguments: [23, 185, 247, 517])
    func tinyQueue(mtu: Int) throws {
        let value = Self.payload(50_000)
        let (received, queue) = try Self.stream(value, mtu: mtu, capacity: 1)
        #expect(received == value)
        // The sender met a full queue for nearly every chunk, and waited instead of dropping.
        let chunks = ChunkedSender(value: value, mtu: mtu).chunkCount
        #expect(queue.refusals >= chunks - 1)
    }
}
