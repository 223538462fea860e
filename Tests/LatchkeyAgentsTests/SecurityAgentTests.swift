import LatchkeyAgents
import LatchkeyEvents
import LatchkeyLock
import LatchkeyLockProtocol
import LatchkeyPhone
import LatchkeyPhoneAgent
import LatchkeySecurity
import LatchkeySim
import LatchkeyTransport
import Testing

extension AgentWorld {
    static let strangerAddress = BluetoothAddress(0xC0FFEE000003)

    /// Runs the phone side of pairing from a device at `address` until it ends: by default
    /// at the lock's address, pinning its fingerprint (`latchkey phone pair --lock-fingerprint`).
    func pair(from address: BluetoothAddress, name: String = "bob",
              target: PairingTarget? = nil) -> Result<PairedKey, PairingFailure>? {
        pairing(from: address, name: name, target: target).result
    }

    /// As `pair`, with the address of the lock the phone paired with.
    func pairing(from address: BluetoothAddress, name: String = "bob", target: PairingTarget? = nil)
        -> (result: Result<PairedKey, PairingFailure>?, lock: BluetoothAddress?)
    {
        let pairing = PhonePairing(transport: air.device(address)!,
                                   target: target ?? .address(lockAddress, fingerprint: identity.fingerprint),
                                   name: name, events: RecordingEventSink())
        var result: Result<PairedKey, PairingFailure>?
        pairing.start { result = $0 }
        advance(until: { result != nil }, limit: .seconds(70))
        air.device(address)!.detachApplication()
        return (result, pairing.lockAddress)
    }

    func logged(_ kind: LockEvent.Kind) -> Int { lockLog.entries.filter { $0.event.kind == kind }.count }

    /// Runs one command from the world's phone to its answer: nil when accepted.
    func command(_ op: LockOperation, mode: UInt8? = nil) -> PhoneAgent.CommandError? {
        var result: Result<Void, PhoneAgent.CommandError>?
        if let mode { phone.setOperatingMode(mode) { result = $0 } } else { phone.perform(op) { result = $0 } }
        advance(until: { result != nil }, limit: .seconds(5))
        switch result {
        case .success?: return nil
        case .failure(let e)?: return e
        case nil: return .notDelivered("no answer within 5 s")
        }
    }
}

