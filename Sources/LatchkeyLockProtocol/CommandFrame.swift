/// A state-changing command as the phone writes it to the lock control characteristic
/// (version 1, big-endian): version, kind (0x01 sealed command), key id (4), counter (8,
/// strictly increasing per key), the lock's single-use challenge (16), nonce (12), then the
/// sealed `CommandBody` and its 16-octet tag; octets 0..41 are the associated data, so no part
/// of the frame changes without the tag failing. Parsing checks lengths first, then (in the
/// security layer) the tag, then the meaning. Octet by octet: docs/PROTOCOL.md, "Commands".
public struct CommandFrame: Equatable, Sendable {
    public static let version: UInt8 = 1
    public static let kindSealedCommand: UInt8 = 1
    public static let headerLength = 42
    public static let tagLength = 16
    public static let challengeLength = 16
    public static let nonceLength = 12
    /// Largest frame we accept: header + the largest body + tag. Anything longer is malformed.
    public static let maximumLength = headerLength + CommandBody.maximumLength + tagLength

    public var keyID: UInt32
    public var counter: UInt64
    public var challenge: [UInt8]
    public var nonce: [UInt8]
    /// Ciphertext followed by the tag.
    public var sealed: [UInt8]

    public init(keyID: UInt32, counter: UInt64, challenge: [UInt8], nonce: [UInt8], sealed: [UInt8]) {
        self.keyID = keyID; self.counter = counter; self.challenge = challenge; self.nonce = nonce; self.sealed = sealed
    }

    /// The associated data the AEAD binds: the frame's first 42 octets.
    public var associatedData: [UInt8] {
        var out: [UInt8] = [Self.version, Self.kindSealedCommand]
        out.appendBE(keyID)
        out.appendBE(counter)
        out += challenge
        out += nonce
        return out
    }

    public var bytes: [UInt8] { associatedData + sealed }

    public init(decoding bytes: [UInt8]) throws(LockProtocolError) {
        guard bytes.count >= Self.headerLength + CommandBody.minimumLength + Self.tagLength,
              bytes.count <= Self.maximumLength else { throw .malformed("command frame length \(bytes.count)") }
        guard bytes[0] == Self.version else { throw .malformed("command frame version \(bytes[0])") }
        guard bytes[1] == Self.kindSealedCommand else { throw .malformed("command frame kind \(bytes[1])") }
        keyID = bytes.readBE32(at: 2)
        counter = bytes.readBE64(at: 6)
        challenge = Array(bytes[14..<30])
        nonce = Array(bytes[30..<42])
        sealed = Array(bytes[42...])
    }
}

/// What a command asks for, sealed inside a `CommandFrame`.
public enum LockOperation: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    case lock = 0x01
    case unlock = 0x02
    /// Unlock, relocking after `seconds` (Matter UnlockWithTimeout).
    case unlockWithTimeout = 0x03
    /// The phone's away→home logic asks once per cycle; the lock applies its own filters.
    case arrivalUnlock = 0x04
    /// "This link is mine": sent once per link so the lock can tie the link to a key (its
    /// loss then starts the departure grace). Authenticated like any command; moves nothing.
    case present = 0x05
    /// Admin only: switch the operating mode (Matter OperatingMode value in the body).
    case setOperatingMode = 0x06

    /// Whether only an admin key may ask for it (docs/LOCK-RULES.md rule 2: configuration).
    public var isAdminOnly: Bool { self == .setOperatingMode }

    public var description: String {
        switch self {
        case .lock: "lock"
        case .unlock: "unlock"
        case .unlockWithTimeout: "unlock-with-timeout"
        case .arrivalUnlock: "arrival-unlock"
        case .present: "present"
        case .setOperatingMode: "set-operating-mode"
        }
    }
}

/// The plaintext of a command: operation, a command id the phone picks (echoed in the
/// log), and the operation's argument, if it has one.
///
///     0      operation
///     1..8   command id
///     9..10  timeout seconds (only for unlockWithTimeout, never 0)
///     9      operating mode (only for setOperatingMode; Matter OperatingMode value)
public struct CommandBody: Equatable, Sendable {
    public static let minimumLength = 9
    public static let maximumLength = 11

    public var operation: LockOperation
    public var commandID: UInt64
    public var timeoutSeconds: UInt16?
    /// The requested Matter OperatingMode; the lock checks it is one it supports.
    public var operatingMode: UInt8?

    public init(operation: LockOperation, commandID: UInt64, timeoutSeconds: UInt16? = nil, operatingMode: UInt8? = nil) {
        self.operation = operation; self.commandID = commandID; self.timeoutSeconds = timeoutSeconds
        self.operatingMode = operatingMode
    }

    public var bytes: [UInt8] {
        var out: [UInt8] = [operation.rawValue]
        out.appendBE(commandID)
        if operation == .unlockWithTimeout { out.appendBE(timeoutSeconds ?? 0) }
        if operation == .setOperatingMode { out.append(operatingMode ?? 0) }
        return out
    }

    /// The exact body length of `operation`: every operation has one.
    static func length(of operation: LockOperation) -> Int {
        switch operation {
        case .unlockWithTimeout: 11
        case .setOperatingMode: 10
        case .lock, .unlock, .arrivalUnlock, .present: 9
        }
    }

    public init(decoding bytes: [UInt8]) throws(LockProtocolError) {
        guard bytes.count >= Self.minimumLength, let op = LockOperation(rawValue: bytes[0]) else {
            throw .malformed("command body")
        }
        guard bytes.count == Self.length(of: op) else { throw .malformed("command body length \(bytes.count) for \(op)") }
        operation = op
        commandID = bytes.readBE64(at: 1)
        timeoutSeconds = nil
        operatingMode = nil
        switch op {
        case .unlockWithTimeout:
            let t = UInt16(bytes[9]) << 8 | UInt16(bytes[10])
            guard t > 0 else { throw .malformed("unlock timeout of 0 s") }
            timeoutSeconds = t
        case .setOperatingMode:
            operatingMode = bytes[9]
        case .lock, .unlock, .arrivalUnlock, .present:
            break
        }
    }
}

public struct LockProtocolError: Error, Equatable, Sendable, CustomStringConvertible {
    public var reason: String
    public static func malformed(_ what: String) -> Self { Self(reason: "malformed \(what)") }
    public var description: String { reason }
}

extension Array<UInt8> {
    mutating func appendBE(_ v: UInt16) { append(UInt8(v >> 8)); append(UInt8(truncatingIfNeeded: v)) }
    mutating func appendBE(_ v: UInt32) { for s in stride(from: 24, through: 0, by: -8) { append(UInt8(truncatingIfNeeded: v >> s)) } }
    mutating func appendBE(_ v: UInt64) { for s in stride(from: 56, through: 0, by: -8) { append(UInt8(truncatingIfNeeded: v >> s)) } }
    func readBE32(at i: Int) -> UInt32 { (0..<4).reduce(0) { $0 << 8 | UInt32(self[i + $1]) } }
    func readBE64(at i: Int) -> UInt64 { (0..<8).reduce(0) { $0 << 8 | UInt64(self[i + $1]) } }
}
