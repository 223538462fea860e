import LatchkeyATT
import LatchkeyGATT

/// A `GATTServer` as a script endpoint: what it answers, and what server-side triggers
/// (notifications, indications) make it send, queue up in order.
public final class ServerEndpoint: PDUEndpoint {
    public let server: GATTServer
    /// The server holds its delegate weakly; the endpoint keeps it alive for the test.
    public let delegate: (any GATTServerDelegate)?
    private var outbox: [[UInt8]] = []

    public init(server: GATTServer, delegate: (any GATTServerDelegate)? = nil) {
        self.server = server
        self.delegate = delegate
        if let delegate { server.delegate = delegate }
    }

    public func deliver(_ bytes: [UInt8]) {
        if let response = server.handle(bytes[...]) { outbox.append(response) }
    }

    public func nextOutput() -> [UInt8]? { outbox.isEmpty ? nil : outbox.removeFirst() }

    /// Queues bytes the server side sends on its own.
    public func send(_ bytes: [UInt8]) { outbox.append(bytes) }
}

public typealias ServerScript = Script<ServerEndpoint>
public typealias ServerStep = ScriptStep<ServerEndpoint>

extension Script where Endpoint == ServerEndpoint {
    /// A server over `database`, with a fresh bearer (ATT_MTU 23, no CCCDs written).
    public convenience init(_ database: GATTDatabase, preferredMTU: Int = 517, security: LinkSecurity = .none,
                            delegate: (any GATTServerDelegate)? = nil) {
        let server = GATTServer(database: database, preferredMTU: preferredMTU, security: security)
        self.init(endpoint: ServerEndpoint(server: server, delegate: delegate))
    }

    /// A server over one of the fixture databases, with the fixture's delegate attached.
    public convenience init(_ fixture: Fixture, preferredMTU: Int = 517, security: LinkSecurity = .none) {
        self.init(fixture.database, preferredMTU: preferredMTU, security: security, delegate: fixture.delegate)
    }

    public var server: GATTServer { endpoint.server }
}

public struct ValueUpdateFailure: Error, CustomStringConvertible {
    public var error: GATTServer.ValueUpdateError
    public var description: String { "\(error)" }
}

extension ScriptStep where Endpoint == ServerEndpoint {
    /// The server notifies `value` on `handle`; the step fails if the server refuses.
    public static func notify(_ value: [UInt8], at handle: UInt16) -> Self {
        .trigger("notify 0x\(String(handle, radix: 16))") { endpoint throws(ValueUpdateFailure) in
            switch endpoint.server.notification(value, forValueAt: handle) {
            case .success(let pdu): endpoint.send(pdu)
            case .failure(let e): throw ValueUpdateFailure(error: e)
            }
        }
    }

    /// The server indicates `value` on `handle`; the step fails if the server refuses.
    public static func indicate(_ value: [UInt8], at handle: UInt16) -> Self {
        .trigger("indicate 0x\(String(handle, radix: 16))") { endpoint throws(ValueUpdateFailure) in
            switch endpoint.server.indication(value, forValueAt: handle) {
            case .success(let pdu): endpoint.send(pdu)
            case .failure(let e): throw ValueUpdateFailure(error: e)
            }
        }
    }
}
