import LatchkeyEvents
import LatchkeyLockProtocol

/// What the lock reports of itself (reads and notifications of its status, opened under the
/// link's session): the last report's bytes, and each decodable one said and handed back.
final class LockStatusReports {
    private let events: PhoneEventOutput
    private var lastStatus: [UInt8]?

    init(events: PhoneEventOutput) {
        self.events = events
    }

    /// The lock's last reported status bytes.
    var last: [UInt8]? { lastStatus }

    /// An opened status: kept, and decoded; nil when the phone cannot decode it, which changes
    /// nothing it acts on (the raw value stays in `last`).
    func received(_ v: [UInt8]) -> LockStatusFrame? {
        lastStatus = v
        guard let frame = try? LockStatusFrame(decoding: v) else { return nil }
        emit(.phoneLockStatus(lockState: frame.lockState, doorState: frame.doorState))
        return frame
    }

    private func emit(_ event: Event) { events.emit(event) }
}
