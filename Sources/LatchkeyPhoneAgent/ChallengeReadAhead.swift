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
/// This component keeps the read's state; the coordinator reads when it says a read may go.
final class ChallengeReadAhead {
    /// A challenge the lock issued on this link and nobody has used.
    private struct HeldChallenge {
        var challenge: [UInt8]
        /// The phone's conservative end of it: from when the read was *sent* (the lock
        /// issued it later), less `heldChallengeMargin` for the write to cross the link.
        var usableUntil: Instant
    }

    /// What a held challenge keeps in hand for its write to reach the lock before the lock's
    /// lifetime ends: a second is tens of connection events at any interval the phone uses.
    static let heldChallengeMargin = Duration.seconds(1)

    private let events: PhoneEventOutput
    private var loop: any EventLoop { events.loop }
    private var heldChallenge: HeldChallenge?
    /// When the read under way went.
    private var prefetchSentAt: Instant?
    /// A command that moves the bolt was accepted: the read waits for the lock's report at rest.
    private var readAheadAwaitsTheBolt = false

    init(events: PhoneEventOutput) {
        self.events = events
    }

    /// A read ahead is under way.
    var isReading: Bool { prefetchSentAt != nil }

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

    /// Whether the read may go now, on an idle link (the coordinator's to judge): not while a
    /// read is under way, a challenge is held, or the bolt's report is awaited. True: the read
    /// counts as sent now, and the coordinator sends it.
    func beginRead() -> Bool {
        guard !readAheadAwaitsTheBolt, prefetchSentAt == nil, heldChallenge == nil else { return false }
        prefetchSentAt = loop.now
        return true
    }

    /// A command that moves the bolt was accepted: no read until the lock reports it at rest.
    /// A lock that dies right after accepting a command (during the movement, the likeliest
    /// moment) would lose the read, and the bearer, which takes one request at a time, would
    /// hold the next command until its timeout.
    func awaitTheBolt() {
        readAheadAwaitsTheBolt = true
    }

    /// The lock reported the bolt at rest; true when a read was put off for it (it may go now).
    func boltRested() -> Bool {
        guard readAheadAwaitsTheBolt else { return false }
        readAheadAwaitsTheBolt = false
        return true
    }

    /// The answer to the read `beginRead` let go.
    func answered(value: [UInt8]?, error: BluetoothError?) {
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
    }

    /// The link changed (a new one, lost, its setup again): nothing read ahead on it stands.
    func forgetChallengeAhead() {
        heldChallenge = nil
        prefetchSentAt = nil
        readAheadAwaitsTheBolt = false
    }

    private func emit(_ event: Event) { events.emit(event) }
}
