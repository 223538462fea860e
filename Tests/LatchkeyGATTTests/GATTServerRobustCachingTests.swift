import LatchkeyATT
import LatchkeyGATT
import LatchkeyTestKit
import Testing

/// The Generic Attribute service served (Vol 3 Part G 2.5.2, 7.1–7.3), on a database of the
/// shape every PeripheralManager publishes:
///     0x0001  Primary Service 0x1801 (GATT)                 ends 0x0008
///     0x0002    Char 0x20 → 0x0003 Service Changed; 0x0004 CCCD
///     0x0005    Char 0x0A → 0x0006 Client Supported Features
///     0x0007    Char 0x02 → 0x0008 Database Hash
///     0x0009  Primary Service 0x180F (Battery)              ends 0x000D
///     0x000A    Char 0x12 → 0x000B Battery Level = 0x64; 0x000C CCCD; 0x000D User Description
@Suite("GATT server: Service Changed and Robust Caching")
struct GATTServerRobustCachingTests {
    private static func script() -> (ServerScript, FixtureDelegate) {
        let db = GATTDatabase()
        _ = try! db.add(GenericAttributeService.definition, startHandle: 1)
        _ = try! db.add(GATTService(uuid: BluetoothUUID(0x180F), characteristics: [
            GATTCharacteristic(uuid: BluetoothUUID(0x2A19), properties: [.read, .notify], permissions: .read,
                               value: [0x64], descriptors: [.userDescription("Battery")]),
        ]))
        let delegate = FixtureDelegate()
        return (ServerScript(db, delegate: delegate), delegate)
    }

    /// Write Request enabling Robust Caching, and its response.
    private static var enableRobustCaching: [ServerStep] { [.in([0x12, 0x06, 0x00, 0x01]), .out([0x13])] }
    private struct NoIndication: Error {}
    private static let readBattery: [UInt8] = [0x0A, 0x0B, 0x00]

    @Test("Service Changed indicates the range to a client that enabled it; it is not readable")
    func serviceChangedIndication() throws {
        let (script, delegate) = Self.script()
        #expect(script.server.serviceChangedHandle == 0x0003)
        #expect(script.server.serviceChangedIndication(9...13) == .failure(.notSubscribed))
        try script.exchange(
            .in([0x0A, 0x03, 0x00]), .out(errorRsp(0x0A, 0x0003, 0x02)),
            .in([0x12, 0x04, 0x00, 0x01, 0x00]), .out(errorRsp(0x12, 0x0004, 0xFD)),  // indicate only
            .in([0x12, 0x04, 0x00, 0x02, 0x00]), .out([0x13]),
            .trigger { endpoint in
                guard case .success(let pdu) = endpoint.server.serviceChangedIndication(9...13) else {
                    throw NoIndication()
                }
                endpoint.send(pdu)
            },
            .out([0x1D, 0x03, 0x00, 0x09, 0x00, 0x0D, 0x00]),
            .in([0x1E]))
        #expect(script.server.wantsServiceChanged)
        #expect(delegate.confirmations == [0x0003])
    }

    @Test("Client Supported Features: per client, bits only set, unknown bits not kept")
    func clientSupportedFeatures() throws {
        let (script, delegate) = Self.script()
        try script.exchange(
            .in([0x0A, 0x06, 0x00]), .out([0x0B, 0x00]),
            .in([0x12, 0x06, 0x00]), .out(errorRsp(0x12, 0x0006, 0x0D)),
            .in([0x12, 0x06, 0x00, 0x07]), .out([0x13]),
            .in([0x0A, 0x06, 0x00]), .out([0x0B, 0x01]),
            .in([0x12, 0x06, 0x00, 0x00]), .out(errorRsp(0x12, 0x0006, 0x13)))  // Value Not Allowed
        #expect(delegate.featureChanges == [.robustCaching])
        #expect(delegate.writes.isEmpty, "the server's own characteristic, not the application's")
        let (other, _) = Self.script()
        try other.exchange(.in([0x0A, 0x06, 0x00]), .out([0x0B, 0x00]))
    }

