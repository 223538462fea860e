import LatchkeyLock
import LatchkeyTransport
import Testing

/// The fixed binary layout of LockEvent, and its strict decoder.
@Suite struct LockEventCodingTests {
    static let samples: [LockEvent] = [
        LockEvent(kind: .lockOperation(LockOperationRecord(operation: .unlock, source: .remote, who: KeyID(0x0102_0304),
                                                           decision: DecisionID(0x1122_3344_5566_7788))),
                  time: Instant(nanoseconds: 1_500_000_000), lockStateBefore: .locked, lockStateAfter: .unlocked,
                  doorState: .closed),
        LockEvent(kind: .lockOperation(LockOperationRecord(operation: .lock, source: .manual)),
                  time: .zero, lockStateBefore: .unknown, lockStateAfter: .locked, doorState: .unknown),
        LockEvent(kind: .lockOperationError(LockOperationRecord(operation: .lock, source: .auto, decision: DecisionID(9)), .jammed),
                  time: Instant(nanoseconds: -5), lockStateBefore: .unlocked, lockStateAfter: .notFullyLocked,
                  doorState: .open),
        LockEvent(kind: .lockOperationError(LockOperationRecord(operation: .unlock, source: .remote, who: KeyID(1)), .restricted),
                  time: Instant(nanoseconds: 42), lockStateBefore: .locked, lockStateAfter: .locked, doorState: .closed),
        LockEvent(kind: .doorLockAlarm(.doorForcedOpen), time: Instant(nanoseconds: .max),
                  lockStateBefore: .locked, lockStateAfter: .locked, doorState: .forcedOpen),
        LockEvent(kind: .doorStateChange(.ajar), time: Instant(nanoseconds: 7),
                  lockStateBefore: .unlocking, lockStateAfter: .unlocking, doorState: .ajar),
        LockEvent(kind: .lockUserChange(KeyChangeRecord(.add, source: .remote, key: KeyID(0x0A0B_0C0D))),
                  time: Instant(nanoseconds: 9), lockStateBefore: .locked, lockStateAfter: .locked, doorState: .closed),
        // A revoked key's frame, refused before it was opened: the operation is unknown.
        LockEvent(kind: .lockOperationError(LockOperationRecord(operation: nil, source: .remote, who: KeyID(3)),
                                            .disabledUserDenied),
                  time: Instant(nanoseconds: 11), lockStateBefore: .locked, lockStateAfter: .locked, doorState: .closed),
        LockEvent(kind: .operatingModeChange(OperatingModeChangeRecord(.passage, previous: .normal, source: .remote,
                                                                       who: KeyID(2))),
                  time: Instant(nanoseconds: 12), lockStateBefore: .locked, lockStateAfter: .locked, doorState: .closed),
        LockEvent(kind: .operatingModeChange(OperatingModeChangeRecord(.normal, previous: .passage, source: .auto)),
                  time: Instant(nanoseconds: 13), lockStateBefore: .locked, lockStateAfter: .locked, doorState: .unknown),
        LockEvent(kind: .suspectedRelay(SuspectedRelayRecord(.tooSlow, who: KeyID(4), elapsed: .microseconds(212_500),
                                                             interval: .microseconds(7_500))),
                  time: Instant(nanoseconds: 14), lockStateBefore: .locked, lockStateAfter: .locked, doorState: .closed),
        LockEvent(kind: .suspectedRelay(SuspectedRelayRecord(.intervalUnknown, who: KeyID(5), elapsed: .milliseconds(60),
                                                             interval: nil)),
                  time: Instant(nanoseconds: 15), lockStateBefore: .locked, lockStateAfter: .locked, doorState: .unknown),
    ]

    @Test(arguments: samples) func roundTrips(_ event: LockEvent) throws {
        let bytes = event.encoded
        #expect(bytes.count == LockEvent.encodedSize)
        #expect(try LockEvent(decoding: bytes) == event)
    }

