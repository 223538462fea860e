import LatchkeyEvents
import LatchkeyLock
import LatchkeyLockProtocol
import LatchkeySecurity

/// The operating mode across restarts and an admin's change of it
/// (`OperatingModeRestoration` says what comes back and why Passage does not): a new mode is
/// saved before it applies, so a lock that said yes comes back in it; the stored one is
/// restored before the sensors are read at start. That the key may ask is `LockAuthority`'s
/// to say (the verifier let the command through); whether the lock takes the mode now is the
/// controller's.
final class OperatingModeKeeper {
    /// Nil: the lock starts Normal every time.
    private let store: (any OperatingModeStore)?
    private let controller: LockController
    private let emit: (Event) -> Void
    /// Files an event that moves nothing in the audit log.
    private let logSecurity: (LockEvent.Kind) -> Void
    /// The mode changed: phones hear the lock's state again.
    private let changed: () -> Void

    init(store: (any OperatingModeStore)?, controller: LockController, emit: @escaping (Event) -> Void,
         logSecurity: @escaping (LockEvent.Kind) -> Void, changed: @escaping () -> Void) {
        self.store = store
        self.controller = controller
        self.emit = emit
        self.logSecurity = logSecurity
        self.changed = changed
    }

    /// `setOperatingMode`, which the verifier let through only for an admin key.
    func set(_ raw: UInt8?, authorized: Authorization) -> CommandRejection? {
        let key = authorized.keyID
        guard let raw, let mode = OperatingMode(rawValue: raw) else { return .malformed }
        guard controller.machine.acceptsOperatingMode(mode) else {
            emit(.lockCommandRefused(key: key, op: .setOperatingMode, mode: .init(mode)))
            return .refusedByPolicy
        }
        if mode != controller.operatingMode, let failed = persist(mode) { return failed }
        controller.setOperatingMode(mode, authorized: authorized)
        emit(.lockOperatingMode(key: key, mode: .init(mode)))
        changed()
        return nil
    }

    /// Saves `mode` before it applies.
    private func persist(_ mode: OperatingMode) -> CommandRejection? {
        guard let store else { return nil }
        do { try store.saveOperatingMode(mode) } catch {
            emit(.lockFault(fault: "operating mode \(mode) not stored: \(error)"))
            return .storageFailure
        }
        return nil
    }

    /// Applies the stored mode before start (the controller takes it silently: it is not a
    /// change). Returns the stored mode when it was not restored (Passage), for the log.
    func restoreAtStart() -> OperatingMode? {
        guard let store else { return nil }
        let stored: OperatingMode?
        do { stored = try store.loadOperatingMode() } catch {
            emit(.lockFault(fault: "operating mode unreadable, starting normal: \(error)"))
            return nil
        }
        let mode = OperatingModeRestoration.modeAtStart(stored: stored)
        controller.setOperatingMode(mode, source: .auto)
        guard let stored, stored != mode else {
            if mode != .normal { emit(.lockOperatingModeRestored(mode: .init(mode))) }
            return nil
        }
        // The store follows, so the next start does not report it again.
        _ = persist(mode)
        return stored
    }

    /// The mode the lock did not come back in is an OperatingModeChange by the lock itself.
    func logDemotion(from stored: OperatingMode) {
        let mode = controller.operatingMode
        emit(.lockOperatingModeNotRestored(stored: .init(stored), mode: .init(mode)))
        logSecurity(.operatingModeChange(OperatingModeChangeRecord(mode, previous: stored, source: .auto)))
    }
}
