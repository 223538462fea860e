import LatchkeyEvents
import LatchkeyLock

/// Each lock event once it happened: first to `seen` (the arrival tracker), then into the
/// audit log, to the runtime's hook (`onLogged`), to journald, and last to `recorded` (the
/// phones' status and the wake-up's end). A log that cannot take it is said, never silent.
final class LockEventRecorder {
    private let log: any LockEventLog
    private let seen: (LockEvent) -> Void
    private let recorded: () -> Void
    private let emit: (Event) -> Void
    /// Called with each lock event once it is in the audit log (the runtime's alarm hook).
    var onLogged: ((LockEvent) -> Void)?

    init(log: any LockEventLog, seen: @escaping (LockEvent) -> Void, recorded: @escaping () -> Void,
         emit: @escaping (Event) -> Void) {
        self.log = log
        self.seen = seen
        self.recorded = recorded
        self.emit = emit
    }

    func record(_ event: LockEvent) {
        seen(event)
        do { try log.append(event) } catch { emit(.lockLogFailed(error: "\(error)")) }
        onLogged?(event)
        // The key it concerns, when one does: journald's KEY_ID= (`AgentEvent.journaldEntry`, LatchkeyDaemons).
        emit(.lockEvent(kind: "\(event.kind)", state: .init(event.lockStateAfter), door: .init(event.doorState),
                        key: event.keyID?.rawValue))
        recorded()
    }

    /// The lock state of the audit log's last event; nil for an empty log, and for one that
    /// cannot be read (said as a `lock.fault`: the start then logs no relock it cannot compare).
    func lastLoggedLockState() -> LockState? {
        let last = log.lastSequence
        guard last > 0 else { return nil }
        do {
            guard let entry = try log.events(from: last, limit: 1).first else { return nil }
            return try LockEvent(decoding: entry.bytes).lockStateAfter
        } catch {
            emit(.lockFault(fault: "reading the audit log's last event #\(last): \(error)"))
            return nil
        }
    }
}
