/// Chunked transfer of values larger than one notification.
///
/// Core Bluetooth's sample sends a long value as MTU−3 sized notifications followed by an
/// "EOM" notification. A text marker can occur inside binary data, so each chunk here
/// carries a one-octet header instead: bit 7 marks the last chunk (the end marker) and
/// bits 0–6 a sequence number that lets the receiver notice a lost or repeated chunk.
/// Chunk size follows the negotiated ATT MTU: MTU − 3 octets per notification, header included.
public enum ChunkHeader {
    public static let finalFlag: UInt8 = 0x80
    public static let sequenceMask: UInt8 = 0x7F
}

/// Splits one value into chunks and hands them out one at a time; the caller sends each
/// and, when the link says its queue is full, offers the same chunk again after "ready".
public struct ChunkedSender: Sendable {
    private let value: [UInt8]
    private let payloadSize: Int
    private var offset = 0
    private var sequence: UInt8 = 0
    private var sentFinal = false

    /// `mtu` is the negotiated ATT_MTU; a notification carries MTU − 3 octets.
    public init(value: [UInt8], mtu: Int) {
        precondition(mtu >= 23, "ATT_MTU is at least 23")
        self.value = value
        self.payloadSize = mtu - 3 - 1
    }

    public var isFinished: Bool { sentFinal }
    /// Number of notifications the whole value takes.
    public var chunkCount: Int { max(1, (value.count + payloadSize - 1) / payloadSize) }

    /// The chunk to send now, without consuming it.
    public func peek() -> [UInt8]? {
        guard !sentFinal else { return nil }
        let end = min(value.count, offset + payloadSize)
        let isLast = end == value.count
        var chunk: [UInt8] = [(isLast ? ChunkHeader.finalFlag : 0) | (sequence & ChunkHeader.sequenceMask)]
        chunk += value[offset..<end]
        return chunk
    }

    /// Marks the chunk from `peek()` as accepted by the link.
    public mutating func advance() {
        guard !sentFinal else { return }
        let end = min(value.count, offset + payloadSize)
        if end == value.count { sentFinal = true }
        offset = end
        sequence = (sequence &+ 1) & ChunkHeader.sequenceMask
    }
}

/// Reassembles chunks from `ChunkedSender` into whole values.
public struct ChunkAssembler: Sendable {
    public enum Failure: Error, Equatable, Sendable {
        case emptyChunk
        /// A chunk was lost or repeated: expected sequence, got sequence. The partial value is dropped.
        case outOfSequence(expected: UInt8, got: UInt8)
        case tooLarge(limit: Int)
    }

    private var buffer: [UInt8] = []
    private var expected: UInt8 = 0
    /// A value larger than this is refused, so a peer cannot make us grow without bound.
    public let maximumSize: Int

    public init(maximumSize: Int = 64 * 1024) { self.maximumSize = maximumSize }

    /// Feeds one notification. Returns the whole value when this was its last chunk.
    public mutating func receive<C: Collection<UInt8>>(_ chunk: C) throws(Failure) -> [UInt8]? {
        guard let header = chunk.first else { throw .emptyChunk }
        let seq = header & ChunkHeader.sequenceMask
        guard seq == expected else {
            let wanted = expected
            reset()
            throw .outOfSequence(expected: wanted, got: seq)
        }
        guard buffer.count + chunk.count - 1 <= maximumSize else {
            reset()
            throw .tooLarge(limit: maximumSize)
        }
        buffer += chunk.dropFirst()
        expected = (expected &+ 1) & ChunkHeader.sequenceMask
        guard header & ChunkHeader.finalFlag != 0 else { return nil }
        defer { reset() }
        return buffer
    }

    public mutating func reset() {
        buffer.removeAll(keepingCapacity: true)
        expected = 0
    }
}
