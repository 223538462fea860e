import LatchkeyEvents
import LatchkeyManagers
import LatchkeyPeripheral
import LatchkeySecurity

/// Sessions that outlive the lock agent (docs/RESTORATION.md, "Links that outlive the
/// agent"): each link's session is kept with the link (`Central.keepLinkState`: on the
/// kernel, a memfd in systemd's descriptor store beside the socket), its sequence before
/// each reply is sealed; a relaunched lock that adopts the link seals to its phone again
/// without a new command. Nothing but what the lock itself kept is restored, and only under
/// a key it still holds and has not revoked.
extension LockAgent {
    /// Keeps `session` with its link, allowing replies up to `sequence`. False when that
    /// failed (said as `lock.session_not_kept`): the reply must not be sealed, or a
    /// relaunch could seal again under a sequence already used (a reused nonce).
    func keep(_ session: LinkSession, sealingThrough sequence: UInt32, on central: Central) -> Bool {
        do {
            _ = try central.keepLinkState(session.kept(sealingThrough: sequence))  // false: the link dies with us
            return true
        } catch {
            emit(.lockSessionNotKept(central: "\(central.identifier)", key: session.keyID, error: "\(error)"))
            return false
        }
    }

    /// After a relaunch: the sessions kept with the links that survived. What cannot be
    /// restored is said (`lock.session_not_restored`) and the link goes on without a session
    /// (a bound phone's next command opens one; an unbound link has until the
    /// unauthenticated-link timeout to prove a key).
    func restoreSessions(for centrals: [Central]) {
        for central in centrals {
            guard let kept = central.keptLinkState else { continue }
            do {
                let keyID = try LinkSession.keyID(ofKept: kept)
                guard verifier.authority.isCurrent(keyID: keyID) == true, let key = verifier.keys.key(id: keyID) else {
                    notRestored(central, because: "key \(keyID) is no longer held, or revoked")
                    continue
                }
                let session = try LinkSession(kept: kept, secret: key.secret)
                sessions[central.linkID] = session
                emit(.lockSessionRestored(central: "\(central.identifier)", key: keyID,
                                          sequence: session.sequence))
            } catch {
                notRestored(central, because: "the kept session is \(error)")
            }
        }
    }

    private func notRestored(_ central: Central, because why: String) {
        emit(.lockSessionNotRestored(central: "\(central.identifier)", reason: why))
    }
}
