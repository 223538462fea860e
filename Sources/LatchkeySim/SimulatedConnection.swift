import LatchkeyTransport

/// The connection between two ends: connection events, supervision timeout, termination.
/// Events fall at anchor + k·connInterval, scheduled only while an end has PDUs queued (an idle
/// link costs no timer); the first `LinkLayerTiming.setupEvents` belong to the link layer's
/// setup. An event carries exchanges while one side has more, the buffers allow and the
/// airtime fits; an answer goes in a later event. Out of range, the link is lost
/// `supervisionTimeout` after the last successful anchor (Core Vol 6 Part B 4.5.2). An
/// interval change (`requestInterval`, 5.1.1) takes effect at its instant, no window offset.
final class SimulatedConnection {
    let id: LinkID
    unowned let air: SimulatedAir
    private(set) var anchor: Instant
    private(set) var interval: Duration
    let supervisionTimeout: Duration
    let packetsPerEvent: Int
    /// The first event that may carry ATT PDUs: the link-layer setup comes before it.
    let firstDataEvent: Instant
    /// [central end, peripheral end] while open; emptied on close to break the cycle.
    private var ends: [SimulatedLink] = []
    private var eventTimer: Scheduled?
    private var supervisionTimer: Scheduled?
    /// A disconnect waiting for the next connection event.
    private var termination: (from: SimulatedLink, localReason: DisconnectReason, remoteReason: DisconnectReason)?
    /// One end closed while the other could not hear it: that end can only time out.
    private var abandoned = false
    /// The interval the central asked for, while its update is not done.
    private var wantedInterval: Duration?
    /// The update's LL PDU waits for the next event.
    private var updateIndicationDue = false
    /// The update's instant, once its PDU went.
    private var updateTimer: Scheduled?

    init(id: LinkID, central: SimulatedController, peripheral: SimulatedController,
         parameters: ConnectionParameters, air: SimulatedAir) {
        self.id = id
        self.air = air
        self.anchor = air.loop.now
        self.interval = parameters.connectionInterval
        self.supervisionTimeout = parameters.supervisionTimeout
        self.packetsPerEvent = air.packetsPerEvent
        self.firstDataEvent = air.loop.now + parameters.connectionInterval * (1 + LinkLayerTiming.setupEvents)
        ends = [
            SimulatedLink(id: id, peer: peripheral.address, role: .central, controller: central, connection: self),
            SimulatedLink(id: id, peer: central.address, role: .peripheral, controller: peripheral, connection: self),
        ]
    }

    var centralEnd: SimulatedLink { ends[0] }
    var peripheralEnd: SimulatedLink { ends[1] }
    private var isOpen: Bool { !ends.isEmpty }
    private var loop: any EventLoop { air.loop }
    private var inRange: Bool { air.inRange(ends[0].controller, ends[1].controller) }

    private func other(_ end: SimulatedLink) -> SimulatedLink { end === ends[0] ? ends[1] : ends[0] }

    // MARK: Connection events

    /// The first anchor strictly after `t`.
    private func nextAnchor(after t: Instant) -> Instant {
        anchor + interval * Int((t - anchor).nanoseconds / interval.nanoseconds + 1)
    }

    /// The last anchor at or before `t`.
    private func lastAnchor(atOrBefore t: Instant) -> Instant {
        anchor + interval * Int((t - anchor).nanoseconds / interval.nanoseconds)
    }

    func scheduleEventIfNeeded() {
        guard isOpen, !abandoned, eventTimer == nil else { return }
        let due = termination != nil || (inRange && (updateIndicationDue || ends.contains { $0.queuedCount > 0 }))
        guard due else { return }
        let next = nextAnchor(after: loop.now)
        let at = termination != nil ? next : max(next, firstDataEvent)
        eventTimer = loop.schedule(at: at) { [weak self] in self?.connectionEvent() }
    }

    /// How many PDUs each end sends in this event: exchanges of one packet each way (empty
    /// when a side has nothing), while either side has more, up to `packetsPerEvent`, and
    /// only while the exchange ends one T_IFS before the next anchor. The first exchange
    /// always happens.
    /// `control`: the central's first packet is an LL control PDU, not one of its ATT PDUs.
    private func carriedThisEvent(_ central: SimulatedLink, _ peripheral: SimulatedLink,
                                  control: Bool) -> (up: Int, down: Int) {
        var up = 0, down = 0, exchanges = 0
        var airtime = Duration.zero
        let budget = interval - LinkLayerTiming.interFrameSpace
        if control {
            let p = peripheral.queuedPDU(at: 0)
            airtime = LinkLayerTiming.controlExchange(peripheral: p?.count)
            exchanges = 1
            if p != nil { down = 1 }
        }
        while exchanges < packetsPerEvent, up < central.queuedCount || down < peripheral.queuedCount {
            let c = central.queuedPDU(at: up), p = peripheral.queuedPDU(at: down)
            let cost = LinkLayerTiming.exchange(central: c?.count, peripheral: p?.count)
            if exchanges > 0 && airtime + cost > budget { break }
            airtime += cost
            exchanges += 1
            if c != nil { up += 1 }
            if p != nil { down += 1 }
        }
        return (up, down)
    }

