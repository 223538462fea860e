import LatchkeySecurity

// The lock agent's security duties besides verifying commands (docs/SECURITY.md): pairing
// (`PairingDesk`) and the advertising it changes; the audit trail of refusals: `AuditTrail`.
extension LockAgent {
    /// Opens a pairing window on the lock's side (docs/LOCK-RULES.md rule 3); false when this
    /// lock has no pairing set up or a window is open already. `asked` hears of the phone
    /// whose key waits for the owner's confirmation (its code); `done` of the end. The new
    /// key, if any, is logged as a LockUserChange(add), and a key the owner did not confirm as
    /// a LockOperationError(pairingNotConfirmed), before `done` hears of it (`PairingDesk`).
    @discardableResult
    public func openPairingWindow(for duration: Duration, offer: PairingOffer,
                                  asked: @escaping (PendingPairing) -> Void = { _ in },
                                  done: @escaping (PairingOutcome) -> Void) -> Bool {
        parts.pairingDesk.open(for: duration, offer: offer, asked: asked, done: done)
    }

    /// The owner's answer to the pending pairing (`latchkey pair`): the code the phone shows.
    /// Nil when no key is pending.
    @discardableResult
    public func confirmPairing(code: String) -> PairingOutcome? { parts.pairingDesk.confirm(code: code) }

    /// The owner said the codes differ; nil when no key is pending.
    @discardableResult
    public func rejectPairing() -> PairingOutcome? { parts.pairingDesk.reject() }

    public func closePairingWindow() { parts.pairingDesk.close() }

    public var lockFingerprint: String? { parts.pairingDesk.fingerprint }

    /// Pairing writes seen, refused and not enrolled since the agent started (`status`).
    public var pairingCounts: PairingCounts { parts.pairingDesk.counts }
}