    @Test("the Database Hash reads by UUID and by handle, and follows the database")
    func databaseHash() throws {
        let (script, _) = Self.script()
        let hash = script.server.database.hash
        try script.exchange(
            .in([0x08, 0x01, 0x00, 0xFF, 0xFF, 0x2A, 0x2B]), .out([0x09, 0x12, 0x08, 0x00] + hash),
            .in([0x0A, 0x08, 0x00]), .out([0x0B] + hash))
        try script.server.database.add(GATTService(uuid: BluetoothUUID(0x180A), characteristics: []))
        #expect(script.server.database.hash != hash)
        try script.exchange(.in([0x0A, 0x08, 0x00]), .out([0x0B] + script.server.database.hash))
    }

    @Test("a change-unaware client with Robust Caching: Database Out Of Sync once, then served")
    func outOfSyncOnce() throws {
        let (script, delegate) = Self.script()
        try script.exchange(Self.enableRobustCaching)
        script.server.markChangeUnaware()
        try script.exchange(
            .in([0x52, 0x0D, 0x00, 0x41]),  // a command from a change-unaware client: ignored
            .in(Self.readBattery), .out(errorRsp(0x0A, 0x0000, 0x12)),
            .in(Self.readBattery), .out([0x0B, 0x64]))
        #expect(script.server.isChangeAware)
        #expect(delegate.writes.isEmpty)
    }

    /// Each request that reads the database from a change-unaware client is refused first, the
    /// discovery requests included: a Find Information or Find By Type Value answered from
    /// moved handles would fill a cache with a layout the client takes for the old one. (A
    /// `where` once applied to the last of the patterns it followed only, and let these two
    /// through.)
    @Test("every request that reads the database gets Database Out Of Sync first",
          arguments: [
              [0x04, 0x01, 0x00, 0xFF, 0xFF],                     // Find Information
              [0x06, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28, 0x0F, 0x18],  // Find By Type Value: 0x180F
              [0x08, 0x01, 0x00, 0xFF, 0xFF, 0x03, 0x28],         // Read By Type: declarations
              [0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28],         // Read By Group Type: services
          ] as [[UInt8]])
    func discoveryFromAChangeUnawareClient(request: [UInt8]) throws {
        let (script, _) = Self.script()
        try script.exchange(Self.enableRobustCaching)
        script.server.markChangeUnaware()
        try script.exchange(.in(request), .out(errorRsp(request[0], 0x0000, 0x12)))
        #expect(!script.server.isChangeAware)
        // Served the next time, from the database as it is.
        guard let served = script.server.respond(to: request[...])?.bytes else {
            Issue.record("no answer"); return
        }
        #expect(served.first == request[0] + 1)
        #expect(script.server.isChangeAware)
    }

    @Test("reading the Database Hash makes a change-unaware client change-aware")
    func hashReadMakesAware() throws {
        let (script, _) = Self.script()
        try script.exchange(Self.enableRobustCaching)
        script.server.markChangeUnaware()
        try script.exchange(
            .in([0x02, 0x40, 0x00]), .out([0x03, 0x05, 0x02]),  // Exchange MTU passes, changes nothing
            .in([0x04, 0x05, 0x00, 0x04, 0x00]), .out(errorRsp(0x04, 0x0005, 0x01)))  // a barrier: refused for its form
        #expect(!script.server.isChangeAware)
        try script.exchange(
            .in([0x08, 0x01, 0x00, 0xFF, 0xFF, 0x2A, 0x2B]), .out([0x09, 0x12, 0x08, 0x00] + script.server.database.hash),
            .in(Self.readBattery), .out([0x0B, 0x64]))
    }

    @Test("confirming Service Changed makes the client change-aware")
    func confirmationMakesAware() throws {
        let (script, _) = Self.script()
        try script.exchange(Self.enableRobustCaching + [.in([0x12, 0x04, 0x00, 0x02, 0x00]), .out([0x13])])
        script.server.markChangeUnaware()
        guard case .success(let pdu) = script.server.serviceChangedIndication(9...13) else {
            Issue.record("no indication"); return
        }
        try script.exchange(.trigger { $0.send(pdu) }, .out(pdu), .in([0x1E]), .in(Self.readBattery), .out([0x0B, 0x64]))
    }

    @Test("without Robust Caching a change-unaware client is served as before")
    func withoutRobustCaching() throws {
        let (script, _) = Self.script()
        script.server.markChangeUnaware()
        try script.exchange(.in(Self.readBattery), .out([0x0B, 0x64]))
    }
}
