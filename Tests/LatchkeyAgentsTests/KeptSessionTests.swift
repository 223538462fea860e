import LatchkeyAgents
import LatchkeyEvents
@testable import LatchkeyLock
import LatchkeyLockAgent
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeySecurity
import LatchkeySim
import LatchkeyTransport
import Testing

/// The lock's session survives the lock agent (docs/RESTORATION.md, "Links that outlive the
/// agent"): kept with its link, its sequence written before each reply is sealed, restored
/// when the relaunched lock adopts the link. Attacked: a command recorded before the
/// restart and replayed after it, a reply replayed to the phone, a stranger's adopted link.
struct KeptSessionTests {
    /// A world whose phone is linked, subscribed and in session with the lock.
    private func readyWorld() -> AgentWorld? {
        guard let w = try? AgentWorld(autoRelock: nil, grace: .seconds(5), phoneStartsAt: 1),
              w.advance(until: { w.phoneEvents.names().contains(EventKind.phoneLockStatus.name) }, limit: .seconds(5)),
              w.linkSetUp() else { return nil }
        return w
    }

    private func count(_ name: String, in sink: RecordingEventSink) -> Int { sink.names().filter { $0 == name }.count }

    /// Without the kept session the relaunched lock has none on the adopted link: the phone
    /// hears nothing of the lock's state until its next command opens a new one.
    @Test func aRelaunchedLockSealsToThePhoneOnTheAdoptedLinkWithoutANewCommand() throws {
        let w = try #require(readyWorld())
        let heard = count(EventKind.phoneLockStatus.name, in: w.phoneEvents)
        w.killLock()
        try w.restartLock()
        w.loop.run()
        let restored = try #require(w.lockEvents.events.last { $0.name == EventKind.lockSessionRestored.name })
        #expect(restored.field("key") == "\(w.key.id)")
        // The lock says where it stands, sealed under the kept session; the phone opens it.
        #expect(w.advance(until: { count(EventKind.phoneLockStatus.name, in: w.phoneEvents) > heard }, limit: .seconds(1)))
        #expect(!w.phoneEvents.names().contains(EventKind.phoneReplyUnreadable.name))
        // The link stays past the unauthenticated-link timeout, and its next command opens.
        w.loop.advance(by: LockAgentConfiguration.defaultUnauthenticatedLinkTimeout + .seconds(1))
        #expect(!w.lockEvents.names().contains(EventKind.lockLinkDropped.name))
        #expect(!w.phoneEvents.names().contains(EventKind.phoneLinkLost.name), "the same link throughout")
        if let refused = w.command(.unlock) { Issue.record("unlock on the adopted link: \(refused)"); return }
        #expect(w.advance(until: { w.latchEnergised }, limit: .seconds(1)))
    }

    /// The key was revoked while the lock was dead: the kept session names it, and it is
    /// not restored.
    @Test func aSessionUnderAKeyRevokedWhileTheLockWasDeadIsNotRestored() throws {
        let w = try #require(readyWorld())
        w.killLock()
        w.keys.keys[w.key.id]?.revoked = true
        try w.restartLock()
        w.loop.run()
        #expect(!w.lockEvents.names().contains(EventKind.lockSessionRestored.name))
        let refused = try #require(w.lockEvents.events.last { $0.name == EventKind.lockSessionNotRestored.name })
        #expect(refused.field("reason")?.contains("revoked") == true)
    }

    /// The sequence is kept before each reply is sealed: where it cannot be kept, the reply
    /// is not sealed (a relaunch could otherwise seal again under a sequence already used,
    /// reusing a ChaCha20-Poly1305 nonce), and that is said.
    @Test func aReplyWhoseSequenceCannotBeKeptFirstIsNotSealed() throws {
        let w = try #require(readyWorld())
        let link = try #require(w.air.device(w.lockAddress)!.connectedLinks.first as? SimulatedLink)
        link.keepFailure = TransportError(.failed, "the store is gone")
        let heard = count(EventKind.phoneLockStatus.name, in: w.phoneEvents)
        w.lock.controller.submit(LockCommand(.unlock, source: .manual))
        w.loop.advance(by: .seconds(1))
        #expect(w.lockEvents.names().contains(EventKind.lockSessionNotKept.name))
        #expect(count(EventKind.phoneLockStatus.name, in: w.phoneEvents) == heard, "nothing sealed under an unkept sequence")
        link.keepFailure = nil
        w.lock.controller.submit(LockCommand(.lock, source: .manual))
        #expect(w.advance(until: { count(EventKind.phoneLockStatus.name, in: w.phoneEvents) > heard }, limit: .seconds(2)))
    }
}

/// An attacker beside the door records the owner's sealed command and the lock's sealed
/// replies on the air, the lock agent is killed and relaunched (the link kept), and the
/// attacker replays what it recorded.
struct KeptSessionAttackTests {
    /// The owner's command, written by a central that knows the key (`RawCentral` with the
    /// owner's secret); the frames it wrote, recorded.
    final class Recorder {
        var frames: [[UInt8]] = []
        var sessions: [LinkSession] = []
    }

