import LatchkeyATT
import LatchkeyGATT
import LatchkeyManagers
import LatchkeyTransport

/// What connected centrals were last told of the database's structure, with its hash (what
/// a relaunch compares the database it publishes with).
struct AnnouncedLayout {
    let layout: [GATTLayoutEntry]
    let hash: [UInt8]
    init(_ layout: [GATTLayoutEntry]) {
        self.layout = layout
        hash = GATTDatabase.hash(of: layout)
    }
}

/// One central's Service Changed indication: the range still to send, and the one sent and
/// not yet confirmed. Both are preserved, so a relaunch sends again what was never confirmed.
struct PendingServiceChange: Equatable {
    var toSend: ClosedRange<UInt16>?
    var inFlight: ClosedRange<UInt16>?

    /// Everything the central has not confirmed yet.
    var unconfirmed: ClosedRange<UInt16>? { Self.union(toSend, inFlight) }

    mutating func add(_ range: ClosedRange<UInt16>) { toSend = Self.union(toSend, range) }

    static func union(_ a: ClosedRange<UInt16>?, _ b: ClosedRange<UInt16>?) -> ClosedRange<UInt16>? {
        guard let a else { return b }
        guard let b else { return a }
        return min(a.lowerBound, b.lowerBound)...max(a.upperBound, b.upperBound)
    }
}

// Service Changed (Core Vol 3 Part G 7.1) for PeripheralManager: when the published services'
// handles change under connected centrals — services added or removed while they are
// connected, or a relaunch that publishes something other than what the preserved state
// describes — each central that enabled the indication is told the range to discover again,
// and every connected central becomes change-unaware (Robust Caching, 2.5.2.1) until it
// confirms. Nothing is sent when the structure is what they knew.
extension PeripheralManager {
    /// Announces on the next turn, once: the calls of one turn (a remove and an add) are one
    /// change, and a remove followed by an identical add is none.
    func scheduleServiceChangeAnnouncement() {
        guard !announcementScheduled, preservation?.isRestoring != true, preservation?.isReconciling != true else { return }
        announcementScheduled = true
        transport.loop.execute { [weak self] in self?.announceServiceChange() }
    }

    /// Compares the database with what connected centrals were last told, marks them
    /// change-unaware and queues the indication for those that asked for it. `restoring`:
    /// the comparison is with the preserved run's database, reported even with no central
    /// connected (it is a recovery event).
    func announceServiceChange(restoring: Bool = false) {
        announcementScheduled = false
        let current = database.layout
        let range = announced.map { GATTDatabase.changedRange(from: $0.layout, to: current) }
            ?? 0x0001...0xFFFF  // a structure nobody knows: everything may have moved
        announced = AnnouncedLayout(current)
        if let range {
            for central in centrals {
                forgetSubscriptions(of: central, in: range)
                central.server.markChangeUnaware()
                if central.server.wantsServiceChanged { central.serviceChange.add(range) }
            }
            if restoring || !centrals.isEmpty {
                delegate?.peripheralManager(self, didChangeServicesIn: range, centrals: centrals)
            }
        }
        for central in centrals { sendPendingServiceChange(to: central) }
        preserve()
    }

    /// A subscription in a changed range was made to an attribute that may be gone or moved:
    /// it ends (the central subscribes again once it has discovered the range). Service
    /// Changed's own stays: it never moves.
    private func forgetSubscriptions(of central: Central, in range: ClosedRange<UInt16>) {
        central.server.forgetClientConfigurations(in: range, except: central.server.serviceChangedHandle)
        for s in services {
            for c in s.characteristics where range.contains(c.valueHandle) && c.subscribedCentrals.contains(where: { $0 === central }) {
                c.subscribedCentrals.removeAll { $0 === central }
                delegate?.peripheralManager(self, central: central, didUnsubscribeFrom: c)
            }
        }
    }

    /// Sends the central's pending indication if its link can carry it now; otherwise the
    /// link's writable signal, or the confirmation of the indication in flight, tries again.
    func sendPendingServiceChange(to central: Central) {
        guard let range = central.serviceChange.toSend, central.serviceChange.inFlight == nil else { return }
        switch central.server.serviceChangedIndication(range) {
        case .success(let pdu):
            guard central.bearer.sendServerInitiated(pdu) else {
                central.server.cancelIndication()
                return
            }
            central.serviceChange.inFlight = range
            central.serviceChange.toSend = nil
        case .failure(.indicationInFlight):
            break  // an app indication awaits its confirmation; ours follows it
        case .failure:
            central.serviceChange.toSend = nil  // it unsubscribed meanwhile: nothing to tell
        }
    }

    // MARK: GATTServerDelegate

    public func server(_ server: GATTServer, didConfirmIndicationAt handle: UInt16) {
        guard let central = central(for: server) else { return }
        if handle == server.serviceChangedHandle {
            central.serviceChange.inFlight = nil
            preserve()
        }
        sendPendingServiceChange(to: central)
    }

    public func server(_ server: GATTServer, didChangeClientFeatures features: ClientSupportedFeatures) {
        preserve()
    }

    /// A relaunch restores each link's MTU: before the phone subscribes (which waits for its
    /// first command's session, docs/SECURITY.md) nothing else would preserve it, and the
    /// restored bearer would refuse the phone's next sealed write as longer than 23 octets.
    public func server(_ server: GATTServer, didExchangeMTU mtu: Int) {
        preserve()
    }
}
