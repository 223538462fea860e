import LatchkeyATT

/// Why the lock refused a command, sent back as an ATT application error (0x80–0x9F) on
/// the control write, so the phone learns the outcome from the Write Response itself.
/// The lock never says more than this: no detail that would help an attacker.
public enum CommandRejection: UInt8, Error, Sendable, CaseIterable, CustomStringConvertible {
    case malformed = 0x80
    /// The key was revoked. Said only once the frame's tag verified under that key, so only
    /// its holder learns it; a key id the lock does not hold is `authenticationFailed`, so a
    /// stranger cannot tell which key ids exist.
    case unknownKey = 0x81
    /// The tag did not verify, or the frame named a key the lock does not hold.
    case authenticationFailed = 0x82
    /// Challenge unknown, already used, or expired.
    case staleChallenge = 0x83
    /// Counter not greater than the last accepted one for this key.
    case replayedCounter = 0x84
    /// The key's role may not perform this operation.
    case notAuthorized = 0x85
    case lockedOut = 0x86
    /// The lock's own rules said no (door open, operating mode, recent manual unlock, ...).
    case refusedByPolicy = 0x87
    /// The actuator is disabled after a jam.
    case actuatorDisabled = 0x88
    /// The decision could not be made durable, so nothing moved.
    case storageFailure = 0x89
    /// A pairing write while no pairing window is open on the lock's side.
    case pairingClosed = 0x8A
    /// The bolt is moving (another operation is under way): nothing was decided; the same
    /// request may succeed once the movement ends.
    case busy = 0x8B
    /// A read, subscription or log request on a link without a session: the phone has not
    /// proven its key on this link yet (docs/SECURITY.md, "Sessions"). An application error
    /// rather than Insufficient Authentication, which would make clients try SMP pairing.
    case noSession = 0x8C

    public var attError: ATTErrorCode { .application(rawValue) }

    public init?(_ code: ATTErrorCode) { self.init(rawValue: code.rawValue) }

    public var description: String {
        switch self {
        case .malformed: "malformed command"
        case .unknownKey: "revoked key"
        case .authenticationFailed: "authentication failed"
        case .staleChallenge: "stale challenge"
        case .replayedCounter: "replayed counter"
        case .notAuthorized: "not authorized"
        case .lockedOut: "locked out"
        case .refusedByPolicy: "refused by policy"
        case .actuatorDisabled: "actuator disabled"
        case .storageFailure: "storage failure"
        case .pairingClosed: "pairing window closed"
        case .busy: "busy: the bolt is moving"
        case .noSession: "no session on this link"
        }
    }
}

/// The challenge characteristic's value: a fresh single-use challenge and how long it lives.
///
///     0..15  challenge
///     16..17 lifetime in milliseconds (big-endian)
public struct ChallengeGrant: Equatable, Sendable {
    public var challenge: [UInt8]
    public var lifetimeMilliseconds: UInt16
    public init(challenge: [UInt8], lifetimeMilliseconds: UInt16) {
        self.challenge = challenge; self.lifetimeMilliseconds = lifetimeMilliseconds
    }
    public var bytes: [UInt8] {
        var out = challenge
        out.appendBE(lifetimeMilliseconds)
        return out
    }
    public init(decoding bytes: [UInt8]) throws(LockProtocolError) {
        guard bytes.count == CommandFrame.challengeLength + 2 else { throw .malformed("challenge grant") }
        challenge = Array(bytes[0..<16])
        lifetimeMilliseconds = UInt16(bytes[16]) << 8 | UInt16(bytes[17])
    }
}

/// A request on the data-transfer characteristic: send the log from `sequence` on.
public struct LogRequest: Equatable, Sendable {
    public var fromSequence: UInt32
    public var maximumCount: UInt16
    public init(fromSequence: UInt32, maximumCount: UInt16 = 100) {
        self.fromSequence = fromSequence; self.maximumCount = maximumCount
    }
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        out.appendBE(fromSequence); out.appendBE(maximumCount)
        return out
    }
    public init(decoding bytes: [UInt8]) throws(LockProtocolError) {
        guard bytes.count == 6 else { throw .malformed("log request") }
        fromSequence = bytes.readBE32(at: 0)
        maximumCount = UInt16(bytes[4]) << 8 | UInt16(bytes[5])
    }
}
