import LatchkeyLockProtocol
import LatchkeyPhone

/// Presence and the arrival request (`PresenceKeeper` keeps them).
extension PhoneAgent {
    /// An arrival intent from outside Bluetooth (the control socket's `arriving`, a hook, a
    /// phone OS's geofence): the next re-formed link — or the one up now, if the owner was
    /// away — may ask for one arrival unlock within `arrivalIntentWindow`. Returns what
    /// happened, for the caller's answer.
    @discardableResult
    public func arrivalIntent() -> String {
        presenceKeeper.arrivalIntent()
    }

    /// The presence machine hears `input`.
    func feed(_ input: PresenceMachine.Input) {
        presenceKeeper.feed(input)
    }

    /// The presence machine asks the lock for the arrival unlock of `cycle`.
    func requestArrival(_ cycle: UInt64) {
        perform(.arrivalUnlock) { [weak self] result in
            self?.presenceKeeper.arrivalAnswered(cycle, result)
        }
    }
}
