import LatchkeyATT
import LatchkeyGATT
import LatchkeyTransport

/// One ATT bearer: a link plus the GATT halves that use it.
/// It routes what arrives (requests, commands and confirmations to the server half;
/// responses, notifications and indications to the client half), sends what the halves
/// produce in order, and applies the link's back-pressure: when the link says `.full`, the
/// PDU waits here and nothing is dropped; `linkIsWritable` resumes. It runs the ATT
/// transaction timeout (30 s, Vol 3 Part F 3.3.3) on the injected loop. Flow control lives
/// in this data structure, as in BlueZ's att.c. An indication and its confirmation are a
/// transaction too (3.3.3), so the same 30 s runs for the server's indication in flight.
package final class ATTBearer: ATTLinkDelegate {
    package let link: any ATTLink
    package let loop: any EventLoop
    package var server: GATTServer?
    package var client: GATTClient?

    /// Server output waiting for link room (responses first; they must never be dropped).
    private var serverOutbox: [[UInt8]] = []
    private var transactionTimer: Scheduled?
    /// Runs while the server half's indication awaits its confirmation.
    private var indicationTimer: Scheduled?
    private var blocked = false

    /// Called when the link has room again after a `.full` (ready to update subscribers).
    package var onWritable: (() -> Void)?
    package var onDisconnect: ((DisconnectReason) -> Void)?
    /// Called for every received and sent PDU, for `.trace` hex logging.
    package var trace: ((String, [UInt8]) -> Void)?

    package init(link: any ATTLink, loop: any EventLoop) {
        self.link = link
        self.loop = loop
        link.delegate = self
    }

    /// The ATT MTU in force: the client half's negotiated value, else the server half's.
    package var mtu: Int { max(client?.mtu ?? ATTLimits.minimumMTU, server?.mtu ?? ATTLimits.minimumMTU) }

    // MARK: ATTLinkDelegate

    package func link(_ link: any ATTLink, didReceive pdu: [UInt8]) {
        trace?("rx", pdu)
        guard let first = pdu.first else { return }
        let op = ATTOpcode(rawValue: first)
        if op.isServerToClient {
            if op != .handleValueNotification && op != .handleValueIndication {
                // A response ends the transaction; the next request gets a fresh 30 s.
                transactionTimer?.cancel()
                transactionTimer = nil
            }
            client?.receive(pdu[...])
        } else if let server {
            if let response = server.handle(pdu[...]) { serverOutbox.append(response) }
            if !server.indicationPending {
                indicationTimer?.cancel()
                indicationTimer = nil
            }
        } else if !op.isCommand && op != .handleValueConfirmation {
            // No GATT server on this side: every request still gets an answer (3.4.9).
            serverOutbox.append(ATTPDU.errorResponse(request: op, handle: 0, error: .requestNotSupported).bytes)
        }
        flush()
    }

    package func linkIsWritable(_ link: any ATTLink) {
        blocked = false
        flush()
        if !blocked { onWritable?() }
    }

    package func link(_ link: any ATTLink, didDisconnect reason: DisconnectReason) {
        transactionTimer?.cancel()
        transactionTimer = nil
        indicationTimer?.cancel()
        indicationTimer = nil
        serverOutbox.removeAll()
        client?.disconnected()
        onDisconnect?(reason)
    }

    // MARK: Sending

    /// Sends whatever the halves have queued, until the link is full.
    package func flush() {
        guard link.isConnected else { return }
        while !blocked, !serverOutbox.isEmpty {
            if !transmit(serverOutbox[0]) { return }
            serverOutbox.removeFirst()
        }
        while !blocked, let client, let pdu = client.nextOutgoing() {
            if !transmit(pdu) { client.requeueFront(pdu); return }
            // The transaction starts when its request is sent (3.3.3), whatever still waits
            // behind it in the outbox.
            if let op = pdu.first, ATTOpcode(rawValue: op).isRequest { startTransactionTimer() }
        }
        if client?.isAwaitingResponse != true {
            transactionTimer?.cancel()
            transactionTimer = nil
        }
    }

    /// Sends a notification or indication built by the server half. False when the link is
    /// full (or other output waits first): Core Bluetooth's `updateValue` returning false.
    package func sendServerInitiated(_ pdu: [UInt8]) -> Bool {
        guard serverOutbox.isEmpty, !blocked else { return false }
        guard transmit(pdu) else { return false }
        if pdu.first == ATTOpcode.handleValueIndication.rawValue { startIndicationTimer() }
        return true
    }

    package var isBlocked: Bool { blocked }

    private func transmit(_ pdu: [UInt8]) -> Bool {
        switch link.send(pdu) {
        case .sent:
            trace?("tx", pdu)
            return true
        case .full:
            blocked = true
            return false
        case .disconnected:
            blocked = true
            return false
        }
    }

    private func startTransactionTimer() {
        transactionTimer?.cancel()
        transactionTimer = loop.schedule(after: ATTLimits.transactionTimeout) { [weak self] in
            guard let self, let client = self.client, client.isAwaitingResponse else { return }
            self.transactionTimer = nil
            client.transactionTimedOut()
            // 3.3.3: after a timeout no more ATT PDUs may be sent on this bearer.
            self.link.disconnect()
        }
    }

    /// A client that never confirms would otherwise hold every later indication on this
    /// bearer for as long as the link lasts (only one may be outstanding, 3.4.7.2).
    private func startIndicationTimer() {
        indicationTimer?.cancel()
        indicationTimer = loop.schedule(after: ATTLimits.transactionTimeout) { [weak self] in
            guard let self, self.server?.indicationPending == true else { return }
            self.indicationTimer = nil
            // 3.3.3: the transaction has failed; no more ATT PDUs on this bearer.
            self.link.disconnect()
        }
    }
}
