/// Which audit events are delivered: the last one the broker acknowledged (`delivered`, kept
/// on disk by the owner), the ones published and awaiting PUBACK, and where to read next.
/// A lost connection forgets what was in flight: the next session starts after `delivered`.
public struct EventCursor: Sendable {
    public private(set) var delivered: UInt64
    public private(set) var nextToRead: UInt64
    private var inFlight: [(messageID: Int, sequence: UInt64, acknowledged: Bool)] = []

    public init(delivered: UInt64) {
        self.delivered = delivered
        nextToRead = delivered + 1
    }

    public var inFlightCount: Int { inFlight.count }

    /// `sequence` was handed to the broker as message `messageID`.
    public mutating func published(_ sequence: UInt64, messageID: Int) {
        inFlight.append((messageID, sequence, false))
        nextToRead = sequence + 1
    }

    /// Marks a PUBACK; returns the new `delivered` when it moved (the owner stores it).
    public mutating func acknowledged(_ messageID: Int) -> UInt64? {
        guard let i = inFlight.firstIndex(where: { $0.messageID == messageID }) else { return nil }
        inFlight[i].acknowledged = true
        var moved = false
        while let first = inFlight.first, first.acknowledged {
            delivered = first.sequence
            inFlight.removeFirst()
            moved = true
        }
        return moved ? delivered : nil
    }

    /// The session ended: what was not acknowledged is read and published again.
    public mutating func sessionEnded() {
        inFlight = []
        nextToRead = delivered + 1
    }
}
