import LatchkeyEvents
import LatchkeyLock
import LatchkeyLockProtocol

/// The operating mode across restarts (`OperatingModeRestoration` says what comes back and
/// why Passage does not): saved before a change applies, restored before the sensors are
/// read at start.
extension LockAgent {
    /// Saves `mode` before it applies, so a lock that said yes comes back in it.
    func persistOperatingMode(_ mode: OperatingMode) -> CommandRejection? {
        guard let operatingModes else { return nil }
        do { try operatingModes.saveOperatingMode(mode) } catch {
            emit(.lockFault(fault: "operating mode \(mode) not stored: \(error)"))
            return .storageFailure
        }
        return nil
    }

    /// Applies the stored mode before start (the controller takes it silently: it is not a
    /// change). Returns the stored mode when it was not restored (Passage), for the log.
    func restoreOperatingMode() -> OperatingMode? {
        guard let operatingModes else { return nil }
        let stored: OperatingMode?
        do { stored = try operatingModes.loadOperatingMode() } catch {
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
        _ = persistOperatingMode(mode)
        return stored
    }

    /// The mode the lock did not come back in is an OperatingModeChange by the lock itself.
    func logOperatingModeDemotion(from stored: OperatingMode) {
        let mode = controller.operatingMode
        emit(.lockOperatingModeNotRestored(stored: .init(stored), mode: .init(mode)))
        lockEvent(securityEvent(.operatingModeChange(OperatingModeChangeRecord(mode, previous: stored, source: .auto))))
    }
}
