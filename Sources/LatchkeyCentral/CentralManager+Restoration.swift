import LatchkeyATT
import LatchkeyManagers
import LatchkeyTransport

/// What `centralManager(_:willRestoreState:)` hands over: Core Bluetooth's restoration
/// dictionary, typed.
public struct RestoredCentralState {
    /// The peripherals that were pending or connected, as the manager now holds them:
    /// `.connected` when their link survived and was adopted, else `.connecting` (a link
    /// that formed while the process was gone is reported by `didConnect` right after the
    /// state update; one that was lost, by `didDisconnectPeripheral`). Each comes with its
    /// attribute cache, so the app resumes its GATT setup where it stopped.
    public let peripherals: [Peripheral]
    /// The scan under way (resumed by the manager after the state update, bounded as before).
    public let scanServices: [BluetoothUUID]?
    public let scanOptions: ScanOptions?
}

// Preservation (writing) and restoration (reading, reconciling) for CentralManager.
extension CentralManager {
    /// The identifier this manager preserves under, if it opted in.
    public var restoreIdentifier: String? { preservation?.identifier }

    /// Writes what a relaunch would need, if it changed: the scan, every peripheral pending
    /// or connected with its options, link and attribute cache. An empty state removes the
    /// entry, so that a relaunch does not hand this manager back.
    func preserve() {
        guard preservation != nil else { return }
        var state = CentralRestorationState()
        if isScanning { state.scan = PreservedScan(services: scanFilter, options: scanOptions) }
        for address in known.keys.sorted() {
            let p = known[address]!
            if p.state == .connected, let options = connectedOptions[address] {
                state.peripherals.append(PreservedPeripheral(p, options: options))
            } else if let options = pendingConnects[address] {
                state.peripherals.append(PreservedPeripheral(p, options: options))
            }
        }
        do { try preservation?.write(state) } catch {
            delegate?.centralManager(self, didFailToPreserveState: error)
        }
    }

    /// At init: the preserved peripherals become known again, with their caches and their
    /// requests, before any transport callback can arrive.
    func loadPreservedPeripherals() {
        guard let loaded = preservation?.awaiting else { return }
        for preserved in loaded.peripherals {
            let p = peripheral(for: preserved.identifier)
            if let name = preserved.name { p.name = name }
            p.restoreCache(preserved)
            p.state = .connecting
            pendingConnects[preserved.identifier] = preserved.options
        }
    }

    /// A deliberate shutdown: the preserved state is removed and no more is written, so that
    /// the next start is a fresh one.
    public func discardPreservedState() {
        do { try preservation?.discard() } catch { delegate?.centralManager(self, didFailToPreserveState: error) }
    }

    func reportLoadError() {
        guard let error = preservation?.takeLoadError() else { return }
        delegate?.centralManager(self, didFailToPreserveState: error)
    }

    /// Restores once the transport knows its state (a remote transport learns it from its
    /// welcome, with the links and the pending list the system kept).
    func restoreWhenTransportIsReady() {
        guard let preserved = preservation?.takeAwaiting(whenReady: transport.state) else { return }
        state = ManagerState(transport.state)
        reconcile(preserved)
    }

    /// Steps 3 and 4: `willRestoreState`, the state update, then the transport's truth: a
    /// preserved link still up is adopted silently (`.connected` in `willRestoreState`); a link
    /// that formed while the process was gone is adopted and reported by `didConnect`; a preserved
    /// link now gone is reported by `didDisconnectPeripheral` (`.notConnected`); requests the
    /// system lost are asserted again (docs/RESTORATION.md, "Reconciling with the transport's truth").
    private func reconcile(_ preserved: CentralRestorationState) {
        let unclaimed = transport.connectedLinks.filter { $0.role == .central && $0.delegate == nil }
        var restored: [Peripheral] = []
        var formedWhileAway: [(any ATTLink, ConnectOptions)] = []
        var lostWhileAway: [Peripheral] = []
        for entry in preserved.peripherals {
            let p = peripheral(for: entry.identifier)
            restored.append(p)
            let link = unclaimed.first { $0.peer == entry.identifier }
            if entry.connected, let link, link.id.rawValue == entry.linkID {
                attach(link, options: entry.options, restoredMTU: entry.mtu)
                continue
            }
            p.clearSubscriptions()  // they lived on a link that is gone
            if let link {
                formedWhileAway.append((link, entry.options))
            } else if entry.connected {
                pendingConnects[entry.identifier] = nil  // that request was fulfilled
                lostWhileAway.append(p)
            }
        }
        delegate?.centralManager(self, willRestoreState: RestoredCentralState(
            peripherals: restored, scanServices: preserved.scan?.serviceUUIDs, scanOptions: preserved.scan?.options))
        if state == .poweredOn {
            // Valid timing (checked when the app set it): only an impossible parameter throws.
            try? applyModeTiming()
            reassertPendingConnects()
        }
        delegate?.centralManagerDidUpdateState(self)
        reportLoadError()
        for (link, options) in formedWhileAway where link.isConnected && link.delegate == nil {
            adopt(link, options: options)
        }
        for p in lostWhileAway where p.state != .connected { linkLost(p, reason: nil) }
        if let scan = preserved.scan, state == .poweredOn, !isScanning {
            // The preserved scan passed the same checks when the app started it; a scan is bounded, and the app scans again.
            try? scanForPeripherals(withServices: scan.serviceUUIDs, options: scan.options)
        }
        preservation?.isReconciling = false
        preserve()
    }
}

extension Peripheral {
    /// Marks every characteristic unsubscribed (its CCCD lived on a link that is gone), and
    /// Service Changed with them.
    func clearSubscriptions() {
        for s in services ?? [] { for c in s.characteristics ?? [] { c.isNotifying = false } }
        serviceChangedSubscribed = false
    }
}
