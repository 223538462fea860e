import LatchkeyATT
import LatchkeyCentral
import LatchkeyEvents
import LatchkeyLockProtocol
import LatchkeyManagers

/// The lock's database changing under the link, and the central's restoration.
extension PhoneAgent {
    /// The lock's database changed (a Service Changed indication, or a Database Hash that
    /// no longer matches the cache): when the lock service went with it, bind again to the
    /// new handles before anything else is written — never to the old ones.
    public func peripheral(_ peripheral: Peripheral, didModifyServices invalidatedServices: [RemoteService]) {
        guard invalidatedServices.contains(where: { $0.uuid == LockServiceUUID.service }) else { return }
        emit(.phoneServicesChanged(invalidated: invalidatedServices.count))
        link.restartSetup(peripheral, because: "the lock's services changed")
    }

    public func peripheral(_ peripheral: Peripheral, didReceiveInvalidServiceChange value: [UInt8]) {
        emit(.phoneServiceChangedInvalid(value: value.map { String($0, radix: 16) }.joined(separator: " ")))
    }

    // MARK: CentralManagerDelegate (restoration)

    public func centralManager(_ central: CentralManager, willRestoreState state: RestoredCentralState) {
        for p in state.peripherals { p.delegate = self }
        let cached = lockPeripheral.service(LockServiceUUID.service)
        emit(.phoneRestored(lock: .init(lockPeripheral.state),
                            cachedCharacteristics: cached?.characteristics?.count ?? 0,
                            subscribed: cached?.characteristic(LockServiceUUID.lockState)?.isNotifying ?? false))
    }

    public func centralManager(_ central: CentralManager, didFailToPreserveState error: any Error) {
        emit(.phoneRestorationFailed(error: "\(error)"))
    }

    /// A deliberate stop (`systemctl stop`): like a force-quit on iOS, the request is
    /// withdrawn from the system, so nothing re-links until the agent runs again, and the
    /// restoration entry goes with it (nothing is pending).
    public func stop() {
        connection.stop()
        central.cancelPeripheralConnection(lockPeripheral)
        central.discardPreservedState()
    }
}
