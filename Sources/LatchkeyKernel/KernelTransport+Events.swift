import LatchkeyKernelSockets
import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport

/// The controller's life as mgmt events tell it: settings, power, index removal and
/// return, devices connecting, discovery results, and what other mgmt clients undo.
extension KernelTransport {
    /// LE on, not bondable (pairing is not how Latchkey authenticates), connectable, powered:
    /// each answer carries the new Current_Settings.
    /// A refusal that makes the radio unusable (no permission, no LE) is the state the
    /// managers see, not retried; any other (Busy, Failed) is asked again as `.power`.
    func configureController() {
        let round = Refusal()
        let commands: [MgmtCommand] = [.setLowEnergy(true), .setBondable(false), .setConnectable(true), .setPowered(true)]
        for command in commands {
            send(command) { [weak self] result in
                guard let self else { return }
                switch result {
                case .success(let parameters):
                    // An answer without Current_Settings changes nothing; the next New Settings event brings them.
                    if let settings = try? MgmtReply.currentSettings(parameters, of: command.opcode) { self.apply(settings) }
                case .failure(let error):
                    if error.status == .permissionDenied { self.controller.refuse(.unauthorized) }
                    if error.status == .notSupported && command.opcode == .setLowEnergy { self.controller.refuse(.unsupported) }
                    if !self.controller.isRefused { round.error = round.error ?? error } else { self.onFailure?(KernelError(error)) }
                    self.updateState()
                }
                guard command.opcode == commands.last?.opcode else { return }
                if let error = round.error { self.requests.refused(.power, error) } else { self.requests.took(.power) }
            }
        }
    }

    func apply(_ newSettings: MgmtSettings) {
        controller.apply(newSettings)
        updateState()
    }

    /// Moves to the computed state; on power-on the mirror is re-asserted before the
    /// delegate hears of it, so a manager that checks `isAdvertising` sees the truth.
    func updateState() {
        guard let newState = controller.update() else { return }
        requests.powerChanged()  // power-on re-asserts advertising; power-off must not re-add it
        if newState == .poweredOn {
            reassert()
        } else {
            requests.scanEnded()  // the kernel ends discovery when the controller goes down
        }
        restartPendingRefresh()
        delegate?.transport(self, didChangeState: newState)
    }

    /// Everything the kernel may have forgotten: timing, our advertising instance, every
    /// Add Device entry; then which devices are linked already, to claim the ones we want.
    func reassert() {
        if requests.advertising != nil {
            do { try links.openListener() } catch { onFailure?(error) }
        }
        requests.reassert()
        send(.getConnections) { [weak self] result in
            guard let self else { return }
            guard case .success(let parameters) = result,
                  let devices = try? MgmtReply.connections(parameters) else {  // Not Powered: nothing linked
                return self.connectedDevices.learned(nil)
            }
            self.connectedDevices.learned(Set(devices.compactMap(\.address)))
            if self.requests.advertising != nil { self.sweepStaleLinks() }
            for peer in self.connectedDevices.sorted { self.links.claimSoon(peer) }
            self.restartPendingRefresh()
        }
        // Everything is being asked for again now: earlier refusals' timers are moot.
        requests.forgetRetries()
    }

    func handle(_ event: MgmtEvent, on eventIndex: MgmtIndex) {
        if case .indexAdded = event { return indexAdded(eventIndex) }
        guard isAttached, eventIndex == index else { return }
        switch event {
        case .indexRemoved:
            detach()
        case .newSettings(let newSettings):
            apply(newSettings)
        case .deviceConnected(let connected):
            guard let peer = connected.address.address else { return }
            connectedDevices.connected(peer)
            links.claimSoon(peer)
            restartPendingRefresh()
        case .deviceDisconnected(let device, let reason):
            guard let peer = device.address else { return }
            connectedDevices.disconnected(peer, reason: reason.hciReason)
            restartPendingRefresh()
        case .deviceFound(let found):
            // A neighbour's malformed advertisement is not ours to report: it is skipped, like radio noise.
            guard isScanning, let peer = found.address.address,
                  let data = try? AdvertisingData(decoding: found.eir) else { return }
            delegate?.transport(self, didReceive: AdvertisementReport(address: peer, data: data, rssi: found.rssi,
                                                                     connectable: found.isConnectable))
        case .discovering(_, let discovering):
            // LE discovery ends by itself after 10.24 s (DISCOV_LE_TIMEOUT); the seam's scan
            // runs until stopped, so it is restarted unless the end was our own doing.
            if !discovering { requests.discoveryStopped() }
        case .deviceRemoved(let device):
            // Another client (bluetoothd initialising the adapter) removed our entry.
            if let peer = device.address { requests.deviceRemoved(peer) }
        case .advertisingRemoved(let instance):
            if instance == Self.advertisingInstance { requests.advertiseAgain() }
        case .controllerError(let code):
            onFailure?(KernelError(.system, "\(index) reported a controller hardware error (0x\(String(code, radix: 16)))"))
        default:
            break
        }
    }

    /// Our controller went away (unplugged, driver reset): links end through their sockets.
    func detach() {
        controller.detach()
        requests.forgetRetries()  // re-asserted when the index returns
        links.detach()
        pendingRescan.detach()
        connectionTimingWatch.close()
        connectedDevices.removeAll()
        updateState()
    }

    /// A controller appeared: if it is ours again (same address), take it up.
    func indexAdded(_ newIndex: MgmtIndex) {
        guard !isAttached else { return }
        mgmt.send(.readControllerInfo, to: newIndex) { [weak self] result in
            // A controller whose information cannot be read or decoded is not taken for ours; its next Index Added asks again.
            guard let self, !self.isAttached, case .success(let parameters) = result,
                  let info = try? ControllerInfo(decoding: parameters), info.address == self.address else { return }
            self.index = newIndex
            self.controller.attach(info.currentSettings)
            self.pendingRescan.attach()
            self.connectionTimingWatch.forgetRefusal()
            self.configureController()
            self.updateState()
        }
    }

    func mgmtClosed(_ error: KernelError?) {
        controller.detach()
        requests.forgetRetries()  // nothing can be sent any more; the failure below says so
        onFailure?(error ?? KernelError(.system, "the mgmt socket closed"))
        updateState()
    }
}
