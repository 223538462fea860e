import Crypto

/// Where the agents draw their random octets: challenges, command nonces, pairing keys and
/// nonces, new keys' secrets. `system` — the operating system's cryptographic generator, as
/// swift-crypto draws it — is every configuration's default and the only one the daemons
/// use. Another source is made only through the `Deterministic` SPI: the household simulator
/// and tests pass one drawn from a seed, so that a run's bytes replay too. Octets anyone can
/// recompute protect nothing.
public struct RandomSource: Sendable {
    private let draw: @Sendable (Int) -> [UInt8]

    /// A source whose octets are `draw(count)`: for the simulator and tests only.
    @_spi(Deterministic) public init(_ draw: @escaping @Sendable (_ count: Int) -> [UInt8]) { self.draw = draw }

    /// The system's cryptographic generator (getrandom(2) on Linux), through swift-crypto's
    /// key generation: what `ChaChaPoly.Nonce()` and `SymmetricKey(size:)` draw from.
    public static let system = RandomSource { count in
        SymmetricKey(size: SymmetricKeySize(bitCount: count * 8)).withUnsafeBytes { Array($0) }
    }

    /// `count` octets.
    public func bytes(_ count: Int) -> [UInt8] {
        let octets = draw(count)
        precondition(octets.count == count, "a random source gave \(octets.count) octets for \(count)")
        return octets
    }

    /// An X25519 private key from 32 octets of this source, as the library's own key
    /// generation makes one (32 random octets; X25519 clamps them when used).
    public func agreementKey() -> Curve25519.KeyAgreement.PrivateKey {
        // 32 octets are always a valid raw X25519 key: the initializer throws only for a wrong length.
        guard let key = try? Curve25519.KeyAgreement.PrivateKey(rawRepresentation: bytes(32)) else {
            preconditionFailure("32 octets refused as an X25519 key")
        }
        return key
    }
}
