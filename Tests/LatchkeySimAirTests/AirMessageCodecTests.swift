import LatchkeyATT
import LatchkeyTransport
import Testing

@testable import LatchkeySimAir

@Suite struct AirMessageCodecTests {
    static let lock = BluetoothAddress(0xC0FFEE_000001, kind: .random)
    static let phone = BluetoothAddress(0x0000_0000_0002)

    static let advertisement = Advertisement(
        data: AdvertisingData(serviceUUIDs: [BluetoothUUID(0x180F), BluetoothUUID(value: 0x1234_5678_9ABC_DEF0_0FED_CBA9_8765_4321)],
                              localName: "Front door — a name longer than thirty-one bytes", manufacturerData: [1, 2, 3]),
        scanResponse: AdvertisingData(flags: nil, localName: "FD"),
        interval: .milliseconds(20), connectable: false)

    static let status = ControllerStatus(state: .poweredOn, isAdvertising: true, isScanning: false,
                                         pendingConnections: [phone, lock])
    static let link = LinkDescription(id: LinkID(7), peer: phone, role: .peripheral, maximumTransmissionUnit: 247, window: 8,
                                      connectionInterval: .microseconds(7_500))

    /// One of every message, with values that exercise every field.
    static let samples: [AirMessage] = [
        .helloAgent(version: AirMessage.version, address: lock, position: -2.5),
        .helloAgent(version: 9, address: phone, position: nil),
        .helloControl(version: AirMessage.version),
        .startAdvertising(advertisement),
        .startAdvertising(Advertisement(data: AdvertisingData())),
        .stopAdvertising,
        .startScanning(ScanParameters(active: false, interval: .milliseconds(100), window: .milliseconds(100),
                                      filterDuplicates: false)),
        .stopScanning,
        .addPendingConnection(lock),
        .removePendingConnection(phone),
        .setConnectionParameters(ConnectionParameters(scanInterval: .milliseconds(20), scanWindow: .milliseconds(10),
                                                      connectionInterval: .microseconds(7_500),
                                                      supervisionTimeout: .milliseconds(100))),
        .linkSend(LinkID(UInt64.max), [0x02, 0x17, 0x00]),
        .linkSend(LinkID(1), []),
        .linkDisconnect(LinkID(3)),
        .linkClaim(LinkID(4)),
        .linkRelease(LinkID(5)),
        .linkRequestInterval(LinkID(6), .milliseconds(50)),
        .linkInterval(LinkID(6), .microseconds(7_500)),
        .welcome(version: AirMessage.version, status: status, links: [link, LinkDescription(
            id: LinkID(8), peer: lock, role: .central, maximumTransmissionUnit: 23, window: 1)]),
        .welcome(version: AirMessage.version, status: ControllerStatus(state: .unknown, isAdvertising: false,
                                                                       isScanning: true, pendingConnections: []), links: []),
        .status(ControllerStatus(state: .poweredOff, isAdvertising: false, isScanning: false, pendingConnections: []),
                commandsProcessed: 70_000),
        .advertisementReport(AdvertisementReport(address: lock, data: advertisement.data, rssi: -67, connectable: true)),
        .linkUp(link),
        .linkReceived(LinkID(7), Array(0...255) + [0x1B]),
        .linkAccepted(LinkID(7), count: 3),
        .linkDown(LinkID(7), .connectionTimeout),
        .linkDown(LinkID(7), DisconnectReason(rawValue: 0xEE)),
        .commandFailed(TransportError(.poweredOff, "cannot advertise while powered off")),
        .commandFailed(TransportError(.invalidParameters, "interval")),
        .rejected("unsupported version 9"),
        .setPosition(request: 1, address: phone, position: 42.25),
        .powerOff(request: 2, address: lock),
        .powerOn(request: 3, address: lock),
        .listDevices(request: UInt32.max),
        .done(request: 4),
        .failed(request: 5, reason: "no device 00:00:00:00:00:09"),
        .devices(request: 6, [
            DeviceSnapshot(address: lock, position: 0, attached: true, status: status,
                           links: [DeviceSnapshot.Link(id: LinkID(7), peer: phone, role: .peripheral, claimed: true)]),
            DeviceSnapshot(address: phone, position: 30, attached: false, status: status, links: []),
        ]),
        .devices(request: 7, []),
    ]

