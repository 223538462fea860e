import LatchkeyATT
import LatchkeyTransport
import Testing

@testable import LatchkeyMgmt

/// Every command against the exact bytes the kernel expects (mgmt-api.txt layouts; the
/// header is opcode, index, parameter length, little-endian), in the style of BlueZ
/// unit/test-mgmt.c.
@Suite struct MgmtCommandTests {
    static let lock = BluetoothAddress(string: "C0:FF:EE:00:00:01")!
    static let hci0 = MgmtIndex(0)

    func encoded(_ command: MgmtCommand, _ index: MgmtIndex = hci0) -> [UInt8] { command.packet(index: index).encoded() }

    @Test func controllerQueries() {
        #expect(encoded(.readControllerIndexList, .none) == bytes("03 00 ff ff 00 00"))
        #expect(encoded(.readControllerInfo) == bytes("04 00 00 00 00 00"))
        #expect(encoded(.getConnections, MgmtIndex(1)) == bytes("15 00 01 00 00 00"))
    }

    @Test func settingsCommandsCarryOneOctet() {
        #expect(encoded(.setPowered(true)) == bytes("05 00 00 00 01 00 01"))
        #expect(encoded(.setPowered(false)) == bytes("05 00 00 00 01 00 00"))
        #expect(encoded(.setConnectable(true)) == bytes("07 00 00 00 01 00 01"))
        #expect(encoded(.setBondable(false)) == bytes("09 00 00 00 01 00 00"))
        #expect(encoded(.setLowEnergy(true)) == bytes("0d 00 00 00 01 00 01"))
    }

    @Test func addDeviceAutoConnectAndRemoveDevice() {
        // Address little-endian, Address_Type 1 (LE public), Action 2 (auto-connect).
        #expect(encoded(.addDevice(Self.lock, .autoConnect)) == bytes("33 00 00 00 08 00 01 00 00 ee ff c0 01 02"))
        let random = BluetoothAddress(string: "D1:02:03:04:05:06", kind: .random)!
        #expect(encoded(.addDevice(random, .autoConnect)) == bytes("33 00 00 00 08 00 06 05 04 03 02 d1 02 02"))
        #expect(encoded(.removeDevice(Self.lock)) == bytes("34 00 00 00 07 00 01 00 00 ee ff c0 01"))
        #expect(encoded(.disconnect(Self.lock)) == bytes("14 00 00 00 07 00 01 00 00 ee ff c0 01"))
    }

    @Test func discoveryIsLowEnergyOnly() {
        #expect(encoded(.startDiscovery(.lowEnergy)) == bytes("23 00 00 00 01 00 06"))
        #expect(encoded(.stopDiscovery(.lowEnergy)) == bytes("24 00 00 00 01 00 06"))
    }

