import LatchkeyATT
import LatchkeyGATT
import LatchkeyTestKit
import Testing

@Suite("GATT server: writes and client configuration")
struct GATTServerWriteTests {
    @Test("GAW/SR/BV-03-C write characteristic value: stored, reported to the application, read back")
    func write() throws {
        let fixture = Fixture.small()
        try ServerScript(fixture).exchange(
            .in([0x12, 0x07, 0x00, 0x78, 0x79, 0x7A]), .out([0x13]),
            .in([0x0A, 0x07, 0x00]), .out([0x0B, 0x78, 0x79, 0x7A]),
            .in([0x12, 0x07, 0x00]), .out([0x13]),
            .in([0x0A, 0x07, 0x00]), .out([0x0B]))
        #expect(fixture.delegate.writes.map(\.handle) == [0x0007, 0x0007])
        #expect(fixture.delegate.writes.first?.value == [0x78, 0x79, 0x7A])
        #expect(fixture.delegate.writes.first?.withResponse == true)
    }

    @Test("GAW/SR/BI-02-C write to an invalid handle")
    func writeInvalidHandle() throws {
        try ServerScript(.large()).exchange(
            .in([0x12, 0x00, 0x00, 0x01, 0x02, 0x03]), .out(errorRsp(0x12, 0x0000, 0x01)),
            .in([0x12, 0x0F, 0xF0, 0x01, 0x02, 0x03]), .out(errorRsp(0x12, 0xF00F, 0x01)))
    }

    @Test("GAW/SR/BI-03-C write to a read-only value or a declaration is Write Not Permitted")
    func writeNotPermitted() throws {
        let fixture = Fixture.large()
        try ServerScript(fixture).exchange(
            .in([0x12, 0x03, 0x00, 0x01, 0x02, 0x03]), .out(errorRsp(0x12, 0x0003, 0x03)),
            .in([0x12, 0x01, 0x00, 0x0F, 0x18]), .out(errorRsp(0x12, 0x0001, 0x03)),
            .in([0x12, 0x02, 0x00, 0x02, 0x03, 0x00, 0x00, 0x2A]), .out(errorRsp(0x12, 0x0002, 0x03)),
            .in([0x0A, 0x03, 0x00]), .out([0x0B] + LargeDB.deviceNameValue))
        #expect(fixture.delegate.writes.isEmpty)
    }

    @Test("writes needing encryption or authentication fail until the link has it")
    func writeSecurity() throws {
        let fixture = Fixture.large()
        let script = ServerScript(fixture)
        try script.exchange(
            .in([0x12, 0x26, 0x00, 0x01]), .out(errorRsp(0x12, 0x0026, 0x0F)),
            .in([0x12, 0x30, 0x00, 0x01]), .out(errorRsp(0x12, 0x0030, 0x05)))
        #expect(fixture.delegate.writes.isEmpty)
        script.server.security = LinkSecurity(encrypted: true, authenticated: true)
        try script.exchange(
            .in([0x12, 0x26, 0x00, 0x01]), .out([0x13]),
            .in([0x12, 0x30, 0x00, 0x07]), .out([0x13]),
            .in([0x0A, 0x30, 0x00]), .out([0x0B, 0x07]))
        #expect(fixture.delegate.writes.map(\.handle) == [0x0026, 0x0030])
    }

    @Test("an error the application answers goes back in the Error Response; nothing is stored")
    func applicationRefusesWrite() throws {
        let fixture = Fixture.small()
        fixture.delegate.refuseWrites[SmallDB.string] = .application(0x80)
        try ServerScript(fixture).exchange(
            .in([0x12, 0x07, 0x00, 0x01]), .out(errorRsp(0x12, 0x0007, 0x80)),
            .in([0x0A, 0x07, 0x00]), .out([0x0B, 0x61, 0x62, 0x63]))
    }

    @Test("a value longer than 512 octets is Invalid Attribute Value Length")
    func writeTooLong() throws {
        let script = ServerScript(.small())
        try script.exchange(.in([0x02, 0x05, 0x02]), .out([0x03, 0x05, 0x02]))
        try script.exchange(
            .in([0x12, 0x07, 0x00] + [UInt8](repeating: 0x55, count: 513)), .out(errorRsp(0x12, 0x0007, 0x0D)),
            .in([0x12, 0x07, 0x00] + [UInt8](repeating: 0x55, count: 512)), .out([0x13]))
    }

