import LatchkeyEvents
@testable import LatchkeyPhoneAgent
import LatchkeyTransport
import Testing

/// The connect request's wish alone, attacked: a device posing as the lock says "revoked key";
/// the phone stops asking, but never for good — its owner's command asks again, the automatic
/// ones do not. And its back-off while the phone's store refuses writes, on a manual clock.
struct ConnectionRequestTests {
    static let configuration = PhoneAgentConfiguration(lockAddress: BluetoothAddress(0xA1), keyID: 1,
                                                       secret: Array(repeating: 1, count: 32))

    @Test func aRevokedKeyStopsTheAutomaticRequestsOnlyTheOwnerAsksAgain() {
        let rig = PhoneComponentRig()
        let request = ConnectionRequest(configuration: Self.configuration, events: rig.output) {}
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
        let request = ConnectionRequest(configuration: Self.configuration, events: rig.output) {}
        request.stop()
        _ = request.askAgainIfTheOwnerAsks(.unlock)
        #expect(!request.isWanted && rig.names().isEmpty)
    }

    @Test func whileTheStoreRefusesEachStepWaitsTwiceAsLongToTheLimitAndASaveEndsIt() {
        let rig = PhoneComponentRig()
        var retries: [Duration] = []
        let start = rig.loop.now
        var request: ConnectionRequest!
        request = ConnectionRequest(configuration: Self.configuration, events: rig.output) {
            retries.append(rig.loop.now - start)
            _ = request.next(storeRefusing: true)  // the save at the step's end failed again
        }
        #expect(request.next(storeRefusing: false) == .connect && !request.isBackingOff)
        #expect(request.next(storeRefusing: true) == .backingOff(.seconds(5)) && request.isBackingOff)
        #expect(request.next(storeRefusing: true) == .backingOff(.seconds(5)), "a request during a step waits for it")
        rig.loop.advance(by: .seconds(20 * 60))
        // 5, 10, 20, 40, 80, 160, then 300 s each: the step's end, counted from the first request.
        #expect(retries == [5, 15, 35, 75, 155, 315, 615, 915].map { Duration.seconds($0) })
        #expect(request.next(storeRefusing: false) == .connect && !request.isBackingOff, "a save that worked ends it")
        rig.loop.advance(by: .seconds(600))
        #expect(retries.count == 8, "no step runs after it")
        #expect(request.next(storeRefusing: true) == .backingOff(.seconds(5)), "a new spell starts from the first step")
        request.stop()
        #expect(request.next(storeRefusing: true) == .notWanted && !request.isBackingOff)
        rig.loop.advance(by: .seconds(600))
        #expect(retries.count == 8 && rig.names().isEmpty, "the back-off is said by the store's keeper, once a spell")
    }
}
