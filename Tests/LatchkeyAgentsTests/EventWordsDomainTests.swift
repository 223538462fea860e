import LatchkeyAgents
import LatchkeyCentral
import LatchkeyEvents
import LatchkeyLock
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeyPhone
import LatchkeyPhoneAgent
import LatchkeySecurity
import Testing

/// The catalogue's word for each case of a domain enum is the text the agents printed for that
/// case before the fields were typed (`"\(state)"`, `role.rawValue`, ...): users' filters keep
/// matching. A new domain case fails to compile in the mapping; this checks its word.
struct EventWordsDomainTests {
    @Test func lockVocabularyPrintsAsItsCaseNames() {
        for state in LockState.allCases { #expect(Event.LockState(state).eventText == "\(state)") }
        for state in DoorState.allCases { #expect(Event.DoorState(state).eventText == "\(state)") }
        for mode in OperatingMode.allCases { #expect(Event.OperatingMode(mode).eventText == "\(mode)") }
        for operation in LockOperationType.allCases { #expect(Event.Operation(operation).eventText == "\(operation)") }
    }

    @Test func aCommandsOperationPrintsAsTheProtocolNamesIt() {
        for operation in LockOperation.allCases { #expect(Event.Operation(operation).eventText == "\(operation)") }
        #expect(Event.Operation(LockOperation.arrivalUnlock).eventText == "arrival-unlock")
        for rejection in CommandRejection.allCases {
            #expect(Event.CommandRejection(rejection).eventText == "\(rejection)")
        }
    }

    @Test func rawValuedEnumsPrintTheirRawValues() {
        let notEnrolled: [NotEnrolledReason] = [.codeMismatch, .refusedByOwner, .timedOut, .storageFailure]
        for reason in notEnrolled { #expect(Event.NotEnrolledReason(reason).eventText == reason.rawValue) }
        let arrival: [ArrivalPolicy.Refusal] = [.doorOpen, .noRemoteMode, .recentManualUnlock, .recentOtherArrival,
                                                .noDepartureSeen, .returnedLongAgo, .suspectedRelay]
        for refusal in arrival { #expect(Event.ArrivalRefusal(refusal).eventText == refusal.rawValue) }
        for role in KeyRole.allCases { #expect(Event.KeyRole(role).eventText == role.rawValue) }
        for presence in Presence.allCases { #expect(Event.Presence(presence).eventText == presence.rawValue) }
        let radio: [ManagerState] = [.unknown, .resetting, .unsupported, .unauthorized, .poweredOff, .poweredOn]
        for state in radio { #expect(Event.RadioState(state).eventText == state.rawValue) }
        let link: [Peripheral.State] = [.disconnected, .connecting, .connected, .disconnecting]
        for state in link { #expect(Event.LinkState(state).eventText == state.rawValue) }
    }
}
