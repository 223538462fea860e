import LatchkeyATT
import LatchkeyTestKit
import Testing

@Suite("ATT PDU round trips")
struct ATTPDURoundTripTests {
    static let instancesPerOpcode = 300

    @Test("encode → decode gives the same PDU, and decode(bytes).bytes == bytes", arguments: RandomPDU.allOpcodes)
    func roundTrip(_ opcode: ATTOpcode) throws {
        var g = SeededGenerator(seed: 0x5EED_0000 &+ UInt64(opcode.rawValue))
        for _ in 0..<Self.instancesPerOpcode {
            let pdu = RandomPDU.make(opcode, using: &g)
            #expect(pdu.opcode == opcode)
            let bytes = pdu.bytes
            #expect(bytes.first == opcode.rawValue)
            #expect(bytes.count == pdu.encodedLength)
            let decoded = try ATTPDU(decoding: bytes)
            #expect(decoded == pdu)
            #expect(decoded.bytes == bytes)
        }
    }

    @Test("decoding a slice that does not start at index 0 reads the same fields", arguments: RandomPDU.allOpcodes)
    func decodeFromOffsetSlice(_ opcode: ATTOpcode) throws {
        var g = SeededGenerator(seed: 0x0FF5_E700 &+ UInt64(opcode.rawValue))
        for _ in 0..<50 {
            let pdu = RandomPDU.make(opcode, using: &g)
            let framed: [UInt8] = [0xEE, 0xEE, 0xEE] + pdu.bytes + [0xDD]
            let decoded = try ATTPDU(decoding: framed[3..<(framed.count - 1)])
            #expect(decoded == pdu)
        }
    }

    @Test("the generator covers every opcode ATTPDU models, once")
    func generatorCoversEveryOpcode() {
        #expect(RandomPDU.allOpcodes.count == 28)
        #expect(Set(RandomPDU.allOpcodes).count == 28)
        var g = SeededGenerator(seed: 1)
        for op in RandomPDU.allOpcodes {
            // Exhaustive over ATTPDU: a new case must be added here, and to the generator.
            switch RandomPDU.make(op, using: &g) {
            case .errorResponse, .exchangeMTURequest, .exchangeMTUResponse, .findInformationRequest,
                 .findInformationResponse, .findByTypeValueRequest, .findByTypeValueResponse, .readByTypeRequest,
                 .readByTypeResponse, .readRequest, .readResponse, .readBlobRequest, .readBlobResponse,
                 .readMultipleRequest, .readMultipleResponse, .readByGroupTypeRequest, .readByGroupTypeResponse,
                 .writeRequest, .writeResponse, .writeCommand, .signedWriteCommand, .prepareWriteRequest,
                 .prepareWriteResponse, .executeWriteRequest, .executeWriteResponse, .handleValueNotification,
                 .handleValueIndication, .handleValueConfirmation:
                break
            }
        }
    }

    @Test("BlueZ vectors decode to the fields they carry")
    func knownVectors() throws {
        #expect(try ATTPDU(decoding: [0x02, 0x00, 0x02]) == .exchangeMTURequest(clientRxMTU: 512))
        #expect(try ATTPDU(decoding: [0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28])
                == .readByGroupTypeRequest(start: 0x0001, end: 0xFFFF, type: .primaryService))
        #expect(try ATTPDU(decoding: [0x01, 0x10, 0x09, 0x00, 0x0A])
                == .errorResponse(request: .readByGroupTypeRequest, handle: 0x0009, error: .attributeNotFound))
        #expect(try ATTPDU(decoding: [0x0C, 0xD3, 0x00, 0x16, 0x00]) == .readBlobRequest(handle: 0x00D3, offset: 0x0016))
        #expect(try ATTPDU(decoding: [0x18, 0x00]) == .executeWriteRequest(flags: .cancel))

        let groups = try ATTPDU(decoding: [0x11, 0x06, 0x01, 0x00, 0x04, 0x00, 0x01, 0x18,
                                          0x05, 0x00, 0x08, 0x00, 0x0D, 0x18])
        guard case .readByGroupTypeResponse(let list) = groups else { Issue.record("\(groups)"); return }
        let entries = list.map { ($0.handle, $0.groupEnd, Array($0.value)) }
        #expect(entries.count == 2)
        #expect(entries[0] == (0x0001, 0x0004, [0x01, 0x18]))
        #expect(entries[1] == (0x0005, 0x0008, [0x0D, 0x18]))

        let uuid128: [UInt8] = [0xEF, 0xCD, 0xAB, 0x89, 0x67, 0x45, 0x23, 0x01, 0x00, 0x00, 0x00, 0x00, 0x09, 0xB0, 0x00, 0x00]
        let byType = try ATTPDU(decoding: [0x08, 0x01, 0x00, 0xFF, 0xFF] + uuid128)
        #expect(byType == .readByTypeRequest(start: 1, end: 0xFFFF,
                                             type: BluetoothUUID(string: "0000B009-0000-0000-0123-456789ABCDEF")!))

        let info = try ATTPDU(decoding: [0x05, 0x01, 0x04, 0x00, 0x02, 0x29, 0x05, 0x00, 0x01, 0x29])
        guard case .findInformationResponse(let pairs) = info else { Issue.record("\(info)"); return }
        #expect(pairs.map { $0.handle } == [0x0004, 0x0005])
        #expect(pairs.map { $0.type } == [.clientCharacteristicConfiguration, .characteristicUserDescription])
    }

    @Test("a 128-bit UUID built on the Base UUID decodes as its 16-bit form")
    func baseUUIDFoldsOnDecode() throws {
        let primary128 = BluetoothUUID(value: BluetoothUUID.primaryService.value128).littleEndianBytes
        #expect(primary128.count == 2)  // folded already by init(value:)
        var wire: [UInt8] = [0x10, 0x01, 0x00, 0xFF, 0xFF]
        // 00002800-0000-1000-8000-00805F9B34FB, little-endian.
        wire += [0xFB, 0x34, 0x9B, 0x5F, 0x80, 0x00, 0x00, 0x80, 0x00, 0x10, 0x00, 0x00, 0x00, 0x28, 0x00, 0x00]
        #expect(try ATTPDU(decoding: wire) == .readByGroupTypeRequest(start: 1, end: 0xFFFF, type: .primaryService))
    }
}
