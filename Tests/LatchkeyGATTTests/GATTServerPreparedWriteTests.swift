import LatchkeyATT
import LatchkeyGATT
import LatchkeyTestKit
import Testing

@Suite("GATT server: prepared and executed writes")
struct GATTServerPreparedWriteTests {
    /// Prepare Write Request bytes (3.4.6.1); the server echoes them with opcode 0x17.
    static func prepare(_ handle: UInt16, _ offset: UInt16, _ value: [UInt8]) -> [UInt8] {
        [0x16] + handle.le + offset.le + value
    }
    static func echo(_ handle: UInt16, _ offset: UInt16, _ value: [UInt8]) -> [UInt8] {
        [0x17] + handle.le + offset.le + value
    }

    @Test("GAW/SR/BV-05-C write long characteristic value: pieces echoed, value replaced on execute")
    func longWrite() throws {
        let fixture = Fixture.large()
        let value = (0..<40).map { UInt8(0xA0 &+ $0) }
        try ServerScript(fixture).exchange(
            .in(Self.prepare(0x28, 0, Array(value[0..<18]))), .out(Self.echo(0x28, 0, Array(value[0..<18]))),
            .in(Self.prepare(0x28, 18, Array(value[18..<36]))), .out(Self.echo(0x28, 18, Array(value[18..<36]))),
            .in(Self.prepare(0x28, 36, Array(value[36...]))), .out(Self.echo(0x28, 36, Array(value[36...]))),
            // Nothing is written before the execute.
            .in([0x0A, 0x28, 0x00]), .out([0x0B] + LargeDB.eventLogValue[0..<22]),
            .in([0x18, 0x01]), .out([0x19]),
            .in([0x0A, 0x28, 0x00]), .out([0x0B] + value[0..<22]),
            .in([0x0C, 0x28, 0x00, 0x16, 0x00]), .out([0x0D] + value[22...]))
        #expect(fixture.delegate.writes.count == 1)
        #expect(fixture.delegate.writes.first?.value == value)
    }

    @Test("GAW/SR/BV-07-C prepared writes cancelled with Execute Write flags 0x00 change nothing")
    func cancel() throws {
        let fixture = Fixture.small()
        try ServerScript(fixture).exchange(
            .in(Self.prepare(0x07, 0, [0x01, 0x02, 0x03])), .out(Self.echo(0x07, 0, [0x01, 0x02, 0x03])),
            .in([0x18, 0x00]), .out([0x19]),
            .in([0x0A, 0x07, 0x00]), .out([0x0B, 0x61, 0x62, 0x63]),
            // The queue is empty again: executing now writes nothing.
            .in([0x18, 0x01]), .out([0x19]),
            .in([0x0A, 0x07, 0x00]), .out([0x0B, 0x61, 0x62, 0x63]))
        #expect(fixture.delegate.writes.isEmpty)
    }

    @Test("GAW/SR/BI-07-C long write at an offset beyond the value is Invalid Offset on execute")
    func offsetBeyondValue() throws {
        try ServerScript(.small()).exchange(
            .in(Self.prepare(0x07, 4, [0x01])), .out(Self.echo(0x07, 4, [0x01])),
            .in([0x18, 0x01]), .out(errorRsp(0x18, 0x0007, 0x07)),
            .in([0x0A, 0x07, 0x00]), .out([0x0B, 0x61, 0x62, 0x63]))
    }

    @Test("a prepared write lands at its offset in the current value")
    func offsetsIntoCurrentValue() throws {
        try ServerScript(.small()).exchange(
            // At the end of "abc": appends.
            .in(Self.prepare(0x07, 3, [0x64])), .out(Self.echo(0x07, 3, [0x64])),
            .in([0x18, 0x01]), .out([0x19]),
            .in([0x0A, 0x07, 0x00]), .out([0x0B, 0x61, 0x62, 0x63, 0x64]),
            // Inside "abcd": keeps what precedes the offset, and the write is the new end.
            .in(Self.prepare(0x07, 1, [0x5A])), .out(Self.echo(0x07, 1, [0x5A])),
            .in([0x18, 0x01]), .out([0x19]),
            .in([0x0A, 0x07, 0x00]), .out([0x0B, 0x61, 0x5A]))
    }

