import LatchkeyKernelSockets
import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport

/// The controller's life (`ControllerLifecycle` follows it): what its state moving, its index
/// going and coming and the mgmt socket closing mean beyond it; and what `MgmtEventRouter`
/// finds while scanning.
extension KernelTransport: ControllerLifecycleHost, MgmtEventRouterHost {
    func send(_ command: MgmtCommand, to index: MgmtIndex, _ completion: @escaping MgmtClient.Completion) {
        mgmt.send(command, to: index, completion)
    }

    func powerAnswered(_ error: MgmtError?) {
        if let error { requests.refused(.power, error) } else { requests.took(.power) }
    }

    /// On power-on the mirror is re-asserted before the delegate hears of it, so a manager
    /// that checks `isAdvertising` sees the truth.
    func stateChanged(to newState: RadioState) {
        requests.powerChanged()  // power-on re-asserts advertising; power-off must not re-add it
        if newState == .poweredOn {
            reassert()
        } else {
            requests.scanEnded()  // the kernel ends discovery when the controller goes down
        }
        restartPendingRefresh()
        delegate?.transport(self, didChangeState: newState)
    }

    /// Links end through their sockets.
    func controllerDetached() {
        requests.forgetRetries()  // re-asserted when the index returns
        links.detach()
        pendingRescan.detach()
        links.closeTimingWatch()
        connectedDevices.removeAll()
    }

    func controllerReattached() {
        pendingRescan.attach()
        links.retryTimingWatch()
    }

    func mgmtSocketClosed(_ error: KernelError) {
        requests.forgetRetries()  // nothing can be sent any more; the failure below says so
        onFailure?(error)
    }

    /// Everything the kernel may have forgotten: timing, our advertising instance, every
    /// Add Device entry; then which devices are linked already, to claim the ones we want.
    func reassert() {
        if requests.advertising != nil {
            do { try links.openListener() } catch { onFailure?(error) }
        }
        requests.reassert()
        connectedDevices.read()
        // Everything is being asked for again now: earlier refusals' timers are moot.
        requests.forgetRetries()
    }

    func found(_ report: AdvertisementReport) { delegate?.transport(self, didReceive: report) }
}
