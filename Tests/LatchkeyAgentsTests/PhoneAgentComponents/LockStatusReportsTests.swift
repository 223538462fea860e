import LatchkeyEvents
import LatchkeyLockProtocol
@testable import LatchkeyPhoneAgent
import Testing

/// The lock's status reports alone: each kept, a decodable one said and handed back, one the
/// phone cannot decode kept raw and acted on by nobody.
struct LockStatusReportsTests {
    @Test func aDecodableStatusIsSaidAndHandedBack() throws {
        let rig = PhoneComponentRig()
        let reports = LockStatusReports(events: rig.output)
        #expect(reports.last == nil)
        let frame = LockStatusFrame(lockState: 1, doorState: 1, operatingMode: 0, actuatorEnabled: true,
                                    lastEventSequence: 7)
        #expect(reports.received(frame.bytes) == frame)
        #expect(reports.last == frame.bytes)
        let said = try #require(rig.sink.events.last)
        #expect(said.name == EventKind.phoneLockStatus.name && said.field("lock_state") == "1")
    }

    @Test func anUndecodableStatusIsKeptRawAndNotSaid() {
        let rig = PhoneComponentRig()
        let reports = LockStatusReports(events: rig.output)
        #expect(reports.received([0xFF, 1]) == nil)
        #expect(reports.last == [0xFF, 1] && rig.names().isEmpty)
    }
}
