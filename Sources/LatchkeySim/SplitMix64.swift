/// A seeded pseudo-random generator for the simulated air (Steele, Lea, Flood,
/// "Fast splittable pseudorandom number generators", OOPSLA 2014; the constants are
/// those of java.util.SplittableRandom).
///
/// The simulation must replay the same world from the same seed, so it never touches
/// `SystemRandomNumberGenerator`. Every draw happens on the loop, in event order.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A value in `0...bound`. The modulo bias is below 2^-40 for the small bounds used here.
    public mutating func next(through bound: UInt64) -> UInt64 {
        bound == .max ? next() : next() % (bound + 1)
    }

    /// A value in `range`.
    public mutating func next(in range: ClosedRange<Int>) -> Int {
        range.lowerBound + Int(next(through: UInt64(range.upperBound - range.lowerBound)))
    }
}
