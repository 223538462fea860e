import LatchkeyATT
import LatchkeyGATT
import LatchkeyTransport

/// What `peripheralManager(_:willRestoreState:)` hands over (Core Bluetooth's restoration
/// dictionary, typed).
public struct RestoredPeripheralState {
    /// The services, published again at the handles they had (CBPeripheralManager-
    /// RestoredStateServicesKey): the app must not add them a second time.
    public let services: [LocalService]
    /// What was being advertised (…RestoredStateAdvertisementDataKey); the manager resumes it.
    public let advertisement: Advertisement?
    /// Centrals whose link survived the process, with their subscriptions (each appears in
    /// its characteristics' `subscribedCentrals`). A central that connected while the
    /// process was gone is reported by `didConnect` after the state update.
    public let centrals: [Central]
}

// Preservation and restoration for PeripheralManager.
extension PeripheralManager {
    public var restoreIdentifier: String? { preservation?.identifier }

    /// Writes what a relaunch would need, if it changed. An empty state removes the entry.
    func preserve() {
        guard preservation != nil else { return }
        let state = PeripheralRestorationState(advertisement: advertisement.map(PreservedAdvertisement.init),
                                               services: services.map(PreservedLocalService.init),
                                               centrals: centrals.map(PreservedCentral.init))
        do { try preservation?.write(state) } catch {
            delegate?.peripheralManager(self, didFailToPreserveState: error)
        }
    }

    /// A deliberate shutdown (`systemctl stop`): the preserved state is removed and no more
    /// is written, so that the next start is a fresh one — what the links and advertising
    /// still are when the process ends does not come back.
    public func discardPreservedState() {
        do { try preservation?.discard() } catch { delegate?.peripheralManager(self, didFailToPreserveState: error) }
    }

    func reportLoadError() {
        guard let error = preservation?.takeLoadError() else { return }
        delegate?.peripheralManager(self, didFailToPreserveState: error)
    }

    func restoreWhenTransportIsReady() {
        guard let preserved = preservation?.takeAwaiting(whenReady: transport.state) else { return }
        state = ManagerState(transport.state)
        reconcile(preserved)
    }

    /// Publishes the services again at their handles, adopts the links that are up (with
    /// the CCCD values and MTU of the centrals preserved on the same link), tells the
    /// delegate, then resumes advertising and reports centrals that came while it was gone.
    private func reconcile(_ preserved: PeripheralRestorationState) {
        for entry in preserved.services {
            do {
                let handles = try database.add(entry.definition, startHandle: entry.startHandle)
                services.append(LocalService(definition: entry.definition, handles: handles))
            } catch {
                delegate?.peripheralManager(self, didFailToPreserveState: error)
            }
        }
        advertisement = preserved.advertisement?.advertisement
        var restoredCentrals: [Central] = []
        var arrivedWhileAway: [any ATTLink] = []
        for link in transport.connectedLinks where link.role == .peripheral && link.delegate == nil {
            guard let entry = preserved.centrals.first(where: { $0.linkID == link.id.rawValue }) else {
                arrivedWhileAway.append(link)
                continue
            }
            let central = makeCentral(link)
            central.server.restoreMTU(entry.mtu)
            var values: [UInt16: ClientConfiguration] = [:]
            for c in entry.configurations { values[c.valueHandle] = ClientConfiguration(rawValue: c.value) }
            central.server.restoreClientConfigurations(values)
            for s in services {
                for c in s.characteristics where !central.server.clientConfigurations[c.valueHandle, default: []].isEmpty {
                    c.subscribedCentrals.append(central)
                }
            }
            restoredCentrals.append(central)
        }
        delegate?.peripheralManager(self, willRestoreState: RestoredPeripheralState(
            services: services, advertisement: advertisement, centrals: restoredCentrals))
        delegate?.peripheralManagerDidUpdateState(self)
        reportLoadError()
        if state == .poweredOn { rearmAdvertising() }
        for link in arrivedWhileAway where link.isConnected && link.delegate == nil {
            let central = makeCentral(link)
            delegate?.peripheralManager(self, didConnect: central)
        }
        preservation?.isReconciling = false
        preserve()
    }
}
