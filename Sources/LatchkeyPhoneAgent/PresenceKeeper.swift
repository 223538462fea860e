import LatchkeyEvents
import LatchkeyLock
import LatchkeyLockProtocol
import LatchkeyPhone
import LatchkeyTransport

/// Away and home, and the arrival request, on the durable state the phone keeps (the
/// presence machine and the command counter, saved together). The presence machine decides;
/// this component runs its timers (grace period, nearby limit, intent window), saves what it
/// says to save, and says what happened. The arrival request goes through `askLock`, once per
/// away→home cycle inside an intent's window; its answer comes back to `arrivalAnswered`. One
/// refused as busy (the bolt was moving; the lock decided nothing) is asked once more when the
/// bolt rests or after `arrivalRetryWait`: an owner coming home while the door relocks should
/// not find it locked.
final class PresenceKeeper {
    private let configuration: PhoneAgentConfiguration
    private let store: any PhoneStateStore
    private let events: PhoneEventOutput
    private let askLock: (UInt64) -> Void
    private var loop: any EventLoop { events.loop }
    private var state: PhoneState
    private var graceTimer: Scheduled?
    /// The nearby limit's clock (`PresenceMachine.startNearbyClock`).
    private var nearbyTimer: Scheduled?
    /// The open arrival intent's window.
    private var intentTimer: Scheduled?
    /// An arrival request that met a moving bolt, waiting to be asked again.
    private var arrivalRetry: (cycle: UInt64, timer: Scheduled)?
    /// The store refuses writes: since when, and how many saves it refused. Said once when it
    /// starts and once when a save works again, not at every refusal (a spell lasts hours).
    private var refusing: (since: Instant, refused: Int)?

    /// Resumes `saved` (nil: a first start); a phone that died while leaving or arriving
    /// resumes as away (PresenceMachine rules). `askLock` sends the arrival request of a cycle.
    init(restoring saved: PhoneState?, store: any PhoneStateStore, configuration: PhoneAgentConfiguration,
         events: PhoneEventOutput, askLock: @escaping (UInt64) -> Void) {
        self.state = saved.map { PhoneState(presence: PresenceMachine(restoring: $0.presence), counter: $0.counter) }
            ?? PhoneState()
        self.store = store
        self.configuration = configuration
        self.events = events
        self.askLock = askLock
    }

    /// What the phone keeps: where it thinks its owner is, and the last counter it used.
    var current: PhoneState { state }
    /// The last save failed: no counter can be handed out until one works.
    var storeRefusing: Bool { refusing != nil }

    /// Saves the state as it is, to learn whether the store takes writes again (the
    /// connect request's back-off, a command the owner asks for meanwhile): true when it did.
    @discardableResult
    func saveAgain() -> Bool { persist() }

    /// The next command's counter, durable before the frame leaves: a restart never reuses one.
    /// nil when it could not be saved (said as `phone.persist_failed` when saving starts to
    /// fail, and `phone.persist_recovered` when it works again): the command must not
    /// go, or a restart would send its counter again. It stays used in this life all the same.
    func nextCounter() -> UInt64? {
        state.counter += 1
        return persist() ? state.counter : nil
    }

    func feed(_ input: PresenceMachine.Input) {
        let before = state.presence.presence
        let actions = state.presence.handle(input)
        for action in actions {
            switch action {
            case .persist:
                persist()
            case .startGraceTimer:
                graceTimer?.cancel()
                graceTimer = loop.schedule(after: configuration.gracePeriod) { [weak self] in
                    self?.graceTimer = nil
                    self?.feed(.graceExpired)
                }
            case .cancelGraceTimer:
                graceTimer?.cancel()
                graceTimer = nil
            case .departed(let cycle):
                emit(.phoneAway(cycle: cycle))
            case .startNearbyClock(let cycle):
                nearbyTimer?.cancel()
                nearbyTimer = loop.schedule(after: configuration.nearbyLimit) { [weak self] in
                    self?.nearbyTimer = nil
                    self?.feed(.nearbyExpired(cycle: cycle))
                }
            case .returnedWithoutAsking(let cycle):
                emit(.phoneHomeWithoutArrival(cycle: cycle,
                                              nearbySeconds: configuration.nearbyLimit))
            case .requestArrivalUnlock(let cycle):
                emit(.phoneArrivalRequest(cycle: cycle))
                askLock(cycle)
            case .retryArrivalUnlockAfterMovement(let cycle):
                waitToRetryArrival(cycle)
            case .openIntentWindow:
                openIntentWindow()
            case .closeIntentWindow:
                intentTimer?.cancel()
                intentTimer = nil
            case .arrived(let cycle, let unlocked):
                emit(.phoneHome(cycle: cycle, unlocked: unlocked))
            }
        }
        if state.presence.presence != before {
            emit(.phonePresence(from: .init(before), to: .init(state.presence.presence)))
        }
    }

