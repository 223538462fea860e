import LatchkeyAgents
import LatchkeyEvents
import LatchkeyLock
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeyPhoneAgent
import LatchkeySim
import LatchkeyTransport
import Testing

/// A 64 KiB audit-log transfer over notifications at the negotiated MTU
/// runs at ≥ 90 % of the link's rate — notifications per connection event (what the link
/// model's airtime and buffers allow) × their payload (MTU − 3) per interval — with nothing
/// lost or reordered, through the `false`/ready back-pressure path (the lock offers chunks
/// faster than the link carries them; the link's transmit queue refuses them, `updateValue`
/// answers false, and the lock resumes on `peripheralManagerIsReady`).
/// `scripts/transfer-figures` prints the `transfer-figure:` line this test writes.
struct LogTransferRateTests {
    static let dataTransferNotification: UInt8 = 0x1B

    @Test func a64KiBLogCrossesAtNinetyPercentOfTheLinksRateWithNothingLostOrReordered() throws {
        let w = try AgentWorld(autoRelock: nil, grace: .seconds(5), phoneStartsAt: 2)
        #expect(w.advance(until: { w.lockEvents.names().contains(EventKind.lockPhonePresent.name) }, limit: .seconds(3)))
        #expect(w.linkSetUp())
        w.loop.advance(by: .milliseconds(200))
        // 29-octet events in 5-octet records: 1,927 fill the 64 KiB a sealed reply carries.
        for i in 0..<1_927 {
            let record = LockOperationRecord(operation: i % 2 == 0 ? .unlock : .lock, source: .remote, who: KeyID(1))
            _ = try w.lockLog.append(LockEvent(kind: .lockOperation(record), time: w.loop.now, lockStateBefore: .locked,
                                           lockStateAfter: .unlocked, doorState: .closed))
        }
        let lock = w.phone.central.retrievePeripherals(withIdentifiers: [w.lockAddress])[0]
        let transfer = try #require(lock.service(LockServiceUUID.service)?.characteristic(LockServiceUUID.dataTransfer))
        var crossings: [(time: Instant, size: Int)] = []
        w.air.sniffer = { _, _, pdu in
            if pdu.first == Self.dataTransferNotification, UInt16(pdu[1]) | UInt16(pdu[2]) << 8 == transfer.valueHandle {
                crossings.append((w.loop.now, pdu.count - 3))
            }
        }
        let lockLink = try #require(w.air.device(w.lockAddress)?.connectedLinks.first as? SimulatedLink)
        let refusedBefore = lockLink.refusedSends

        var result: PhoneAgent.LogResult?
        w.phone.fetchLog(from: 1, limit: 2_000) { result = $0 }
        #expect(w.advance(until: { result != nil }, limit: .seconds(10)))

        // Nothing lost, nothing out of order: every event, in sequence (a lost or repeated
        // chunk fails the reassembly; a reordered one its sequence check).
        if case .failure(let e)? = result { Issue.record("\(e)") }
        let events = try #require(try? result?.get())
        #expect(events.map(\.sequence) == w.lockLog.entries.map(\.sequence))
        #expect(events.map(\.event) == w.lockLog.entries.map(\.event))
        // The phone counted what crossed (`phone-ctl fetch-log` prints it; the HIL's scenario 61).
        #expect(w.phone.lastLogTransfer?.notifications == crossings.count)
        #expect(w.phone.lastLogTransfer?.octets == crossings.map(\.size).reduce(0, +))
        // The lock met back-pressure and waited for room instead of dropping chunks.
        #expect(lockLink.refusedSends > refusedBefore, "the transmit queue never refused a chunk")

        let mtu = lock.mtu
        let interval = try #require(lockLink.connectionInterval)
        let perEvent = LinkLayerTiming.pdusPerEvent(attLength: mtu, interval: interval,
                                                    packetsPerEvent: w.air.packetsPerEvent)
        let payload = crossings.map(\.size).reduce(0, +)
        #expect(payload >= 64 * 1024, "a 64 KiB transfer: \(payload) octets")
        let first = try #require(crossings.first?.time), last = try #require(crossings.last?.time)
        // The phone's first and last chunk are the first and last notification that crossed.
        #expect(w.phone.lastLogTransfer.map { ($0.elapsed - $0.firstChunk).nanoseconds } == (last - first).nanoseconds)
        // The events the transfer spanned, its first and its last counted.
        let spanned = Int((last - first).nanoseconds / interval.nanoseconds) + 1
        let linkRate = Double(perEvent * (mtu - 3)) / (interval.milliseconds / 1000)
        let achieved = Double(payload) / ((interval.milliseconds / 1000) * Double(spanned))
        let share = achieved / linkRate
        print("transfer-figure: \(payload) octets in \(crossings.count) notifications at ATT_MTU \(mtu), "
              + "interval \(interval.milliseconds) ms, \(perEvent) per event: \(spanned) connection events, "
              + "\(Int(achieved)) B/s of a link rate of \(Int(linkRate)) B/s = \(Double(Int((share * 1000).rounded())) / 10) %; "
              + "back-pressure refusals \(lockLink.refusedSends - refusedBefore); lost 0, reordered 0")
        #expect(share >= 0.9, "\(share)")
    }
}
