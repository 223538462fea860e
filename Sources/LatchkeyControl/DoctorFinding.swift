/// One line of `latchkey doctor`: something checked and found right, something that works
/// but worse than it should (a warning, which does not block), or what to fix.
public struct DoctorFinding: Equatable, Sendable, CustomStringConvertible {
    public enum Verdict: String, Sendable { case ok, warn = "WARN", fix = "FIX" }
    public var verdict: Verdict
    public var message: String

    public static func ok(_ m: String) -> Self { Self(verdict: .ok, message: m) }
    public static func warn(_ m: String) -> Self { Self(verdict: .warn, message: m) }
    public static func fix(_ m: String) -> Self { Self(verdict: .fix, message: m) }

    public var description: String {
        switch verdict {
        case .ok: "ok   " + message
        case .warn: "WARN " + message
        case .fix: "FIX  " + message
        }
    }
}
