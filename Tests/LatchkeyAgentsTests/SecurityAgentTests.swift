import LatchkeyAgents
import LatchkeyLock
import LatchkeyLockProtocol
import LatchkeySecurity
import LatchkeySim
import LatchkeyTransport
import Testing

extension AgentWorld {
    static let strangerAddress = BluetoothAddress(0xC0FFEE000003)

    /// Runs the phone side of pairing from a device at `address` until it ends.
    func pair(from address: BluetoothAddress, name: String = "bob") -> Result<PairedKey, PairingFailure>? {
        let pairing = PhonePairing(transport: air.device(address)!, lockAddress: lockAddress,
                                   initiator: PairingInitiator(name: name), events: RecordingEventSink())
        var result: Result<PairedKey, PairingFailure>?
        pairing.start { result = $0 }
        advance(until: { result != nil }, limit: .seconds(70))
        air.device(address)!.detachApplication()
        return result
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

/// Pairing over the simulated radio (docs/LOCK-RULES.md rule 3).
struct PairingOverTheAirTests {
    @Test func aPhonePairsInsideTheWindowAndItsKeyOpensTheLock() throws {
        let w = try AgentWorld(autoRelock: nil, phoneStartsAt: 100)
        _ = w.air.addDevice(address: AgentWorld.strangerAddress, position: 2)
        var outcome: PairingOutcome?
        #expect(w.lock.openPairingWindow(for: .seconds(60), offer: PairingOffer(role: .user)) { outcome = $0 })
        let key = try #require(try w.pair(from: AgentWorld.strangerAddress)?.get())

        #expect(key.keyID == 2 && key.role == .user && key.mayRequestArrivalUnlock)
        #expect(key.lockFingerprint == w.identity.fingerprint)
        #expect(w.keys.key(id: 2)?.secret == key.secret, "the lock holds the key the phone derived")
        #expect(outcome == .paired(try #require(w.keys.key(id: 2)), comparisonCode: key.comparisonCode))
        #expect(w.logged(.lockUserChange(KeyChangeRecord(.add, source: .remote, key: KeyID(2)))) == 1,
                "every new key is in the audit log")

        // The new key is a working key: a phone agent holding it unlocks.
        let phone = try PhoneAgent(transport: w.air.device(AgentWorld.strangerAddress)!,
                                   configuration: PhoneAgentConfiguration(lockAddress: w.lockAddress, keyID: key.keyID,
                                                                          secret: key.secret),
                                   store: InMemoryPhoneStateStore(), events: RecordingEventSink())
        #expect(w.advance(until: { w.lockEvents.names().contains("lock.phone_present") }, limit: .seconds(5)))
        var unlocked: Result<Void, PhoneAgent.CommandError>?
        phone.perform(.unlock) { unlocked = $0 }
        #expect(w.advance(until: { unlocked != nil }, limit: .seconds(5)))
        #expect(w.latchEnergised)
    }

    @Test func pairingOutsideAWindowIsRefused() throws {
        let w = try AgentWorld(autoRelock: nil, phoneStartsAt: 100)
        _ = w.air.addDevice(address: AgentWorld.strangerAddress, position: 2)
        #expect(w.pair(from: AgentWorld.strangerAddress) == .failure(.refused(.pairingClosed)))
        #expect(w.keys.keys.count == 1)
        #expect(w.lockEvents.names().contains("lock.pairing_refused"))
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
        #expect(w.advance(until: { w.lockEvents.names().contains("lock.phone_present") }, limit: .seconds(5)))
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
    static func forged(_ challenge: [UInt8]) -> [UInt8] {
        (try? CommandSealing.seal(CommandBody(operation: .unlock, commandID: 1), keyID: 1,
                                  secret: CommandSealing.newSecret(), counter: 1, challenge: challenge).bytes) ?? []
    }

    @Test func forgedFramesLockTheKeyOutAndRaiseTheAlarm() throws {
        let w = try AgentWorld(autoRelock: nil, phoneStartsAt: 100)
        _ = w.air.addDevice(address: AgentWorld.strangerAddress, position: 3)
        let attacker = RawCentral(transport: w.air.device(AgentWorld.strangerAddress)!, lockAddress: w.lockAddress)
        attacker.connect()
        #expect(w.advance(until: { attacker.isReady }, limit: .seconds(5)))
        for _ in 1...4 { attacker.send(Self.forged) }
        #expect(w.advance(until: { attacker.results.count == 4 }, limit: .seconds(5)))
        #expect(attacker.results == [.authenticationFailed, .authenticationFailed, .authenticationFailed, .lockedOut])

        // The forged frames were never opened: their operation is unknown, not "unlock".
        let attempt = LockOperationRecord(operation: nil, source: .remote, who: KeyID(1))
        #expect(w.logged(.lockOperationError(attempt, .invalidCredential)) == 3, "each failure is logged")
        #expect(w.logged(.doorLockAlarm(.wrongCodeEntryLimit)) == 1, "reaching the limit raises the alarm")
        #expect(!w.latchEnergised)
        // The events name the key they concern: journald files it as KEY_ID= (issue 23).
        #expect(w.lockEvents.events.contains { $0.name == "lock.lockout" && $0.field("key") == "1" })
        #expect(w.lockEvents.events.contains {
            $0.name == "lock.event" && $0.field("kind")?.hasPrefix("lockOperationError") == true && $0.field("key") == "1"
        })
        attacker.disconnect()

        // The owner comes home during the lockout: its arrival request is refused too.
        #expect(w.advance(until: { w.phone.presence == .away }, limit: .seconds(6)))
        w.walkPhone(to: 2)
        #expect(w.advance(until: { w.phone.presence == .home }, limit: .seconds(3)))
        #expect(!w.latchEnergised)
        #expect(w.phoneEvents.events.contains { $0.name == "phone.arrival_refused" && $0.field("reason") == "locked out" })
        // 15 s after the lockout began, the key works again.
        w.loop.advance(by: .seconds(15))
        #expect(w.command(.unlock) == nil)
        #expect(w.latchEnergised)
    }

    @Test func aRevokedKeyFailsOnItsNextCommandWhileTheAgentRuns() throws {
        let w = try AgentWorld(autoRelock: nil, phoneStartsAt: 1)
        let agent = w.lock!
        #expect(w.command(.unlock) == nil)
        w.keys.keys[1]!.revoked = true
        #expect(w.command(.lock) == .rejected(.unknownKey))
        #expect(w.lock === agent, "no restart")
        #expect(w.latchEnergised, "the refused lock command moved nothing")
        // The frame of a revoked key is refused before it is opened: what it asked for is
        // unknown, and the log says so instead of calling it an unlock attempt.
        let attempt = LockOperationRecord(operation: nil, source: .remote, who: KeyID(1))
        #expect(w.logged(.lockOperationError(attempt, .disabledUserDenied)) == 1)
        #expect(w.lockLog.entries.allSatisfy {
            if case .lockOperationError(let r, _) = $0.event.kind { r.operation == nil } else { true }
        })
        let logged = try #require(w.lockLog.entries.last { if case .lockOperationError = $0.event.kind { true } else { false } })
        #expect(logged.event.summary.hasPrefix("rejected: revoked key (key 1); operation unknown"))
        #expect(try LockEvent(decoding: logged.event.encoded) == logged.event, "the log's binary form keeps it unknown")
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
        #expect(!w.lockEvents.names().contains("lock.command_accepted"))

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
