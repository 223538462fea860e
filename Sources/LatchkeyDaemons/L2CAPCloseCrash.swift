/// Which kernels crash when an LE ATT socket is closed after its link was lost: those
/// without upstream ab4eedb790ca, "Bluetooth: L2CAP: Fix corrupted list in hci_chan_del"
/// (docs/LINUX-BLE.md, "Kernels", has the table and how it was found).
public enum L2CAPCloseCrash {
    /// The first stable release of each series that carries the fix; every series from
    /// 6.14 on has it, and every series not listed (6.1 among them) never got it.
    static let fixedFrom: [(major: Int, minor: Int, patch: Int)] = [(6, 6, 85), (6, 12, 20)]
    static let firstFixedSeries = (major: 6, minor: 14)

    /// The upstream release the kernel is built from, from `uname -r` (`release`) and
    /// `uname -v` (`version`). Debian's releases are ABI names that say x.y.0
    /// (`6.1.0-56-amd64`); its `uname -v` names the real one (`... Debian 6.1.192-2 ...`).
    public static func upstreamVersion(release: String, version: String) -> (Int, Int, Int)? {
        guard let fromRelease = leadingVersion(Substring(release)) else { return nil }
        if fromRelease.2 == 0, let debian = version.firstRange(of: "Debian "),
           let fromVersion = leadingVersion(version[debian.upperBound...]),
           fromVersion.0 == fromRelease.0, fromVersion.1 == fromRelease.1 {
            return fromVersion
        }
        return fromRelease
    }

    /// True when the kernel has the fix, false when it lacks it, nil when the release cannot be read.
    public static func isFixed(release: String, version: String) -> Bool? {
        guard let (major, minor, patch) = upstreamVersion(release: release, version: version) else { return nil }
        if (major, minor) >= (firstFixedSeries.major, firstFixedSeries.minor) { return true }
        guard let series = fixedFrom.first(where: { $0.major == major && $0.minor == minor }) else { return false }
        return patch >= series.patch
    }

    /// `6.12.95` from `6.12.95+deb12-amd64`; a missing patch level is 0 (`6.14-rc2` is 6.14.0).
    static func leadingVersion(_ text: Substring) -> (Int, Int, Int)? {
        var numbers: [Int] = []
        var rest = text
        while numbers.count < 3 {
            let digits = rest.prefix(while: \.isASCII).prefix(while: \.isNumber)
            guard let n = Int(digits) else { break }
            numbers.append(n)
            rest = rest.dropFirst(digits.count)
            guard rest.first == "." else { break }
            rest = rest.dropFirst()
        }
        guard numbers.count >= 2 else { return nil }
        return (numbers[0], numbers[1], numbers.count == 3 ? numbers[2] : 0)
    }
}