/// Pairing over the simulated radio (docs/LOCK-RULES.md rule 3; docs/SECURITY.md, "Pairing").
struct PairingOverTheAirTests {
    @Test func aPhonePairsInsideTheWindowAndItsKeyOpensTheLockOnceTheOwnerConfirms() throws {
        let w = try AgentWorld(autoRelock: nil, phoneStartsAt: 100)
        _ = w.air.addDevice(address: AgentWorld.strangerAddress, position: 2)
        var asked: PendingPairing?
        var outcome: PairingOutcome?
        #expect(w.lock.openPairingWindow(for: .seconds(60), offer: PairingOffer(role: .user), asked: { asked = $0 }) {
            outcome = $0
        })
        let key = try #require(try w.pair(from: AgentWorld.strangerAddress)?.get())

        #expect(key.keyID == 2 && key.role == .user && !key.mayRequestArrivalUnlock)
        #expect(key.lockFingerprint == w.identity.fingerprint)
        #expect(asked?.comparisonCode == key.comparisonCode, "the owner is shown the phone's code")
        #expect(w.keys.key(id: 2) == nil && outcome == nil, "pending until the owner confirms")
        #expect(w.lock.confirmPairing(code: key.comparisonCode) != nil)
        #expect(w.keys.key(id: 2)?.secret == key.secret, "the lock holds the key the phone derived")
        #expect(outcome == .paired(try #require(w.keys.key(id: 2)), comparisonCode: key.comparisonCode))
        #expect(w.logged(.lockUserChange(KeyChangeRecord(.add, source: .remote, key: KeyID(2)))) == 1,
                "every new key is in the audit log")

        // The new key is a working key: a phone agent holding it unlocks.
        let phone = try PhoneAgent(transport: w.air.device(AgentWorld.strangerAddress)!,
                                   configuration: PhoneAgentConfiguration(lockAddress: w.lockAddress, keyID: key.keyID,
                                                                          secret: key.secret),
                                   store: InMemoryPhoneStateStore(), events: RecordingEventSink())
        #expect(w.advance(until: { w.lockEvents.names().contains(EventKind.lockPhonePresent.name) }, limit: .seconds(5)))
        var unlocked: Result<Void, PhoneAgent.CommandError>?
        phone.perform(.unlock) { unlocked = $0 }
        #expect(w.advance(until: { unlocked != nil }, limit: .seconds(5)))
        #expect(w.latchEnergised)
    }

    @Test func aPhoneFindsTheLockByItsBeaconWithNoAddressTyped() throws {
        let w = try AgentWorld(autoRelock: nil, phoneStartsAt: 100)
        _ = w.air.addDevice(address: AgentWorld.strangerAddress, position: 2)
        #expect(w.lock.openPairingWindow(for: .seconds(60), offer: PairingOffer(role: .user)) { _ in })
        var listed: [FoundLock] = []
        let (result, lock) = w.pairing(from: AgentWorld.strangerAddress, target: .scan(duration: .seconds(3)) { found in
            listed = found
            return found.first
        })
        let key = try #require(try result?.get())
        #expect(listed.map(\.address) == [w.lockAddress], "the lock with the open window, and only it")
        #expect(listed.first?.fingerprint == w.identity.fingerprint && listed.first?.name.isEmpty == false)
        #expect(lock == w.lockAddress, "the address the phone stores")
        #expect(w.lock.confirmPairing(code: key.comparisonCode) != nil)
        #expect(w.keys.key(id: key.keyID)?.secret == key.secret)
    }

    @Test func aScanFindsNoLockWhoseWindowIsClosedOrTaken() throws {
        let w = try AgentWorld(autoRelock: nil, phoneStartsAt: 100)
        _ = w.air.addDevice(address: AgentWorld.strangerAddress, position: 2)
        _ = w.air.addDevice(address: BluetoothAddress(0xC0FFEE000004), position: 2)
        var listed: [FoundLock]?
        let scan = PairingTarget.scan(duration: .seconds(3)) { found in listed = found; return found.first }
        guard case .failure(.notDelivered)? = w.pair(from: AgentWorld.strangerAddress, target: scan) else {
            Issue.record("a lock without a window was found")
            return
        }
        #expect(listed == nil, "nothing to choose from")
        // A window whose one request is taken (a key waits for the owner) stops the beacon.
        #expect(w.lock.openPairingWindow(for: .seconds(60), offer: PairingOffer(role: .user)) { _ in })
        _ = try #require(try w.pair(from: BluetoothAddress(0xC0FFEE000004))?.get())
        guard case .failure(.notDelivered)? = w.pair(from: AgentWorld.strangerAddress, target: scan) else {
            Issue.record("a lock whose window is taken was found")
            return
        }
        #expect(listed == nil)
    }

    @Test func anUnconfirmedPairingIsAuditedAndClosesTheWindow() throws {
        let w = try AgentWorld(autoRelock: nil, phoneStartsAt: 100)
        _ = w.air.addDevice(address: AgentWorld.strangerAddress, position: 2)
        var outcome: PairingOutcome?
        #expect(w.lock.openPairingWindow(for: .seconds(60), offer: PairingOffer(role: .user)) { outcome = $0 })
        let key = try #require(try w.pair(from: AgentWorld.strangerAddress)?.get())
        let wrong = key.comparisonCode == "123456" ? "654321" : "123456"
        guard case .notEnrolled(let pending, .codeMismatch)? = w.lock.confirmPairing(code: wrong) else {
            Issue.record("a wrong code was not refused")
            return
        }
        #expect(outcome == .notEnrolled(pending, .codeMismatch))
        #expect(w.keys.key(id: key.keyID) == nil && w.keys.keys.count == 1)
        let attempt = LockOperationRecord(operation: nil, source: .remote, who: KeyID(key.keyID))
        #expect(w.logged(.lockOperationError(attempt, .pairingNotConfirmed)) == 1, "the attempt is in the audit log")
        #expect(w.lockEvents.names().contains(EventKind.lockPairingNotEnrolled.name))
        #expect(w.pair(from: AgentWorld.strangerAddress) == .failure(.refused(.pairingClosed)))
        #expect(w.lock.pairingCounts.notEnrolled == 1)
    }

    @Test func pairingOutsideAWindowIsRefused() throws {
        let w = try AgentWorld(autoRelock: nil, phoneStartsAt: 100)
        _ = w.air.addDevice(address: AgentWorld.strangerAddress, position: 2)
        #expect(w.pair(from: AgentWorld.strangerAddress) == .failure(.refused(.pairingClosed)))
        #expect(w.keys.keys.count == 1)
        #expect(w.lockEvents.names().contains(EventKind.lockPairingRefused.name))
        #expect(w.lock.pairingCounts.requests == 1 && w.lock.pairingCounts.refused == 1)
    }

    @Test func aWindowThatRanOutAdmitsNobody() throws {
        let w = try AgentWorld(autoRelock: nil, phoneStartsAt: 100)
        _ = w.air.addDevice(address: AgentWorld.strangerAddress, position: 2)
        var outcome: PairingOutcome?
        w.lock.openPairingWindow(for: .seconds(10), offer: PairingOffer(role: .admin)) { outcome = $0 }
        w.loop.advance(by: .seconds(10))
        #expect(outcome == .closedUnused)
        #expect(w.pair(from: AgentWorld.strangerAddress) == .failure(.refused(.pairingClosed)))
        #expect(w.keys.keys.count == 1)
    }
}

