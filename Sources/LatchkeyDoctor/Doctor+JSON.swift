import LatchkeyControl
import LatchkeyInspection
/// `latchkey doctor --json`: one JSON document whatever the verdict (the exit status still
/// says whether something blocks the agent).
extension Doctor {
    /// `{"agent":"lock","verdict":"fix","blocks":true,"findings":[{"verdict":"ok","message":"…"},…]}`;
    /// the verdict is the worst finding's: ok, warn or fix.
    public static func json(_ findings: [DoctorFinding], agent: String) -> JSONValue {
        let worst: DoctorFinding.Verdict = findings.contains { $0.verdict == .fix } ? .fix
            : findings.contains { $0.verdict == .warn } ? .warn : .ok
        return .object([
            ("agent", .string(agent)), ("verdict", .string(worst.jsonName)), ("blocks", .bool(blocks(findings))),
            ("findings", .array(findings.map { .object([("verdict", .string($0.verdict.jsonName)), ("message", .string($0.message))]) })),
        ])
    }
}

extension DoctorFinding.Verdict {
    /// Lower case in JSON ("WARN" and "FIX" are upper case on the terminal to stand out).
    var jsonName: String {
        switch self {
        case .ok: "ok"
        case .warn: "warn"
        case .fix: "fix"
        }
    }
}
