import LatchkeyATT
import LatchkeyTransport
import Testing

@testable import LatchkeyMgmt

/// Events from exact kernel bytes, and every truncation of them either decoding or
/// failing as `.malformed`, never trapping.
@Suite struct MgmtEventTests {
    static let lock = BluetoothAddress(string: "C0:FF:EE:00:00:01")!

    func event(_ text: String) throws -> (MgmtIndex, MgmtEvent) {
        let packet = try MgmtPacket(decoding: bytes(text))
        return (packet.index, try MgmtEvent(code: MgmtEventCode(rawValue: packet.code), parameters: packet.parameters))
    }

    @Test func commandCompleteCarriesTheReturnParameters() throws {
        let (index, e) = try event("01 00 ff ff 09 00 03 00 00 02 00 00 00 01 00")
        #expect(index == .none)
        guard case .commandComplete(let opcode, let status, let parameters) = e else { Issue.record("\(e)"); return }
        #expect(opcode == .readControllerIndexList)
        #expect(status == .success)
        #expect(try ControllerIndexList(decoding: parameters).indices == [MgmtIndex(0), MgmtIndex(1)])
    }

    @Test func commandStatusAndErrorsNameTheCommand() throws {
        let (index, e) = try event("02 00 00 00 03 00 33 00 0d")
        #expect(e == .commandStatus(.addDevice, .invalidParameters))
        let error = MgmtError(.commandFailed, command: .addDevice, index: index, status: .invalidParameters)
        #expect("\(error)" == "Add Device (0x0033) on hci0 failed: Invalid Parameters (0x0d)")
        #expect("\(MgmtStatus.permissionDenied)" == "Permission Denied (0x14)")
        #expect("\(MgmtStatus(rawValue: 0x42))" == "Unknown Status (0x42)")
        #expect("\(MgmtError(.closed, command: .setPowered, index: MgmtIndex(1)))"
                == "Set Powered (0x0005) on hci1: the mgmt socket closed before the kernel answered")
    }

    @Test func controllerLifecycle() throws {
        #expect(try event("04 00 01 00 00 00") == (MgmtIndex(1), .indexAdded))
        #expect(try event("05 00 01 00 00 00") == (MgmtIndex(1), .indexRemoved))
        // Powered (bit 0) | Low Energy (bit 9).
        #expect(try event("06 00 00 00 04 00 01 02 00 00").1 == .newSettings([.powered, .lowEnergy]))
        #expect(try event("03 00 00 00 01 00 07").1 == .controllerError(code: 7))
        #expect(try event("23 00 00 00 01 00 01").1 == .advertisingAdded(instance: 1))
        #expect(try event("24 00 00 00 01 00 01").1 == .advertisingRemoved(instance: 1))
        #expect(try event("13 00 00 00 02 00 06 00").1 == .discovering(6, false))
    }

    @Test func deviceConnectedAndDisconnected() throws {
        // Address, type 1 (LE public), flags 0x08 (we initiated), no EIR.
        guard case .deviceConnected(let connected) = try event("0b 00 00 00 0d 00 01 00 00 ee ff c0 01 08 00 00 00 00 00").1 else {
            Issue.record("not Device Connected"); return
        }
        #expect(connected.address.address == Self.lock)
        #expect(connected.isInitiatedLocally)

        guard case .deviceDisconnected(let device, let reason) = try event("0c 00 00 00 08 00 01 00 00 ee ff c0 01 03").1 else {
            Issue.record("not Device Disconnected"); return
        }
        #expect(device.address == Self.lock)
        #expect(reason == .remoteHost)
        #expect(reason.hciReason == .remoteUserTerminated)
        #expect(MgmtDisconnectReason.connectionTimeout.hciReason == .connectionTimeout)
        #expect(MgmtDisconnectReason.localHost.hciReason == .localHostTerminated)
        #expect(MgmtDisconnectReason.unspecified.hciReason == nil)

        // A BR/EDR device (type 0) has no LE address: the seam ignores it.
        guard case .deviceConnected(let classic) = try event("0b 00 00 00 0d 00 01 00 00 ee ff c0 00 00 00 00 00 00 00").1 else {
            Issue.record("not Device Connected"); return
        }
        #expect(classic.address.address == nil)
    }

    @Test func deviceFoundCarriesAdvertisingData() throws {
        // RSSI -60 (0xc4), flags 0, EIR: Flags 0x06, complete name "Door".
        let (_, e) = try event("12 00 00 00 17 00 01 00 00 ee ff c0 01 c4 00 00 00 00 09 00 02 01 06 05 09 44 6f 6f 72")
        guard case .deviceFound(let found) = e else { Issue.record("\(e)"); return }
        #expect(found.address.address == Self.lock)
        #expect(found.rssi == -60)
        #expect(found.isConnectable)
        let data = try AdvertisingData(decoding: found.eir)
        #expect(data.flags == 0x06)
        #expect(data.localName == "Door")
        // Flags bit 2: Not Connectable.
        guard case .deviceFound(let beacon) = try event("12 00 00 00 0e 00 01 00 00 ee ff c0 01 c4 04 00 00 00 00 00").1 else {
            Issue.record("not Device Found"); return
        }
        #expect(!beacon.isConnectable)
    }

    @Test func devicesRemovedByAnotherClient() throws {
        #expect(try event("1a 00 00 00 08 00 01 00 00 ee ff c0 01 02").1
                == .deviceAdded(MgmtDeviceAddress(Self.lock), action: 2))
        #expect(try event("1b 00 00 00 07 00 01 00 00 ee ff c0 01").1 == .deviceRemoved(MgmtDeviceAddress(Self.lock)))
    }

    @Test func unknownEventsPassThrough() throws {
        #expect(try event("ff 00 00 00 02 00 aa bb").1 == .other(MgmtEventCode(rawValue: 0xff), [0xaa, 0xbb]))
    }

    @Test func controllerInformationRoundTrip() throws {
        let info = ControllerInfo(address: Self.lock, bluetoothVersion: 9, manufacturer: 0x05f1,
                                  supportedSettings: [.powered, .connectable, .bondable, .lowEnergy, .advertising],
                                  currentSettings: [.lowEnergy], name: "latchkey")
        let encoded = info.encoded()
        #expect(encoded.count == 280, "6 + 1 + 2 + 4 + 4 + 3 + 249 + 11")
        #expect(Array(encoded.prefix(6)) == bytes("01 00 00 ee ff c0"))
        #expect(try ControllerInfo(decoding: encoded) == info)
        #expect(try MgmtReply.currentSettings(bytes("81 02 00 00"), of: .setPowered) == [.powered, .basicRate, .lowEnergy])
        #expect(try MgmtReply.connections(bytes("01 00 01 00 00 ee ff c0 01")).map(\.address) == [Self.lock])
    }

    static let vectors = [
        "01 00 ff ff 09 00 03 00 00 02 00 00 00 01 00",
        "0b 00 00 00 0d 00 01 00 00 ee ff c0 01 08 00 00 00 00 00",
        "0c 00 00 00 08 00 01 00 00 ee ff c0 01 03",
        "12 00 00 00 17 00 01 00 00 ee ff c0 01 c4 00 00 00 00 09 00 02 01 06 05 09 44 6f 6f 72",
        "06 00 00 00 04 00 01 02 00 00",
        "13 00 00 00 02 00 06 00",
    ]

    /// Each truncated vector, with its length field made consistent so the event parser
    /// (not only the header check) sees short parameters: decodes or is `.malformed`.
    @Test(arguments: vectors)
    func truncationsNeverTrap(_ vector: String) throws {
        let full = bytes(vector)
        for cut in 0..<full.count {
            var short = Array(full.prefix(cut))
            #expect(throws: MgmtError.self) { try MgmtPacket(decoding: short) }
            guard cut >= MgmtPacket.headerLength else { continue }
            short[4] = UInt8(cut - MgmtPacket.headerLength)
            short[5] = 0
            let packet = try MgmtPacket(decoding: short)
            do {
                _ = try MgmtEvent(code: MgmtEventCode(rawValue: packet.code), parameters: packet.parameters)
            } catch {
                #expect(error.code == .malformed)
            }
        }
    }
}
