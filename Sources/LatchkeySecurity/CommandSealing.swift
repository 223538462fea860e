import Crypto
import LatchkeyLockProtocol

/// Seals and opens command frames with ChaChaPoly (RFC 8439). The AEAD's associated data
/// is the frame header — version, kind, key id, counter, challenge, nonce — so the tag
/// covers the whole frame, not just the operation.
public enum CommandSealing {
    /// The phone side: seals `body` for the lock, with a nonce drawn from `random`.
    public static func seal(_ body: CommandBody, keyID: UInt32, secret: [UInt8], counter: UInt64,
                            challenge: [UInt8], random: RandomSource = .system) throws -> CommandFrame {
        try seal(body, keyID: keyID, secret: secret, counter: counter, challenge: challenge,
                 nonce: try ChaChaPoly.Nonce(data: random.bytes(CommandFrame.nonceLength)))
    }

    /// With a given nonce: docs/PROTOCOL.md's test vectors (a phone must never reuse one).
    static func seal(_ body: CommandBody, keyID: UInt32, secret: [UInt8], counter: UInt64, challenge: [UInt8],
                     nonce octets: [UInt8]) throws -> CommandFrame {
        try seal(body, keyID: keyID, secret: secret, counter: counter, challenge: challenge,
                 nonce: try ChaChaPoly.Nonce(data: octets))
    }

    private static func seal(_ body: CommandBody, keyID: UInt32, secret: [UInt8], counter: UInt64, challenge: [UInt8],
                             nonce: ChaChaPoly.Nonce) throws -> CommandFrame {
        precondition(challenge.count == CommandFrame.challengeLength)
        var frame = CommandFrame(keyID: keyID, counter: counter, challenge: challenge, nonce: Array(nonce), sealed: [])
        let box = try ChaChaPoly.seal(body.bytes, using: SymmetricKey(data: secret), nonce: nonce,
                                      authenticating: frame.associatedData)
        frame.sealed = Array(box.ciphertext) + Array(box.tag)
        return frame
    }

    /// The lock side: authenticates the whole frame and returns the body; throws when the
    /// tag does not verify under `secret`.
    public static func open(_ frame: CommandFrame, secret: [UInt8]) throws -> [UInt8] {
        let n = frame.sealed.count - CommandFrame.tagLength
        let box = try ChaChaPoly.SealedBox(nonce: ChaChaPoly.Nonce(data: frame.nonce),
                                           ciphertext: frame.sealed[..<n], tag: frame.sealed[n...])
        return Array(try ChaChaPoly.open(box, using: SymmetricKey(data: secret), authenticating: frame.associatedData))
    }

    /// 32 random octets for a new phone key.
    public static func newSecret(from random: RandomSource = .system) -> [UInt8] {
        random.bytes(32)
    }
}