/// Per-command authorization (docs/LOCK-RULES.md rule 2).
struct RoleTests {
    @Test func aUserKeyCannotChangeTheOperatingModeAnAdminKeyCan() throws {
        let w = try AgentWorld(autoRelock: nil, phoneStartsAt: 1)
        w.keys.keys[1]!.role = .user
        w.keys.keys[1]!.mayRequestArrivalUnlock = false
        #expect(w.advance(until: { w.lockEvents.names().contains(EventKind.lockPhonePresent.name) }, limit: .seconds(5)))
        let noRemote = OperatingMode.noRemoteLockUnlock.rawValue
        #expect(w.command(.setOperatingMode, mode: noRemote) == .rejected(.notAuthorized))
        #expect(w.lock.controller.operatingMode == .normal)
        // A mode change is no lock operation: logged without one, not as an unlock.
        let refused = LockOperationRecord(operation: nil, source: .remote, who: KeyID(1))
        #expect(w.logged(.lockOperationError(refused, .restricted)) == 1)

        // The same phone once its key is an admin's (roles are read at every command).
        w.keys.keys[1]!.role = .admin
        #expect(w.command(.setOperatingMode, mode: noRemote) == nil)
        #expect(w.lock.controller.operatingMode == .noRemoteLockUnlock)
        #expect(w.command(.unlock) == .rejected(.refusedByPolicy), "no remote unlock in this mode")
        #expect(w.command(.setOperatingMode, mode: 0x42) == .rejected(.malformed), "not a mode")
    }
}

/// Brute force and revocation against a running lock agent (docs/LOCK-RULES.md rules 3, 5).
struct BruteForceAndRevocationTests {
    /// A frame of the key's own holder that fails after its tag (a counter already used):
    /// what counts towards a lockout. A stranger's frames do not (`StrangerAttackTests`).
    static func replayed(_ key: PhoneKey) -> ([UInt8]) -> [UInt8] {
        { challenge in
            (try? CommandSealing.seal(CommandBody(operation: .unlock, commandID: 1), keyID: key.id, secret: key.secret,
                                      counter: 0, challenge: challenge).bytes) ?? []
        }
    }

