import LatchkeyATT
import LatchkeyGATT

/// A GATT client wired to a GATT server in memory, PDU by PDU, with nothing lost and
/// nothing reordered: the in-process transport of end-to-end tests (like PureSwift's
/// server-versus-client tests, without threads or sleeps).
public final class Loopback {
    public let client: GATTClient
    public let server: GATTServer
    /// PDUs the server side sent on its own (notifications, indications), not yet delivered.
    private var serverOutbox: [[UInt8]] = []
    /// Every PDU that crossed, in order: (fromClient, bytes).
    public private(set) var trace: [(fromClient: Bool, bytes: [UInt8])] = []
    public var keepsTrace = true

    public init(client: GATTClient, server: GATTServer) {
        self.client = client
        self.server = server
    }

    /// Queues a server-initiated PDU for the next `pump()`.
    public func serverSends(_ bytes: [UInt8]) { serverOutbox.append(bytes) }

    /// Moves PDUs both ways until neither side has anything left to send.
    /// Returns how many PDUs crossed.
    @discardableResult
    public func pump(limit: Int = 1_000_000) -> Int {
        var moved = 0
        while moved < limit {
            if !serverOutbox.isEmpty {
                let pdu = serverOutbox.removeFirst()
                record(false, pdu)
                client.receive(pdu[...])
            } else if let pdu = client.nextOutgoing() {
                record(true, pdu)
                if let response = server.handle(pdu[...]) {
                    serverOutbox.append(response)
                }
            } else {
                break
            }
            moved += 1
        }
        return moved
    }

    private func record(_ fromClient: Bool, _ bytes: [UInt8]) {
        if keepsTrace { trace.append((fromClient, bytes)) }
    }
}
