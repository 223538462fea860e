import LatchkeyATT
import LatchkeyPosix
import LatchkeySim
import LatchkeyTransport
import Testing

@testable import LatchkeySimAir

/// An air server and two remote transports on one real-time loop over a real socket.
@Suite struct AirServerTests {
    typealias H = AirHarness

    @Test func welcomeBringsTheControllerAndStateIsUnknownBefore() throws {
        let h = try AirHarness()
        let lock = try h.agent(H.lockAddress, at: 0)
        #expect(lock.transport.state == .unknown)
        #expect(throws: TransportError.self, "no radio before the welcome") {
            try lock.transport.startAdvertising(H.lockAdvertisement)
        }
        try h.attached(lock)
        #expect(lock.transport.state == .poweredOn)
        #expect(lock.states == [.poweredOn], "the first callback is the state update")
        #expect(h.server.controller(H.lockAddress) != nil)
    }

    @Test func advertisingIsSeenByAScanner() throws {
        let h = try AirHarness()
        let lock = try h.agent(H.lockAddress, at: 0)
        let phone = try h.agent(H.phoneAddress, at: 2)
        try h.attached(lock)
        try h.attached(phone)
        try lock.transport.startAdvertising(H.lockAdvertisement)
        #expect(lock.transport.isAdvertising)
        try phone.transport.startScanning(ScanParameters(active: true, interval: .milliseconds(20),
                                                         window: .milliseconds(20)))
        try h.wait("a report") { !phone.reports.isEmpty }
        #expect(phone.reports[0].address == H.lockAddress)
        #expect(phone.reports[0].data.localName == "Latchkey")
        #expect(phone.transport.isScanning)
        #expect(h.server.controller(H.phoneAddress)?.isScanning == true)
    }

    @Test func aRefusedCallIsReportedAndTheMirrorCorrected() throws {
        let h = try AirHarness()
        let lock = try h.agent(H.lockAddress, at: 0)
        try h.attached(lock)
        var failures: [TransportError] = []
        lock.transport.onCommandFailed = { failures.append($0) }
        // 10 ms is below the 20 ms minimum the air-side controller enforces.
        try lock.transport.startAdvertising(Advertisement(data: AdvertisingData(), interval: .milliseconds(10)))
        #expect(lock.transport.isAdvertising, "mirrored at once")
        try h.wait("refusal") { !failures.isEmpty }
        #expect(failures[0].code == .invalidParameters)
        #expect(!lock.transport.isAdvertising, "corrected by the air's status")
    }

    @Test func pendingConnectionLinksAndPDUsFlowBothWays() throws {
        let h = try AirHarness()
        let (lock, phone) = try h.linked()
        #expect(phone.link?.role == .central && phone.link?.peer == H.lockAddress)
        #expect(lock.link?.role == .peripheral && lock.link?.peer == H.phoneAddress)
        #expect(phone.transport.pendingConnections == [H.lockAddress])
        #expect(phone.transport.connectedLinks.count == 1)

        lock.onReceive = { link, pdu in if pdu.first == 0x02 { _ = link.send([0x03, 0xF7, 0x00]) } }
        #expect(phone.link?.send([0x02, 0x17, 0x00]) == .sent)  // ATT Exchange MTU Request
        try h.wait("the response") { !phone.received.isEmpty }
        #expect(lock.received == [[0x02, 0x17, 0x00]])
        #expect(phone.received == [[0x03, 0xF7, 0x00]])

        try h.wait("an idle linked world schedules nothing: the loop sleeps in poll") { h.loop.pendingTimerCount == 0 }

        let devices = try h.devices()
        #expect(devices[H.phoneAddress]?.status.pendingConnections == [H.lockAddress])
        #expect(devices[H.phoneAddress]?.links.map(\.claimed) == [true])
        #expect(devices[H.lockAddress]?.attached == true)
    }

    @Test func theCentralsConnectionUpdateReachesBothAgents() throws {
        let h = try AirHarness()
        let (lock, phone) = try h.linked()
        #expect(lock.link?.requestConnectionInterval(.milliseconds(30)) == false, "the peripheral cannot order one")
        #expect(phone.link?.requestConnectionInterval(.milliseconds(30)) == true)
        try h.wait("both ends at 30 ms after the update's instant") {
            phone.link?.connectionInterval == .milliseconds(30) && lock.link?.connectionInterval == .milliseconds(30)
        }
        // One the link would not survive (the harness's 100 ms supervision timeout): the air says so.
        var failed: [TransportError] = []
        phone.transport.onCommandFailed = { failed.append($0) }
        #expect(phone.link?.requestConnectionInterval(.milliseconds(60)) == true)
        try h.wait("the air's refusal") { !failed.isEmpty }
        #expect(failed.first?.code == .invalidParameters)
        #expect(phone.link?.connectionInterval == .milliseconds(30))
    }

    @Test func backPressureFullThenWritableEndToEnd() throws {
        let h = try AirHarness()
        let (lock, phone) = try h.linked()
        let link = try #require(lock.link as? RemoteLink)
        let total = 60
        var next = 0, fullCount = 0, firstFullAt: Int?
        func pump() {
            while next < total {
                switch link.send([0x1B, UInt8(next)]) {  // Handle Value Notification-sized PDUs
                case .sent: next += 1
                case .full:
                    fullCount += 1
                    if firstFullAt == nil { firstFullAt = next }
                    return
                case .disconnected: return
                }
            }
        }
        lock.onWritable = { _ in pump() }
        pump()
        #expect(firstFullAt == link.window, "nothing is credited back before the loop turns")
        try h.wait("all delivered") { phone.received.count == total }
        #expect(phone.received == (0..<total).map { [0x1B, UInt8($0)] }, "in order, nothing lost")
        #expect(fullCount > 1, "the air-side link filled too, so the credits stalled more than once")
        #expect(lock.writableCount == fullCount, "one linkIsWritable per .full episode")
        #expect(link.inFlight == 0)
    }

    @Test func aKilledAgentIsDetachedAndItsPendingListKeptThenReadopted() throws {
        let h = try AirHarness()
        h.server.unclaimedLinkTimeout = .seconds(10)  // not reached here
        let (lock, phone) = try h.linked()
        let linkID = try #require(phone.link?.id)
        try phone.transport.startScanning(ScanParameters())
        try h.wait("scanning in the air") { h.server.controller(H.phoneAddress)?.isScanning == true }
        phone.transport.close()  // the process dies: its socket closes
        try h.wait("detached") { !h.server.isAttached(H.phoneAddress) }
        let controller = try #require(h.server.controller(H.phoneAddress))
        #expect(controller.pendingConnections == [H.lockAddress], "the system keeps the pending list")
        #expect(controller.delegate == nil, "detachApplication cleared the delegate")
        #expect(!controller.isScanning, "detachApplication stopped the dead app's scan")
        #expect(controller.connectedLinks.map(\.id) == [linkID], "the link outlives the process for a while")
        #expect(lock.disconnects.isEmpty)
        #expect(h.lines.contains { $0.contains("agent detached") })

        let relaunched = try h.agent(H.phoneAddress, at: 50)
        try h.attached(relaunched)
        #expect(h.server.air.position(of: H.phoneAddress) == 1, "a relaunch does not move the device")
        #expect(relaunched.transport.pendingConnections == [H.lockAddress])
        let adopted = try #require(relaunched.transport.connectedLinks.first)
        #expect(adopted.id == linkID && adopted.peer == H.lockAddress)
        adopted.delegate = relaunched
        #expect(lock.link?.send([0x1B, 0x01]) == .sent)
        try h.wait("PDU on the adopted link") { relaunched.received == [[0x1B, 0x01]] }
        #expect(try h.devices()[H.phoneAddress]?.links.map(\.claimed) == [true])
    }

    @Test func linksNobodyClaimsAreDroppedAfterTheIdleTimeout() throws {
        let h = try AirHarness()
        h.server.unclaimedLinkTimeout = .milliseconds(50)
        let (lock, phone) = try h.linked()
        phone.transport.close()
        try h.wait("detached") { !h.server.isAttached(H.phoneAddress) }
        let relaunched = try h.agent(H.phoneAddress)
        relaunched.claimsLinks = false
        try h.attached(relaunched)
        #expect(relaunched.transport.connectedLinks.count == 1)
        // Not adopted: the air drops it after its idle timeout; the lock sees it end,
        // re-advertises, and the pending list (kept by the system) links them again, this
        // time through didConnect, which this app does not claim either.
        try h.wait("dropped") { !lock.disconnects.isEmpty }
        #expect(lock.disconnects[0] == .remoteUserTerminated)
        try h.wait("relinked and dropped again") { relaunched.connected.count >= 1 && lock.disconnects.count >= 2 }
        #expect(h.lines.contains { $0.contains("unclaimed") })
    }

    @Test func walkingAwayLosesTheLinkAndComingBackRestoresIt() throws {
        let h = try AirHarness()
        let (lock, phone) = try h.linked()
        try h.control { $0.setPosition(100, of: H.phoneAddress, $1) }
        try h.wait("supervision timeout") { !phone.disconnects.isEmpty }
        #expect(phone.disconnects == [.connectionTimeout])
        #expect(phone.transport.connectedLinks.isEmpty)
        #expect(phone.transport.pendingConnections == [H.lockAddress], "the request never times out")
        try h.control { $0.setPosition(1, of: H.phoneAddress, $1) }
        try h.wait("back home, linked again") { phone.connected.count == 2 && lock.connected.count == 2 }
        #expect(phone.transport.connectedLinks.count == 1)
    }

    @Test func powerOffAndOnThroughTheControlChannel() throws {
        let h = try AirHarness()
        let (lock, phone) = try h.linked()
        try h.control { $0.powerOff(H.lockAddress, $1) }
        try h.wait("powered off") { lock.transport.state == .poweredOff && !phone.disconnects.isEmpty }
        #expect(lock.states.last == .poweredOff)
        #expect(phone.disconnects == [.remotePowerOff])
        #expect(lock.disconnects == [.localHostTerminated])
        #expect(throws: TransportError.self) { try lock.transport.startAdvertising(H.lockAdvertisement) }
        try h.control { $0.powerOn(H.lockAddress, $1) }
        try h.wait("powered on") { lock.transport.state == .poweredOn }
        #expect(throws: AirControlError.self) {
            try h.control { $0.powerOn(BluetoothAddress(0x99), $1) }
        }
    }

    @Test func malformedOrOutOfOrderMessagesAreRejectedAndTheAirCarriesOn() throws {
        let h = try AirHarness()
        let hello = AirMessage.helloAgent(version: AirMessage.version, address: H.phoneAddress, position: nil).encoded()
        let conversations: [[[UInt8]]] = [
            [[0x7F]],                                             // unknown kind
            [AirMessage.stopScanning.encoded()],                  // a command before hello
            [AirMessage.helloControl(version: 99).encoded()],     // unsupported version
            [hello, [0x10, 0x02]],                                // truncated command from an attached agent
            [hello, AirMessage.welcome(version: 1, status: ControllerStatus(
                state: .poweredOn, isAdvertising: false, isScanning: false, pendingConnections: []), links: []).encoded()],
        ]
        for messages in conversations {
            let channel = PacketChannel(socket: try SeqPacketSocket.connect(to: h.socketPath), loop: h.loop)
            var replies: [AirMessage] = []
            var closed = false
            channel.onMessage = { replies.append((try? AirMessage(decoding: $0)) ?? .rejected("undecodable")) }
            channel.onClose = { _ in closed = true }
            for message in messages { channel.send(message) }
            try h.wait("rejected and closed") { closed }
            guard case .rejected = replies.last else {
                Issue.record("expected a rejection last, got \(replies)")
                continue
            }
            #expect(!h.server.isAttached(H.phoneAddress), "a rejected agent is detached")
        }
        let lock = try h.agent(H.lockAddress)
        try h.attached(lock)
    }

    @Test func theAirGoingAwayEndsLinksAndPowersOff() throws {
        let h = try AirHarness()
        let (_, phone) = try h.linked()
        h.server.stop()
        try h.wait("noticed") { phone.transport.state == .poweredOff }
        #expect(phone.disconnects == [.connectionTimeout])
        #expect(!phone.transport.isAttached)
    }
}
