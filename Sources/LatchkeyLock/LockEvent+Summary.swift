// The audit log for a person (`latchkey log`, `latchkey status`): one sentence per event,
// in words rather than enum cases. The binary form and `description` stay as they are.

extension LockEvent {
    /// What happened, who asked, and the states after it, on one line.
    public var summary: String {
        "\(what)  [lock \(lockStateAfter), door \(doorState)]"
    }

    private var what: String {
        switch kind {
        case .lockOperation(let r):
            var text = (r.operation == .lock ? "locked" : "unlocked") + Self.how(r.source, r.who)
            if r.recovered { text += " (resumed after a restart)" }
            return text
        case .lockOperationError(let r, let error):
            guard let operation = r.operation else {
                // Refused before the frame was opened (or not a lock operation at all).
                return "rejected: \(Self.words(error))" + (r.who.map { " (key \($0.rawValue))" } ?? "")
                    + "; operation unknown"
            }
            var text = "\(operation == .lock ? "lock" : "unlock")\(Self.how(r.source, r.who)) refused: \(Self.words(error))"
            if r.recovered { text += " (after a restart)" }
            return text
        case .doorLockAlarm(let code):
            return "alarm: \(Self.words(code))"
        case .doorStateChange(let state):
            return "door \(state)"
        case .lockUserChange(let change):
            let verb = switch change.change { case .add: "added"; case .clear: "revoked"; case .modify: "changed" }
            return "key \(change.key.rawValue) \(verb) (\(Self.words(change.source)))"
        case .operatingModeChange(let change):
            var text = "operating mode \(Self.words(change.previous)) -> \(Self.words(change.mode))"
                + Self.how(change.source, change.who)
            if change.source == .auto && change.previous == .passage { text += " (passage is not restored at start)" }
            return text
        case .suspectedRelay(let r):
            let why = switch r.reason {
            case .tooSlow: "command too late after its challenge"
            case .intervalAboveCeiling: "connection interval above the ceiling"
            case .intervalUnknown: "connection interval unknown"
            }
            let interval = r.intervalMicroseconds.map { "\(Double($0) / 1000) ms" } ?? "unknown"
            return "arrival unlock over Bluetooth by key \(r.who.rawValue) refused as a suspected relay: \(why) "
                + "(challenge→command \(Double(r.elapsedMicroseconds) / 1000) ms, interval \(interval))"
        }
    }

    /// Which way the command came in, and the key it came as: "over Bluetooth by key 3",
    /// "through the MQTT bridge by key 9", "by the inside button", "by the lock itself for key 3"
    /// (an auto-lock after that key's phone left). A reader must never mistake the bridge for a phone.
    private static func how(_ source: OperationSource, _ who: KeyID?) -> String {
        let key = who.map { " key \($0.rawValue)" } ?? ""
        switch source {
        case .remote, .aliro: return " over Bluetooth" + (who == nil ? "" : " by" + key)
        case .proprietaryRemote: return " through the MQTT bridge" + (who == nil ? "" : " by" + key)
        case .manual: return " by hand" + (who == nil ? "" : " for" + key)
        case .button: return " by the inside button" + (who == nil ? "" : " for" + key)
        case .auto: return " by the lock itself" + (who == nil ? "" : " for" + key)
        case .unspecified: return " by a local command" + (who == nil ? "" : " for" + key)
        case .keypad, .schedule, .rfid, .biometric: return " by \(source)" + (who == nil ? "" : " by" + key)
        }
    }

    private static func words(_ source: OperationSource) -> String {
        switch source {
        case .remote, .aliro: "over Bluetooth"
        case .proprietaryRemote: "through the MQTT bridge"
        case .manual: "by hand"
        case .button: "inside button"
        case .auto: "the lock itself"
        case .unspecified: "local command"
        case .keypad, .schedule, .rfid, .biometric: "\(source)"
        }
    }

    private static func words(_ error: OperationError) -> String {
        switch error {
        case .disabledUserDenied: "revoked key"
        case .invalidCredential: "invalid credential"
        case .restricted: "not permitted (key role or operating mode)"
        case .jammed: "jammed"
        case .doorOpen: "door open"
        case .journalFailed: "decision could not be stored"
        case .busy: "busy, the bolt was moving"
        case .notReady: "not ready"
        case .interrupted: "interrupted by a restart, past its window"
        case .hardwareFault: "actuator fault"
        case .pairingNotConfirmed: "pairing not confirmed by the owner (key never enrolled)"
        case .arrivalNotExpected: "arrival not expected (no departure seen, or the phone came back too long ago)"
        case .unspecified, .insufficientBattery: "\(error)"
        }
    }

    private static func words(_ code: AlarmCode) -> String {
        switch code {
        case .lockJammed: "lock jammed"
        case .lockFactoryReset: "store reset (was corrupt)"
        case .lockRadioPowerCycled: "radio power-cycled"
        case .wrongCodeEntryLimit: "too many failed attempts, locked out"
        case .doorForcedOpen: "door forced open"
        case .doorAjar: "door left open"
        case .frontEscutcheonRemoved, .forcedUser: "\(code)"
        }
    }

    private static func words(_ mode: OperatingMode) -> String {
        switch mode {
        case .normal: "normal"
        case .noRemoteLockUnlock: "no-remote"
        case .passage: "passage"
        }
    }
}
