import LatchkeyEvents
import LatchkeyLockProtocol
import LatchkeyManagers
@testable import LatchkeyPhoneAgent
import Testing

/// The challenge read ahead alone: one read at a time, a held challenge used once and only
/// before its conservative end, never for an arrival, and no read while the bolt moves.
struct ChallengeReadAheadTests {
    static let challenge: [UInt8] = Array(0..<16)
    static func grant(ms: UInt16 = 5_000) -> [UInt8] {
        ChallengeGrant(challenge: challenge, lifetimeMilliseconds: ms).bytes
    }

    @Test func aHeldChallengeServesOneCommandBeforeItsEnd() {
        let rig = PhoneComponentRig()
        let ahead = ChallengeReadAhead(events: rig.output)
        #expect(ahead.beginRead() && ahead.isReading)
        #expect(!ahead.beginRead())  // one read at a time
        rig.loop.advance(by: .milliseconds(100))
        ahead.answered(value: Self.grant(), error: nil)
        #expect(!ahead.isReading && !ahead.beginRead())  // a challenge is held
        // Its end counts from the read's sending, less the margin: 5 s - 1 s.
        rig.loop.advance(by: .seconds(4) - .milliseconds(101))
        #expect(ahead.takeHeldChallenge(for: .unlock) == Self.challenge)
        #expect(ahead.takeHeldChallenge(for: .lock) == nil)
        #expect(ahead.beginRead())
    }

    @Test func aHeldChallengePastItsEndIsDroppedAndSaid() {
        let rig = PhoneComponentRig()
        let ahead = ChallengeReadAhead(events: rig.output)
        _ = ahead.beginRead()
        ahead.answered(value: Self.grant(), error: nil)
        rig.loop.advance(by: .seconds(5) - ChallengeReadAhead.heldChallengeMargin)
        #expect(ahead.takeHeldChallenge(for: .unlock) == nil)
        let said = rig.sink.events.filter { $0.name == EventKind.phoneHeldChallengeExpired.name }
        #expect(said.count == 1 && said.first?.field("op") == "unlock")
    }

    @Test func anArrivalRequestNeverUsesAHeldChallengeAndDropsIt() {
        let rig = PhoneComponentRig()
        let ahead = ChallengeReadAhead(events: rig.output)
        _ = ahead.beginRead()
        ahead.answered(value: Self.grant(), error: nil)
        #expect(ahead.takeHeldChallenge(for: .arrivalUnlock) == nil)
        #expect(ahead.takeHeldChallenge(for: .unlock) == nil)
    }

    @Test func aFailedShortOrBadReadHoldsNothing() {
        let rig = PhoneComponentRig()
        let ahead = ChallengeReadAhead(events: rig.output)
        for (value, error) in [(nil, .att(.readNotPermitted)), (Self.grant(ms: 1_000), nil), ([1, 2, 3], nil)]
            as [([UInt8]?, BluetoothError?)] {
            #expect(ahead.beginRead())
            ahead.answered(value: value, error: error)
            #expect(ahead.takeHeldChallenge(for: .unlock) == nil)
        }
        #expect(rig.names().filter { $0 == EventKind.phoneChallengeAheadFailed.name }.count == 3)
    }

    @Test func noReadWhileTheBoltMovesAndNothingStandsOnANewLink() {
        let rig = PhoneComponentRig()
        let ahead = ChallengeReadAhead(events: rig.output)
        ahead.awaitTheBolt()
        #expect(!ahead.beginRead())
        #expect(ahead.boltRested() && !ahead.boltRested())
        #expect(ahead.beginRead())
        ahead.forgetChallengeAhead()
        ahead.answered(value: Self.grant(), error: nil)  // the old link's answer: nothing held
        #expect(!ahead.isReading && ahead.takeHeldChallenge(for: .unlock) == nil)
    }
}
