/// A mgmt failure, naming the command it is about (service-lifecycle style: a code that
/// can grow, plus context): "Add Device (0x0033) on hci0 failed: Invalid Parameters (0x0d)".
public struct MgmtError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let raw: String
        /// The kernel answered the command with a status other than Success.
        public static let commandFailed = Code(raw: "failed")
        /// Bytes that do not parse as the structure the documentation gives.
        public static let malformed = Code(raw: "malformed")
        /// The socket closed before the command was answered.
        public static let closed = Code(raw: "closed")
        public var description: String { raw }
    }

    public var code: Code
    /// The command this is about, when it is about one.
    public var command: MgmtOpcode?
    public var index: MgmtIndex?
    public var status: MgmtStatus?
    public var detail: String?

    public init(_ code: Code, command: MgmtOpcode? = nil, index: MgmtIndex? = nil, status: MgmtStatus? = nil,
                detail: String? = nil) {
        self.code = code
        self.command = command
        self.index = index
        self.status = status
        self.detail = detail
    }

    public var description: String {
        var text = command.map { "\($0)" } ?? "mgmt"
        if let index { text += " on \(index)" }
        switch code {
        case .commandFailed: text += " failed: \(status.map { "\($0)" } ?? "unknown status")"
        case .closed: text += ": the mgmt socket closed before the kernel answered"
        default: text += ": \(code)"
        }
        if let detail { text += " (\(detail))" }
        return text
    }
}
