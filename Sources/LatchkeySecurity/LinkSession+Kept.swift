/// A lock's session kept with its link, so a lock agent that died and adopted the link seals to
/// the same phone under the same session (docs/SECURITY.md, "Sessions"): version ‖ key id (4) ‖
/// counter (8) ‖ salt length ‖ challenge ‖ nonce ‖ the highest sequence it may have sealed (4),
/// big-endian. What re-derives the key is kept, never the key, so a key revoked meanwhile
/// restores nothing; the spent challenge redeems nothing. The sequence is written before each
/// reply is sealed, so a restored session never reuses a nonce and the phone refuses any reply
/// replayed from before the restart.
extension LinkSession {
    static let keptVersion: UInt8 = 1

    /// Why a kept session is not restored.
    public enum KeptError: Error, Equatable, Sendable, CustomStringConvertible {
        case malformed
        case unknownVersion(UInt8)
        /// Its sequences are spent: a new command opens the next session.
        case exhausted

        public var description: String {
            switch self {
            case .malformed: "malformed"
            case .unknownVersion(let v): "of version \(v), not \(LinkSession.keptVersion)"
            case .exhausted: "every sequence of it was used"
            }
        }
    }

    /// The kept form, saying that replies up to `sequence` may have been sealed.
    public func kept(sealingThrough sequence: UInt32) -> [UInt8] {
        var out: [UInt8] = [Self.keptVersion]
        out.appendBE32(keyID)
        out.appendBE64(counter)
        out.append(UInt8(salt.count))
        out += salt
        out.appendBE32(sequence)
        return out
    }

    /// The key a kept session names: its secret is needed to restore it.
    public static func keyID(ofKept bytes: [UInt8]) throws(KeptError) -> UInt32 {
        guard let version = bytes.first else { throw .malformed }
        guard version == keptVersion else { throw .unknownVersion(version) }
        guard bytes.count >= 5 else { throw .malformed }
        return UInt32(bytes.readBE(at: 1, bytes: 4))
    }

    /// The session as it was kept, under `secret` (the named key's). Its next seal is above
    /// every sequence the kept form allowed.
    public init(kept bytes: [UInt8], secret: [UInt8]) throws(KeptError) {
        let keyID = try Self.keyID(ofKept: bytes)
        guard bytes.count >= 14 else { throw .malformed }
        let saltLength = Int(bytes[13])
        guard saltLength > 0, bytes.count == 14 + saltLength + 4 else { throw .malformed }
        let sealedThrough = UInt32(bytes.readBE(at: 14 + saltLength, bytes: 4))
        guard sealedThrough < .max else { throw .exhausted }
        self.init(keyID: keyID, counter: bytes.readBE(at: 5, bytes: 8), salt: Array(bytes[14..<14 + saltLength]),
                  secret: secret)
        sequence = sealedThrough
    }
}

extension Array<UInt8> {
    fileprivate func readBE(at offset: Int, bytes: Int) -> UInt64 {
        self[offset..<offset + bytes].reduce(0) { $0 << 8 | UInt64($1) }
    }
}