    @Test("GAW/SR/BV-01-C write without response: applied, never answered, even when it fails")
    func writeCommand() throws {
        let fixture = Fixture.small()
        try ServerScript(fixture).exchange(
            .in([0x52, 0x07, 0x00, 0x41]),
            .in([0x0A, 0x07, 0x00]), .out([0x0B, 0x41]),
            .in([0x52, 0x03, 0x00, 0x01]),          // read-only: dropped
            .in([0x52, 0x0F, 0xF0, 0x01]),          // invalid handle: dropped
            .in([0x0A, 0x03, 0x00]), .out([0x0B, 0x64]))
        #expect(fixture.delegate.writes.count == 1)
        #expect(fixture.delegate.writes.first?.withResponse == false)
    }

    @Test("a Signed Write Command is dropped: no CSRK, so no signature can be checked")
    func signedWriteDropped() throws {
        let fixture = Fixture.small()
        try ServerScript(fixture).exchange(
            .in([0xD2, 0x07, 0x00, 0x41] + [UInt8](repeating: 0x11, count: 12)),
            .in([0xD2, 0x07, 0x00]),
            .in([0x0A, 0x07, 0x00]), .out([0x0B, 0x61, 0x62, 0x63]))
        #expect(fixture.delegate.writes.isEmpty)
    }

    @Test("a CCCD write subscribes and unsubscribes, and tells the application")
    func cccdWrite() throws {
        let fixture = Fixture.small()
        let script = ServerScript(fixture)
        try script.exchange(.in([0x12, 0x04, 0x00, 0x01, 0x00]), .out([0x13]))
        #expect(script.server.clientConfigurations[SmallDB.batteryLevel] == .notify)
        try script.exchange(.in([0x12, 0x04, 0x00, 0x01, 0x00]), .out([0x13]))  // no change: no callback
        try script.exchange(.in([0x12, 0x04, 0x00, 0x00, 0x00]), .out([0x13]))
        #expect(script.server.clientConfigurations[SmallDB.batteryLevel] == nil)
        #expect(fixture.delegate.configurationChanges.map(\.handle) == [0x0003, 0x0003])
        #expect(fixture.delegate.configurationChanges.map(\.configuration) == [.notify, []])
        #expect(fixture.delegate.writes.isEmpty)  // a CCCD is the server's business
    }

    @Test("a CCCD value of the wrong length is Invalid Attribute Value Length")
    func cccdBadLength() throws {
        let script = ServerScript(.small())
        try script.exchange(
            .in([0x12, 0x04, 0x00, 0x01]), .out(errorRsp(0x12, 0x0004, 0x0D)),
            .in([0x12, 0x04, 0x00, 0x01, 0x00, 0x00]), .out(errorRsp(0x12, 0x0004, 0x0D)),
            .in([0x12, 0x04, 0x00]), .out(errorRsp(0x12, 0x0004, 0x0D)))
        #expect(script.server.clientConfigurations.isEmpty)
    }

    @Test("CCCD bits the characteristic's properties do not allow are CCCD Improperly Configured (0xFD)")
    func cccdBitsNotAllowed() throws {
        let script = ServerScript(.large())
        try script.exchange(
            // Battery level notifies but does not indicate.
            .in([0x12, 0x13, 0x00, 0x02, 0x00]), .out(errorRsp(0x12, 0x0013, 0xFD)),
            .in([0x12, 0x13, 0x00, 0x03, 0x00]), .out(errorRsp(0x12, 0x0013, 0xFD)),
            // Reserved bits.
            .in([0x12, 0x23, 0x00, 0x04, 0x00]), .out(errorRsp(0x12, 0x0023, 0xFD)),
            // Lock state does both.
            .in([0x12, 0x23, 0x00, 0x03, 0x00]), .out([0x13]))
        #expect(script.server.clientConfigurations == [LargeDB.lockState: [.notify, .indicate]])
    }

    @Test("a CCCD written with a Write Command subscribes too")
    func cccdWriteCommand() throws {
        let script = ServerScript(.small())
        try script.exchange(.in([0x52, 0x04, 0x00, 0x01, 0x00]))
        #expect(script.server.clientConfigurations[SmallDB.batteryLevel] == .notify)
    }

    @Test("restored CCCD values apply to characteristic values only")
    func restoreConfigurations() {
        let server = GATTServer(database: Fixture.small().database)
        server.restoreClientConfigurations([SmallDB.batteryLevel: .notify, SmallDB.service: .notify, 0x0999: .notify])
        #expect(server.clientConfigurations == [SmallDB.batteryLevel: .notify])
    }
}
