import LatchkeyATT
import LatchkeyGATT
import LatchkeyTestKit
import Testing

@Suite("GATT server: reads")
struct GATTServerReadTests {
    static let name = LargeDB.deviceNameValue
    static let log = LargeDB.eventLogValue

    @Test("GAR/SR/BV-01-C read characteristic value")
    func read() throws {
        try ServerScript(.small()).exchange(.in([0x0A, 0x03, 0x00]), .out([0x0B, 0x64]))
        try ServerScript(.large()).exchange(.in([0x0A, 0x03, 0x00]), .out([0x0B] + Self.name))
    }

    @Test("GAR/SR/BI-02-C read invalid handle: handle 0, a handle past the end, a handle in a gap")
    func readInvalidHandle() throws {
        try ServerScript(.large()).exchange(
            .in([0x0A, 0x00, 0x00]), .out(errorRsp(0x0A, 0x0000, 0x01)),
            .in([0x0A, 0x0F, 0xF0]), .out(errorRsp(0x0A, 0xF00F, 0x01)),
            .in([0x0A, 0x06, 0x00]), .out(errorRsp(0x0A, 0x0006, 0x01)))
    }

    @Test("a value without read permission answers Read Not Permitted")
    func readNotPermitted() throws {
        try ServerScript(.large()).exchange(
            .in([0x0A, 0x2C, 0x00]), .out(errorRsp(0x0A, 0x002C, 0x02)),
            // Write-only lock control.
            .in([0x0A, 0x26, 0x00]), .out(errorRsp(0x0A, 0x0026, 0x02)))
    }

    @Test("encryption-required values answer Insufficient Encryption until the link is encrypted")
    func readNeedsEncryption() throws {
        try ServerScript(.large()).exchange(.in([0x0A, 0x2E, 0x00]), .out(errorRsp(0x0A, 0x002E, 0x0F)))
        try ServerScript(.large(), security: LinkSecurity(encrypted: true)).exchange(
            .in([0x0A, 0x2E, 0x00]), .out([0x0B, 0x42]))
    }

    @Test("authentication-required values answer Insufficient Authentication until the link is authenticated")
    func readNeedsAuthentication() throws {
        try ServerScript(.large(), security: LinkSecurity(encrypted: true)).exchange(
            .in([0x0A, 0x30, 0x00]), .out(errorRsp(0x0A, 0x0030, 0x05)))
        let script = ServerScript(.large())
        script.server.security = LinkSecurity(encrypted: true, authenticated: true)
        try script.exchange(.in([0x0A, 0x30, 0x00]), .out([0x0B, 0x43]))
    }

    @Test("a dynamic value is read from the application on every read")
    func dynamicRead() throws {
        let fixture = Fixture.large()
        let script = ServerScript(fixture)
        try script.exchange(.in([0x0A, 0x22, 0x00]), .out([0x0B, 0x01]))
        fixture.delegate.dynamicValues[LargeDB.lockState] = [0x00]
        try script.exchange(.in([0x0A, 0x22, 0x00]), .out([0x0B, 0x00]))
        #expect(fixture.delegate.dynamicReads == 2)
    }

    @Test("a dynamic value with no application attached answers Unlikely Error")
    func dynamicReadWithoutDelegate() throws {
        try ServerScript(Fixture.large().database).exchange(.in([0x0A, 0x22, 0x00]), .out(errorRsp(0x0A, 0x0022, 0x0E)))
    }

    @Test("a read answers the first ATT_MTU − 1 octets of a long value")
    func readTruncatesToMTU() throws {
        let script = ServerScript(.large())
        try script.exchange(.in([0x0A, 0x28, 0x00]), .out([0x0B] + Self.log[0..<22]))
        try script.exchange(.in([0x02, 0x32, 0x00]), .out([0x03, 0x05, 0x02]))  // ATT_MTU 50
        try script.exchange(.in([0x0A, 0x28, 0x00]), .out([0x0B] + Self.log[0..<49]))
    }

    @Test("GAR/SR/BV-04-C read a long value with Read Blob up to its end, then an empty part")
    func readBlob() throws {
        try ServerScript(.large()).exchange(
            .in([0x0C, 0x28, 0x00, 0x00, 0x00]), .out([0x0D] + Self.log[0..<22]),
            .in([0x0C, 0x28, 0x00, 0x16, 0x00]), .out([0x0D] + Self.log[22..<44]),
            .in([0x0C, 0x28, 0x00, 0x58, 0x00]), .out([0x0D] + Self.log[88..<100]),
            .in([0x0C, 0x28, 0x00, 0x64, 0x00]), .out([0x0D]))
    }

    @Test("GAR/SR/BI-12-C read blob of a value without read permission")
    func readBlobNotPermitted() throws {
        try ServerScript(.large()).exchange(.in([0x0C, 0x2C, 0x00, 0x00, 0x00]), .out(errorRsp(0x0C, 0x002C, 0x02)))
    }

    @Test("GAR/SR/BI-13-C read blob at an offset past the end is Invalid Offset")
    func readBlobInvalidOffset() throws {
        try ServerScript(.large()).exchange(
            .in([0x0C, 0x28, 0x00, 0x65, 0x00]), .out(errorRsp(0x0C, 0x0028, 0x07)),
            .in([0x0C, 0x03, 0x00, 0xF0, 0x00]), .out(errorRsp(0x0C, 0x0003, 0x07)))
    }

    @Test("GAR/SR/BI-14-C read blob of an invalid handle")
    func readBlobInvalidHandle() throws {
        try ServerScript(.large()).exchange(.in([0x0C, 0xF0, 0x0F, 0x00, 0x00]), .out(errorRsp(0x0C, 0x0FF0, 0x01)))
    }

