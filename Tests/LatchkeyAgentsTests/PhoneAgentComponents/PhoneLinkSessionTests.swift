import LatchkeyEvents
import LatchkeyLockProtocol
@testable import LatchkeyPhoneAgent
import LatchkeySecurity
import Testing

/// The phone's half of the link's session alone, attacked: a reply sealed by anyone but the
/// lock that accepted our frame's tag opens nothing and proves nothing.
struct PhoneLinkSessionTests {
    static let secret: [UInt8] = Array(repeating: 7, count: 32)
    static let challenge: [UInt8] = Array(repeating: 1, count: 16)

    func frame(counter: UInt64, secret: [UInt8] = Self.secret) throws -> CommandFrame {
        try CommandSealing.seal(CommandBody(operation: .present, commandID: counter), keyID: 3, secret: secret,
                                counter: counter, challenge: Self.challenge)
    }

    /// A session the lock opened with an accepted frame, and that frame.
    func opened(_ rig: PhoneComponentRig) throws -> (PhoneLinkSession, CommandFrame) {
        let session = PhoneLinkSession(secret: Self.secret, events: rig.output)
        let f = try frame(counter: 1)
        session.prepareSession(for: f)
        session.commandAnswered(nil)
        return (session, f)
    }

    @Test func anAcceptedFrameOpensTheSessionAndTheFirstReplyProvesTheLock() throws {
        let rig = PhoneComponentRig()
        let (session, f) = try opened(rig)
        #expect(session.isOpen && !session.isVerified)
        var lock = LinkSession(opening: f, secret: Self.secret)
        let first = session.openReply(lock.seal([1, 2], as: .status).bytes, as: .status)
        #expect(first == PhoneLinkSession.Opened(plain: [1, 2], provedTheLock: true))
        let second = session.openReply(lock.seal([3], as: .status).bytes, as: .status)
        #expect(second == PhoneLinkSession.Opened(plain: [3], provedTheLock: false))
        #expect(rig.names().filter { $0 == EventKind.phoneLinkVerified.name }.count == 1)
    }

    @Test func aReplyThatOvertakesTheWriteResponseOpensUnderTheCandidate() throws {
        let rig = PhoneComponentRig()
        let session = PhoneLinkSession(secret: Self.secret, events: rig.output)
        let f = try frame(counter: 1)
        session.prepareSession(for: f)
        var lock = LinkSession(opening: f, secret: Self.secret)
        #expect(session.openReply(lock.seal([9], as: .status).bytes, as: .status)?.plain == [9])
        #expect(session.isOpen && session.isVerified)
    }

    @Test func aRefusalBeforeTheTagVerifiedOpensNothing() throws {
        let rig = PhoneComponentRig()
        let session = PhoneLinkSession(secret: Self.secret, events: rig.output)
        for refusal in [CommandRejection.unknownKey, .authenticationFailed, .staleChallenge, .malformed] {
            session.prepareSession(for: try frame(counter: 1))
            session.commandAnswered(refusal)
            #expect(!session.isOpen, "\(refusal)")
        }
        session.prepareSession(for: try frame(counter: 2))
        session.commandAnswered(.busy)  // decided nothing, but only after the tag verified
        #expect(session.isOpen)
    }

    @Test func aReplySealedUnderAnotherKeyOrTheWrongKindIsUnreadable() throws {
        let rig = PhoneComponentRig()
        let (session, f) = try opened(rig)
        var stranger = LinkSession(opening: try frame(counter: 1, secret: Array(repeating: 8, count: 32)),
                                   secret: Array(repeating: 8, count: 32))
        #expect(session.openReply(stranger.seal([1], as: .status).bytes, as: .status) == nil)
        var lock = LinkSession(opening: f, secret: Self.secret)
        #expect(session.openReply(lock.seal([1], as: .logTransfer).bytes, as: .status) == nil)
        let unreadable = rig.sink.events.filter { $0.name == EventKind.phoneReplyUnreadable.name }
        #expect(unreadable.count == 2 && unreadable.allSatisfy { $0.field("session") == "open" })
        #expect(!session.isVerified)
    }

    @Test func aNewLinkForgetsTheSessionAndItsProof() throws {
        let rig = PhoneComponentRig()
        let (session, f) = try opened(rig)
        var lock = LinkSession(opening: f, secret: Self.secret)
        _ = session.openReply(lock.seal([1], as: .status).bytes, as: .status)
        session.endSession()
        #expect(!session.isOpen && !session.isVerified)
        #expect(session.openReply(lock.seal([2], as: .status).bytes, as: .status) == nil)
    }
}
