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
            // Another version's service: this one's replaces it; the manager tells the phones
            // whose links survived which handles changed.
            service = restored.definition == configuration.serviceDefinition ? restored : replace(restored, in: pm)
            stateCharacteristic = service?.characteristic(LockServiceUUID.lockState)
            transferCharacteristic = service?.characteristic(LockServiceUUID.dataTransfer)
        }
        restoreSessions(for: state.centrals)
        restoreBindings(for: state.centrals)
        // A restored link with no session kept is a stranger's until it proves a key.
        for central in state.centrals where sessions[central.linkID] == nil {
            armUnauthenticatedTimer(for: central)
        }
        if !keysInUse.isEmpty { keyWatch.linkBound() }
        emit(.lockRestored(services: state.services.count, centrals: state.centrals.count,
                           subscribed: stateCharacteristic?.subscribedCentrals.count ?? 0,
                           advertising: state.advertisement != nil))
        // The lock may have moved (or resolved an interrupted decision) before the service
        // was back: tell the phones that stayed subscribed where it stands now.
        loop.execute { [weak self] in self?.publishStatus() }
    }

    private func replace(_ restored: LocalService, in pm: PeripheralManager) -> LocalService? {
        pm.remove(restored)
        do { return try pm.add(configuration.serviceDefinition) } catch {
            emit(.lockFault(fault: "cannot publish service: \(error)"))
            return nil
        }
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
    public func logAlarm(_ code: AlarmCode) {
        lockEvent(LockEvent(kind: .doorLockAlarm(code), time: loop.now, lockStateBefore: controller.lockState,
                            lockStateAfter: controller.lockState, doorState: controller.doorState))
    }

    func noteRadioState(_ state: ManagerState) {
        switch state {
        case .poweredOn:
            if radioWentDown { logAlarm(.lockRadioPowerCycled) }
            radioWentDown = false
        case .poweredOff, .resetting:
            radioWentDown = true
        case .unknown, .unsupported, .unauthorized:
            break
        }
    }

    /// A deliberate stop (`systemctl stop`): stop advertising and withdraw the service, so
    /// that the restoration entry goes (no relaunch restores it; the next start publishes
    /// the same definition at the same handles anyway). A decision in flight stays open in
    /// the journal: the next start reconciles it like after a crash.
    public func stop() {
        keyWatch.stop()
        peripheral.discardPreservedState()
        do { try bindingStorage?.remove(.peripheral, identifier: LockBindings.identifier) } catch {
            emit(.lockRestorationFailed(error: "bindings not removed: \(error)"))  // the next start re-reads them: harmless
        }
        peripheral.stopAdvertising()
        peripheral.removeAllServices()
        service = nil
        stateCharacteristic = nil
        transferCharacteristic = nil
    }
}
