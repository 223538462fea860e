import LatchkeyAgents
import LatchkeyEvents

/// An agent's timeline event as a journal entry: what `journalctl -p warning` must find
/// (jams, lockouts, refusals, faults) carries a warning or worse, and every field is a
/// journal field: LATCHKEY_EVENT=lock.lockout, KEY_ID=3, LATCHKEY_REASON=…
extension AgentEvent {
    /// Faults: something the agent could not do (a store write, a GPIO line, a restoration).
    static let errorSuffixes = ["fault", "_failed", "_error", "store_recovered"]
    /// Someone was refused, locked out or timed out, or the store is read-only; the agent works on.
    static let warningSuffixes = ["_refused", "_rejected", "lockout", "_timeout", "_overflow", "_over_budget",
                                  "_invalid", "suspected_relay", "_read_only"]
    /// Audit-log kinds (`lock.event`'s kind=) that are warnings: alarms (a jam, a forced door,
    /// too many failed attempts, a store reset), refused or failed operations, and an
    /// arrival unlock refused as a suspected relay.
    static let warningKinds = ["doorLockAlarm", "lockOperationError", "suspectedRelay"]

    public var journaldPriority: JournaldEntry.Priority {
        // Audit-log entries: the warning kinds, and the door's story at info.
        if name == EventKind.lockEvent.name, let kind = field("kind") {
            return Self.warningKinds.contains(where: { kind.hasPrefix($0) }) ? .warning : .info
        }
        if Self.errorSuffixes.contains(where: { name.hasSuffix($0) }) { return .error }
        if Self.warningSuffixes.contains(where: { name.hasSuffix($0) }) { return .warning }
        if name.hasSuffix(".started") || name.hasSuffix(".stopping") { return .notice }
        return .info
    }

    /// MESSAGE is the line the agent prints on stdout without its monotonic seconds (journald
    /// has the time); the monotonic time stays in LATCHKEY_T_MS for ordering within a boot.
    public func journaldEntry(identifier: String = "latchkey") -> JournaldEntry {
        let text = fields.map { "\($0.0)=\($0.1)" }.joined(separator: " ")
        var journalFields: [(String, String)] = [("SYSLOG_IDENTIFIER", identifier), ("LATCHKEY_EVENT", name),
                                                 ("LATCHKEY_T_MS", "\(time.nanoseconds / 1_000_000)")]
        for (key, value) in fields where !value.isEmpty {
            // KEY_ID= for the phone key an event concerns, whatever the event calls it.
            if key == "key" {
                journalFields.append(("KEY_ID", value.hasPrefix("key#") ? String(value.dropFirst(4)) : value))
            } else {
                journalFields.append((JournaldEntry.fieldName(key, prefix: "LATCHKEY_"), value))
            }
        }
        return JournaldEntry(journaldPriority, name + (text.isEmpty ? "" : " " + text), fields: journalFields)
    }
}
