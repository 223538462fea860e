/// Received signal strength as a function of distance: the log-distance path-loss model
/// with exponent 2 (free space) and −59 dBm at 1 m (the usual "measured power" of an
/// iBeacon-class transmitter at 0 dBm), plus ±3 dB of seeded noise. It only has to be
/// monotone in distance and plausible; nothing in Latchkey may trust RSSI for security.
enum RSSIModel {
    static let powerAtOneMetre = -59.0
    static let pathLossExponent = 2.0
    static let noise = -3...3

    static func rssi(distance: Double, noise n: Int) -> Int8 {
        let d = max(distance, 0.1)
        let value = powerAtOneMetre - 10 * pathLossExponent * log10(d) + Double(n)
        let clamped = max(-127, min(20, value))
        return Int8(clamped < 0 ? clamped - 0.5 : clamped + 0.5)  // round half away from zero, without libm
    }

    /// log10 for x > 0 without Foundation: x = s·2^e with s in [1, 2), and
    /// ln s = 2·atanh((s − 1)/(s + 1)) whose series converges fast for |z| ≤ 1/3
    /// (error below 1e-5, far under a decibel).
    static func log10(_ x: Double) -> Double {
        let z = (x.significand - 1) / (x.significand + 1)
        let z2 = z * z
        let lnS = 2 * z * (1 + z2 * (1.0 / 3 + z2 * (1.0 / 5 + z2 * (1.0 / 7 + z2 / 9))))
        let ln2 = 0.693_147_180_559_945_3, ln10 = 2.302_585_092_994_046
        return (Double(x.exponent) * ln2 + lnS) / ln10
    }
}
