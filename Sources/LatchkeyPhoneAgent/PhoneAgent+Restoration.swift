import LatchkeyATT
import LatchkeyCentral
import LatchkeyEvents
import LatchkeyLockProtocol
import LatchkeyManagers

/// The GATT setup as a sequence that resumes where it stopped (restoration's step 4, docs/RESTORATION.md): each step looks
/// at what the lock's proxy already holds — from this link, an earlier link, or the cache
/// a relaunch restored — and only asks the lock for what is missing. A phone that comes
/// back to a lock it knows is ready at once (its command opens the link's session, then it
/// subscribes to the status); a relaunched phone whose link survived it discovers nothing.
extension PhoneAgent {
    /// The next missing step: services, characteristics, or none.
    func continueSetup(_ peripheral: Peripheral) {
        guard peripheral.state == .connected else { return }
        guard let service = peripheral.service(LockServiceUUID.service) else {
            peripheral.discoverServices([LockServiceUUID.service])
            return
        }
        guard service.characteristics != nil, bindCharacteristics(of: service), status != nil else {
            peripheral.discoverCharacteristics(nil, for: service)
            return
        }
        // The status subscription follows the first command, whose session it needs
        // (`subscribeOnceInSession`): the lock refuses it to a link without one.
        becomeReady(peripheral)
    }

    /// Takes the lock service's characteristics from `service`; false when one is missing.
    @discardableResult
    func bindCharacteristics(of service: RemoteService) -> Bool {
        setup.bind { service.characteristic($0) }
    }

    /// A cached handle the lock does not have (its service changed since the cache was
    /// made): forget the cache and discover again, once per link. True when it did.
    func rediscoverIfStale(_ peripheral: Peripheral, _ error: BluetoothError) -> Bool {
        guard case .att(let code) = error, code == .invalidHandle || code == .attributeNotFound,
              setup.staleCacheFound() else { return false }
        emit(.phoneCacheStale(error: "\(error)"))
        peripheral.discardAttributeCache()
        continueSetup(peripheral)
        return true
    }

    /// The lock's database changed (a Service Changed indication, or a Database Hash that
    /// no longer matches the cache): when the lock service went with it, bind again to the
    /// new handles before anything else is written — never to the old ones.
    public func peripheral(_ peripheral: Peripheral, didModifyServices invalidatedServices: [RemoteService]) {
        guard invalidatedServices.contains(where: { $0.uuid == LockServiceUUID.service }) else { return }
        emit(.phoneServicesChanged(invalidated: invalidatedServices.count))
        restartSetup(peripheral, because: "the lock's services changed")
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
