import LatchkeyLock
import LatchkeyStore
import LatchkeyTransport
import Testing

@Suite struct StoredEventLogTests {
    static func event(_ index: Int) -> LockEvent {
        let record = LockOperationRecord(operation: index % 2 == 0 ? .lock : .unlock, source: .remote,
                                         who: KeyID(UInt32(index)), decision: DecisionID(UInt64(index)))
        return LockEvent(kind: .lockOperation(record), time: Instant(nanoseconds: Int64(index) * 1_000),
                         lockStateBefore: .locked, lockStateAfter: .unlocked, doorState: .closed)
    }

    @Test func appendedEventsComeBackInOrderWithSequenceAndWallTime() throws {
        let fixture = StoreFixture()
        let log = try fixture.open().eventLog()
        let alarm = LockEvent(kind: .doorLockAlarm(.lockJammed), time: .zero, lockStateBefore: .locking,
                              lockStateAfter: .notFullyLocked, doorState: .unknown)
        #expect(try log.append(Self.event(1)) == 1)
        fixture.clocks.advance(by: .seconds(3))
        #expect(try log.append(alarm) == 2)

        let read = try fixture.open().eventLog().read(limit: 10)
        #expect(read.map(\.sequence) == [1, 2])
        #expect(read.map(\.event) == [Self.event(1), alarm])
        #expect(read[1].wallNanos - read[0].wallNanos == Duration.seconds(3).nanoseconds)
    }

    /// `latchkey log`: the newest first, cut by a wall-clock start and a count.
    @Test func newestFirstSinceAWallTimeWithALimit() throws {
        let fixture = StoreFixture()
        let log = try fixture.open().eventLog()
        let start = fixture.clocks.wallNanos
        for index in 1...5 {
            try log.append(Self.event(index))
            fixture.clocks.advance(by: .seconds(60))
        }
        #expect(try log.newest(limit: 3).map(\.sequence) == [5, 4, 3])
        #expect(try log.newest(limit: 10, sinceWallNanos: start + Duration.seconds(120).nanoseconds).map(\.sequence) == [5, 4, 3])
        #expect(try log.newest(limit: 2, sinceWallNanos: start).map(\.sequence) == [5, 4])
        #expect(try log.newest(limit: 10, sinceWallNanos: fixture.clocks.wallNanos).isEmpty)
    }

    @Test func readsARangeFromASequenceWithALimit() throws {
        let fixture = StoreFixture()
        let log = try fixture.open().eventLog()
        for index in 1...10 { try log.append(Self.event(index)) }
        #expect(try log.read(from: 4, limit: 3).map(\.sequence) == [4, 5, 6])
        #expect(try log.read(from: 9, limit: 100).map(\.sequence) == [9, 10])
        #expect(try log.read(from: 11, limit: 5).isEmpty)
        #expect(try log.read(from: 1, limit: 0).isEmpty)
        #expect(try log.tail(2).map(\.event) == [Self.event(9), Self.event(10)])
        #expect(try log.count() == 10)
        #expect(try log.lastSequence() == 10)
    }

    @Test func retentionKeepsTheNewestAndSequencesAreNeverReused() throws {
        let fixture = StoreFixture()
        let log = try fixture.open().eventLog(retention: 3)
        for index in 1...5 { try log.append(Self.event(index)) }
        #expect(try log.count() == 3)
        #expect(try log.read(limit: 10).map(\.sequence) == [3, 4, 5])

        let reopened = try fixture.open().eventLog(retention: 3)
        #expect(try reopened.append(Self.event(6)) == 6, "numbering goes on after a reopen")
        #expect(try reopened.read(limit: 10).map(\.event) == [Self.event(4), Self.event(5), Self.event(6)])
    }

    @Test func theDefaultRetentionIsTenThousand() throws {
        let fixture = StoreFixture()
        #expect(try fixture.open().eventLog().retention == 10_000)
    }
}
