import LatchkeyATT
import LatchkeyGATT

/// A `GATTClient` as a script endpoint: `out` steps read its outbox, `in` steps feed
/// its `receive`, and triggers start procedures.
public final class ClientEndpoint: PDUEndpoint {
    public let client: GATTClient
    /// Server-initiated values the client delivered: (handle, value, isIndication).
    public private(set) var values: [(handle: UInt16, value: [UInt8], indication: Bool)] = []

    public init(client: GATTClient) {
        self.client = client
        client.onValue = { [unowned self] handle, value, indication in
            self.values.append((handle, Array(value), indication))
        }
    }

    public func deliver(_ bytes: [UInt8]) { client.receive(bytes[...]) }
    public func nextOutput() -> [UInt8]? { client.nextOutgoing() }
}

public typealias ClientScript = Script<ClientEndpoint>
public typealias ClientStep = ScriptStep<ClientEndpoint>

extension Script where Endpoint == ClientEndpoint {
    /// A client on a fresh bearer (ATT_MTU 23 until it exchanges MTU).
    public convenience init(preferredMTU: Int = 517) {
        self.init(endpoint: ClientEndpoint(client: GATTClient(preferredMTU: preferredMTU)))
    }

    public var client: GATTClient { endpoint.client }
}

extension ScriptStep where Endpoint == ClientEndpoint {
    /// Starts a client procedure: `.start { $0.read(0x0003, done.record) }`.
    public static func start(_ what: String = "start", _ procedure: @escaping (GATTClient) -> Void) -> Self {
        .trigger(what) { procedure($0.client) }
    }
}

/// Records what a completion handler was called with, so a test can check that it ran,
/// that it ran once, and with what.
public final class Completion<Value> {
    public private(set) var calls: [Value] = []
    public init() {}

    /// Pass as the completion handler: `client.read(0x0003, done.record)`.
    public func record(_ value: Value) { calls.append(value) }

    /// The value of the only call; nil when it was not called, or called more than once.
    public var value: Value? { calls.count == 1 ? calls[0] : nil }
    public var wasCalled: Bool { !calls.isEmpty }
}

extension Completion {
    /// For `Result<Void, E>`: the error of the only call, if it failed.
    public func failure<E>() -> E? where Value == Result<Void, E> {
        guard let v = value, case .failure(let e) = v else { return nil }
        return e
    }
    /// For `Result<Void, E>`: whether the only call succeeded.
    public func succeeded<E>() -> Bool where Value == Result<Void, E> {
        guard let v = value, case .success = v else { return false }
        return true
    }
}
