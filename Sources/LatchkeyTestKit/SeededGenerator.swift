import LatchkeySim

/// A deterministic random number generator, so property tests and fuzz corpora replay
/// exactly from their seed: the simulated air's own SplitMix64.
public typealias SeededGenerator = SplitMix64
