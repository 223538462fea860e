import LatchkeyEvents
import LatchkeyLock
import LatchkeyLockProtocol
import LatchkeySecurity
import LatchkeyTransport

/// The lock's side of pairing (docs/LOCK-RULES.md rule 3): the window the owner opens, the
/// phone's request on its link, the owner's confirmation, and what each end leaves in the
/// audit log. The key agreement and what may be enrolled are `PairingResponder`'s; this
/// decides what is said and logged about it, and tells the coordinator when the advertising
/// (the pairing beacon) or a link's time must change.
final class PairingDesk {
    /// Nil when this lock was started without pairing (every pairing write is refused).
    private let responder: PairingResponder?
    private let emit: (Event) -> Void
    /// Files a security event (one that moves nothing) in the audit log.
    private let logSecurity: (LockEvent.Kind) -> Void
    /// The beacon comes or goes: advertise again.
    private let advertise: () -> Void
    /// The key a link asked for was not enrolled: that link is a stranger's again.
    private let notEnrolled: (UInt32) -> Void

    init(responder: PairingResponder?, emit: @escaping (Event) -> Void, logSecurity: @escaping (LockEvent.Kind) -> Void,
         advertise: @escaping () -> Void, notEnrolled: @escaping (UInt32) -> Void) {
        self.responder = responder
        self.emit = emit
        self.logSecurity = logSecurity
        self.advertise = advertise
        self.notEnrolled = notEnrolled
    }

    /// Opens a window; false without pairing or with a window open already. The new key, if
    /// any, is logged as a LockUserChange(add), and a key the owner did not confirm as a
    /// LockOperationError(pairingNotConfirmed), before `done` hears of it.
    func open(for duration: Duration, offer: PairingOffer, asked: @escaping (PendingPairing) -> Void,
              done: @escaping (PairingOutcome) -> Void) -> Bool {
        guard let pairing = responder else { return false }
        let opened = pairing.open(for: duration, offer: offer, asked: { [weak self] pending in
            self?.emit(.lockPairingPending(key: pending.key.id, name: PairingName.escaped(pending.key.name),
                                           code: pending.comparisonCode))
            self?.advertise()
            asked(pending)
        }, done: { [weak self] outcome in
            if let self {
                ended(outcome)
                advertise()
            }
            done(outcome)
        })
        if opened {
            emit(.lockPairingOpen(seconds: duration, role: .init(offer.role),
                                  fingerprint: pairing.identity.fingerprint))
            advertise()
        }
        return opened
    }

    private func ended(_ outcome: PairingOutcome) {
        switch outcome {
        case .paired(let key, let code):
            logSecurity(.lockUserChange(KeyChangeRecord(.add, source: .remote, key: KeyID(key.id))))
            emit(.lockKeyPaired(key: key.id, name: PairingName.escaped(key.name), role: .init(key.role),
                                arrival: key.mayRequestArrivalUnlock, code: code))
        case .notEnrolled(let pending, let reason):
            // The link that asked holds no key after all: a stranger's again, timed like one.
            notEnrolled(pending.key.id)
            // The key never existed for the verifier; the attempt is in the audit log all the same.
            let record = LockOperationRecord(operation: nil, source: .remote, who: KeyID(pending.key.id))
            logSecurity(.lockOperationError(record, .pairingNotConfirmed))
            emit(.lockPairingNotEnrolled(key: pending.key.id, name: PairingName.escaped(pending.key.name),
                                         reason: .init(reason)))
        case .closedUnused:
            emit(.lockPairingClosed)
        }
    }

    func confirm(code: String) -> PairingOutcome? { responder?.confirm(code: code) }
    func reject() -> PairingOutcome? { responder?.reject() }
    func close() { responder?.close() }
    var fingerprint: String? { responder?.identity.fingerprint }
    var counts: PairingCounts { responder?.counts ?? PairingCounts() }

    /// The pairing beacon for the scan response while a window takes a request; nil otherwise.
    var beacon: AdvertisingData? {
        guard let pairing = responder, pairing.isOpen, pairing.pending == nil else { return nil }
        let octets = PairingKeyAgreement.fingerprintOctets(of: pairing.identity.publicKey)
        return AdvertisingData(flags: nil, manufacturerData: PairingBeacon(fingerprint: octets).manufacturerData)
    }

    /// A phone's pairing write on `link` (from `address`): the key that now waits for the
    /// owner's word, or why the request was refused.
    func request(_ bytes: [UInt8], on link: LinkID, from address: BluetoothAddress) -> Result<UInt32, CommandRejection> {
        guard let pairing = responder else { return .failure(.pairingClosed) }
        switch pairing.handleRequest(bytes, on: link) {
        case .failure(let why):
            emit(.lockPairingRefused(central: "\(address)", reason: "\(why)",
                                     refusedTotal: pairing.counts.refused))
            return .failure(why)
        case .success(let pending):
            return .success(pending.key.id)
        }
    }

    /// The lock's answer to `link`'s request; nil without one (or without pairing).
    func response(for link: LinkID) -> [UInt8]? { responder?.response(for: link) }

    func forget(_ link: LinkID) { responder?.forget(link) }
}
