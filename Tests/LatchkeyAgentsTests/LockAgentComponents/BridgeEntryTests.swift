import LatchkeyEvents
import LatchkeyLock
@testable import LatchkeyLockAgent
import LatchkeyLockProtocol
import LatchkeySecurity
import LatchkeySim
import LatchkeySimGPIO
import LatchkeyTransport
import Testing

/// `BridgeEntry` on its own: `LockAuthority` decides on the bridge's key as stored now; what it
/// allows is decided by the lock and journalled; refusals are in the audit log.
@Suite struct BridgeEntryTests {
    let loop = ManualEventLoop()
    let rig: ControllerRig
    let keys = InMemoryKeyStore([
        PhoneKey(id: 1, name: "owner", secret: CommandSealing.newSecret(), role: .admin, mayRequestArrivalUnlock: true),
        PhoneKey(id: 9, name: "mqtt-bridge", secret: CommandSealing.newSecret(), role: .user),
    ])
    private let heard = BridgeHeard()
    let entry: BridgeEntry

    init() throws {
        rig = try ControllerRig(loop: loop)
        let heard = heard
        let authority = LockAuthority(keys: keys, lockout: LockoutGuard(store: InMemoryLockoutStore(), loop: loop))
        let pipeline = LockCommandPipeline(controller: rig.controller, outputClock: rig.clock, validity: .seconds(30),
                                       commitStagedCounter: { Issue.record("a bridge's command has no counter") },
                                       emit: { heard.events.append($0.name) })
        let audit = AuditTrail(loop: loop, emit: { heard.events.append($0.name) }, logSecurity: { heard.log.append($0) })
        entry = BridgeEntry(authority: authority, keys: keys, pipeline: pipeline, audit: audit,
                            emit: { heard.events.append($0.name) }, moving: { heard.moving += 1 })
    }

    @Test func theBridgesKeyUnlocksThroughTheLocksDecision() throws {
        let decided = try entry.command(.unlock, keyID: 9).get()
        let held = rig.journal.entries.compactMap { if case .recorded(let decision) = $0 { decision.id } else { nil } }
        #expect(decided != nil && held == [decided].compactMap { $0 }, "the decision the journal holds")
        #expect(rig.chip.isHigh("latch"))
        #expect(heard.events == [EventKind.lockCommandAccepted.name])
        #expect(heard.moving == 1)
    }

    @Test func anAdminKeyMayNotActForTheBridgeAndTheRefusalIsLogged() {
        #expect(entry.command(.unlock, keyID: 1) == .failure(.keyNotAllowed(1, .admin)))
        #expect(!rig.chip.isHigh("latch"))
        #expect(heard.events == [EventKind.lockCommandRefused.name])
        guard case .lockOperationError(let record, _) = heard.log.first else { Issue.record("\(heard.log)"); return }
        #expect(record.source == .proprietaryRemote)
        #expect(entry.readRefusal(keyID: 1) == .keyNotAllowed(1, .admin))
        #expect(entry.readRefusal(keyID: 9) == nil)
    }

    @Test func aKeyRevokedSinceIsRefusedAtOnce() {
        keys.keys[9]?.revoked = true
        #expect(entry.command(.unlock, keyID: 9) == .failure(.keyNotAllowed(9, .revoked)))
        #expect(entry.wrongCode(keyID: 9) == .failure(.keyNotAllowed(9, .revoked)))
    }

    @Test func theLocksOwnRulesStillDecide() {
        rig.controller.setOperatingMode(.noRemoteLockUnlock, source: .auto)
        guard case .failure(.refused) = entry.command(.unlock, keyID: 9) else { Issue.record("not refused"); return }
        #expect(!rig.chip.isHigh("latch"))
    }

    @Test func wrongCodesLockTheBridgesKeyOutAndThenItsUnlocks() {
        var engaged: LockoutEngagement?
        for _ in 0..<10 where engaged == nil {
            engaged = (try? entry.wrongCode(keyID: 9).get()) ?? nil
        }
        #expect(engaged?.principal == .key(9))
        #expect(entry.wrongCode(keyID: 9) == .failure(.lockedOut(9)))
        #expect(entry.command(.unlock, keyID: 9) == .failure(.lockedOut(9)))
        #expect(heard.events.contains(EventKind.lockBridgeWrongCode.name))
    }
}

private final class BridgeHeard {
    var events: [String] = []
    var log: [LockEvent.Kind] = []
    var moving = 0
}