    @Test func layoutIsFixed() {
        #expect(Self.samples[0].encoded == [
            0x01, 0x00, 0x01, 0x02, 0x01, 0x01, 0x07, 0xFF, 0x03,
            0x04, 0x03, 0x02, 0x01,
            0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
            0x00, 0x2F, 0x68, 0x59, 0x00, 0x00, 0x00, 0x00,
        ])
        #expect(Self.samples[4].encoded[0...8] == [0x01, 0x02, 0x01, 0x01, 0x03, 0xFF, 0xFF, 0x06, 0x00])
        #expect(Self.samples[6].encoded[0...12] == [0x01, 0x04, 0x01, 0x01, 0x01, 0x00, 0x07, 0xFF, 0x01,
                                                     0x0D, 0x0C, 0x0B, 0x0A])
        // Unknown operation: 0xFF where the operation type goes.
        #expect(Self.samples[7].encoded[0...12] == [0x01, 0x01, 0x01, 0x01, 0x01, 0xFF, 0x07, 0x02, 0x01,
                                                     0x03, 0x00, 0x00, 0x00])
        // OperatingModeChange: kind 5, the new mode, the source, the previous mode, who.
        #expect(Self.samples[8].encoded[0...12] == [0x01, 0x05, 0x01, 0x01, 0x01, 0x04, 0x07, 0x00, 0x01,
                                                     0x02, 0x00, 0x00, 0x00])
        // SuspectedRelay: kind 6, unlock, remote, the reason, who, then 212 500 µs and 7 500 µs.
        #expect(Self.samples[10].encoded[0...20] == [0x01, 0x06, 0x01, 0x01, 0x01, 0x01, 0x07, 0x00, 0x01,
                                                      0x04, 0x00, 0x00, 0x00, 0x14, 0x3E, 0x03, 0x00,
                                                      0x4C, 0x1D, 0x00, 0x00])
        #expect(Self.samples[11].encoded[17...20] == [0xFF, 0xFF, 0xFF, 0xFF], "an unknown interval")
        var saturated = Self.samples[11].encoded
        saturated.replaceSubrange(13...16, with: [0xFF, 0xFF, 0xFF, 0xFF])
        #expect(throws: LockEventDecodingError(.invalidField, offset: 13), "a known figure stops below 0xFFFFFFFF") {
            _ = try LockEvent(decoding: saturated)
        }
    }

    @Test func everyOtherLengthIsRejected() {
        let bytes = Self.samples[0].encoded
        for length in 0..<bytes.count {
            let error = #expect(throws: LockEventDecodingError.self) { _ = try LockEvent(decoding: bytes.prefix(length)) }
            #expect(error == LockEventDecodingError(.wrongLength, offset: length))
        }
        #expect(throws: LockEventDecodingError(.wrongLength, offset: 30)) { _ = try LockEvent(decoding: bytes + [0]) }
    }

    @Test func anotherVersionIsRejected() {
        var bytes = Self.samples[0].encoded
        bytes[0] = 2
        #expect(throws: LockEventDecodingError(.unsupportedVersion, offset: 0)) { _ = try LockEvent(decoding: bytes) }
    }

    @Test(arguments: [
        (0, 1, UInt8(7)),     // unknown kind
        (0, 5, UInt8(0xFF)),  // a completed operation is never unknown
        (0, 2, UInt8(3)),     // lock state value Matter reserves (Unlatched) that we never use
        (0, 4, UInt8(6)),     // door state out of range
        (0, 5, UInt8(2)),     // operation type
        (0, 6, UInt8(11)),    // operation source
        (0, 7, UInt8(0x80)),  // a success carries no error code
        (0, 8, UInt8(0x0B)),  // reserved flag bit
        (3, 8, UInt8(0x05)),  // recovered without a decision
        (1, 9, UInt8(1)),     // who bytes without the who flag
        (1, 13, UInt8(1)),    // decision bytes without the decision flag
        (2, 7, UInt8(0x7F)),  // unknown operation error
        (4, 5, UInt8(0)),     // an alarm has no operation
        (4, 7, UInt8(2)),     // alarm code 2 is not assigned
        (4, 8, UInt8(1)),     // an alarm has no who
        (5, 7, UInt8(0)),     // door state change must equal the door state byte
        (6, 5, UInt8(3)),     // not a Matter DataOperationType
        (6, 7, UInt8(0)),     // a key change carries no code
        (6, 8, UInt8(0)),     // a key change always names its key
        (6, 13, UInt8(1)),    // and never a decision
        (8, 5, UInt8(1)),     // not an operating mode this lock has
        (8, 7, UInt8(2)),     // nor is the previous one
        (8, 8, UInt8(3)),     // a mode change has no decision
        (9, 9, UInt8(1)),     // who bytes without the who flag
        (8, 13, UInt8(1)),    // decision bytes
        (10, 5, UInt8(0)),    // a suspected relay is always about an unlock
        (10, 6, UInt8(1)),    // asked for remotely
        (10, 7, UInt8(3)),    // a reason this lock does not know
        (10, 8, UInt8(0)),    // and always names its key
    ])
    func invalidFieldsAreRejectedAtTheirOffset(sample: Int, offset: Int, value: UInt8) {
        var bytes = Self.samples[sample].encoded
        bytes[offset] = value
        #expect(throws: LockEventDecodingError(.invalidField, offset: offset)) { _ = try LockEvent(decoding: bytes) }
    }

    /// What `latchkey log` prints for them.
    @Test func summariesSayWhatHappenedInWords() {
        #expect(Self.samples[7].summary == "rejected: revoked key (key 3); operation unknown  [lock locked, door closed]")
        #expect(Self.samples[3].summary.hasPrefix("unlock over Bluetooth by key 1 refused: not permitted"))
        #expect(Self.samples[8].summary.hasPrefix("operating mode normal -> passage over Bluetooth by key 2"))
        #expect(Self.samples[9].summary.hasPrefix("operating mode passage -> normal by the lock itself (passage is not restored"))
        #expect(Self.samples[0].summary == "unlocked over Bluetooth by key 16909060  [lock unlocked, door closed]")
        #expect(Self.samples[10].summary.hasPrefix("arrival unlock over Bluetooth by key 4 refused as a suspected relay: command "
                                                   + "too late after its challenge (challenge→command 212.5 ms, interval 7.5 ms)"))
        // The way in is named, so a bridge's command never reads as a phone's.
        let bridged = LockEvent(kind: .lockOperation(LockOperationRecord(operation: .unlock, source: .proprietaryRemote,
                                                                         who: KeyID(9))),
                                time: Instant(nanoseconds: 0), lockStateBefore: .locked, lockStateAfter: .unlocked, doorState: .closed)
        #expect(bridged.summary == "unlocked through the MQTT bridge by key 9  [lock unlocked, door closed]")
        let button = LockEvent(kind: .lockOperation(LockOperationRecord(operation: .unlock, source: .button)),
                               time: Instant(nanoseconds: 0), lockStateBefore: .locked, lockStateAfter: .unlocked, doorState: .closed)
        #expect(button.summary == "unlocked by the inside button  [lock unlocked, door closed]")
        #expect(Self.samples[11].summary.contains("connection interval unknown (challenge→command 60.0 ms, interval unknown)"))
    }

    @Test func anySingleByteChangeDecodesCanonicallyOrNotAtAll() {
        for sample in Self.samples {
            let original = sample.encoded
            for offset in original.indices {
                for value in 0...UInt8.max where value != original[offset] {
                    var bytes = original
                    bytes[offset] = value
                    if let decoded = try? LockEvent(decoding: bytes) {
                        #expect(decoded.encoded == bytes, "byte \(offset) = \(value) decoded to a different encoding")
                    }
                }
            }
        }
    }
}