    /// Whether the state is on disk now.
    @discardableResult
    private func persist() -> Bool {
        do { try store.save(state) } catch {
            if refusing == nil {
                refusing = (loop.now, 0)
                emit(.phonePersistFailed(error: "\(error)"))
            }
            refusing?.refused += 1
            return false
        }
        if let spell = refusing {
            refusing = nil
            emit(.phonePersistRecovered(refused: spell.refused, seconds: loop.now - spell.since))
        }
        return true
    }

    // MARK: Arrival

    /// An arrival intent from outside Bluetooth (the control socket's `arriving`, a hook, a
    /// phone OS's geofence): the next re-formed link — or the one up now, if the owner was
    /// away — may ask for one arrival unlock within `arrivalIntentWindow`. Returns what
    /// happened, for the caller's answer.
    func arrivalIntent() -> String {
        let before = state.presence
        emit(.phoneArrivalIntent(presence: .init(before.presence)))
        feed(.arrivalIntent)
        if state.presence.presence == .arriving && before.presence != .arriving { return "asking the lock now" }
        if intentTimer != nil {
            return "window open for \(configuration.arrivalIntentWindow.components.seconds) s"
        }
        return "nothing to ask: \(state.presence.presence.rawValue)"
    }

    private func openIntentWindow() {
        intentTimer?.cancel()
        intentTimer = loop.schedule(after: configuration.arrivalIntentWindow) { [weak self] in
            guard let self else { return }
            intentTimer = nil
            emit(.phoneArrivalIntentExpired)
            feed(.intentExpired)
        }
    }

    /// The lock's answer to the arrival request of `cycle`.
    func arrivalAnswered(_ cycle: UInt64, _ result: Result<Void, PhoneAgent.CommandError>) {
        switch result {
        case .success:
            feed(.arrivalAnswered(cycle: cycle, granted: true))
        case .failure(.rejected(.busy)):
            emit(.phoneArrivalBusy(cycle: cycle))
            feed(.arrivalBusy(cycle: cycle))
        case .failure(.rejected(let why)):
            emit(.phoneArrivalRefused(cycle: cycle, reason: "\(why)"))
            feed(.arrivalAnswered(cycle: cycle, granted: false))
        case .failure(.notDelivered):
            feed(.arrivalNotDelivered)
        }
    }

    /// Asks again when the lock notifies a bolt at rest, or when the wait runs out.
    private func waitToRetryArrival(_ cycle: UInt64) {
        cancelArrivalRetry()
        let timer = loop.schedule(after: configuration.arrivalRetryWait) { [weak self] in
            self?.retryArrival(reason: "wait over")
        }
        arrivalRetry = (cycle, timer)
    }

    /// A status notification: a bolt locked, unlocked or jammed is not moving any more.
    func retryArrivalIfTheBoltRests(_ frame: LockStatusFrame) {
        guard arrivalRetry != nil, let state = LockState(rawValue: frame.lockState),
              [.locked, .unlocked, .notFullyLocked].contains(state) else { return }
        retryArrival(reason: "bolt at rest")
    }

    private func retryArrival(reason: String) {
        guard let retry = arrivalRetry else { return }
        let cycle = retry.cycle
        retry.timer.cancel()
        arrivalRetry = nil
        // Still arriving in that cycle (a lost link sends the owner back to away first).
        guard state.presence.presence == .arriving, state.presence.cycle == cycle else { return }
        emit(.phoneArrivalRetry(cycle: cycle, reason: reason))
        askLock(cycle)
    }

    /// The link went: no retry waits for a bolt on it.
    func cancelArrivalRetry() {
        arrivalRetry?.timer.cancel()
        arrivalRetry = nil
    }

    private func emit(_ event: Event) { events.emit(event) }
}
