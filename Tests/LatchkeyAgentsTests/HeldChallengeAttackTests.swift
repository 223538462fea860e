import LatchkeyAgents
import LatchkeyEvents
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeyPhoneAgent
import LatchkeySim
import LatchkeyTestKit
import LatchkeyTransport
import Testing

/// The challenge read ahead (`ChallengeReadAhead`) is a new path to the lock's control
/// point: a frame sealed with a challenge the phone held for a while. Each test attacks it
/// (docs/SECURITY.md, "Command frames"): the frame is still single-use, bound to its link,
/// dead `lifetime` after the lock issued the challenge however long anyone held it, and an
/// arrival request never rides on one.
struct HeldChallengeAttackTests {
    /// The owner at home, linked (through the relay when `relayed`), its `present` answered
    /// and the next challenge read ahead.
    func atHome(relayed: Bool) throws -> AgentWorld {
        let w = try AgentWorld(autoRelock: nil, grace: .seconds(5), phoneStartsAt: 2, relayed: relayed)
        #expect(w.advance(until: { w.lockEvents.names().contains(EventKind.lockPhonePresent.name) }, limit: .seconds(5)))
        w.loop.advance(by: .milliseconds(500))
        return w
    }

    func controlHandle(_ w: AgentWorld) throws -> UInt16 {
        let lock = w.phone.central.retrievePeripherals(withIdentifiers: [w.lockAddress])[0]
        return try #require(lock.service(LockServiceUUID.service)?.characteristic(LockServiceUUID.lockControl)).valueHandle
    }

    /// An ATT Write Request to the control point: a sealed command.
    func isCommand(_ pdu: [UInt8], _ handle: UInt16) -> Bool {
        pdu.count > 3 && pdu[0] == 0x12 && UInt16(pdu[1]) | UInt16(pdu[2]) << 8 == handle
    }

    func rejections(_ w: AgentWorld) -> [String] {
        w.lockEvents.events.filter { $0.name == EventKind.lockCommandRejected.name }.compactMap { $0.field("reason") }
    }

    func accepted(_ w: AgentWorld) -> Int { w.lockEvents.events.filter { $0.name == EventKind.lockCommandAccepted.name }.count }

    func startedWithHeldChallenge(_ w: AgentWorld) -> Bool {
        w.phoneEvents.events.last { $0.name == EventKind.phoneCommandStarted.name }?.field("challenge") == "held"
    }

    @Test func aFrameSealedWithAHeldChallengeIsRefusedWhenReplayedOnItsLink() throws {
        let w = try atHome(relayed: true)
        let control = try controlHandle(w)
        var copies: [[UInt8]] = []
        w.relay!.withholdToDoor = { pdu in
            if self.isCommand(pdu, control) { copies.append(pdu) }
            return false  // carried, and copied
        }
        var result: Result<Void, PhoneAgent.CommandError>?
        w.phone.perform(.unlock) { result = $0 }
        #expect(w.advance(until: { result != nil }, limit: .seconds(2)))
        #expect(startedWithHeldChallenge(w))
        #expect(w.latchEnergised)
        w.phone.perform(.lock) { _ in }
        #expect(w.advance(until: { !w.latchEnergised }, limit: .seconds(2)))
        w.loop.advance(by: .milliseconds(500))  // the phone idle again: nothing of its own in flight

        let unlock = try #require(copies.first)
        let before = accepted(w)
        w.relay!.release(unlock)
        #expect(w.advance(until: { w.relay!.keptAnswers.count == 1 }, limit: .seconds(1)))
        #expect(w.relay!.keptAnswers.first?.first == 0x01, "an Error Response")
        #expect(rejections(w) == ["stale challenge"])
        #expect(accepted(w) == before && !w.latchEnergised)
    }

    @Test func aFrameSealedWithAHeldChallengeIsRefusedOnAnyOtherLink() throws {
        let w = try atHome(relayed: false)
        let control = try controlHandle(w)
        var frames: [[UInt8]] = []
        w.air.sniffer = { _, _, pdu in if self.isCommand(pdu, control) { frames.append(Array(pdu[3...])) } }
        var result: Result<Void, PhoneAgent.CommandError>?
        w.phone.perform(.unlock) { result = $0 }
        #expect(w.advance(until: { result != nil }, limit: .seconds(2)))
        #expect(startedWithHeldChallenge(w))
        w.phone.perform(.lock) { _ in }
        #expect(w.advance(until: { !w.latchEnergised }, limit: .seconds(2)))

        // A stranger beside the door sends the sniffed unlock on its own link.
        let stranger = w.air.addDevice(address: BluetoothAddress(0xBAD000000009), position: 3)
        let raw = RawCentral(transport: stranger, lockAddress: w.lockAddress)
        raw.connect()
        #expect(w.advance(until: { raw.isReady }, limit: .seconds(3)))
        let unlock = try #require(frames.first)
        let before = accepted(w)
        raw.send { _ in unlock }
        #expect(w.advance(until: { raw.results.count == 1 }, limit: .seconds(2)))
        #expect(raw.results == [.staleChallenge])
        #expect(accepted(w) == before && !w.latchEnergised)
    }

    @Test func aHeldChallengeFrameKeptBackPastTheChallengesLifetimeIsRefused() throws {
        let w = try atHome(relayed: true)
        let control = try controlHandle(w)
        // The challenge was read ahead about half a second ago; the phone uses it until 4 s
        // after its read. At 3 s the owner taps unlock; the relay keeps the frame back.
        w.loop.advance(by: .milliseconds(2_500))
        w.relay!.withholdToDoor = { self.isCommand($0, control) }
        var result: Result<Void, PhoneAgent.CommandError>?
        w.phone.perform(.unlock) { result = $0 }
        #expect(w.advance(until: { w.relay!.withheld.count == 1 }, limit: .seconds(1)))
        #expect(startedWithHeldChallenge(w))
        w.relay!.withholdToDoor = nil
        // Delivered 2.5 s later: past the 5 s the lock gave the challenge, inside the phone's
        // own 5 s wait for an answer (the link still up).
        w.loop.advance(by: .milliseconds(2_500))
        #expect(result == nil && w.phone.isLinked)
        w.relay!.release(w.relay!.withheld[0])
        #expect(w.advance(until: { w.relay!.keptAnswers.count == 1 }, limit: .seconds(1)))
        #expect(rejections(w) == ["stale challenge"])
        #expect(!w.latchEnergised && w.lock.controller.lockState == .locked)
    }

    @Test func anArrivalRequestNeverUsesAHeldChallenge() throws {
        let w = try atHome(relayed: false)
        // The held challenge is 1.5 s old: ten times the arrival's relay bound.
        w.loop.advance(by: .seconds(1))
        var result: Result<Void, PhoneAgent.CommandError>?
        w.phone.perform(.arrivalUnlock) { result = $0 }
        #expect(w.advance(until: { result != nil }, limit: .seconds(2)))
        let started = try #require(w.phoneEvents.events.last { $0.name == EventKind.phoneCommandStarted.name })
        #expect(started.field("op") == "arrival-unlock" && started.field("challenge") == nil)
        let timing = try #require(w.lockEvents.events.last { $0.name == EventKind.lockArrivalTiming.name })
        let elapsed = try #require(timing.field("challenge_to_command_ms").flatMap(Double.init))
        #expect(elapsed <= w.lock.configuration.arrivalPolicy.challengeToCommandLimit.milliseconds)
        #expect(!w.lockEvents.names().contains(EventKind.lockSuspectedRelay.name))
    }
}
