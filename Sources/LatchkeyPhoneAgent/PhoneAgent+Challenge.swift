import LatchkeyCentral
import LatchkeyEvents
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeyTransport

/// The challenge read ahead (docs/ARCHITECTURE.md, "Link to unlock"): once a command is
/// answered and nothing else waits, the phone reads the next challenge, so that a command
/// that follows within the challenge's lifetime is one ATT round trip — its sealed write —
/// instead of three hops (read, answer, write). Nothing changes on the lock: the challenge
/// is its usual one, single-use, bound to this link, withdrawn by the next read, and dead
/// `lifetime` after the lock issued it. An arrival request never uses one: the lock's relay
/// bound counts from the challenge read (`ArrivalPolicy.challengeToCommandLimit`).
extension PhoneAgent {
    /// A challenge the lock issued on this link and nobody has used.
    struct HeldChallenge {
        var challenge: [UInt8]
        /// The phone's conservative end of it: from when the read was *sent* (the lock
        /// issued it later), less `heldChallengeMargin` for the write to cross the link.
        var usableUntil: Instant
    }

    /// What a held challenge keeps in hand for its write to reach the lock before the lock's
    /// lifetime ends: a second is tens of connection events at any interval the phone uses.
    static let heldChallengeMargin = Duration.seconds(1)

    /// Hands out the held challenge for `operation` (consumed: one command each), or nil when
    /// there is none, it is past its end, or the command is an arrival request.
    func takeHeldChallenge(for operation: LockOperation) -> [UInt8]? {
        guard let held = heldChallenge else { return nil }
        heldChallenge = nil
        guard operation != .arrivalUnlock else {
            // The lock times an arrival from its challenge's read: a held one would look like
            // a relay's delay. Dropped: the fresh read withdraws it on the lock too.
            return nil
        }
        guard loop.now < held.usableUntil else {
            emit(.phoneHeldChallengeExpired(op: .init(operation)))
            return nil
        }
        return held.challenge
    }

    /// Reads the next challenge while the link is idle: after a command's answer, once the
    /// status subscription (if due) is queued — or, after a command that moves the bolt, once
    /// the lock reports it at rest. A lock that dies right after accepting a command (during
    /// the movement, the likeliest moment) would lose the read, and the bearer, which takes
    /// one request at a time, would hold the next command until its timeout. Not while a read
    /// is under way, a challenge is held, or a command waits (its own read serves it).
    func readChallengeAhead(_ peripheral: Peripheral) {
        guard ready, commandsIdle, !readAheadAwaitsTheBolt, prefetchSentAt == nil, heldChallenge == nil,
              peripheral.state == .connected, let challenge else { return }
        prefetchSentAt = loop.now
        peripheral.readValue(for: challenge)
    }

    /// The lock reported the bolt at rest: the read ahead a moving command put off goes now.
    func readChallengeAheadOnceTheBoltRests(_ peripheral: Peripheral) {
        guard readAheadAwaitsTheBolt else { return }
        readAheadAwaitsTheBolt = false
        readChallengeAhead(peripheral)
    }

    /// The answer to `readChallengeAhead`'s read. A command asked for meanwhile goes now.
    func challengeReadAhead(_ peripheral: Peripheral, value: [UInt8]?, error: BluetoothError?) {
        guard let sentAt = prefetchSentAt else { return }
        prefetchSentAt = nil
        if let error {
            // The next command reads its own; a stale cache shows there too and is dealt with then.
            emit(.phoneChallengeAheadFailed(error: "\(error)"))
        } else if let grant = try? ChallengeGrant(decoding: value ?? []) {
            let lifetime = Duration.milliseconds(Int64(grant.lifetimeMilliseconds))
            if lifetime > Self.heldChallengeMargin {
                heldChallenge = HeldChallenge(challenge: grant.challenge,
                                              usableUntil: sentAt + lifetime - Self.heldChallengeMargin)
            } else {
                emit(.phoneChallengeAheadFailed(error: "lifetime \(grant.lifetimeMilliseconds) ms too short to hold"))
            }
        } else {
            emit(.phoneChallengeAheadFailed(error: "bad challenge"))
        }
        sendAfterReadAhead()
        linkWentIdle()
    }

    /// The link changed (a new one, lost, its setup again): nothing read ahead on it stands.
    func forgetChallengeAhead() {
        heldChallenge = nil
        prefetchSentAt = nil
        readAheadAwaitsTheBolt = false
    }
}
