import LatchkeyEvents
import LatchkeyLock
@testable import LatchkeyLockAgent
import LatchkeyLockProtocol
import LatchkeySecurity
import LatchkeySim
import LatchkeySimGPIO
import Testing

/// `OperatingModeKeeper` on its own: a mode is on disk before it applies, and what comes back
/// after a restart.
@Suite struct OperatingModeKeeperTests {
    let loop = ManualEventLoop()
    let rig: ControllerRig
    let store = InMemoryOperatingModeStore()
    let authority: LockAuthority
    private let heard = ModeHeard()
    let keeper: OperatingModeKeeper

    init() throws {
        rig = try ControllerRig(loop: loop)
        authority = LockAuthority(keys: InMemoryKeyStore([
            PhoneKey(id: 1, name: "owner", secret: CommandSealing.newSecret(), role: .admin),
        ]), lockout: LockoutGuard(store: InMemoryLockoutStore(), loop: loop))
        keeper = Self.keeper(store: store, controller: rig.controller, heard: heard)
    }

    private static func keeper(store: InMemoryOperatingModeStore, controller: LockController,
                               heard: ModeHeard) -> OperatingModeKeeper {
        OperatingModeKeeper(store: store, controller: controller, emit: { heard.events.append($0.name) },
                            logSecurity: { heard.log.append($0) }, changed: { heard.changed += 1 })
    }

    func admin() throws -> Authorization { try authority.authorize(.setOperatingMode, keyID: 1, via: .bluetooth).get() }

    @Test func aNewModeIsStoredBeforeItApplies() throws {
        #expect(keeper.set(OperatingMode.noRemoteLockUnlock.rawValue, authorized: try admin()) == nil)
        #expect(store.mode == .noRemoteLockUnlock)
        #expect(rig.controller.operatingMode == .noRemoteLockUnlock)
        #expect(heard.events == [EventKind.lockOperatingMode.name])
        #expect(heard.changed == 1)
    }

    @Test func aModeThatCannotBeStoredDoesNotApply() throws {
        store.failWrites = true
        #expect(keeper.set(OperatingMode.noRemoteLockUnlock.rawValue, authorized: try admin()) == .storageFailure)
        #expect(rig.controller.operatingMode == .normal)
        #expect(heard.events == [EventKind.lockFault.name])
    }

    @Test func anUnknownModeIsMalformed() throws {
        #expect(keeper.set(0x7F, authorized: try admin()) == .malformed)
        #expect(keeper.set(nil, authorized: try admin()) == .malformed)
        #expect(store.mode == nil)
    }

    @Test func noRemoteComesBackAfterARestart() throws {
        store.mode = .noRemoteLockUnlock
        let restarted = try ControllerRig(loop: loop)
        let keeper = Self.keeper(store: store, controller: restarted.controller, heard: heard)
        #expect(keeper.restoreAtStart() == nil)
        #expect(restarted.controller.operatingMode == .noRemoteLockUnlock)
        #expect(heard.events == [EventKind.lockOperatingModeRestored.name])
    }

    @Test func passageComesBackNormalAndTheChangeIsLogged() throws {
        store.mode = .passage
        let demoted = try #require(keeper.restoreAtStart())
        #expect(demoted == .passage)
        #expect(store.mode == .normal, "the next start does not report it again")
        keeper.logDemotion(from: demoted)
        guard case .operatingModeChange = heard.log.first else { Issue.record("\(heard.log)"); return }
        #expect(heard.events == [EventKind.lockOperatingModeNotRestored.name])
    }
}

private final class ModeHeard {
    var events: [String] = []
    var log: [LockEvent.Kind] = []
    var changed = 0
}
