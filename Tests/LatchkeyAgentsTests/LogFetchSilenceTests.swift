import LatchkeyAgents
import LatchkeyEvents
import LatchkeyLock
import LatchkeyPhoneAgent
import LatchkeySim
import LatchkeyTransport
import Testing

/// A log fetch whose lock goes silent fails after `PhoneAgent.logFetchSilence` instead of
/// holding the phone's one fetch (and its caller) for as long as the link lasts.
@Suite struct LogFetchSilenceTests {
    @Test func aTransferTheLockAbandonsFailsAndTheNextFetchRuns() throws {
        let w = try AgentWorld(autoRelock: nil, grace: .seconds(5), phoneStartsAt: 1)
        #expect(w.advance(until: { w.phoneEvents.names().contains(EventKind.phoneLockStatus.name) }, limit: .seconds(5)))
        #expect(w.linkSetUp())
        w.loop.advance(by: .milliseconds(200))
        for i in 0..<1_000 {  // a transfer of many notifications
            let record = LockOperationRecord(operation: i % 2 == 0 ? .unlock : .lock, source: .remote, who: KeyID(1))
            _ = try w.lockLog.append(LockEvent(kind: .lockOperation(record), time: w.loop.now, lockStateBefore: .locked,
                                               lockStateAfter: .unlocked, doorState: .closed))
        }
        var notifications = 0
        w.air.sniffer = { from, _, pdu in
            if from == w.lockAddress, pdu.first == 0x1B { notifications += 1 }
        }
        var result: PhoneAgent.LogResult?
        w.phone.fetchLog(from: 1, limit: 1_000) { result = $0 }
        #expect(w.advance(until: { notifications >= 3 }, limit: .seconds(2)))
        // SIGKILL of the lock agent mid-transfer, relaunched at once: it adopts the link and
        // its session (docs/RESTORATION.md), but the rest of the log was in the dead
        // process's memory and never comes; no ATT request of the phone's is pending.
        w.killLock()
        try w.restartLock()
        w.loop.advance(by: PhoneAgent.logFetchSilence - .seconds(1))
        #expect(result == nil, "still waiting inside the silence allowed")
        #expect(w.phone.isLinked)
        #expect(w.advance(until: { result != nil }, limit: .seconds(2)))
        guard case .failure(let error)? = result else {
            Issue.record("an abandoned transfer: \(String(describing: result))")
            return
        }
        #expect("\(error)".contains("nothing from the lock"), "\(error)")
        #expect(w.phoneEvents.names().contains(EventKind.phoneLogFetchTimeout.name))
        // The phone's one fetch is free again: the next one is not refused as running.
        var second: PhoneAgent.LogResult?
        w.phone.fetchLog(from: 1, limit: 1) { second = $0 }
        w.loop.advance(by: .seconds(1))
        if case .failure(let e)? = second { #expect(!"\(e)".contains("is running"), "\(e)") }
    }
}
