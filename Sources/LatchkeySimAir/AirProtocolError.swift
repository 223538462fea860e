/// A message of the air protocol that cannot be accepted. The air answers it with
/// `.rejected` and closes the connection; it never traps on what a peer sends.
public struct AirProtocolError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let raw: String
        public static let truncated = Code(raw: "truncated")
        public static let trailingBytes = Code(raw: "trailing bytes")
        public static let unknownMessage = Code(raw: "unknown message")
        public static let invalidValue = Code(raw: "invalid value")
        public static let unsupportedVersion = Code(raw: "unsupported version")
        /// Well formed, but not allowed here (e.g. a link command before hello).
        public static let unexpected = Code(raw: "unexpected message")
        public var description: String { raw }
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
