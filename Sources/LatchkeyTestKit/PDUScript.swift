/// A machine under test that consumes and produces ATT PDUs: a GATT server or client.
/// The script feeds it bytes and drains what it wants to send, one PDU at a time.
public protocol PDUEndpoint: AnyObject {
    /// Hands one received PDU to the machine.
    func deliver(_ bytes: [UInt8])
    /// The next PDU the machine wants to send, if any.
    func nextOutput() -> [UInt8]?
}

/// One step of a scripted exchange, after `unit/test-gatt.c`'s `raw_pdu` lists: bytes in,
/// bytes out, or an action on the machine ("trigger", BlueZ's empty PDU).
/// `in` and `out` are seen from the machine under test.
public struct ScriptStep<Endpoint: PDUEndpoint> {
    enum Kind {
        case input([UInt8])
        case output([UInt8])
        case trigger(String, (Endpoint) throws -> Void)
    }
    let kind: Kind

    /// A PDU the machine receives. Anything it still had to send must have been expected first.
    public static func `in`(_ bytes: [UInt8]) -> Self { Self(kind: .input(bytes)) }
    /// The exact PDU the machine must send next.
    public static func out(_ bytes: [UInt8]) -> Self { Self(kind: .output(bytes)) }
    /// An action on the machine (start a procedure, send a notification, ...).
    public static func trigger(_ what: String = "trigger", _ action: @escaping (Endpoint) throws -> Void) -> Self {
        Self(kind: .trigger(what, action))
    }
}

/// Why a scripted exchange failed: the step, what was expected and what happened.
public struct ScriptMismatch: Error, CustomStringConvertible {
    public var step: Int
    public var message: String
    public var description: String { "step \(step + 1): \(message)" }
}

/// Runs scripted exchanges against one machine. Bytes are compared exactly, and an
/// exchange fails when the machine sends something no step expected, like NIO's
/// `EmbeddedChannel.finish()` reporting left-overs. State carries over between calls to
/// `exchange`, so a test can run a script in parts and inspect the machine in between.
public final class Script<Endpoint: PDUEndpoint> {
    public let endpoint: Endpoint

    public init(endpoint: Endpoint) { self.endpoint = endpoint }

    public func exchange(_ steps: ScriptStep<Endpoint>...) throws(ScriptMismatch) {
        try exchange(steps)
    }

    public func exchange(_ steps: [ScriptStep<Endpoint>]) throws(ScriptMismatch) {
        for (i, step) in steps.enumerated() {
            switch step.kind {
            case .input(let bytes):
                if let pending = endpoint.nextOutput() {
                    throw ScriptMismatch(step: i, message: "unexpected output before input [\(hex(bytes))]: [\(hex(pending))]")
                }
                endpoint.deliver(bytes)
            case .output(let expected):
                guard let got = endpoint.nextOutput() else {
                    throw ScriptMismatch(step: i, message: "expected [\(hex(expected))], nothing was sent")
                }
                guard got == expected else {
                    throw ScriptMismatch(step: i, message: "expected [\(hex(expected))], got [\(hex(got))]")
                }
            case .trigger(let what, let action):
                do { try action(endpoint) } catch {
                    throw ScriptMismatch(step: i, message: "\(what) failed: \(error)")
                }
            }
        }
        if let leftover = endpoint.nextOutput() {
            throw ScriptMismatch(step: steps.count - 1, message: "left-over output: [\(hex(leftover))]")
        }
    }
}
