import LatchkeyControl
import LatchkeyDaemons
/// Whether the agent's links outlive its crash (docs/RESTORATION.md, "Links that outlive
/// the agent"): what applies under its unit on this kernel, and whether the unit lets systemd
/// keep them (`FileDescriptorStoreMax=` above 0; at the default 0 systemd closes them), with
/// the state file each keeps beside its socket (two entries a link).
extension Doctor {
    func linkStore() -> [DoctorFinding] {
        // Under the unit there is a NOTIFY_SOCKET; the doctor itself runs without one.
        let choice = LinkKeeping.decide(environment: ["NOTIFY_SOCKET": "/run/systemd/notify"], kernel: probes.kernel())
        guard choice == .kept else { return [.warn("under \(agent.unit): " + choice.sentence)] }
        guard let text = probes.unitFile(agent.unit) else {
            return [.warn("\(agent.unit) is not installed: links outlive a crash of the agent only when its unit sets "
                          + "FileDescriptorStoreMax= above 0 (the shipped units do)")]
        }
        let maximum = Self.fileDescriptorStoreMax(in: text)
        guard let maximum, maximum > 0 else {
            return [.warn("\(agent.unit) sets FileDescriptorStoreMax=\(maximum.map(String.init) ?? " nowhere (0)"): systemd "
                          + "closes every link the agent keeps, so links end when it crashes; set it (the shipped unit has 16)")]
        }
        guard maximum >= 2 else {
            return [.warn("\(agent.unit) sets FileDescriptorStoreMax=\(maximum): systemd keeps a link's socket but not the "
                          + "state file beside it (its connection interval, the lock's session), so an adopted link comes "
                          + "back without them; each link takes two (the shipped unit has 16)")]
        }
        return [.ok("under \(agent.unit): " + choice.sentence + " (FileDescriptorStoreMax=\(maximum): "
                    + "\(maximum / 2) links with their state)")]
    }

    /// The last `FileDescriptorStoreMax=` of a [Service] section (a later assignment wins, as
    /// in systemd); nil when none is set.
    static func fileDescriptorStoreMax(in unit: String) -> Int? {
        var section = ""
        var value: Int?
        for raw in unit.split(separator: "\n") {
            let line = raw.drop(while: { $0 == " " || $0 == "\t" })
            if line.hasPrefix("[") { section = String(line); continue }
            guard section == "[Service]", line.hasPrefix("FileDescriptorStoreMax=") else { continue }
            let text = line.dropFirst("FileDescriptorStoreMax=".count).trimmingPrefix(while: { $0 == " " })
            value = text.isEmpty ? 0 : Int(text.prefix(while: { !$0.isWhitespace }))
        }
        return value
    }
}
