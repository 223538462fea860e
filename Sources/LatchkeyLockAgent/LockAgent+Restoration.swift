import LatchkeyEvents
import LatchkeyLock
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeyPeripheral

/// The lock agent across its own death: the peripheral manager restores the
/// service at the handles phones have cached and the links that survived, with their
/// subscriptions; the lock reports what it went through as Matter alarms in its log.
extension LockAgent {
    public func peripheralManager(_ pm: PeripheralManager, willRestoreState state: RestoredPeripheralState) {
        if let restored = state.services.first(where: { $0.uuid == LockServiceUUID.service }) {
            parts.published.restore(restored)
        }
        parts.relaunch.restore(state.centrals)
        emit(.lockRestored(services: state.services.count, centrals: state.centrals.count,
                           subscribed: parts.published.stateSubscribers.count,
                           advertising: state.advertisement != nil))
        // The lock may have moved (or resolved an interrupted decision) before the service
        // was back: tell the phones that stayed subscribed where it stands now.
        loop.execute { [weak self] in self?.parts.status.publish() }
    }

    public func peripheralManager(_ pm: PeripheralManager, didChangeServicesIn range: ClosedRange<UInt16>,
                                  centrals: [Central]) {
        emit(.lockServiceChanged(range: "\(range.lowerBound)-\(range.upperBound)",
                                 indicated: centrals.filter(\.wantsServiceChanged).count,
                                 centrals: centrals.count))
    }

    public func peripheralManager(_ pm: PeripheralManager, didFailToPreserveState error: any Error) {
        emit(.lockRestorationFailed(error: "\(error)"))
    }

    /// Appends a DoorLockAlarm to the log (and notifies it like any lock event):
    /// `lockFactoryReset` when the store was found corrupt and started empty,
    /// `lockRadioPowerCycled` when the controller went off and came back.
    public func logAlarm(_ code: AlarmCode) { parts.logAlarm(code) }

    /// A deliberate stop (`systemctl stop`): stop advertising and withdraw the service, so
    /// that the restoration entry goes (no relaunch restores it; the next start publishes
    /// the same definition at the same handles anyway). A decision in flight stays open in
    /// the journal: the next start reconciles it like after a crash.
    public func stop() {
        parts.keyWatch.stop()
        peripheral.discardPreservedState()
        parts.bindings.remove()
        parts.published.withdraw()
    }
}
