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
import LatchkeySimDisk
import LatchkeySimGPIO
import LatchkeyStore
import LatchkeyTransport
import Testing

/// The counter-with-decision rule measured on the file system: a phone's unlock, from the
/// frame leaving the phone to the latch line rising, costs the lock's store exactly one sync
/// (SQLite's xSync, counted by `SimulatedDisk`, a VFS over the real one), and that one commit
/// holds both the key's new counter and the decision (`StoredLockRecords.record(_:committing:)`).
@Suite struct CommandSyncCountTests {
    /// An output line that notes how many syncs the store had made when it was first driven active.
    final class WatchedOutput: GPIOOutput {
        let line: any GPIOOutput
        let syncs: () -> Int
        var syncsWhenActive: [Int] = []
        init(_ line: any GPIOOutput, syncs: @escaping () -> Int) { self.line = line; self.syncs = syncs }
        var name: String { line.name }
        var isActive: Bool { line.isActive }
        func set(_ active: Bool) throws(GPIOError) {
            if active && !line.isActive { syncsWhenActive.append(syncs()) }
            try line.set(active)
        }
    }

    /// The simulated chip, its outputs watched.
    final class WatchedChip: GPIOChip {
        let chip: SimulatedGPIOChip
        let syncs: () -> Int
        var outputs: [String: WatchedOutput] = [:]
        init(_ chip: SimulatedGPIOChip, syncs: @escaping () -> Int) { self.chip = chip; self.syncs = syncs }
        var label: String { chip.label }
        var debouncesInputs: Bool { chip.debouncesInputs }
        func requestOutput(_ line: String, _ config: GPIOLineConfig) throws(GPIOError) -> any GPIOOutput {
            let output = WatchedOutput(try chip.requestOutput(line, config), syncs: syncs)
            outputs[line] = output
            return output
        }
        func requestInput(_ line: String, _ config: GPIOLineConfig) throws(GPIOError) -> any GPIOInput {
            try chip.requestInput(line, config)
        }
    }

    /// The phone's timeline, noting the store's syncs when each sealed command was written.
    final class SyncNotingSink: AgentEventSink {
        let syncs: () -> Int
        var syncsAtCommandSent: [Int] = []
        let recorded = RecordingEventSink()
        init(syncs: @escaping () -> Int) { self.syncs = syncs }
        func emit(_ event: AgentEvent) {
            if event.name == EventKind.phoneCommandSent.name { syncsAtCommandSent.append(syncs()) }
            recorded.emit(event)
        }
    }

    @Test func oneUnlockIsOneSyncBeforeTheLatchMoves() throws {
        // The store over the simulated disk with no faults planned: it only counts the syncs.
        let counting = SimulatedDisk(seed: 5)
        let fixture = StoreFixture()
        fixture.fileSystem = .system.through(sqliteVFS: counting.vfsName)
        let syncs = { counting.syncs }

        let scene = try AirScene(fixture, seed: 5)
        let (loop, air, store, key) = (scene.loop, scene.air, scene.store, scene.key)
        let records = try store.lockRecords(loop: loop)

        let chip = WatchedChip(SimulatedGPIOChip(label: "sim-lock", lineNames: ["latch"], loop: loop), syncs: syncs)
        let hardware = try LockHardware.open(LockWiring(chipLabel: "sim-lock", actuator: .hold, unlockOutput: .init("latch")),
                                             chips: GPIOChipSet([chip]), loop: loop)
        // Wired as the lock daemon wires them: one store behind the journal, the log and the keys.
        let controller = try LockController(loop: loop, behaviour: LockBehaviour(), hardware: hardware, journal: records)
        let lockEvents = RecordingEventSink()
        let agent = LockAgent(transport: air.device(scene.lockAddress)!, controller: controller, keys: records.commandKeys,
                              log: records, events: lockEvents, lockout: store.lockoutStore(monotonicNow: { loop.now }))
        agent.start(recovered: nil)
        let phoneEvents = SyncNotingSink(syncs: syncs)
        let phone = try PhoneAgent(transport: air.device(scene.phoneAddress)!,
                                   configuration: PhoneAgentConfiguration(lockAddress: scene.lockAddress, keyID: key.id,
                                                                          secret: key.secret),
                                   store: InMemoryPhoneStateStore(), events: phoneEvents)

        var result: Result<Void, PhoneAgent.CommandError>?
        phone.perform(.unlock) { result = $0 }
        loop.advance(until: { result != nil }, limit: .seconds(5))
        guard case .success = result else { Issue.record("the unlock failed: \(String(describing: result))"); return }

        let sent = try #require(phoneEvents.syncsAtCommandSent.last, "the phone sent a command")
        let moved = try #require(chip.outputs["latch"]?.syncsWhenActive.first, "the latch rose")
        #expect(moved - sent == 1, "syncs between the frame leaving the phone and the latch rising: \(moved - sent)")
        // That one commit carried both: the key's counter and the decision are on disk.
        let disk = try fixture.open()
        #expect(disk.keyStore().lastCounter(keyID: key.id) == lockEvents.events
            .last { $0.name == EventKind.lockCommandAccepted.name }.flatMap { $0.field("counter") }.flatMap(UInt64.init))
        #expect(try fixture.journal(disk).entries().count == 1)
    }
}
