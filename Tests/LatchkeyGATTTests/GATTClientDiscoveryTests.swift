import LatchkeyATT
import LatchkeyGATT
import LatchkeyTestKit
import Testing

/// Client procedures as scripted exchanges: the request bytes the client must send, the
/// response bytes it is fed, and what its completion reports.
@Suite("GATT client: MTU and discovery")
struct GATTClientDiscoveryTests {
    @Test("GAC/CL/BV-01-C exchange MTU: the client offers its Rx MTU and keeps the smaller")
    func exchangeMTU() throws {
        let done = Completion<Result<Int, GATTClientError>>()
        let script = ClientScript(preferredMTU: 517)
        try script.exchange(
            .start { $0.exchangeMTU(done.record) },
            .out([0x02, 0x05, 0x02]),
            .in([0x03, 0x00, 0x01]))
        #expect(done.value == .success(256))
        #expect(script.client.mtu == 256)
    }

    @Test("a server Rx MTU below 23 leaves the ATT_MTU at 23")
    func exchangeMTUBelowMinimum() throws {
        let done = Completion<Result<Int, GATTClientError>>()
        let script = ClientScript()
        try script.exchange(.start { $0.exchangeMTU(done.record) }, .out([0x02, 0x05, 0x02]), .in([0x03, 0x05, 0x00]))
        #expect(done.value == .success(23))
    }

