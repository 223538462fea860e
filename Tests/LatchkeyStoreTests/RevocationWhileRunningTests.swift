import LatchkeyAgents
import LatchkeyEvents
import LatchkeyGPIO
import LatchkeyLock
import LatchkeyLockAgent
import LatchkeyLockProtocol
import LatchkeyPhone
import LatchkeyPhoneAgent
import LatchkeySecurity
import LatchkeySim
import LatchkeySimGPIO
import LatchkeyStore
import LatchkeyTransport
import Testing

/// `latchkey keys revoke` while the lock agent runs (docs/LOCK-RULES.md rule 3: keys can be
/// revoked at once): the agent reads its keys from the SQLite file at every command, so
/// the revocation another process writes applies to the very next command.
@Suite struct RevocationWhileRunningTests {
    @Test func aKeyRevokedThroughTheStoreFailsOnItsNextCommand() throws {
        let fixture = StoreFixture()
        let scene = try AirScene(fixture, seed: 3)
        let (loop, air, store, key) = (scene.loop, scene.air, scene.store, scene.key)
        let (lockAddress, phoneAddress) = (scene.lockAddress, scene.phoneAddress)

        let chip = SimulatedGPIOChip(label: "sim-lock", lineNames: ["latch"], loop: loop)
        let hardware = try LockHardware.open(LockWiring(chipLabel: "sim-lock", actuator: .hold, unlockOutput: .init("latch")),
                                             chips: GPIOChipSet([chip]), loop: loop)
        let controller = try LockController(loop: loop, behaviour: LockBehaviour(), hardware: hardware,
                                            journal: InMemoryDecisionJournal())
        let lockEvents = RecordingEventSink()
        let agent = LockAgent(transport: air.device(lockAddress)!, controller: controller, keys: store.keyStore(),
                              log: InMemoryLockEventLog(), events: lockEvents,
                              lockout: store.lockoutStore(monotonicNow: { loop.now }))
        agent.start(recovered: nil)
        let phone = try PhoneAgent(transport: air.device(phoneAddress)!,
                                   configuration: PhoneAgentConfiguration(lockAddress: lockAddress, keyID: key.id,
                                                                          secret: key.secret),
                                   store: InMemoryPhoneStateStore(), events: RecordingEventSink())

        func command(_ op: LockOperation) -> PhoneAgent.CommandError?? {
            var result: Result<Void, PhoneAgent.CommandError>?
            phone.perform(op) { result = $0 }
            loop.advance(until: { result != nil }, limit: .seconds(5))
            return result.map { r in if case .failure(let e) = r { e } else { nil } }
        }

        #expect(command(.unlock) == .some(nil), "accepted")
        #expect(chip.isHigh("latch"))
        try fixture.open().keyStore().revoke(id: key.id)  // another process: `latchkey keys revoke 1`
        #expect(command(.lock) == .some(.rejected(.unknownKey)))
        #expect(chip.isHigh("latch"), "the revoked key moved nothing")
        #expect(lockEvents.names().last(where: { $0.hasPrefix("lock.command") }) == EventKind.lockCommandRejected.name)
    }
}