    @Test func addAdvertisingFromAnAdvertisement() throws {
        // Flags 0x06 (LE General Discoverable | BR/EDR not supported) become the
        // Discoverable flag; the kernel writes the Flags AD structure itself.
        let ad = Advertisement(data: AdvertisingData(flags: 0x06, serviceUUIDs: [BluetoothUUID(UInt16(0x180F))],
                                                     localName: "Door"))
        let instance = try AdvertisingInstance(instance: 1, ad)
        #expect(instance.flags == [.connectable, .discoverable])
        #expect(encoded(.addAdvertising(instance)) == bytes("""
            3e 00 00 00 15 00
            01 03 00 00 00 00 00 00 00 0a 00
            03 03 0f 18 05 09 44 6f 6f 72
            """))
        #expect(encoded(.removeAdvertising(instance: 1)) == bytes("3f 00 00 00 01 00 01"))
    }

    @Test func advertisingFlagsAndRoom() throws {
        let limited = try AdvertisingInstance(instance: 1, Advertisement(data: AdvertisingData(flags: 0x05)))
        #expect(limited.flags == [.connectable, .limitedDiscoverable])
        let managed = try AdvertisingInstance(instance: 1, Advertisement(data: AdvertisingData(flags: 0x04), connectable: false))
        #expect(managed.flags == [.managedFlags])
        let bare = try AdvertisingInstance(instance: 1, Advertisement(data: AdvertisingData(flags: nil, localName: "x")))
        #expect(bare.flags == [.connectable])
        #expect(bare.advertisingData == bytes("02 09 78"))

        // A long name is shortened into the 28 octets left beside the kernel's flags.
        let long = try AdvertisingInstance(instance: 1, Advertisement(data: AdvertisingData(localName: String(repeating: "n", count: 40))))
        #expect(long.advertisingData.count == 28)
        #expect(long.advertisingData[1] == 0x08, "shortened local name")

        // Service UUIDs are never cut: two 128-bit UUIDs do not fit.
        let uuid = BluetoothUUID(string: "6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!
        #expect(throws: TransportError.self) {
            try AdvertisingInstance(instance: 1, Advertisement(data: AdvertisingData(serviceUUIDs: [uuid, uuid])))
        }
        let response = try AdvertisingInstance(instance: 1, Advertisement(data: AdvertisingData(),
                                                                          scanResponse: AdvertisingData(flags: 0x06, localName: "Door")))
        #expect(response.scanResponse == bytes("05 09 44 6f 6f 72"), "no flags in a scan response")
    }

    @Test func defaultSystemConfigurationForConnections() throws {
        // Kernel defaults: scan 60/30 ms (0x60/0x30 × 0.625 ms), interval 30 ms (0x18 ×
        // 1.25 ms), latency 0, supervision 420 ms (0x2a × 10 ms).
        let timing = try SystemConfiguration.connection(.kernelDefault)
        #expect(encoded(.setDefaultSystemConfiguration(timing)) == bytes("""
            4c 00 00 00 1e 00
            0d 00 02 60 00  0e 00 02 30 00
            17 00 02 18 00  18 00 02 18 00
            19 00 02 00 00  1a 00 02 2a 00
            """))
    }

    @Test func defaultSystemConfigurationForAdvertisingAndDiscovery() throws {
        // 100 ms advertising = 160 units (0xa0); Apple's 152.5 ms = 244 units (0xf4).
        #expect(try SystemConfiguration.advertising(interval: .milliseconds(100)).map(\.value) == [0xa0, 0xa0])
        #expect(try SystemConfiguration.advertising(interval: .microseconds(152_500)).map(\.value) == [0xf4, 0xf4])
        let discovery = try SystemConfiguration.discovery(ScanParameters(interval: .milliseconds(60), window: .milliseconds(30)))
        #expect(encoded(.setDefaultSystemConfiguration(discovery)) == bytes("4c 00 00 00 0a 00 11 00 02 60 00 12 00 02 30 00"))
    }

    @Test(arguments: [
        ConnectionParameters(scanInterval: .milliseconds(30), scanWindow: .milliseconds(60)),  // window > interval
        ConnectionParameters(scanInterval: .milliseconds(1)),  // below 2.5 ms
        ConnectionParameters(connectionInterval: .milliseconds(5)),  // below 7.5 ms
        ConnectionParameters(supervisionTimeout: .milliseconds(50)),  // below 100 ms
        ConnectionParameters(connectionInterval: .milliseconds(300), supervisionTimeout: .milliseconds(500)),  // ≤ 2 × interval
    ])
    func outOfRangeTimingIsRefusedBeforeTheKernelSeesIt(_ parameters: ConnectionParameters) {
        #expect(throws: TransportError.self) { try SystemConfiguration.connection(parameters) }
    }

    @Test func advertisingIntervalLimits() {
        #expect(throws: TransportError.self) { try SystemConfiguration.advertising(interval: .milliseconds(19)) }
        #expect(throws: TransportError.self) { try SystemConfiguration.advertising(interval: .milliseconds(10_241)) }
        #expect((try? SystemConfiguration.advertising(interval: .milliseconds(20)))?.first?.value == 0x20)
        #expect((try? SystemConfiguration.advertising(interval: .milliseconds(10_240)))?.first?.value == 0x4000)
    }

    @Test func adapterNames() {
        #expect(MgmtIndex(adapterName: "hci0") == MgmtIndex(0))
        #expect(MgmtIndex(adapterName: "hci12") == MgmtIndex(12))
        #expect(MgmtIndex(adapterName: "3") == MgmtIndex(3))
        #expect(MgmtIndex(adapterName: "hci") == nil)
        #expect(MgmtIndex(adapterName: "eth0") == nil)
        #expect(MgmtIndex(adapterName: "hci65535") == nil, "0xFFFF is <non-controller>")
        #expect("\(MgmtIndex(2))" == "hci2")
    }
}