    @Test("GAD/CL/BV-01-C discover all primary services, paging across responses")
    func discoverAllPrimaryServices() throws {
        let done = Completion<Result<[DiscoveredService], GATTClientError>>()
        try ClientScript().exchange(
            .start { $0.discoverPrimaryServices(nil, done.record) },
            .out([0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28]),
            .in([0x11, 0x06, 0x01, 0x00, 0x05, 0x00, 0x00, 0x18, 0x10, 0x00, 0x13, 0x00, 0x0F, 0x18]),
            .out([0x10, 0x14, 0x00, 0xFF, 0xFF, 0x00, 0x28]),
            .in([0x11, 0x14, 0x20, 0x00, 0x30, 0x00] + vendorLE(0x0001)),
            .out([0x10, 0x31, 0x00, 0xFF, 0xFF, 0x00, 0x28]),
            .in(errorRsp(0x10, 0x0031, 0x0A)))
        #expect(done.value == .success([
            DiscoveredService(uuid: BluetoothUUID(0x1800), startHandle: 0x0001, endHandle: 0x0005),
            DiscoveredService(uuid: BluetoothUUID(0x180F), startHandle: 0x0010, endHandle: 0x0013),
            DiscoveredService(uuid: LargeDB.lockService, startHandle: 0x0020, endHandle: 0x0030),
        ]))
    }

    @Test("a service ending at 0xFFFF ends discovery without another request")
    func serviceEndingAtLastHandle() throws {
        let done = Completion<Result<[DiscoveredService], GATTClientError>>()
        try ClientScript().exchange(
            .start { $0.discoverPrimaryServices(nil, done.record) },
            .out([0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28]),
            .in([0x11, 0x06, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x18]))
        #expect(done.value == .success([DiscoveredService(uuid: BluetoothUUID(0x1800), startHandle: 1, endHandle: 0xFFFF)]))
    }

    @Test("GAD/CL/BV-02-C discover primary services by UUID with Find By Type Value")
    func discoverPrimaryServiceByUUID() throws {
        let done = Completion<Result<[DiscoveredService], GATTClientError>>()
        try ClientScript().exchange(
            .start { $0.discoverPrimaryServices(BluetoothUUID(0x180F), done.record) },
            .out([0x06, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28, 0x0F, 0x18]),
            .in([0x07, 0x10, 0x00, 0x13, 0x00, 0x40, 0x00, 0x45, 0x00]),
            .out([0x06, 0x46, 0x00, 0xFF, 0xFF, 0x00, 0x28, 0x0F, 0x18]),
            .in(errorRsp(0x06, 0x0046, 0x0A)))
        #expect(done.value == .success([
            DiscoveredService(uuid: BluetoothUUID(0x180F), startHandle: 0x0010, endHandle: 0x0013),
            DiscoveredService(uuid: BluetoothUUID(0x180F), startHandle: 0x0040, endHandle: 0x0045),
        ]))
    }

    @Test("a server that answers with handles before the request's start cannot make discovery loop")
    func serverRepeatingItselfFailsDiscovery() throws {
        let done = Completion<Result<[DiscoveredService], GATTClientError>>()
        try ClientScript().exchange(
            .start { $0.discoverPrimaryServices(nil, done.record) },
            .out([0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28]),
            .in([0x11, 0x06, 0x01, 0x00, 0x05, 0x00, 0x00, 0x18]),
            .out([0x10, 0x06, 0x00, 0xFF, 0xFF, 0x00, 0x28]),
            .in([0x11, 0x06, 0x01, 0x00, 0x05, 0x00, 0x00, 0x18]))
        guard case .failure(.invalidResponse)? = done.value else { Issue.record("\(done.calls)"); return }
    }

    @Test("GAD/CL/BV-04-C discover all characteristics, 16- and 128-bit, ranges ending at the next declaration")
    func discoverCharacteristics() throws {
        let done = Completion<Result<[DiscoveredCharacteristic], GATTClientError>>()
        let service = DiscoveredService(uuid: BluetoothUUID(0x1800), startHandle: 0x0001, endHandle: 0x0010)
        try ClientScript().exchange(
            .start { $0.discoverCharacteristics(of: service, done.record) },
            .out([0x08, 0x01, 0x00, 0x10, 0x00, 0x03, 0x28]),
            .in([0x09, 0x07, 0x02, 0x00, 0x02, 0x03, 0x00, 0x00, 0x2A, 0x04, 0x00, 0x0A, 0x05, 0x00, 0x01, 0x2A]),
            .out([0x08, 0x05, 0x00, 0x10, 0x00, 0x03, 0x28]),
            .in([0x09, 0x15, 0x06, 0x00, 0x12, 0x07, 0x00] + vendorLE(0x0002)),
            .out([0x08, 0x07, 0x00, 0x10, 0x00, 0x03, 0x28]),
            .in(errorRsp(0x08, 0x0007, 0x0A)))
        #expect(done.value == .success([
            DiscoveredCharacteristic(uuid: BluetoothUUID(0x2A00), properties: .read, declarationHandle: 2,
                                     valueHandle: 3, endHandle: 3),
            DiscoveredCharacteristic(uuid: BluetoothUUID(0x2A01), properties: [.read, .write], declarationHandle: 4,
                                     valueHandle: 5, endHandle: 5),
            DiscoveredCharacteristic(uuid: LargeDB.lockStateUUID, properties: [.read, .notify], declarationHandle: 6,
                                     valueHandle: 7, endHandle: 0x10),
        ]))
    }

    @Test("a declaration of the wrong length fails characteristic discovery")
    func badDeclaration() throws {
        let done = Completion<Result<[DiscoveredCharacteristic], GATTClientError>>()
        let service = DiscoveredService(uuid: BluetoothUUID(0x1800), startHandle: 0x0001, endHandle: 0x0010)
        try ClientScript().exchange(
            .start { $0.discoverCharacteristics(of: service, done.record) },
            .out([0x08, 0x01, 0x00, 0x10, 0x00, 0x03, 0x28]),
            .in([0x09, 0x06, 0x02, 0x00, 0x02, 0x03, 0x00, 0x00]))
        guard case .failure(.invalidResponse)? = done.value else { Issue.record("\(done.calls)"); return }
    }

    @Test("a service with only its declaration has no characteristics, and no request goes out")
    func emptyService() throws {
        let done = Completion<Result<[DiscoveredCharacteristic], GATTClientError>>()
        let service = DiscoveredService(uuid: BluetoothUUID(0x1800), startHandle: 0x0009, endHandle: 0x0009)
        try ClientScript().exchange(.start { $0.discoverCharacteristics(of: service, done.record) })
        #expect(done.value == .success([]))
    }

    @Test("GAD/CL/BV-06-C discover all descriptors of a characteristic, 16- and 128-bit")
    func discoverDescriptors() throws {
        let done = Completion<Result<[DiscoveredDescriptor], GATTClientError>>()
        let characteristic = DiscoveredCharacteristic(uuid: BluetoothUUID(0x2A19), properties: [.read, .notify],
                                                      declarationHandle: 2, valueHandle: 3, endHandle: 6)
        try ClientScript().exchange(
            .start { $0.discoverDescriptors(of: characteristic, done.record) },
            .out([0x04, 0x04, 0x00, 0x06, 0x00]),
            .in([0x05, 0x01, 0x04, 0x00, 0x02, 0x29, 0x05, 0x00, 0x01, 0x29]),
            .out([0x04, 0x06, 0x00, 0x06, 0x00]),
            .in([0x05, 0x02, 0x06, 0x00] + vendorLE(0x0005)))
        #expect(done.value == .success([
            DiscoveredDescriptor(uuid: .clientCharacteristicConfiguration, handle: 4),
            DiscoveredDescriptor(uuid: .characteristicUserDescription, handle: 5),
            DiscoveredDescriptor(uuid: LargeDB.logFormatUUID, handle: 6),
        ]))
    }
}
