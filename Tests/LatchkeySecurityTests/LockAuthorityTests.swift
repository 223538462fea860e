import LatchkeyLockProtocol
import LatchkeySim
import LatchkeyTransport
import Testing
@testable import LatchkeySecurity

/// The one gate (docs/SECURITY.md, "One gate"): every entry's request is decided by
/// `LockAuthority` against the key as the store holds it at that moment. An attacker at each
/// entry — Bluetooth, the bridge — with a revoked key, a role that may not, and a locked-out
/// key: never allowed (so nothing can reach the lock's controller, which moves the bolt for a
/// key only with an `Authorization`), and counted the same way wherever it came from.
struct LockAuthorityTests {
    let loop = ManualEventLoop()
    let lockouts = InMemoryLockoutStore()
    let keys = InMemoryKeyStore([
        PhoneKey(id: 1, name: "owner", secret: CommandSealing.newSecret(), role: .admin, mayRequestArrivalUnlock: true),
        PhoneKey(id: 2, name: "member", secret: CommandSealing.newSecret(), role: .user),
        PhoneKey(id: 3, name: "gone", secret: CommandSealing.newSecret(), role: .user, revoked: true),
        PhoneKey(id: 9, name: "mqtt-bridge", secret: CommandSealing.newSecret(), role: .user),
    ])
    let authority: LockAuthority

    init() {
        authority = LockAuthority(keys: keys, lockout: LockoutGuard(store: lockouts, loop: loop))
    }

    func reason(_ r: Result<Authorization, Denial>) -> Denial.Reason? {
        if case .failure(let d) = r { d.reason } else { nil }
    }

    @Test func aRevokedKeyIsRefusedAtEveryEntryAndCountsNowhere() {
        for entry in Entry.allCases {
            for op in LockOperation.allCases {
                #expect(reason(authority.authorize(op, keyID: 3, via: entry)) == .revoked, "\(entry) \(op)")
            }
        }
        #expect(lockouts.states.isEmpty, "a revoked key's tries lock nobody out")
        #expect(authority.logScope(keyID: 3) == nil)
        #expect(authority.isCurrent(keyID: 3) == false)
    }

    @Test func aKeyRevokedAfterItWasAllowedIsRefusedAtItsNextRequest() {
        #expect(throws: Never.self) { try authority.authorize(.unlock, keyID: 9, via: .bridge).get() }
        keys.keys[9]!.revoked = true  // `latchkey keys revoke 9`, another process, same store
        #expect(reason(authority.authorize(.unlock, keyID: 9, via: .bridge)) == .revoked)
        #expect(reason(authority.authorize(.lock, keyID: 9, via: .bridge)) == .revoked)
    }

    @Test func roleRulesDependOnTheEntry() {
        // Over Bluetooth the owner's admin key may do everything its flags allow...
        for op in LockOperation.allCases {
            #expect(throws: Never.self, "\(op)") { try authority.authorize(op, keyID: 1, via: .bluetooth).get() }
        }
        // ...a member neither reconfigures nor asks for arrival unlocks...
        #expect(reason(authority.authorize(.setOperatingMode, keyID: 2, via: .bluetooth)) == .notPermitted)
        #expect(reason(authority.authorize(.arrivalUnlock, keyID: 2, via: .bluetooth)) == .notPermitted)
        // ...and through the bridge only a user key without arrival unlock locks and unlocks:
        // the owner's key named for the bridge is refused, whatever it asks.
        for op in LockOperation.allCases {
            #expect(reason(authority.authorize(op, keyID: 1, via: .bridge)) == .notPermitted, "\(op)")
        }
        for op in LockOperation.allCases where op != .lock && op != .unlock {
            #expect(reason(authority.authorize(op, keyID: 9, via: .bridge)) == .notPermitted, "\(op)")
        }
        #expect(throws: Never.self) { try authority.authorize(.unlock, keyID: 9, via: .bridge).get() }
    }

    @Test func onlyBluetoothRefusalsCount() throws {
        // A member's refusal over Bluetooth is its holder's own doing: counted.
        guard case .failure(let d) = authority.authorize(.setOperatingMode, keyID: 2, via: .bluetooth) else {
            Issue.record("allowed"); return
        }
        #expect(d.counted && d.rejection == .notAuthorized)
        #expect(try lockouts.state(of: .key(2)).failures == 1)
        // The bridge's refusals are the configuration's: never counted, so a misconfigured
        // bridge cannot lock the owner's key out.
        for _ in 1...10 { _ = authority.authorize(.unlock, keyID: 1, via: .bridge) }
        #expect(try lockouts.state(of: .key(1)) == .clean)
        #expect(throws: Never.self) { try authority.authorize(.unlock, keyID: 1, via: .bluetooth).get() }
    }

    @Test func aLockedOutKeyIsRefusedAtEveryEntryButItsLockIsNot() {
        for _ in 1...3 { _ = authority.countFailure(keyID: 9) }
        for entry in Entry.allCases {
            #expect(reason(authority.authorize(.unlock, keyID: 9, via: entry)) == .lockedOut(.key(9)), "\(entry)")
            #expect(throws: Never.self, "\(entry)") { try authority.authorize(.lock, keyID: 9, via: entry).get() }
        }
        // The others, who never failed, are not refused for it.
        #expect(throws: Never.self) { try authority.authorize(.unlock, keyID: 2, via: .bluetooth).get() }
        loop.advance(by: .seconds(15))
        #expect(throws: Never.self) { try authority.authorize(.unlock, keyID: 9, via: .bridge).get() }
    }

    @Test func anUnknownKeyIsRefusedAndNotCounted() {
        for entry in Entry.allCases { #expect(reason(authority.authorize(.unlock, keyID: 77, via: entry)) == .unknownKey) }
        #expect(lockouts.states.isEmpty)
    }

    @Test func aGuestReadsOnlyItsOwnEventsAndTheOwnerTheHouseholds() {
        #expect(authority.logScope(keyID: 1) == .household)
        #expect(authority.logScope(keyID: 2) == .ownEvents)
        #expect(authority.logScope(keyID: 77) == nil)
    }

    /// A store that cannot be read says nothing about a key: not current, not revoked.
    @Test func anUnreadableStoreIsNotARevocation() {
        final class Failing: KeyStore {
            struct ReadFailed: Error {}
            func key(id: UInt32) -> PhoneKey? { nil }
            func lookUp(id: UInt32) -> Result<PhoneKey?, any Error> { .failure(ReadFailed()) }
            func lastCounter(keyID: UInt32) -> UInt64 { .max }
            func recordCounter(_ counter: UInt64, keyID: UInt32) throws { throw ReadFailed() }
        }
        let unreadable = LockAuthority(keys: Failing(), lockout: LockoutGuard(store: lockouts, loop: loop))
        #expect(unreadable.isCurrent(keyID: 1) == nil)
        #expect(reason(unreadable.authorize(.unlock, keyID: 1, via: .bluetooth)) == .unknownKey, "and nothing is allowed")
    }

    @Test func theBridgeReadsTheHouseholdsLogOnlyWhileItsKeyIsCurrent() {
        #expect(authority.logScope(keyID: 9, via: .bridge) == .household)
        #expect(authority.logScope(keyID: 1, via: .bridge) == nil, "an admin key named for the bridge reads nothing")
        keys.keys[9]!.revoked = true
        #expect(authority.logScope(keyID: 9, via: .bridge) == nil)
    }
}
