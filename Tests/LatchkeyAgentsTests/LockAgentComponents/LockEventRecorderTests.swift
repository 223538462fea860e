import LatchkeyEvents
import LatchkeyLock
@testable import LatchkeyLockAgent
import LatchkeySim
import Testing

/// `LockEventRecorder` on its own: each lock event is seen, logged, handed to the hook and said
/// in that order; a log that refuses it is said, and the start reads the log's last lock state.
@Suite struct LockEventRecorderTests {
    let loop = ManualEventLoop()
    private let heard = Recorded()

    func recorder(_ log: any LockEventLog) -> LockEventRecorder {
        let heard = heard
        let recorder = LockEventRecorder(log: log, seen: { _ in heard.steps.append("seen") },
                                         recorded: { heard.steps.append("recorded") },
                                         emit: { heard.steps.append($0.name) })
        recorder.onLogged = { _ in heard.steps.append("hook") }
        return recorder
    }

    func event(_ after: LockState) -> LockEvent {
        LockEvent(kind: .doorLockAlarm(.lockRadioPowerCycled), time: loop.now, lockStateBefore: .locked,
                  lockStateAfter: after, doorState: .closed)
    }

    @Test func anEventIsSeenLoggedHookedSaidThenRecorded() {
        let log = InMemoryLockEventLog()
        recorder(log).record(event(.unlocked))
        #expect(log.lastSequence == 1)
        #expect(heard.steps == ["seen", "hook", EventKind.lockEvent.name, "recorded"])
    }

    @Test func aLogThatRefusesTheEventIsSaidAndTheRestStillHappens() {
        recorder(RefusingLog()).record(event(.locked))
        #expect(heard.steps == ["seen", EventKind.lockLogFailed.name, "hook", EventKind.lockEvent.name, "recorded"])
    }

    @Test func theStartReadsTheLastLoggedLockState() {
        let log = InMemoryLockEventLog()
        #expect(recorder(log).lastLoggedLockState() == nil, "an empty log says nothing")
        recorder(log).record(event(.locked))
        recorder(log).record(event(.unlocked))
        #expect(recorder(log).lastLoggedLockState() == .unlocked)
    }

    @Test func anUnreadableLogIsAFaultNotAState() {
        let log = RefusingLog()
        log.lastSequence = 3
        #expect(recorder(log).lastLoggedLockState() == nil)
        #expect(heard.steps == [EventKind.lockFault.name])
    }
}

private final class Recorded {
    var steps: [String] = []
}

/// A log on a store that takes nothing and gives nothing back.
private final class RefusingLog: LockEventLog {
    struct Refused: Error {}
    var lastSequence: UInt32 = 0
    func append(_ event: LockEvent) throws -> UInt32 { throw Refused() }
    func events(from sequence: UInt32, limit: Int) throws -> [(sequence: UInt32, bytes: [UInt8])] { throw Refused() }
}
