import LatchkeyATT
import LatchkeyGATT

/// A client and a server wired in memory: every PDU the client queues goes through the
/// server's `handle`, and the answer straight back into the client's `receive`.
final class WiredPair {
    let client = GATTClient(preferredMTU: 23)
    let server: GATTServer
    let valueHandle: UInt16

    init() {
        let db = GATTDatabase()
        let handles = try! db.add(GATTService(uuid: BluetoothUUID(0x180F), characteristics: [
            GATTCharacteristic(uuid: BluetoothUUID(0x2A3D), properties: [.read, .write], permissions: .readWrite,
                               value: Array("latchkey".utf8)),
        ]))
        server = GATTServer(database: db, preferredMTU: 23)
        valueHandle = handles.characteristicValues[0]
    }

    @inline(__always)
    func pump() {
        while let pdu = client.nextOutgoing() {
            if let response = server.handle(pdu[...]) { client.receive(response[...]) }
        }
    }
}

/// (a) GATT Read Request / Read Response round trips through both state machines.
func readRoundTrips(_ pair: WiredPair, count: Int) -> Int {
    var completed = 0
    let done: (Result<[UInt8], GATTClientError>) -> Void = { if case .success = $0 { completed += 1 } }
    for _ in 0..<count {
        pair.client.read(pair.valueHandle, done)
        pair.pump()
    }
    precondition(completed == count, "only \(completed) of \(count) reads completed")
    return completed
}

/// (b) GATT Write Request / Write Response round trips (the value is stored each time).
func writeRoundTrips(_ pair: WiredPair, count: Int) -> Int {
    var completed = 0
    let value: [UInt8] = [0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08]
    let done: (Result<Void, GATTClientError>) -> Void = { if case .success = $0 { completed += 1 } }
    for _ in 0..<count {
        pair.client.write(value, to: pair.valueHandle, done)
        pair.pump()
    }
    precondition(completed == count, "only \(completed) of \(count) writes completed")
    return completed
}
