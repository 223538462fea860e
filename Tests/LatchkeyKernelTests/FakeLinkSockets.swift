#if canImport(Glibc)
import Glibc
#endif
import LatchkeyPosix
import LatchkeyTransport

import LatchkeyKernelSockets
@testable import LatchkeyKernel

/// Link sockets as socketpairs: a claimed link's far end, and incoming links pushed by the
/// test through a fake listener, stand for the peer's ATT channel.
final class FakeLinkSockets: LinkSocketProvider {
    var mtu = 185
    /// Addresses the transport listened on.
    private(set) var listened: [BluetoothAddress] = []
    private(set) var listener: FakeListener?
    /// The test's end of each claimed link, by peer.
    private(set) var peerEnds: [BluetoothAddress: CInt] = [:]
    /// How many ATT channels were opened to a peer (the phone's side).
    private(set) var claims = 0
    /// When set, claims fail with this error.
    var claimFailure: KernelError?

    /// The peer of each of our ends handed out, by inode (a descriptor store hands back
    /// other descriptors for the same socket): what getpeername would say.
    private var peers: [UInt64: BluetoothAddress] = [:]
    /// Sockets whose link the test ended (getpeername would fail with ENOTCONN).
    var endedLinks: Set<UInt64> = []

    static func inode(_ fd: CInt) -> UInt64 {
        var s = stat()
        precondition(fstat(fd, &s) == 0, "fstat(\(fd))")
        return UInt64(s.st_ino)
    }

    func peer(of fd: CInt) throws(KernelError) -> BluetoothAddress {
        let inode = Self.inode(fd)
        guard let peer = peers[inode], !endedLinks.contains(inode) else {
            throw KernelError(.system, "getpeername: \(Errno.notConnected)", errno: .notConnected)
        }
        return peer
    }

    func listen(on local: BluetoothAddress) throws(KernelError) -> any LinkListener {
        listened.append(local)
        let listener = FakeListener { [weak self] fd, peer in self?.peers[Self.inode(fd)] = peer }
        self.listener = listener
        return listener
    }

    func claim(from local: BluetoothAddress, to peer: BluetoothAddress) throws(KernelError) -> (CInt, connected: Bool) {
        if let claimFailure { throw claimFailure }
        claims += 1
        let (ours, theirs) = socketPair()
        peerEnds[peer] = theirs
        peers[Self.inode(ours)] = peer
        return (ours, true)
    }

    func connectError(_ fd: CInt) -> Errno? { nil }

    func maximumTransmissionUnit(_ fd: CInt) -> Int { mtu }
}

/// A listener whose fd becomes readable when the test pushes an incoming link.
final class FakeListener: LinkListener {
    let fileDescriptor: CInt
    private let wake: CInt
    private var incoming: [(CInt, BluetoothAddress)] = []
    private(set) var isClosed = false
    private let accepted: (CInt, BluetoothAddress) -> Void

    init(accepted: @escaping (CInt, BluetoothAddress) -> Void = { _, _ in }) {
        self.accepted = accepted
        (fileDescriptor, wake) = socketPair()
    }

    /// A peer connects; returns the peer's end of the new link.
    func push(_ peer: BluetoothAddress) -> CInt {
        let (ours, theirs) = socketPair()
        accepted(ours, peer)
        incoming.append((ours, peer))
        var byte: UInt8 = 1
        _ = Glibc.send(wake, &byte, 1, Int32(MSG_DONTWAIT))
        return theirs
    }

    /// Errors the next accepts throw, in order (EMFILE and the like).
    var failures: [KernelError] = []
    private(set) var accepts = 0

    func accept() throws(KernelError) -> (CInt, BluetoothAddress)? {
        accepts += 1
        if !failures.isEmpty { throw failures.removeFirst() }
        guard !incoming.isEmpty else {
            var byte: UInt8 = 0
            while Glibc.recv(fileDescriptor, &byte, 1, Int32(MSG_DONTWAIT)) > 0 {}
            return nil
        }
        return incoming.removeFirst()
    }

    func close() { isClosed = true }
}

/// Records what a transport tells its delegate, and claims links (by default).
final class RecordingDelegate: BluetoothTransportDelegate, ATTLinkDelegate {
    var states: [RadioState] = []
    /// `isAdvertising` as the transport reported it when each state change arrived.
    var advertisingAtStateChange: [Bool] = []
    var reports: [AdvertisementReport] = []
    var links: [any ATTLink] = []
    var received: [[UInt8]] = []
    var writable = 0
    var disconnects: [DisconnectReason] = []
    var claimsLinks = true
    var refusals: [TransportRefusal] = []

    func transport(_ transport: any BluetoothTransport, didRefuse refusal: TransportRefusal) { refusals.append(refusal) }

    func transport(_ transport: any BluetoothTransport, didChangeState state: RadioState) {
        states.append(state)
        advertisingAtStateChange.append(transport.isAdvertising)
    }

    func transport(_ transport: any BluetoothTransport, didReceive report: AdvertisementReport) { reports.append(report) }

    func transport(_ transport: any BluetoothTransport, didConnect link: any ATTLink) {
        links.append(link)
        if claimsLinks { link.delegate = self }
    }

    func link(_ link: any ATTLink, didReceive pdu: [UInt8]) { received.append(pdu) }
    func linkIsWritable(_ link: any ATTLink) { writable += 1 }
    func link(_ link: any ATTLink, didDisconnect reason: DisconnectReason) { disconnects.append(reason) }
}
