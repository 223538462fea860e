import LatchkeyAgents
import LatchkeyEvents
import LatchkeyLock
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeyPeripheral
import LatchkeySecurity
import LatchkeyTransport

// The lock agent's security duties besides verifying commands (docs/SECURITY.md): pairing
// (`PairingDesk`) and the advertising it changes; the audit trail of refusals: `AuditTrail`.
extension LockAgent {
    /// An event about the lock's security that moves nothing: the states are as they are.
    func securityEvent(_ kind: LockEvent.Kind) -> LockEvent {
        LockEvent(kind: kind, time: loop.now, lockStateBefore: controller.lockState,
                  lockStateAfter: controller.lockState, doorState: controller.doorState)
    }

    // MARK: Pairing

    /// Opens a pairing window on the lock's side (docs/LOCK-RULES.md rule 3); false when this
    /// lock has no pairing set up or a window is open already. `asked` hears of the phone
    /// whose key waits for the owner's confirmation (its code); `done` of the end. The new
    /// key, if any, is logged as a LockUserChange(add), and a key the owner did not confirm as
    /// a LockOperationError(pairingNotConfirmed), before `done` hears of it (`PairingDesk`).
    @discardableResult
    public func openPairingWindow(for duration: Duration, offer: PairingOffer,
                                  asked: @escaping (PendingPairing) -> Void = { _ in },
                                  done: @escaping (PairingOutcome) -> Void) -> Bool {
        pairingDesk.open(for: duration, offer: offer, asked: asked, done: done)
    }

    /// The owner's answer to the pending pairing (`latchkey pair`): the code the phone shows.
    /// Nil when no key is pending.
    @discardableResult
    public func confirmPairing(code: String) -> PairingOutcome? { pairingDesk.confirm(code: code) }

    /// The owner said the codes differ; nil when no key is pending.
    @discardableResult
    public func rejectPairing() -> PairingOutcome? { pairingDesk.reject() }

    public func closePairingWindow() { pairingDesk.close() }

    public var lockFingerprint: String? { pairingDesk.fingerprint }

    /// Pairing writes seen, refused and not enrolled since the agent started (`status`).
    public var pairingCounts: PairingCounts { pairingDesk.counts }

    func pairingRequest(_ bytes: [UInt8], from central: Central) -> CommandRejection? {
        switch pairingDesk.request(bytes, on: central.linkID, from: central.identifier) {
        case .failure(let why):
            return why
        case .success(let key):
            // Its key waits for the owner's word: the link may stay that long, and the phone
            // opens a session once its key is enrolled; if it is not, it is timed as a stranger's.
            links.pairingWaits(on: central, key: key,
                               within: PairingResponder.confirmationTimeout + configuration.unauthenticatedLinkTimeout)
            return nil
        }
    }
}
