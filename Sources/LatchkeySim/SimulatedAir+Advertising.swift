import LatchkeyTransport

/// Advertising events and the connection setup they can trigger.
///
/// An advertiser's events are scheduled only while some powered device in range could
/// hear them: an application scan, or a pending-connection list waiting for this address.
/// When nobody listens, the timer is cancelled and the advertiser's phase is kept; when a
/// listener appears, the next event is the kept one moved forward by whole intervals (the
/// skipped events would have reached nobody, so their jitter is not drawn).
extension SimulatedAir {
    /// advDelay, the pseudo-random 0–10 ms added to every advertising interval
    /// (Core Vol 6 Part B 4.4.2.2.1).
    static let maximumAdvertisingDelay = Duration.milliseconds(10)

    func drawAdvertisingDelay() -> Duration {
        .nanoseconds(Int64(random.next(through: UInt64(Self.maximumAdvertisingDelay.nanoseconds))))
    }

    /// Starts or stops `advertiser`'s event timer so that it runs exactly while it could be heard.
    func updateAdvertisingTimer(of advertiser: SimulatedController) {
        guard let advertisement = advertiser.advertisement, hasListener(for: advertiser, advertisement) else {
            advertiser.advertisingTimer?.cancel()
            advertiser.advertisingTimer = nil
            return
        }
        guard advertiser.advertisingTimer == nil else { return }
        var next = advertiser.nextAdvertisingEvent ?? loop.now
        if next < loop.now {
            let step = advertisement.interval.nanoseconds
            let skipped = ((loop.now - next).nanoseconds + step - 1) / step
            next = next + .nanoseconds(skipped * step)
        }
        advertiser.nextAdvertisingEvent = next
        advertiser.advertisingTimer = loop.schedule(at: next) { [unowned self, unowned advertiser] in
            self.advertisingEvent(of: advertiser)
        }
    }

    private func hasListener(for advertiser: SimulatedController, _ advertisement: Advertisement) -> Bool {
        devices.contains { device in
            device !== advertiser && device.state == .poweredOn && inRange(device, advertiser)
                && (device.isScanning
                    || (advertisement.connectable && device.wantsToConnect(to: advertiser.address)))
        }
    }

    /// One advertising event at `loop.now`: every in-range scanner whose window is open gets
    /// a report, then the first device (in order of addition) whose pending list holds the
    /// advertiser and whose background scan window is open sends it a connection request.
    private func advertisingEvent(of advertiser: SimulatedController) {
        advertiser.advertisingTimer = nil
        guard let advertisement = advertiser.advertisement else { return }
        let now = loop.now
        for device in devices where device !== advertiser && device.state == .poweredOn && inRange(device, advertiser) {
            device.hear(advertisement, from: advertiser, at: now)
        }
        if advertisement.connectable,
           let central = devices.first(where: { device in
               device !== advertiser && device.state == .poweredOn && inRange(device, advertiser)
                   && device.wantsToConnect(to: advertiser.address)
                   && device.backgroundScan?.isOpen(at: now) == true
           }) {
            beginConnection(from: central, to: advertiser)
        }
        if advertiser.advertisement != nil {
            advertiser.nextAdvertisingEvent = now + advertisement.interval + drawAdvertisingDelay()
        }
        radioActivityDidChange()
    }

    // MARK: Connection setup

    /// The central has sent CONNECT_IND. A legacy connectable advertiser stops advertising
    /// on it (Core Vol 6 Part B 4.4.2.3); the link is established one connection interval
    /// later: the first connection event lies within transmitWindowOffset (0 to
    /// connInterval, Core Vol 6 Part B 2.3.3.1) after the request, and we take the worst case.
    private func beginConnection(from central: SimulatedController, to peripheral: SimulatedController) {
        peripheral.suspendAdvertisingForIncomingConnection()
        central.connecting.insert(peripheral.address)
        central.updateBackgroundScan()
        let parameters = central.connectionParameters
        loop.schedule(after: parameters.connectionInterval) { [unowned self] in
            self.establishConnection(from: central, to: peripheral, parameters: parameters)
        }
    }

    /// The first connection event: the link is up if both ends are still on, in range, and
    /// the central still wants it. Otherwise the attempt fails quietly: the central goes
    /// back to its background scan and the peripheral resumes the advertising it had.
    private func establishConnection(from central: SimulatedController, to peripheral: SimulatedController,
                                     parameters: ConnectionParameters) {
        central.connecting.remove(peripheral.address)
        let resumable = peripheral.advertisingSuspendedForConnection
        peripheral.advertisingSuspendedForConnection = nil
        guard central.state == .poweredOn, peripheral.state == .poweredOn, inRange(central, peripheral),
              central.pendingConnections.contains(peripheral.address), !central.isLinked(to: peripheral.address)
        else {
            if let resumable { peripheral.resumeAdvertising(resumable) }
            central.updateBackgroundScan()
            radioActivityDidChange()
            return
        }
        let connection = SimulatedConnection(id: makeLinkID(), central: central, peripheral: peripheral,
                                             parameters: parameters, air: self)
        connections.append(connection)
        central.linkDidComeUp(connection.centralEnd)
        peripheral.linkDidComeUp(connection.peripheralEnd)
        radioActivityDidChange()
    }

    func connectionDidClose(_ connection: SimulatedConnection) {
        connections.removeAll { $0 === connection }
    }
}

extension AdvertisingData {
    /// What an active scanner reports: the advertising data with the scan response merged
    /// in, as the kernel merges ADV_IND and SCAN_RSP into one Device Found event
    /// (net/bluetooth/hci_event.c, process_adv_report). The response's name wins (it
    /// usually carries the complete name the advertising packet had no room for); other
    /// fields come from the advertising data first; service UUIDs are the union.
    func merged(withScanResponse response: AdvertisingData?) -> AdvertisingData {
        guard let response else { return self }
        var merged = self
        merged.flags = flags ?? response.flags
        merged.serviceUUIDs += response.serviceUUIDs.filter { !serviceUUIDs.contains($0) }
        merged.localName = response.localName ?? localName
        merged.manufacturerData = manufacturerData ?? response.manufacturerData
        return merged
    }
}
