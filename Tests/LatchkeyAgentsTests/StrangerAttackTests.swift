import LatchkeyAgents
import LatchkeyATT
import LatchkeyEvents
import LatchkeyLock
import LatchkeyLockAgent
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeyPhoneAgent
import LatchkeySecurity
import LatchkeySim
import LatchkeyTransport
import Testing

/// Nothing for strangers, and no denial without a key (docs/SECURITY.md, "Sessions" and
/// "Strangers"): a central with no key, on the simulated radio, tries to learn the lock's
/// state, to hold the lock's attention, and to lock the owner out. Each test fails on a
/// lock that hands its state to anyone, keeps idle links, or counts strangers' frames
/// against a key.
struct StrangerAttackTests {
    static func forged(_ challenge: [UInt8]) -> [UInt8] {
        (try? CommandSealing.seal(CommandBody(operation: .unlock, commandID: 1), keyID: 1,
                                  secret: CommandSealing.newSecret(), counter: 1, challenge: challenge).bytes) ?? []
    }

    /// A world whose phone is away, with a stranger's central beside the door.
    static func strangerAtTheDoor(maximumLinks: Int = 4) throws -> (AgentWorld, RawCentral) {
        let w = try AgentWorld(autoRelock: nil, phoneStartsAt: 100, maximumLinks: maximumLinks)
        _ = w.air.addDevice(address: AgentWorld.strangerAddress, position: 3)
        // Gone long enough for the lock to see it leave (an arrival needs a departure it saw).
        #expect(w.advance(until: { w.phone.presence == .away && w.lockEvents.names().contains(EventKind.lockDeparture.name) },
                          limit: .seconds(12)))
        let stranger = RawCentral(transport: w.air.device(AgentWorld.strangerAddress)!, lockAddress: w.lockAddress)
        stranger.connect()
        #expect(w.advance(until: { stranger.isReady }, limit: .seconds(2)))
        return (w, stranger)
    }

    @Test func anIdleStrangerIsDroppedWhileThePhoneStillLinksAndUnlocks() throws {
        let (w, stranger) = try Self.strangerAtTheDoor()
        let linkedAt = w.loop.now
        // The owner comes home while the stranger holds its link: the lock still advertises.
        w.comeHome()
        #expect(w.advance(until: { w.latchEnergised }, limit: .seconds(3)), "the phone links and unlocks")
        #expect(stranger.lock.state == .connected, "the stranger is still linked")
        // The stranger proves nothing: the lock ends its link after the timeout, not later.
        #expect(w.advance(until: { stranger.lock.state != .connected }, limit: .seconds(6)))
        // Counted from the stranger's discovery done, a little after its link formed.
        let held = w.loop.now - linkedAt
        #expect(held > LockAgentConfiguration.defaultUnauthenticatedLinkTimeout - .milliseconds(500))
        #expect(held < LockAgentConfiguration.defaultUnauthenticatedLinkTimeout + .seconds(1))
        #expect(w.lockEvents.events.contains { $0.name == EventKind.lockLinkDropped.name && $0.field("reason")?.hasPrefix("unauthenticated") == true })
        #expect(w.phone.isLinked, "the owner's authenticated link stays")
    }

    @Test func atItsLinkLimitTheLockStopsAdvertisingUntilALinkEnds() throws {
        let (w, stranger) = try Self.strangerAtTheDoor(maximumLinks: 1)
        #expect(!w.air.device(w.lockAddress)!.isAdvertising, "its one link is taken")
        w.comeHome()
        w.loop.advance(by: .seconds(2))
        #expect(!w.phone.isLinked)
        // The stranger is dropped as unauthenticated; the lock advertises and the owner links.
        #expect(w.advance(until: { w.latchEnergised }, limit: .seconds(6)))
        #expect(stranger.lock.state != .connected)
    }

    @Test func aJunkSenderCannotLockThePhoneOut() throws {
        let (w, stranger) = try Self.strangerAtTheDoor()
        // Forged frames naming the owner's key, and malformed ones, link after link: far
        // more than the key's limit (3) and the lock's (10).
        for round in 1...6 {
            if round > 1 {
                stranger.connect()
                #expect(w.advance(until: { stranger.isReady }, limit: .seconds(2)), "round \(round)")
            }
            let before = stranger.results.count
            stranger.send(Self.forged)
            stranger.send { _ in [0x01, 0x01] }
            stranger.send(Self.forged)
            #expect(w.advance(until: { stranger.results.count == before + 3 }, limit: .seconds(2)))
            // The third unauthenticated frame is the link's last.
            #expect(w.advance(until: { stranger.lock.state != .connected }, limit: .seconds(1)), "round \(round)")
        }
        #expect(Set(stranger.results) == [.authenticationFailed, .malformed])
        #expect(w.lockouts.states.values.allSatisfy { $0.lockedUntil == nil && $0.failures == 0 }, "nothing counted")
        #expect(w.logged(.doorLockAlarm(.wrongCodeEntryLimit)) == 0)
        // Not one audit entry per frame, nor per dropped link: strangers together get one entry
        // per ten minutes (the others are counted in `lock.audit_paced`), and none in the
        // owner's name: a frame whose tag did not verify proves nothing about the key id it names.
        let attempt = LockOperationRecord(operation: nil, source: .remote, who: nil)
        #expect(w.logged(.lockOperationError(attempt, .invalidCredential)) == 1)
        #expect(w.lockEvents.events.last { $0.name == EventKind.lockAuditPaced.name }?.field("left_out") == "5")
        #expect(!w.lockLog.entries.contains { $0.event.keyID == KeyID(1) }, "nothing filed under the owner's key")

        // The owner comes home: its arrival unlocks.
        w.comeHome()
        #expect(w.advance(until: { w.latchEnergised && w.phone.presence == .home }, limit: .seconds(3)))
    }

    @Test func aStateReaderGetsAnApplicationErrorAndNothingElse() throws {
        let (w, stranger) = try Self.strangerAtTheDoor()
        stranger.readState()
        stranger.subscribe()
        stranger.requestLog()
        #expect(w.advance(until: {
            stranger.stateReads.count == 1 && stranger.logRequests.count == 1 && stranger.subscriptions.count == 2
        }, limit: .seconds(1)))
        let noSession = BluetoothError.att(CommandRejection.noSession.attError)
        guard case .failure(let readError) = stranger.stateReads[0] else {
            Issue.record("the stranger read the lock state: \(stranger.stateReads[0])"); return
        }
        #expect(readError == noSession, "an application error: not 0x05/0x0F, which would start SMP pairing")
        #expect(stranger.logRequests == [noSession])
        #expect(stranger.subscriptions == [noSession, noSession], "to the state and to the log")
        // The bolt moves while the stranger is subscribed: it hears nothing of it.
        w.comeHome()
        #expect(w.advance(until: { w.latchEnergised }, limit: .seconds(3)))
        w.loop.advance(by: .seconds(1))
        #expect(stranger.notified.isEmpty)
    }

    @Test func aSnifferThatRecordsEveryPDULearnsNoStateAndNoLog() throws {
        let w = try AgentWorld(autoRelock: .seconds(2), phoneStartsAt: 100)
        var heard: [[UInt8]] = []
        w.air.sniffer = { _, _, pdu in heard.append(pdu) }
        var seen: [[UInt8]] = []
        w.phone.onStatus = { seen.append($0.bytes) }
        // Gone long enough for the lock to see it leave (an arrival needs a departure it saw).
        #expect(w.advance(until: { w.phone.presence == .away && w.lockEvents.names().contains(EventKind.lockDeparture.name) },
                          limit: .seconds(12)))
        w.comeHome()
        #expect(w.advance(until: { w.latchEnergised }, limit: .seconds(3)))
        #expect(w.advance(until: { !w.latchEnergised }, limit: .seconds(5)), "auto-relock: one more state")
        w.loop.advance(by: .seconds(1))
        var log: PhoneAgent.LogResult?
        w.phone.fetchLog { log = $0 }
        #expect(w.advance(until: { log != nil }, limit: .seconds(3)))
        let events = try #require(try log?.get())

        #expect(seen.count >= 2, "the phone itself read the states (unlocked, locked)")
        #expect(!events.isEmpty, "and the log")
        #expect(!heard.isEmpty)
        for state in seen { #expect(!heard.contains { $0.contains(state) }, "state \(state) in clear") }
        for entry in events {
            let encoded = entry.event.encoded
            #expect(!heard.contains { $0.contains(encoded) }, "log event #\(entry.sequence) in clear")
        }
    }
}