    @Test(arguments: samples)
    func roundTrips(_ message: AirMessage) throws {
        let bytes = message.encoded()
        #expect(try AirMessage(decoding: bytes) == message)
    }

    @Test func everyKindIsCoveredBySamples() {
        let kinds = Set(Self.samples.map { $0.encoded()[0] })
        let all: [AirMessage.Kind] = [.helloAgent, .helloControl, .startAdvertising, .stopAdvertising, .startScanning,
            .stopScanning, .addPendingConnection, .removePendingConnection, .setConnectionParameters, .linkSend,
            .linkDisconnect, .linkClaim, .linkRelease, .linkRequestInterval, .linkInterval, .setPosition, .powerOff, .powerOn, .listDevices, .welcome,
            .status, .advertisementReport, .linkUp, .linkReceived, .linkAccepted, .linkDown, .commandFailed,
            .rejected, .done, .failed, .devices]
        #expect(kinds == Set(all.map(\.rawValue)))
    }

    @Test func advertisingDataTravelsUnshortened() throws {
        guard case .startAdvertising(let a) = try AirMessage(decoding: AirMessage.startAdvertising(Self.advertisement).encoded())
        else { Issue.record("wrong kind"); return }
        #expect(a.data.localName == Self.advertisement.data.localName)
        #expect(a.scanResponse?.flags == nil, "an absent flags field stays absent")
    }

    @Test(arguments: samples)
    func everyTruncationIsRejected(_ message: AirMessage) {
        let bytes = message.encoded()
        for length in 0..<bytes.count {
            #expect(throws: AirProtocolError.self, "prefix of \(length) bytes") {
                _ = try AirMessage(decoding: Array(bytes.prefix(length)))
            }
        }
    }

    @Test(arguments: samples)
    func trailingBytesAreRejected(_ message: AirMessage) {
        #expect(throws: AirProtocolError(.trailingBytes, "1 bytes after the message")) {
            _ = try AirMessage(decoding: message.encoded() + [0])
        }
    }

    @Test func badValuesAreRejected() {
        func rejects(_ bytes: [UInt8], _ code: AirProtocolError.Code, sourceLocation: SourceLocation = #_sourceLocation) {
            do {
                let decoded = try AirMessage(decoding: bytes)
                Issue.record("decoded \(decoded)", sourceLocation: sourceLocation)
            } catch {
                #expect(error.code == code, sourceLocation: sourceLocation)
            }
        }
        rejects([0x7F], .unknownMessage)
        rejects([], .truncated)
        let address: [UInt8] = [1, 0, 0, 0, 0, 0, 0, 0, 0]  // value 1, public
        rejects([0x01, 1] + address + [2], .invalidValue)  // presence byte 2
        rejects([0x01, 1, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0], .invalidValue)  // address kind 2
        rejects([0x01, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0], .invalidValue)  // address wider than 48 bits
        let nan = Double.nan.bitPattern
        rejects([0x01, 1] + address + [1] + (0..<8).map { UInt8(truncatingIfNeeded: nan >> (8 * $0)) }, .invalidValue)
        rejects([0x81, 5, 0, 0, 0, 0, 0, 0, 0, 0], .invalidValue)  // radio state 5
        rejects([0x88, 2, 0, 0xC3, 0x28], .invalidValue)  // invalid UTF-8
        rejects([0x88, 0xFF, 0xFF], .truncated)  // string of 65535 bytes, none there
        // A service UUID of 3 bytes in advertising data: flags absent, one UUID.
        rejects([0x10, 0, 1, 0, 3, 0, 1, 2, 3, 0, 0] + [UInt8](repeating: 0, count: 8) + [1], .invalidValue)
    }

    /// Seeded random mutations of valid messages: each decodes or throws, never traps.
    @Test func mutationsDecodeOrThrow() {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 {  // SplitMix64
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        var decoded = 0, rejected = 0
        for round in 0..<20_000 {
            var bytes = Self.samples[round % Self.samples.count].encoded()
            for _ in 0...(next() % 3) {
                let i = Int(next() % UInt64(bytes.count))
                bytes[i] = UInt8(truncatingIfNeeded: next())
            }
            if (try? AirMessage(decoding: bytes)) != nil { decoded += 1 } else { rejected += 1 }
        }
        #expect(decoded + rejected == 20_000)
        #expect(rejected > 0)
    }
}
