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
        links.restoreSessions(for: state.centrals, secret: { [verifier] keyID in
            guard verifier.authority.isCurrent(keyID: keyID) == true else { return nil }
            return verifier.keys.key(id: keyID)?.secret
        })
        restoreBindings(for: state.centrals)
        // A restored link with no session kept is a stranger's until it proves a key.
        for central in state.centrals where !links.hasSession(central.linkID) {
            links.armUnauthenticatedTimer(for: central)
        }
        if !links.keysInUse.isEmpty { keyWatch.linkBound() }
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
        bindings.remove()
        peripheral.stopAdvertising()
        peripheral.removeAllServices()
        service = nil
        stateCharacteristic = nil
        transferCharacteristic = nil
    }

    /// After a restart: a restored link whose phone's session was kept with it, under the key
    /// its address was bound to, is that phone's again, so its loss starts the departure grace
    /// as before. An address alone proves nothing (anyone can send with a bound phone's): a
    /// link at a bound address without its kept session is dropped, and bound again when its
    /// phone re-links and proves its key.
    private func restoreBindings(for centrals: [Central]) {
        guard let stored = bindings.stored() else { return }
        for central in centrals {
            guard let key = stored[central.identifier.description] else { continue }
            guard links.sessionKey(on: central.linkID) == key else {
                // Its phone's never-ending connect request re-links at once and proves its key
                // with the `present` every link sends; anyone else using that address is gone.
                emit(.lockBindingNotRestored(key: key, central: "\(central.identifier)",
                                             reason: "no kept session of that key on the link"))
                links.drop(central, because: "a phone's address without its kept session: it re-links and proves its key")
                continue
            }
            rebind(central, to: key)
            emit(.lockBindingRestored(key: key, central: "\(central.identifier)"))
        }
    }
}
