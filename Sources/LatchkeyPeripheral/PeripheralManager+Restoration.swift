import LatchkeyATT
import LatchkeyGATT
import LatchkeyManagers
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
                                               centrals: centrals.map(PreservedCentral.init),
                                               databaseHash: announced?.hash)
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
    /// the CCCD values, features and MTU of the centrals preserved on the same link), tells
    /// the delegate, then compares the database with the preserved run's and sends Service
    /// Changed where it differs, resumes advertising and reports centrals that came while it
    /// was gone.
    private func reconcile(_ preserved: PeripheralRestorationState) {
        let known = preservedLayout(preserved)
        announced = known?.layout
        for entry in preserved.services {
            do {
                let handles: GATTServiceHandles
                do {
                    handles = try database.add(entry.definition, startHandle: entry.startHandle)
                } catch {
                    // Its handles are taken (by the fixed services, in a state preserved by a
                    // version with fewer of them): the next free ones; the move is announced.
                    handles = try database.add(entry.definition)
                }
                services.append(LocalService(definition: entry.definition, handles: handles))
            } catch {
                delegate?.peripheralManager(self, didFailToPreserveState: error)
            }
        }
        // A CCCD value is restored only where the attribute is still the one it was written
        // to. Service Changed's follows Service Changed to where it is now (it moved when the
        // Generic Access service came in front of it): the central asked for the indication,
        // and it is what tells it the rest moved. Where the preserved run had it is unknown
        // when no layout rebuilds to the preserved hash: that subscription goes too.
        let moved = announced.map { GATTDatabase.changedRange(from: $0.layout, to: database.layout) } ?? 0x0001...0xFFFF
        let serviceChanged = genericAttribute.characteristicValues.first
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
            for c in entry.configurations {
                if let was = known?.serviceChanged, c.valueHandle == was, let serviceChanged {
                    values[serviceChanged] = ClientConfiguration(rawValue: c.value)
                } else if moved.map({ !$0.contains(c.valueHandle) }) ?? true {
                    values[c.valueHandle] = ClientConfiguration(rawValue: c.value)
                }
            }
            central.server.restoreClientConfigurations(values)
            central.server.restoreClientFeatures(ClientSupportedFeatures(rawValue: entry.clientFeatures ?? 0))
            if let unconfirmed = entry.serviceChange?.range, central.server.wantsServiceChanged {
                // Sent before the process died and never confirmed: the central may not know.
                central.server.markChangeUnaware()
                central.serviceChange.add(unconfirmed)
            }
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
        preservation?.isReconciling = false
        // The links that survived are usable now: those centrals hear of a change first.
        announceServiceChange(restoring: true)
        for link in arrivedWhileAway where link.isConnected && link.delegate == nil {
            let central = makeCentral(link)
            delegate?.peripheralManager(self, didConnect: central)
        }
        preserve()
    }

    /// The structure the preserved run's centrals knew, and where its Service Changed was: its
    /// fixed services, in the layout (`FixedServices`) that rebuilds to the preserved hash,
    /// and its services at their handles. nil when none does (another version's Generic
    /// Attribute service), so that everything counts as changed.
    func preservedLayout(_ preserved: PeripheralRestorationState) -> (layout: AnnouncedLayout, serviceChanged: UInt16?)? {
        // A state written before the Generic Attribute service existed: the services alone.
        guard let hash = preserved.databaseHash else { return rebuild(preserved, with: nil) }
        for fixed in FixedServices.allCases {
            if let rebuilt = rebuild(preserved, with: fixed), rebuilt.layout.hash == hash { return rebuilt }
        }
        return nil
    }

    private func rebuild(_ preserved: PeripheralRestorationState,
                         with fixed: FixedServices?) -> (layout: AnnouncedLayout, serviceChanged: UInt16?)? {
        let rebuilt = GATTDatabase()
        let serviceChanged = fixed?.publish(in: rebuilt, genericAccess: genericAccess).characteristicValues.first
        do {
            for entry in preserved.services { try rebuilt.add(entry.definition, startHandle: entry.startHandle) }
        } catch {
            return nil  // its services do not fit this layout: not the one
        }
        return (AnnouncedLayout(rebuilt.layout), serviceChanged)
    }
}
