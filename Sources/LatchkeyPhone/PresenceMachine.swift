/// Where the phone believes its owner is, relative to the door.
public enum Presence: String, Sendable, Codable, CaseIterable {
    /// Just started, no evidence yet: neither unlock nor lock follows from this state.
    case unknown
    case home
    /// The link dropped; waiting out the grace period before calling it a departure.
    case leaving
    case away
    /// Linked again after being away, with no arrival intent: a re-link alone asks nothing
    /// (a relay can make one). An intent now sends the cycle's request; after the nearby
    /// limit the owner counts as home and the cycle is over without one.
    case nearby
    /// Back after being away, inside an intent window; the arrival request is in flight.
    case arriving
}

/// The phone's away→home logic as a pure state machine: an input in, actions out. Each rule
/// guards against unlocking by accident or for a relay: a flap is not a trip; a re-link alone
/// never asks (only an open arrival intent, after the owner was away); one request per
/// away→home cycle, spent once sent (a "busy" refusal is asked once more); a link counts as
/// the lock's only once a reply sealed to its session opened; `nearby` ages into home; at start
/// with no history a link means nothing. The rules and their attacks: docs/SECURITY.md,
/// "Arrival unlock". The lock applies its own filters; this machine only decides whether to ask.
public struct PresenceMachine: Sendable, Equatable, Codable {
    public private(set) var presence: Presence = .unknown
    /// Away→home cycles begun so far. Bumped on each departure; the arrival request names it.
    public private(set) var cycle: UInt64 = 0
    /// The last cycle whose arrival request was sent (persisted before it leaves).
    public private(set) var spentCycle: UInt64 = 0
    /// This arrival's request met a moving bolt and is being (or was) asked again. Not
    /// persisted: a phone that dies meanwhile resumes as away with the cycle spent.
    public private(set) var arrivalRetried = false
    /// An arrival intent's window is open (the caller times it). Not persisted: a phone
    /// that restarts needs a new intent — the cautious reading.
    public private(set) var intentOpen = false
    /// The cycle whose nearby clock was started (persisted; nil: none yet).
    public private(set) var nearbyCycle: UInt64?

    // "answeredCycle": the name earlier versions saved the spent cycle under.
    private enum CodingKeys: String, CodingKey { case presence, cycle, spentCycle = "answeredCycle", nearbyCycle }

    public enum Input: Sendable, Equatable {
        /// A link to the lock's address formed: not yet proof that the lock is on it.
        case linkUp
        /// A reply sealed to this link's session opened: the lock holding our key is on it.
        case linkVerified
        /// The nearby clock started for `cycle` ran out.
        case nearbyExpired(cycle: UInt64)
        case linkDown
        case graceExpired
        /// An arrival intent from outside Bluetooth (control socket `arriving`, a hook).
        case arrivalIntent
        /// The intent's window ran out unused.
        case intentExpired
        /// The lock answered the arrival request for `cycle` (granted or refused).
        case arrivalAnswered(cycle: UInt64, granted: Bool)
        /// The arrival request could not be completed (link lost or no answer in time).
        case arrivalNotDelivered
        /// The lock refused the arrival request for `cycle` as busy: its bolt was moving.
        case arrivalBusy(cycle: UInt64)
    }

    public enum Action: Sendable, Equatable {
        case startGraceTimer
        case cancelGraceTimer
        /// Time the intent's window; feed `intentExpired` when it ends.
        case openIntentWindow
        /// The intent was spent (or is moot): stop timing its window.
        case closeIntentWindow
        case requestArrivalUnlock(cycle: UInt64)
        /// Ask again for `cycle` once the lock's movement has ended (the caller waits for it,
        /// bounded); the next answer counts as the cycle's.
        case retryArrivalUnlockAfterMovement(cycle: UInt64)
        /// The state changed; write it down before acting on anything that follows.
        case persist
        /// Time the nearby limit; feed `nearbyExpired(cycle:)` when it ends (a link lost
        /// meanwhile does not stop it).
        case startNearbyClock(cycle: UInt64)
        /// The nearby limit ran out: the owner is home and this cycle asks nothing any more.
        case returnedWithoutAsking(cycle: UInt64)
        case departed(cycle: UInt64)
        case arrived(cycle: UInt64, unlocked: Bool)
    }