    @Test func aKeysOwnFailuresLockItOutAndRaiseTheAlarmButNeverRefuseLock() throws {
        let w = try AgentWorld(autoRelock: nil, phoneStartsAt: 100)
        #expect(w.advance(until: { w.phone.presence == .away && w.lockEvents.names().contains(EventKind.lockDeparture.name) },
                          limit: .seconds(12)))
        _ = w.air.addDevice(address: AgentWorld.strangerAddress, position: 3)
        // A copy of the key on another device (a phone restored from an old backup).
        let copy = RawCentral(transport: w.air.device(AgentWorld.strangerAddress)!, lockAddress: w.lockAddress)
        copy.connect()
        #expect(w.advance(until: { copy.isReady }, limit: .seconds(5)))
        for _ in 1...3 { copy.send(Self.replayed(w.key)) }
        #expect(w.advance(until: { copy.results.count == 3 }, limit: .seconds(5)))
        #expect(copy.results == [.replayedCounter, .replayedCounter, .replayedCounter])
        let attempt = LockOperationRecord(operation: .unlock, source: .remote, who: KeyID(1))
        #expect(w.logged(.lockOperationError(attempt, .invalidCredential)) == 3, "each failure is logged")
        #expect(w.logged(.doorLockAlarm(.wrongCodeEntryLimit)) == 1, "reaching the limit raises the alarm")
        #expect(!w.latchEnergised)
        // The events name the key they concern: journald files it as KEY_ID=.
        #expect(w.lockEvents.events.contains { $0.name == EventKind.lockLockout.name && $0.field("key") == "1" })
        #expect(w.lockEvents.events.contains {
            $0.name == EventKind.lockEvent.name && $0.field("kind")?.hasPrefix("lockOperationError") == true && $0.field("key") == "1"
        })
        copy.disconnect()

        // The owner comes home during the lockout: its arrival request is refused.
        w.comeHome()
        #expect(w.advance(until: { w.phone.presence == .home }, limit: .seconds(3)))
        #expect(!w.latchEnergised)
        #expect(w.phoneEvents.events.contains { $0.name == EventKind.phoneArrivalRefused.name && $0.field("reason") == "locked out" })
        // So is its unlock; its lock is not: locking is always safe.
        #expect(w.command(.unlock) == .rejected(.lockedOut))
        #expect(w.command(.lock) == nil)
        #expect(w.lockEvents.events.contains { $0.name == EventKind.lockCommandAccepted.name && $0.field("op") == "lock" })
        // 15 s after the lockout began, the key unlocks again.
        w.loop.advance(by: .seconds(15))
        #expect(w.command(.unlock) == nil)
        #expect(w.advance(until: { w.latchEnergised }, limit: .seconds(2)))
    }

    @Test func aRevokedKeyFailsOnItsNextCommandWhileTheAgentRuns() throws {
        let w = try AgentWorld(autoRelock: nil, phoneStartsAt: 1)
        let agent = w.lock!
        #expect(w.command(.unlock) == nil)
        w.keys.keys[1]!.revoked = true
        #expect(w.command(.lock) == .rejected(.unknownKey))
        #expect(w.lock === agent, "no restart")
        #expect(w.latchEnergised, "the refused lock command moved nothing")
        // The frame's tag verified under the key, so what its holder asked for is known; it is
        // filed under the key as a revoked user's attempt (DisabledUserDenied), nothing else.
        let attempt = LockOperationRecord(operation: .lock, source: .remote, who: KeyID(1))
        #expect(w.logged(.lockOperationError(attempt, .disabledUserDenied)) == 1)
        let logged = try #require(w.lockLog.entries.last { if case .lockOperationError = $0.event.kind { true } else { false } })
        #expect(logged.event.summary.hasPrefix("lock over Bluetooth by key 1 refused: revoked key"))
        #expect(try LockEvent(decoding: logged.event.encoded) == logged.event, "the log's binary form keeps it")
    }
}

/// A link is not a request (docs/LOCK-RULES.md rule 4), at the agent level.
struct RelinkTests {
    @Test func aCentralThatRelinksAgainAndAgainMovesNothing() throws {
        let w = try AgentWorld(autoRelock: nil, phoneStartsAt: 100)
        _ = w.air.addDevice(address: AgentWorld.strangerAddress, position: 3)
        let relay = RawCentral(transport: w.air.device(AgentWorld.strangerAddress)!, lockAddress: w.lockAddress)
        var earlier: [UInt8] = []
        for round in 1...5 {
            relay.connect()
            #expect(w.advance(until: { relay.isReady }, limit: .seconds(5)), "round \(round)")
            if round == 1 {
                // Keep a challenge from the first link (and send nothing useful with it).
                relay.send { challenge in earlier = challenge; return [0x01] }
                #expect(w.advance(until: { relay.results.count == 1 }, limit: .seconds(2)))
            }
            w.loop.advance(by: .seconds(2))
            relay.disconnect()
            #expect(w.advance(until: { w.air.device(w.lockAddress)!.connectedLinks.isEmpty }, limit: .seconds(2)))
        }
        #expect(relay.links == 5)
        #expect(!w.latchEnergised)
        #expect(!w.lockEvents.names().contains(EventKind.lockCommandAccepted.name))

        // A genuinely sealed arrival request bound to the first link's challenge, replayed
        // on a later link, is stale.
        relay.connect()
        #expect(w.advance(until: { relay.isReady }, limit: .seconds(5)))
        let key = w.key
        relay.send { _ in
            (try? CommandSealing.seal(CommandBody(operation: .arrivalUnlock, commandID: 9), keyID: key.id, secret: key.secret,
                                      counter: 9, challenge: earlier).bytes) ?? []
        }
        #expect(w.advance(until: { relay.results.count == 2 }, limit: .seconds(2)))
        #expect(relay.results.last == .staleChallenge)
        #expect(!w.latchEnergised)
    }
}
