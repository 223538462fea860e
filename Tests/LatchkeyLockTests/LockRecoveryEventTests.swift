import LatchkeyLock
import LatchkeySim
import LatchkeyTransport
import Testing

/// Every recovery is an event in the log: a decision a previous run left
/// open ends in exactly one LockOperation or LockOperationError that carries its id and the
/// `recovered` mark, whatever the start-up does with it.
@Suite struct LockRecoveryEventTests {
    /// The events that close `id`, with their recovered marks.
    private func closing(_ id: DecisionID, in rig: LockRig) -> [(kind: String, recovered: Bool)] {
        rig.events.compactMap { event in
            switch event.kind {
            case .lockOperation(let r) where r.decision == id: ("operation", r.recovered)
            case .lockOperationError(let r, let e) where r.decision == id: ("error \(e)", r.recovered)
            default: nil
            }
        }
    }

    @Test func aResumedUnlockEndsInOneRecoveredOperation() throws {
        let loop = ManualEventLoop()
        loop.advance(by: .seconds(1))
        let rig = try LockRig(loop: loop)
        rig.start(recovered: LockDecision(id: DecisionID(9), operation: .unlock, source: .remote, who: KeyID(1),
                                          decidedAt: .zero, deadline: .zero + .seconds(5)))
        #expect(closing(DecisionID(9), in: rig).map(\.kind) == ["operation"])
        #expect(closing(DecisionID(9), in: rig).allSatisfy { $0.recovered })
    }

    @Test func anAbandonedUnlockEndsInOneRecoveredError() throws {
        let loop = ManualEventLoop()
        loop.advance(by: .seconds(60))
        let rig = try LockRig(loop: loop)
        rig.start(recovered: LockDecision(id: DecisionID(4), operation: .unlock, source: .remote,
                                          decidedAt: .zero, deadline: .zero + .seconds(5)))
        #expect(closing(DecisionID(4), in: rig).map(\.kind) == ["error interrupted"])
        #expect(closing(DecisionID(4), in: rig).allSatisfy { $0.recovered })
        #expect(!rig.unlockEnergized)
    }

    @Test func aResumedMovementIsMarkedWhenItArrives() throws {
        let rig = try LockRig(actuator: .motor(runTime: .seconds(2)), boltSensors: true, bolt: .unlocked)
        rig.start(recovered: LockDecision(id: DecisionID(3), operation: .lock, source: .auto,
                                          decidedAt: .zero, deadline: .zero + .seconds(5)))
        #expect(closing(DecisionID(3), in: rig).isEmpty, "still moving")
        rig.setBolt(.locked)
        #expect(closing(DecisionID(3), in: rig).map(\.kind) == ["operation"])
        #expect(closing(DecisionID(3), in: rig).allSatisfy { $0.recovered })
    }

    @Test func aResumedMovementThatJamsIsMarkedToo() throws {
        let rig = try LockRig(actuator: .motor(runTime: .seconds(2)), boltSensors: true, bolt: .unlocked)
        rig.start(recovered: LockDecision(id: DecisionID(3), operation: .lock, source: .auto,
                                          decidedAt: .zero, deadline: .zero + .seconds(5)))
        rig.loop.advance(by: LockBehaviour().jamTimeout)
        #expect(closing(DecisionID(3), in: rig).map(\.kind) == ["error jammed"])
        #expect(closing(DecisionID(3), in: rig).allSatisfy { $0.recovered })
    }

    @Test func aLockDeferredByAnOpenDoorIsMarkedAndTheLaterRelockIsNot() throws {
        let rig = try LockRig(actuator: .motor(runTime: .seconds(2)), boltSensors: true, bolt: .unlocked, doorOpen: true)
        rig.start(recovered: LockDecision(id: DecisionID(3), operation: .lock, source: .auto,
                                          decidedAt: .zero, deadline: .zero + .seconds(5)))
        #expect(closing(DecisionID(3), in: rig).map(\.kind) == ["error doorOpen"])
        #expect(closing(DecisionID(3), in: rig).allSatisfy { $0.recovered })
        rig.setDoor(open: false)
        rig.setBolt(.locked)
        let relock = rig.operations.last
        #expect(relock?.decision != DecisionID(3))
        #expect(relock?.recovered == false, "a new decision of the lock's own, not a recovery")
    }

    @Test func ordinaryDecisionsAreNeverMarked() throws {
        let rig = try LockRig()
        rig.start()
        rig.submit(.unlock)
        rig.submit(.lock)
        #expect(rig.operations.count == 2)
        #expect(rig.operations.allSatisfy { !$0.recovered })
    }

    @Test func theMarkSurvivesTheBinaryForm() throws {
        let event = LockEvent(kind: .lockOperationError(LockOperationRecord(operation: .unlock, source: .remote,
                                                                            decision: DecisionID(5), recovered: true),
                                                        .interrupted),
                              time: .zero, lockStateBefore: .unknown, lockStateAfter: .locked, doorState: .closed)
        let bytes = event.encoded
        #expect(bytes[8] == 0b110, "decision and recovered flags")
        #expect(try LockEvent(decoding: bytes) == event)
        var withoutDecision = bytes
        withoutDecision[8] = 0b100
        for i in 13..<21 { withoutDecision[i] = 0 }
        #expect(throws: LockEventDecodingError(.invalidField, offset: 8)) { _ = try LockEvent(decoding: withoutDecision) }
    }
}
