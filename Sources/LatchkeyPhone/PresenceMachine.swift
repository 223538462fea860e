/// Where the phone believes its owner is, relative to the door.
public enum Presence: String, Sendable, Codable, CaseIterable {
    /// Just started, no evidence yet: neither unlock nor lock follows from this state.
    case unknown
    case home
    /// The link dropped; waiting out the grace period before calling it a departure.
    case leaving
    case away
    /// Back in range after being away; the arrival request for this cycle is in flight.
    case arriving
}

/// The phone's away→home logic (M8) as a pure state machine: an input in, actions out.
///
/// Rules, each one a guard against unlocking by accident:
/// - a link that drops and comes back within the grace period is a flap, not a trip;
/// - only a link that re-forms after the owner was **away** leads to an arrival request;
/// - one arrival request per away→home cycle: once the lock has answered it (yes or no),
///   the cycle is spent, and nothing is sent again until the owner has been away again —
///   except that a request which met a moving bolt ("busy": nothing was decided) is asked
///   once more after the movement, and the answer to that one spends the cycle;
/// - at start with no history, a link means nothing (we cannot know we were away).
/// The lock still applies its own filters; this machine only decides whether to ask.
public struct PresenceMachine: Sendable, Equatable, Codable {
    public private(set) var presence: Presence = .unknown
    /// Away→home cycles begun so far. Bumped on each departure; the arrival request names it.
    public private(set) var cycle: UInt64 = 0
    /// The cycle whose arrival request the lock has answered.
    public private(set) var answeredCycle: UInt64 = 0
    /// This arrival's request met a moving bolt and is being (or was) asked again. Not
    /// persisted: a phone that dies meanwhile resumes as away and its next link asks afresh.
    public private(set) var arrivalRetried = false

    private enum CodingKeys: String, CodingKey { case presence, cycle, answeredCycle }

    public enum Input: Sendable, Equatable {
        case linkUp
        case linkDown
        case graceExpired
        /// The lock answered the arrival request for `cycle` (granted or refused).
        case arrivalAnswered(cycle: UInt64, granted: Bool)
        /// The arrival request could not be completed (link lost before an answer).
        case arrivalNotDelivered
        /// The lock refused the arrival request for `cycle` as busy: its bolt was moving.
        case arrivalBusy(cycle: UInt64)
    }

    public enum Action: Sendable, Equatable {
        case startGraceTimer
        case cancelGraceTimer
        case requestArrivalUnlock(cycle: UInt64)
        /// Ask again for `cycle` once the lock's movement has ended (the caller waits for it,
        /// bounded); the next answer counts as the cycle's.
        case retryArrivalUnlockAfterMovement(cycle: UInt64)
        /// The state changed; write it down before acting on anything that follows.
        case persist
        case departed(cycle: UInt64)
        case arrived(cycle: UInt64, unlocked: Bool)
    }

    public init() {}

    /// Starts from a persisted state. A phone that died while leaving or arriving resumes as
    /// away when the link is down (the grace had begun) — the cautious reading.
    public init(restoring saved: PresenceMachine) {
        self = saved
        if presence == .arriving || presence == .leaving { presence = .away }
    }

    public mutating func handle(_ input: Input) -> [Action] {
        switch (presence, input) {
        case (.unknown, .linkUp):
            presence = .home
            return [.persist]
        case (.unknown, .linkDown):
            presence = .leaving
            return [.persist, .startGraceTimer]
        case (.home, .linkDown):
            presence = .leaving
            return [.persist, .startGraceTimer]
        case (.leaving, .linkUp):
            presence = .home
            return [.cancelGraceTimer, .persist]
        case (.leaving, .graceExpired):
            presence = .away
            cycle += 1
            return [.persist, .departed(cycle: cycle)]
        case (.away, .linkUp):
            guard answeredCycle < cycle else {
                presence = .home
                return [.persist]
            }
            presence = .arriving
            arrivalRetried = false
            return [.persist, .requestArrivalUnlock(cycle: cycle)]
        case (.arriving, .arrivalAnswered(let c, let granted)) where c == cycle:
            return answered(c, granted: granted)
        case (.arriving, .arrivalBusy(let c)) where c == cycle:
            guard !arrivalRetried else { return answered(c, granted: false) }
            arrivalRetried = true
            return [.retryArrivalUnlockAfterMovement(cycle: c)]
        case (.arriving, .arrivalNotDelivered), (.arriving, .linkDown):
            presence = .away
            return [.persist]
        // Everything else changes nothing: repeated edges, stale timers, late answers.
        case (.unknown, _), (.home, _), (.leaving, _), (.away, _), (.arriving, _):
            return []
        }
    }

    /// The lock answered this cycle's request: the cycle is spent.
    private mutating func answered(_ c: UInt64, granted: Bool) -> [Action] {
        answeredCycle = c
        presence = .home
        return [.persist, .arrived(cycle: c, unlocked: granted)]
    }
}