    @Test("a failed execute writes none of the queued handles")
    func failedExecuteWritesNothing() throws {
        let fixture = Fixture.large()
        try ServerScript(fixture).exchange(
            .in(Self.prepare(0x28, 0, [0x01])), .out(Self.echo(0x28, 0, [0x01])),
            // The battery CCCD holds 2 octets: offset 9 is past its end.
            .in(Self.prepare(0x13, 9, [0x01])), .out(Self.echo(0x13, 9, [0x01])),
            .in([0x18, 0x01]), .out(errorRsp(0x18, 0x0013, 0x07)),
            .in([0x0A, 0x28, 0x00]), .out([0x0B] + LargeDB.eventLogValue[0..<22]))
        #expect(fixture.delegate.writes.isEmpty)
    }

    @Test("prepared writes totalling more than 512 octets are Invalid Attribute Value Length on execute")
    func longerThan512() throws {
        let fixture = Fixture.large()
        let script = ServerScript(fixture)
        var steps: [ServerStep] = []
        for i in 0..<29 {  // 29 × 18 = 522 octets
            let piece = [UInt8](repeating: UInt8(i), count: 18)
            steps += [.in(Self.prepare(0x28, UInt16(i * 18), piece)), .out(Self.echo(0x28, UInt16(i * 18), piece))]
        }
        try script.exchange(steps)
        try script.exchange(
            .in([0x18, 0x01]), .out(errorRsp(0x18, 0x0028, 0x0D)),
            .in([0x0A, 0x28, 0x00]), .out([0x0B] + LargeDB.eventLogValue[0..<22]))
        #expect(fixture.delegate.writes.isEmpty)
    }

    @Test("the prepare queue holds 32 writes; the 33rd is Prepare Queue Full; execute empties it")
    func queueFull() throws {
        #expect(GATTServer.maximumPrepareQueueLength == 32)
        let script = ServerScript(.small())
        var steps: [ServerStep] = []
        for i in 0..<32 {
            steps += [.in(Self.prepare(0x07, UInt16(i), [UInt8(i)])), .out(Self.echo(0x07, UInt16(i), [UInt8(i)]))]
        }
        try script.exchange(steps)
        try script.exchange(
            .in(Self.prepare(0x07, 32, [0x20])), .out(errorRsp(0x16, 0x0007, 0x09)),
            .in([0x18, 0x00]), .out([0x19]),
            .in(Self.prepare(0x07, 0, [0x21])), .out(Self.echo(0x07, 0, [0x21])),
            .in([0x18, 0x01]), .out([0x19]),
            .in([0x0A, 0x07, 0x00]), .out([0x0B, 0x21]))
    }

    @Test("a prepare to a handle that cannot be written is refused at once")
    func prepareChecksHandleAndPermissions() throws {
        try ServerScript(.large()).exchange(
            .in(Self.prepare(0x00, 0, [0x01])), .out(errorRsp(0x16, 0x0000, 0x01)),
            .in(Self.prepare(0x06, 0, [0x01])), .out(errorRsp(0x16, 0x0006, 0x01)),
            .in(Self.prepare(0x03, 0, [0x01])), .out(errorRsp(0x16, 0x0003, 0x03)),
            .in(Self.prepare(0x26, 0, [0x01])), .out(errorRsp(0x16, 0x0026, 0x0F)),
            .in([0x18, 0x01]), .out([0x19]))
    }

    @Test("an executed long write to a dynamic value goes to the application whole")
    func longWriteToDynamicValue() throws {
        let fixture = Fixture.large()
        try ServerScript(fixture, security: LinkSecurity(encrypted: true)).exchange(
            .in(Self.prepare(0x26, 0, [0x01, 0x02])), .out(Self.echo(0x26, 0, [0x01, 0x02])),
            .in(Self.prepare(0x26, 2, [0x03])), .out(Self.echo(0x26, 2, [0x03])),
            .in([0x18, 0x01]), .out([0x19]))
        #expect(fixture.delegate.writes.map(\.handle) == [0x0026])
        #expect(fixture.delegate.writes.first?.value == [0x01, 0x02, 0x03])
    }

    @Test("Execute Write flags other than 0x00 and 0x01 are Invalid PDU")
    func executeWriteBadFlags() throws {
        try ServerScript(.small()).exchange(
            .in([0x18, 0x02]), .out(errorRsp(0x18, 0x0000, 0x04)),
            .in([0x18, 0xFF]), .out(errorRsp(0x18, 0x0000, 0x04)))
    }
}