    private func connectionEvent() {
        eventTimer = nil
        guard isOpen, !abandoned else { return }
        if let termination {
            finishTermination(termination)
            return
        }
        guard inRange else { return }  // resumes from rangeDidChange
        let central = ends[0], peripheral = ends[1]
        let control = updateIndicationDue
        if control { sendUpdateIndication() }
        let carried = carriedThisEvent(central, peripheral, control: control)
        let up = central.dequeue(upTo: carried.up)
        let down = peripheral.dequeue(upTo: carried.down)
        if let sniffer = air.sniffer {
            // Each end's peer is the other end's address.
            for pdu in up { sniffer(peripheral.peer, central.peer, pdu) }
            for pdu in down { sniffer(central.peer, peripheral.peer, pdu) }
        }
        for pdu in up { peripheral.receive(pdu) }
        for pdu in down { central.receive(pdu) }
        central.noteRoom()
        peripheral.noteRoom()
        scheduleEventIfNeeded()
    }

    // MARK: Connection update

    /// The central asks for `newInterval`. One procedure at a time: asked for during one, it
    /// follows once that one's instant has passed.
    func requestInterval(_ newInterval: Duration) {
        guard isOpen, !abandoned else { return }
        wantedInterval = newInterval
        guard updateTimer == nil, !updateIndicationDue else { return }
        guard newInterval != interval else { wantedInterval = nil; return }
        updateIndicationDue = true
        scheduleEventIfNeeded()
    }

    /// At an event: the LL_CONNECTION_UPDATE_IND goes, naming the instant.
    private func sendUpdateIndication() {
        updateIndicationDue = false
        guard let wanted = wantedInterval else { return }
        let instant = loop.now + interval * LinkLayerTiming.updateInstantEvents
        updateTimer = loop.schedule(at: instant) { [weak self] in self?.applyUpdate(wanted, at: instant) }
    }

    private func applyUpdate(_ newInterval: Duration, at instant: Instant) {
        updateTimer = nil
        guard isOpen else { return }
        anchor = instant
        interval = newInterval
        if wantedInterval == newInterval { wantedInterval = nil }
        for end in ends where end.phase == .up { end.delegate?.linkDidUpdateConnectionInterval(end) }
        // An event due on the old grid is due at the instant, the new grid's first anchor.
        if eventTimer != nil && termination == nil {
            eventTimer?.cancel()
            eventTimer = loop.schedule(at: instant) { [weak self] in self?.connectionEvent() }
        }
        if let again = wantedInterval { wantedInterval = nil; requestInterval(again) }
        scheduleEventIfNeeded()
    }

    // MARK: Range and supervision

    func rangeDidChange() {
        guard isOpen else { return }
        if inRange {
            if !abandoned {
                supervisionTimer?.cancel()
                supervisionTimer = nil
            }
            scheduleEventIfNeeded()
        } else if supervisionTimer == nil {
            let deadline = lastAnchor(atOrBefore: loop.now) + supervisionTimeout
            supervisionTimer = loop.schedule(at: deadline) { [weak self] in self?.supervisionTimedOut() }
        }
    }

    private func supervisionTimedOut() {
        supervisionTimer = nil
        close(ends, reason: { _ in .connectionTimeout })
    }

    // MARK: Termination

    /// A disconnect carried over the air (LL_TERMINATE_IND) at the next connection event.
    func terminate(from end: SimulatedLink, localReason: DisconnectReason, remoteReason: DisconnectReason) {
        guard isOpen, termination == nil, end.phase == .up else { return }
        termination = (end, localReason, remoteReason)
        end.beginClosing()  // the peer learns of it only at the event
        eventTimer?.cancel()
        eventTimer = nil
        scheduleEventIfNeeded()
    }

    private func finishTermination(_ t: (from: SimulatedLink, localReason: DisconnectReason, remoteReason: DisconnectReason)) {
        termination = nil
        if inRange {
            close(ends, reason: { $0 === t.from ? t.localReason : t.remoteReason })
        } else {
            abandonPeer(of: t.from, localReason: t.localReason)
        }
    }

    /// Ends the link now, without waiting for a connection event (the controller is going
    /// away). The peer hears `remoteReason` if in range; otherwise it times out.
    func endImmediately(from end: SimulatedLink, localReason: DisconnectReason, remoteReason: DisconnectReason) {
        guard isOpen, end.phase != .closed else { return }
        termination = nil
        eventTimer?.cancel()
        eventTimer = nil
        if inRange && other(end).phase != .closed {
            close(ends, reason: { $0 === end ? localReason : remoteReason })
        } else {
            abandonPeer(of: end, localReason: localReason)
        }
    }

    /// `end` is gone but its peer did not hear it go: the peer's supervision timer runs out
    /// whatever happens to the range.
    private func abandonPeer(of end: SimulatedLink, localReason: DisconnectReason) {
        close([end], reason: { _ in localReason })
        guard isOpen else { return }
        abandoned = true
        eventTimer?.cancel()
        eventTimer = nil
        if supervisionTimer == nil {
            supervisionTimer = loop.schedule(at: lastAnchor(atOrBefore: loop.now) + supervisionTimeout) { [weak self] in
                self?.supervisionTimedOut()
            }
        }
    }

    private func close(_ closing: [SimulatedLink], reason: (SimulatedLink) -> DisconnectReason) {
        for end in closing where end.phase != .closed { end.close(reason: reason(end)) }
        guard ends.allSatisfy({ $0.phase == .closed }) else { return }
        eventTimer?.cancel()
        supervisionTimer?.cancel()
        updateTimer?.cancel()
        eventTimer = nil
        supervisionTimer = nil
        updateTimer = nil
        ends = []
        air.connectionDidClose(self)
    }
}
