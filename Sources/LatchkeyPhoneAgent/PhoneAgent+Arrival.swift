import LatchkeyEvents
import LatchkeyLock
import LatchkeyLockProtocol

/// The arrival request: only inside an arrival intent's window, once per away→home
/// cycle, and once more when the first met a moving bolt — the lock refuses a command during
/// a movement as busy, having decided nothing, and an owner coming home while the door
/// relocks should not find it locked.
/// The wait for the movement is bounded (`arrivalRetryWait`) and runs on the loop's clock.
extension PhoneAgent {
    /// An arrival intent from outside Bluetooth (the control socket's `arriving`, a hook, a
    /// phone OS's geofence): the next re-formed link — or the one up now, if the owner was
    /// away — may ask for one arrival unlock within `arrivalIntentWindow`. Returns what
    /// happened, for the caller's answer.
    @discardableResult
    public func arrivalIntent() -> String {
        let before = state.presence
        emit(.phoneArrivalIntent(presence: .init(before.presence)))
        feed(.arrivalIntent)
        if state.presence.presence == .arriving && before.presence != .arriving { return "asking the lock now" }
        if intentTimer != nil {
            return "window open for \(configuration.arrivalIntentWindow.components.seconds) s"
        }
        return "nothing to ask: \(state.presence.presence.rawValue)"
    }

    func openIntentWindow() {
        intentTimer?.cancel()
        intentTimer = loop.schedule(after: configuration.arrivalIntentWindow) { [weak self] in
            guard let self else { return }
            intentTimer = nil
            emit(.phoneArrivalIntentExpired)
            feed(.intentExpired)
        }
    }

    func requestArrival(_ cycle: UInt64) {
        perform(.arrivalUnlock) { [weak self] result in
            guard let self else { return }
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
    }

    /// Asks again when the lock notifies a bolt at rest, or when the wait runs out.
    func waitToRetryArrival(_ cycle: UInt64) {
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
        requestArrival(cycle)
    }

    func cancelArrivalRetry() {
        arrivalRetry?.timer.cancel()
        arrivalRetry = nil
    }
}