    public init() {}

    /// Starts from a persisted state. A phone that died while leaving, nearby or arriving
    /// resumes as away when the link is down (the grace had begun) — the cautious reading;
    /// a cycle whose request was sent stays spent.
    public init(restoring saved: PresenceMachine) {
        self = saved
        if [.arriving, .leaving, .nearby].contains(presence) { presence = .away }
        // A nearby clock that was running cannot be trusted across the restart: run out.
        if nearbyCycle == cycle && spentCycle < cycle { spentCycle = cycle }
        intentOpen = false
        arrivalRetried = false
    }

    public mutating func handle(_ input: Input) -> [Action] {
        switch (presence, input) {
        case (.away, .linkUp):
            // Unverified, but an open intent's request goes at once: only the lock can act on it.
            guard spentCycle < cycle, intentOpen else { return [] }
            return ask()
        case (_, .linkUp):
            return []
        case (.unknown, .linkVerified):
            presence = .home
            return [.persist]
        case (.unknown, .linkDown), (.home, .linkDown), (.arriving, .linkDown):
            presence = .leaving
            return [.persist, .startGraceTimer]
        case (.leaving, .linkVerified):
            presence = .home
            return [.cancelGraceTimer, .persist]
        case (.leaving, .graceExpired):
            presence = .away
            cycle += 1
            return [.persist, .departed(cycle: cycle)]
        case (.away, .linkVerified):
            guard spentCycle < cycle else {
                presence = .home
                return [.persist]
            }
            guard intentOpen else {
                presence = .nearby
                guard nearbyCycle != cycle else { return [.persist] }  // its clock runs already
                nearbyCycle = cycle
                return [.persist, .startNearbyClock(cycle: cycle)]
            }
            return ask()
        case (_, .nearbyExpired(let c)):
            guard c == cycle, nearbyCycle == cycle, spentCycle < cycle, presence != .arriving else { return [] }
            spentCycle = cycle
            intentOpen = false
            if presence == .nearby { presence = .home }
            return [.persist, .closeIntentWindow, .returnedWithoutAsking(cycle: c)]
        case (.nearby, .linkDown):
            presence = .away
            return [.persist]
        case (.nearby, .arrivalIntent):
            return ask()
        case (.away, .arrivalIntent), (.leaving, .arrivalIntent):
            guard !intentOpen else { return [] }  // one window at a time; it allows one request
            intentOpen = true
            return [.openIntentWindow]
        case (_, .intentExpired):
            intentOpen = false
            return []
        case (.arriving, .arrivalAnswered(let c, let granted)) where c == cycle:
            return answered(c, granted: granted)
        case (.arriving, .arrivalBusy(let c)) where c == cycle:
            guard !arrivalRetried else { return answered(c, granted: false) }
            arrivalRetried = true
            return [.retryArrivalUnlockAfterMovement(cycle: c)]
        case (.arriving, .arrivalNotDelivered):
            // Sent, maybe seen, never answered: spent all the same (a relay that drops the
            // link before the answer gets no second try).
            return answered(cycle, granted: false)
        // Everything else changes nothing: repeated edges, stale timers, late answers, an
        // intent while home.
        case (.unknown, _), (.home, _), (.leaving, _), (.away, _), (.nearby, _), (.arriving, _):
            return []
        }
    }

    /// The intent is spent on this cycle's one request; the cycle is spent before it leaves.
    private mutating func ask() -> [Action] {
        intentOpen = false
        spentCycle = cycle
        presence = .arriving
        arrivalRetried = false
        return [.persist, .closeIntentWindow, .requestArrivalUnlock(cycle: cycle)]
    }

    /// The lock answered this cycle's request (or it was lost): the owner is home.
    private mutating func answered(_ c: UInt64, granted: Bool) -> [Action] {
        presence = .home
        return [.persist, .arrived(cycle: c, unlocked: granted)]
    }
}
