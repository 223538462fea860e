import LatchkeyEvents
@testable import LatchkeyPhoneAgent
import LatchkeyTransport
import Testing

/// The connect request's wish alone, attacked: a device posing as the lock says "revoked key";
/// the phone stops asking, but never for good — its owner's command asks again, the automatic
/// ones do not.
struct ConnectionRequestTests {
    static let configuration = PhoneAgentConfiguration(lockAddress: BluetoothAddress(0xA1), keyID: 1,
                                                       secret: Array(repeating: 1, count: 32))

    @Test func aRevokedKeyStopsTheAutomaticRequestsOnlyTheOwnerAsksAgain() {
        let rig = PhoneComponentRig()
        let request = ConnectionRequest(configuration: Self.configuration, events: rig.output)
        #expect(request.isWanted && !request.isRevoked)
        #expect(request.lockSaidOurKeyIsRevoked())
        #expect(!request.lockSaidOurKeyIsRevoked(), "said once")
        #expect(!request.isWanted && request.isRevoked)
        #expect(!request.askAgainIfTheOwnerAsks(.present) && !request.askAgainIfTheOwnerAsks(.arrivalUnlock))
        #expect(request.askAgainIfTheOwnerAsks(.unlock) && request.isWanted)
        #expect(!request.askAgainIfTheOwnerAsks(.unlock), "nothing to lift")
        #expect(rig.names() == [EventKind.phoneKeyRevoked.name, EventKind.phoneAskingAgain.name])
        #expect(rig.sink.events.first?.field("lock") == "\(BluetoothAddress(0xA1))")
    }

    @Test func aStopIsFinalForThisRun() {
        let rig = PhoneComponentRig()
        let request = ConnectionRequest(configuration: Self.configuration, events: rig.output)
        request.stop()
        _ = request.askAgainIfTheOwnerAsks(.unlock)
        #expect(!request.isWanted && rig.names().isEmpty)
    }
}
