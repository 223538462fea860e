import LatchkeyEvents
import Testing

/// The text each typed value prints is the contract users filter on (journald's fields, the
/// JSON lines, MQTT): these pin it, value type by value type, so that a change of formatting
/// fails here before it reaches anyone's `journalctl` filter.
struct EventValueTextTests {
    private func text(_ event: Event) -> [String] { event.fields.map { "\($0.0)=\($0.1)" } }

    @Test func integersPrintInDecimalWithoutGrouping() {
        #expect(text(.lockAdvertisingPaused(links: 0)) == ["links=0"])
        #expect(text(.lockKeyEnded(key: 4_294_967_295, links: 12_345)) == ["key=4294967295", "links=12345"])
        #expect(text(.lockCommandAccepted(key: 1, op: .lock, counter: 18_446_744_073_709_551_615))
            == ["key=1", "op=lock", "counter=18446744073709551615"])
        #expect(text(.lockRealtimeRefused(priority: -1, error: "e", hint: "h")) == ["priority=-1", "error=e", "hint=h"])
        #expect(text(.phoneGattReady(mtu: 247)) == ["mtu=247"])
    }

    @Test func booleansPrintTrueAndFalse() {
        #expect(text(.lockRestored(services: 1, centrals: 2, subscribed: 0, advertising: true))
            == ["services=1", "centrals=2", "subscribed=0", "advertising=true"])
        #expect(text(.phoneHome(cycle: 3, unlocked: false)) == ["cycle=3", "unlocked=false"])
        #expect(text(.phoneRestored(lock: .connected, cachedCharacteristics: 4, subscribed: true))
            == ["lock=connected", "cached_characteristics=4", "subscribed=true"])
    }

    @Test func durationsPrintInTheUnitTheirFieldNames() {
        // Whole seconds, the fraction dropped (Duration.components.seconds).
        #expect(text(.lockArrivalRelock(key: 1, seconds: .milliseconds(30_999))) == ["key=1", "seconds=30"])
        #expect(text(.pairScanning(seconds: .seconds(120))) == ["seconds=120"])
        // Milliseconds as a Double prints them.
        #expect(text(.phoneCommandOk(op: .unlock, ms: .microseconds(12_500))) == ["op=unlock", "ms=12.5"])
        #expect(text(.phoneLinkIntervalUnsupported(ms: .seconds(3))) == ["ms=3000.0"])
        #expect(text(.phoneLinkIntervalUnsupported(ms: .nanoseconds(1))) == ["ms=1e-06"])
        #expect(text(.appWakeOverBudget(.lock, event: "ready", ms: .milliseconds(7), budgetMs: .milliseconds(5)))
            == ["event=ready", "ms=7.0", "budget_ms=5.0"])
        // Swift's own print of a Duration.
        #expect(text(.transportRefused(.phone, request: "connect", reason: "busy", attempt: 2, retryIn: .milliseconds(250)))
            == ["request=connect", "reason=busy", "attempt=2", "retry_in=0.25 seconds"])
    }

    @Test func aValueOrItsWordForNone() {
        #expect(text(.lockArrivalTiming(key: 1, challengeToCommandMs: .milliseconds(40), intervalMs: nil))
            == ["key=1", "challenge_to_command_ms=40.0", "interval_ms=unknown"])
        #expect(text(.lockArrivalTiming(key: 1, challengeToCommandMs: .zero, intervalMs: .microseconds(7_500)))
            == ["key=1", "challenge_to_command_ms=0.0", "interval_ms=7.5"])
        #expect(text(.lockCommandAccepted(key: 1, op: .unlock, source: "bridge", decision: .nothingDecided))
            == ["key=1", "op=unlock", "source=bridge", "decision=none"])
        #expect(text(.lockCommandAccepted(key: 1, op: .unlock, decision: DecisionNumber(nil))) == ["key=1", "op=unlock", "decision=none"])
        #expect(text(.lockCommandAccepted(key: 1, op: .unlock, decision: DecisionNumber(9))) == ["key=1", "op=unlock", "decision=9"])
        #expect(text(.lockRecovering(decision: 12, operation: .unlock)) == ["decision=decision#12", "operation=unlock"])
        #expect(text(.controlRefused(.lock, command: "unlock", peer: .other, uid: nil, pid: 42))
            == ["command=unlock", "peer=other", "uid=unknown", "pid=42"])
        #expect(text(.controlRefused(.lock, command: "unlock", peer: .bridge, uid: 1001, pid: 7))
            == ["command=unlock", "peer=bridge", "uid=1001", "pid=7"])
        #expect(text(.controlRefused(.phone, command: "status")) == ["command=status"])
    }

    @Test func eachClosedSetPrintsItsWords() {
        #expect(Event.LockState.allCases.map(\.eventText)
            == ["notFullyLocked", "locked", "unlocked", "locking", "unlocking", "unknown"])
        #expect(Event.DoorState.allCases.map(\.eventText)
            == ["open", "closed", "jammed", "forcedOpen", "unspecifiedError", "ajar", "unknown"])
        #expect(Event.OperatingMode.allCases.map(\.eventText) == ["normal", "noRemoteLockUnlock", "passage"])
        #expect(Event.Operation.allCases.map(\.eventText)
            == ["lock", "unlock", "unlock-with-timeout", "arrival-unlock", "present", "set-operating-mode"])
        #expect(Event.KeyRole.allCases.map(\.eventText) == ["admin", "user"])
        #expect(Event.RadioState.allCases.map(\.eventText)
            == ["unknown", "resetting", "unsupported", "unauthorized", "poweredOff", "poweredOn"])
        #expect(Event.Presence.allCases.map(\.eventText) == ["unknown", "home", "leaving", "away", "nearby", "arriving"])
        #expect(Event.LinkState.allCases.map(\.eventText) == ["disconnected", "connecting", "connected", "disconnecting"])
        #expect(Event.IntervalReason.allCases.map(\.eventText) == ["idle", "busy"])
        #expect(Event.ChallengeAtHand.allCases.map(\.eventText) == ["ahead", "held"])
        #expect(Event.SessionAtReply.allCases.map(\.eventText) == ["none", "open"])
        #expect(Event.ControlPeer.allCases.map(\.eventText) == ["bridge", "other"])
        #expect(Event.CommandRejection.allCases.map(\.eventText)
            == ["malformed command", "revoked key", "authentication failed", "stale challenge", "replayed counter",
                "not authorized", "locked out", "refused by policy", "actuator disabled", "storage failure",
                "pairing window closed", "busy: the bolt is moving", "no session on this link"])
        #expect(Event.ArrivalRefusal.allCases.map(\.eventText)
            == ["door open", "no-remote operating mode", "recent manual unlock", "another phone arrived moments ago",
                "no departure seen since the last arrival", "the phone came back too long ago", "suspected relay"])
        #expect(Event.NotEnrolledReason.allCases.map(\.eventText)
            == ["code-mismatch", "refused-by-owner", "timed-out", "storage-failure"])
        // And through a constructor, as a line prints them.
        #expect(text(.lockStarted(state: .notFullyLocked, door: .forcedOpen)) == ["state=notFullyLocked", "door=forcedOpen"])
        #expect(text(.lockCommandRefused(key: 3, op: .setOperatingMode, mode: .noRemoteLockUnlock))
            == ["key=3", "op=set-operating-mode", "mode=noRemoteLockUnlock"])
        #expect(text(.phonePresence(from: .leaving, to: .away)) == ["from=leaving", "to=away"])
        #expect(text(.phoneReplyUnreadable(kind: "status", session: .noSession)) == ["kind=status", "session=none"])
        #expect(text(.lockRadio(state: .poweredOn)) == ["state=poweredOn"])
    }

    @Test func everyFieldShowsItsTypeInTheDocument() {
        let markdown = EventKind.markdown
        #expect(markdown.contains("`counter` (integer, optional)"))
        #expect(markdown.contains("`advertising` (true or false)"))
        #expect(markdown.contains("`seconds` (seconds)"))
        #expect(markdown.contains("`interval_ms` (milliseconds, or `unknown`)"))
        #expect(markdown.contains("`state` (lock state: `notFullyLocked`, `locked`, `unlocked`, `locking`, `unlocking`, `unknown`)"))
        for kind in EventKind.all {
            for field in kind.fields {
                #expect(markdown.contains("`\(field.key)` (\(field.type.documented)"), "\(kind.name).\(field.key)")
            }
        }
    }
}
