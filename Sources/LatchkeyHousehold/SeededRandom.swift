@_spi(Deterministic) import LatchkeySecurity
import LatchkeySim
import Synchronization

extension RandomSource {
    /// Octets drawn from `seed` (SplitMix64), for one simulated agent: the same seed, the same
    /// challenges, nonces and pairing keys, so that a run's bytes replay with its events.
    /// The simulator's only; nothing that guards a real door may use it.
    static func seeded(_ seed: UInt64) -> RandomSource {
        let stream = SeededStream(seed: seed)
        return RandomSource { count in stream.bytes(count) }
    }
}

/// One seeded generator, drawn from in call order (the simulation runs on one loop).
private final class SeededStream: Sendable {
    private let generator: Mutex<SplitMix64>

    init(seed: UInt64) { generator = Mutex(SplitMix64(seed: seed)) }

    func bytes(_ count: Int) -> [UInt8] {
        generator.withLock { random in
            var octets: [UInt8] = []
            octets.reserveCapacity(count + 8)
            while octets.count < count { withUnsafeBytes(of: random.next().littleEndian) { octets.append(contentsOf: $0) } }
            return Array(octets.prefix(count))
        }
    }
}
