import LatchkeyEvents
import LatchkeyLock
@testable import LatchkeyLockAgent
import LatchkeyLockProtocol
@testable import LatchkeySecurity
import LatchkeySim
import LatchkeyTransport
import Testing

/// `AuditTrail` on its own: what goes into the audit log for each refusal, what is paced.
@Suite struct AuditTrailTests {
    let loop = ManualEventLoop()
    private let filed = Filed()
    let trail: AuditTrail

    init() {
        let filed = filed
        trail = AuditTrail(loop: loop, emit: { filed.events.append($0.name) }, logSecurity: { filed.log.append($0) })
    }

    func failure(key: UInt32?, counted: Bool = false, revoked: Bool = false, dropLink: Bool = false,
                 engaged: [LockoutEngagement] = []) -> CommandFailure {
        var f = CommandFailure(rejection: revoked ? .unknownKey : .authenticationFailed, keyID: key, revoked: revoked,
                               operation: .unlock, engaged: engaged, counted: counted, session: nil)
        f.dropLink = dropLink
        return f
    }

    @Test func aCountedFailureIsLoggedWithItsKeyAndItsLockout() {
        let lockout = LockoutEngagement(principal: .key(2), level: 1, duration: .seconds(60))
        trail.audit(failure(key: 2, counted: true, engaged: [lockout]))
        #expect(filed.log.count == 2)
        guard case .lockOperationError(let record, let error) = filed.log.first else {
            Issue.record("\(filed.log)"); return
        }
        #expect(record.who == KeyID(2) && record.source == .remote && record.operation == .unlock)
        #expect(error == .invalidCredential)
        #expect(filed.log.last.map { if case .doorLockAlarm(.wrongCodeEntryLimit) = $0 { true } else { false } } == true)
        #expect(filed.events == [EventKind.lockLockout.name])
    }

    @Test func aStrangersFrameThatDropsNoLinkIsNotLogged() {
        trail.audit(failure(key: nil))
        #expect(filed.log.isEmpty)
    }

    @Test func strangersArePacedAndWhatIsLeftOutIsSaid() {
        trail.audit(failure(key: nil, dropLink: true))
        trail.audit(failure(key: nil, dropLink: true))
        trail.audit(failure(key: nil, dropLink: true))
        #expect(filed.log.count == 1)
        #expect(filed.events == [EventKind.lockAuditPaced.name, EventKind.lockAuditPaced.name])
        loop.advance(by: RefusalAuditPacer.spacing)
        trail.audit(failure(key: nil, dropLink: true))
        #expect(filed.log.count == 2, "one more entry after the spacing, saying how many were left out")
        #expect(filed.events.count == 3)
    }

    @Test func aRevokedKeyIsLoggedAsDeniedAndPacedOnItsOwn() {
        trail.audit(failure(key: 3, revoked: true))
        trail.audit(failure(key: 4, revoked: true))
        trail.audit(failure(key: 3, revoked: true))
        #expect(filed.log.count == 2)
        guard case .lockOperationError(_, let error) = filed.log.first else { Issue.record("\(filed.log)"); return }
        #expect(error == .disabledUserDenied)
    }

    @Test func aBridgesDenialIsFiledAsAProprietaryRemotesAndALockoutIsNot() {
        trail.audit(Denial(reason: .notPermitted, keyID: 9, operation: .unlock, entry: .bridge, counted: false, engaged: []))
        guard case .lockOperationError(let record, let error) = filed.log.first else { Issue.record("\(filed.log)"); return }
        #expect(record.source == .proprietaryRemote && error == .restricted)
        trail.audit(Denial(reason: .lockedOut(.key(9)), keyID: 9, operation: .unlock, entry: .bridge, counted: false,
                           engaged: []))
        #expect(filed.log.count == 1)
    }

    @Test func aWrongCodeIsAnInvalidCredentialAndItsLockoutAnAlarm() {
        trail.wrongCode(keyID: 9, engaged: LockoutEngagement(principal: .key(9), level: 1, duration: .seconds(60)))
        #expect(filed.events == [EventKind.lockBridgeWrongCode.name, EventKind.lockLockout.name])
        #expect(filed.log.count == 2)
    }
}

private final class Filed {
    var events: [String] = []
    var log: [LockEvent.Kind] = []
}