    @Test("GAR/SR/BV-03-C read using characteristic UUID, 16- and 128-bit")
    func readByType() throws {
        try ServerScript(.large()).exchange(
            .in([0x08, 0x01, 0x00, 0xFF, 0xFF, 0x19, 0x2A]),
            .out([0x09, 0x03, 0x12, 0x00, 0x50]),
            // A long value is cut to ATT_MTU − 4 octets (3.4.4.2).
            .in([0x08, 0x01, 0x00, 0xFF, 0xFF] + vendorLE(0x0004)),
            .out([0x09, 0x15, 0x28, 0x00] + Self.log[0..<19]))
    }

    @Test("Read By Type of declarations fits (ATT_MTU − 2) / 7 entries at the default MTU")
    func readByTypeFillsMTU() throws {
        try ServerScript(.large()).exchange(
            .in([0x08, 0x01, 0x00, 0xFF, 0xFF, 0x03, 0x28]),
            .out([0x09, 0x07, 0x02, 0x00, 0x02, 0x03, 0x00, 0x00, 0x2A, 0x04, 0x00, 0x02, 0x05, 0x00, 0x01, 0x2A,
                  0x11, 0x00, 0x12, 0x12, 0x00, 0x19, 0x2A]))
    }

    @Test("GAR/SR/BI-06-C read by type of a value without read permission")
    func readByTypeNotPermitted() throws {
        try ServerScript(.large()).exchange(
            .in([0x08, 0x01, 0x00, 0xFF, 0xFF] + vendorLE(0x0006)),
            .out(errorRsp(0x08, 0x002C, 0x02)),
            .in([0x08, 0x01, 0x00, 0xFF, 0xFF] + vendorLE(0x0007)),
            .out(errorRsp(0x08, 0x002E, 0x0F)))
    }

    @Test("GAR/SR/BI-07-C read by type of an absent UUID is Attribute Not Found")
    func readByTypeNotFound() throws {
        try ServerScript(.large()).exchange(
            .in([0x08, 0x01, 0x00, 0xFF, 0xFF, 0xF0, 0x0F]),
            .out(errorRsp(0x08, 0x0001, 0x0A)))
    }

    @Test("read multiple concatenates values, cut to ATT_MTU − 1 octets")
    func readMultiple() throws {
        try ServerScript(.large()).exchange(
            .in([0x0E, 0x03, 0x00, 0x05, 0x00]),
            .out([0x0F] + Self.name + [0x00, 0x00]),
            .in([0x0E, 0x03, 0x00, 0x28, 0x00]),
            .out([0x0F] + Self.name + [0x00, 0x01, 0x02]),
            .in([0x0E, 0x12, 0x00, 0x22, 0x00, 0x12, 0x00]),
            .out([0x0F, 0x50, 0x01, 0x50]))
    }

    @Test("read multiple fails on the first handle that cannot be read, naming it")
    func readMultipleErrors() throws {
        try ServerScript(.large()).exchange(
            .in([0x0E, 0x03, 0x00, 0x2C, 0x00, 0x06, 0x00]), .out(errorRsp(0x0E, 0x002C, 0x02)),
            .in([0x0E, 0x03, 0x00, 0x06, 0x00]), .out(errorRsp(0x0E, 0x0006, 0x01)),
            .in([0x0E, 0x2E, 0x00, 0x03, 0x00]), .out(errorRsp(0x0E, 0x002E, 0x0F)))
    }

    @Test("read multiple keeps what fits in ATT_MTU − 1, yet still fails on a later unreadable handle")
    func readMultipleFullThenError() throws {
        let three = Array((Self.name + Self.name + Self.name).prefix(ATTLimits.minimumMTU - 1))
        #expect(Self.name.count * 3 > ATTLimits.minimumMTU - 1, "the three names overflow the answer")
        try ServerScript(.large()).exchange(
            .in([0x0E, 0x03, 0x00, 0x03, 0x00, 0x03, 0x00]), .out([0x0F] + three),
            .in([0x0E, 0x03, 0x00, 0x03, 0x00, 0x03, 0x00, 0x2C, 0x00]), .out(errorRsp(0x0E, 0x002C, 0x02)))
    }

    @Test("an answer written into a reused buffer is the answer handle(_:) returns, long, short or none")
    func reusedAnswerBuffer() {
        let reusing = GATTServer(database: Fixture.large().database)
        let fresh = GATTServer(database: Fixture.large().database)
        var buffer: [UInt8] = []
        let pdus: [[UInt8]] = [[0x02, 0x05, 0x02],                             // Exchange MTU: 517
                               [0x04, 0x01, 0x00, 0xFF, 0xFF],                 // a long answer
                               [0x0A, 0x03, 0x00],                             // a shorter one
                               [0x52, 0x22, 0x00, 0x01],                       // a command: none
                               [0x0A, 0x00, 0x00]]                             // an error
        for pdu in pdus {
            let answered = reusing.handle(pdu[...], into: &buffer)
            let expected = fresh.handle(pdu[...])
            #expect(answered == (expected != nil))
            #expect(answered ? buffer == expected : buffer.isEmpty, "answer to \(pdu)")
        }
    }

    @Test("a CCCD reads as the client's own configuration, little-endian")
    func readCCCD() throws {
        try ServerScript(.small()).exchange(
            .in([0x0A, 0x04, 0x00]), .out([0x0B, 0x00, 0x00]),
            .in([0x12, 0x04, 0x00, 0x01, 0x00]), .out([0x13]),
            .in([0x0A, 0x04, 0x00]), .out([0x0B, 0x01, 0x00]))
    }
}
