import LatchkeyTransport

/// Counts failed attempts per key and overall and disables them for escalating times
/// (`disableTime · 2^(level-1)`, capped; docs/LOCK-RULES.md rule 5 and its "Lockout pitfalls").
/// The overall lockout refuses only keys with a failure of their own; only a key's own success
/// ends its series; every change is stored before the command is answered. It fails closed: an
/// unreadable store locks everything out, and a change the store cannot save refuses every
/// command but `lock` until it is saved (`storeFault` says why). Time is the injected loop's.
public final class LockoutGuard {
    public let policy: LockoutPolicy
    private let store: any LockoutStore
    private let loop: any EventLoop
    /// States the store refused to save, newest per principal: they count, and they refuse.
    private var unsaved: [LockoutPrincipal: LockoutState] = [:]
    /// The store's last error while it reads or saves badly; nil once it works again.
    public private(set) var storeFault: (any Error)?

    public init(store: any LockoutStore, policy: LockoutPolicy = LockoutPolicy(), loop: any EventLoop) {
        self.store = store
        self.policy = policy
        self.loop = loop
    }

    /// The principal whose lockout refuses a command naming `keyID` now, the overall one
    /// first; nil when none does. Pass nil before the key id is known. The lock-wide lockout
    /// refuses only a key with a counted failure of its own not yet forgiven (or no key at
    /// all): one key's failures never lock out a key that did not fail, so a guest who fails
    /// on purpose cannot shut the owner's door to the owner. While a change waits to be
    /// saved, or the store cannot be read, the overall principal refuses everything.
    public func lockedOut(keyID: UInt32?) -> LockoutPrincipal? {
        guard saveWaiting() else { return .overall }
        let now = loop.now
        do {
            let own = try keyID.map { try store.state(of: .key($0)) }
            if let until = try store.state(of: .overall).lockedUntil, now < until, own.map({ failedRecently($0, at: now) }) ?? true {
                storeFault = nil
                return .overall
            }
            if let keyID, let until = own?.lockedUntil, now < until {
                storeFault = nil
                return .key(keyID)
            }
        } catch {
            storeFault = error
            return .overall
        }
        storeFault = nil
        return nil
    }

    /// Counts one failure; returns the lockouts it engaged (none, one, or both).
    @discardableResult
    public func recordFailure(keyID: UInt32?) -> [LockoutEngagement] {
        var engaged: [LockoutEngagement] = []
        if let e = count(.overall, limit: policy.overallLimit) { engaged.append(e) }
        if let keyID, let e = count(.key(keyID), limit: policy.perKeyLimit) { engaged.append(e) }
        return engaged
    }

    /// Counts one failure against `keyID` alone: a wrong unlock code the MQTT bridge checked
    /// for its key. Not the overall count: the bridge is one key, and a network guesser
    /// must not lock every phone out. Returns the key's lockout, if it engaged one.
    @discardableResult
    public func recordKeyFailure(keyID: UInt32) -> LockoutEngagement? {
        count(.key(keyID), limit: policy.perKeyLimit)
    }

    /// The key's own success ends its series (never another key's, never the overall one).
    /// The series ends (count, step and lockout back to zero); when its last failure was
    /// stays, so the lock-wide lockout still knows this key failed recently (`lockedOut`).
    public func recordSuccess(keyID: UInt32) {
        let current: LockoutState
        do { current = try state(of: .key(keyID)) } catch {
            storeFault = error
            return  // unread, the series stands: nothing to end
        }
        guard current.failures > 0 || current.level > 0 || current.lockedUntil != nil else { return }
        save(LockoutState(lastFailure: current.lastFailure), of: .key(keyID))
    }

    /// Whether `state` has a counted failure that time has not forgiven yet, even if the
    /// principal's own success ended its series since: a key that fails twice and succeeds
    /// once, over and over, stays within reach of the lock-wide lockout.
    private func failedRecently(_ state: LockoutState, at now: Instant) -> Bool {
        guard let last = state.lastFailure else { return state.hasFailed }
        return now - max(last, state.lockedUntil ?? last) < policy.forgiveAfter
    }

    /// Writes what waits; true when nothing waits any more.
    private func saveWaiting() -> Bool {
        for (principal, state) in unsaved.sorted(by: { "\($0.key)" < "\($1.key)" }) {
            do { try store.save(state, of: principal) } catch {
                storeFault = error
                return false
            }
            unsaved[principal] = nil
        }
        return true
    }

    private func state(of principal: LockoutPrincipal) throws -> LockoutState {
        if let waiting = unsaved[principal] { return waiting }
        return try store.state(of: principal)
    }

    private func save(_ state: LockoutState, of principal: LockoutPrincipal) {
        do {
            try store.save(state, of: principal)
            unsaved[principal] = nil
        } catch {
            storeFault = error
            unsaved[principal] = state
        }
    }

    private func count(_ principal: LockoutPrincipal, limit: UInt32) -> LockoutEngagement? {
        let now = loop.now
        var s: LockoutState
        do { s = try state(of: principal) } catch {
            // Unreadable: the failure cannot be added to a count we cannot see; every command
            // is refused while the store cannot be read (`lockedOut`), so none is forgotten.
            storeFault = error
            return nil
        }
        let quietSince = max(s.lastFailure ?? now, s.lockedUntil ?? now)
        if s.lastFailure != nil, now - quietSince >= policy.forgiveAfter { s = .clean }
        s.failures += 1
        s.lastFailure = now
        var engagement: LockoutEngagement?
        if s.failures >= limit {
            s.level += 1
            s.failures = 0
            let d = policy.disableTime(atLevel: s.level)
            s.lockedUntil = now + d
            engagement = LockoutEngagement(principal: principal, level: s.level, duration: d)
        }
        save(s, of: principal)
        return engagement
    }
}