    private func ownersCentral() throws -> (AgentWorld, RawCentral, Recorder) {
        let w = try AgentWorld(autoRelock: nil, phoneStartsAt: 100)
        _ = w.air.addDevice(address: AgentWorld.strangerAddress, position: 3)
        let central = RawCentral(transport: w.air.device(AgentWorld.strangerAddress)!, lockAddress: w.lockAddress)
        central.connect()
        #expect(w.advance(until: { central.isReady }, limit: .seconds(2)))
        return (w, central, Recorder())
    }

    private func sealed(_ w: AgentWorld, _ operation: LockOperation, counter: UInt64, recorder: Recorder)
        -> ([UInt8]) -> [UInt8]
    {
        { challenge in
            let frame = try! CommandSealing.seal(CommandBody(operation: operation, commandID: counter),
                                                 keyID: w.key.id, secret: w.key.secret, counter: counter,
                                                 challenge: challenge)
            recorder.frames.append(frame.bytes)
            recorder.sessions.append(LinkSession(opening: frame, secret: w.key.secret))
            return frame.bytes
        }
    }

    @Test func aCommandRecordedBeforeTheRestartIsRefusedAfterItAndOldRepliesAreRefusedByThePhone() throws {
        let (w, owner, recorder) = try ownersCentral()
        owner.send(sealed(w, .unlock, counter: 10, recorder: recorder))
        #expect(w.advance(until: { owner.results.count == 1 }, limit: .seconds(2)))
        #expect(owner.results == [nil], "the owner's unlock")
        owner.subscribe()
        #expect(w.advance(until: { !owner.notified.isEmpty }, limit: .seconds(2)), "its state, sealed to the session")
        let before = owner.notified
        var session = try #require(recorder.sessions.last)
        for reply in before { _ = try session.open(reply, as: .status) }
        let accepted = count(w, EventKind.lockCommandAccepted.name)

        w.killLock()
        try w.restartLock()
        w.loop.run()
        #expect(w.lockEvents.names().contains(EventKind.lockSessionRestored.name))
        // The restored session seals above every sequence used before: the owner opens it.
        #expect(w.advance(until: { owner.notified.count > before.count }, limit: .seconds(1)))
        let after = try #require(owner.notified.last)
        let lastBefore = try SealedReply(decoding: try #require(before.last)).sequence
        #expect(try SealedReply(decoding: after).sequence > lastBefore, "no sequence (nonce) used twice")
        #expect(throws: Never.self) { _ = try session.open(after, as: .status) }
        // Replies recorded before the restart, replayed to the phone: each refused.
        for reply in before {
            #expect(throws: LinkSession.OpenError.self) { _ = try session.open(reply, as: .status) }
        }
        // The recorded command, replayed on the same (adopted, authenticated) link over a
        // fresh challenge: its challenge died with the old process. Then its counter, sealed
        // again by someone with the key over a fresh challenge: a replayed counter.
        let replay = try #require(recorder.frames.last)
        owner.send { _ in replay }
        #expect(w.advance(until: { owner.results.count == 2 }, limit: .seconds(2)))
        #expect(owner.results.last == .staleChallenge)
        owner.send(sealed(w, .unlock, counter: 10, recorder: recorder))
        #expect(w.advance(until: { owner.results.count == 3 }, limit: .seconds(2)))
        #expect(owner.results.last == .replayedCounter)
        #expect(count(w, EventKind.lockCommandAccepted.name) == accepted, "nothing replayed was carried out")
    }

    /// A stranger's link adopted by the relaunched lock is still a stranger's: no session is
    /// kept for it, so it gets the unauthenticated-link timeout again.
    @Test func aStrangersAdoptedLinkStillGetsTheUnauthenticatedLinkTimeout() throws {
        let (w, stranger) = try StrangerAttackTests.strangerAtTheDoor()
        w.killLock()
        try w.restartLock()
        w.loop.run()
        let restored = try #require(w.lockEvents.events.last { $0.name == EventKind.lockRestored.name })
        #expect(restored.field("centrals") == "1", "the stranger's link was adopted")
        #expect(!w.lockEvents.names().contains(EventKind.lockSessionRestored.name))
        let adoptedAt = w.loop.now
        stranger.readState()
        #expect(w.advance(until: { stranger.stateReads.count == 1 }, limit: .seconds(1)))
        #expect(throws: (any Error).self) { try stranger.stateReads[0].get() }
        #expect(w.advance(until: { stranger.lock.state != .connected }, limit: .seconds(7)))
        #expect(w.loop.now - adoptedAt < LockAgentConfiguration.defaultUnauthenticatedLinkTimeout + .seconds(1))
        #expect(w.lockEvents.events.contains {
            $0.name == EventKind.lockLinkDropped.name && $0.field("reason")?.hasPrefix("unauthenticated") == true
        })
    }

    private func count(_ w: AgentWorld, _ name: String) -> Int { w.lockEvents.names().filter { $0 == name }.count }
}
