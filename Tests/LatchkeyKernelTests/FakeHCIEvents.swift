#if canImport(Glibc)
import Glibc
#endif
import LatchkeyMgmt
import LatchkeyPosix

import LatchkeyKernelSockets
@testable import LatchkeyKernel

/// HCI event sources as socketpairs: the test's end stands for the controller's events,
/// as a raw HCI socket would copy them.
final class FakeHCIEvents: HCIEventSourceProvider {
    /// When set, `open` fails with it (no CAP_NET_RAW, say).
    var openFailure: KernelError?
    /// Indices opened, in order.
    private(set) var opened: [MgmtIndex] = []
    private(set) var source: FakeHCIEventSource?

    func open(index: MgmtIndex) throws(KernelError) -> any HCIEventSource {
        opened.append(index)
        if let openFailure { throw openFailure }
        let source = FakeHCIEventSource()
        self.source = source
        return source
    }

    /// The lock's connection timing watch: opened like the other (one source at a time here).
    private(set) var openedTiming: [MgmtIndex] = []
    func openConnectionTiming(index: MgmtIndex) throws(KernelError) -> any HCIEventSource {
        openedTiming.append(index)
        if let openFailure { throw openFailure }
        let source = FakeHCIEventSource()
        self.source = source
        return source
    }

    /// The controller reports `packet` (type octet first); false when no source is open.
    @discardableResult
    func emit(_ packet: [UInt8]) -> Bool {
        guard let source, !source.isClosed else { return false }
        _ = packet.withUnsafeBytes { Glibc.send(source.peer, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        return true
    }

    // Event packets as the kernel copies them to a raw HCI socket.

    /// LE Connection Complete (subevent 0x01) with `status`, from `peer` (public).
    static func connectionComplete(status: UInt8, subevent: UInt8 = 0x01) -> [UInt8] {
        let parameters: [UInt8] = [subevent, status, 0x40, 0x00, 0x00, 0x00] + [0x01, 0x00, 0x00, 0xee, 0xff, 0xc0]
            + [0x18, 0x00, 0x00, 0x00, 0xc8, 0x00, 0x00]
        return [0x04, 0x3E, UInt8(parameters.count)] + parameters
    }

    /// Command Complete of LE Create Connection Cancel (0x200E) with `status`.
    static func cancelComplete(status: UInt8) -> [UInt8] { [0x04, 0x0E, 0x04, 0x01, 0x0E, 0x20, status] }

    /// An LE Advertising Report (subevent 0x02) of one connectable advertisement.
    static let advertisingReport: [UInt8] = [0x04, 0x3E, 0x0C, 0x02, 0x01, 0x00, 0x00,
                                             0x01, 0x00, 0x00, 0xee, 0xff, 0xc0, 0x00, 0xc4]
}

final class FakeHCIEventSource: HCIEventSource {
    let fileDescriptor: CInt
    let peer: CInt
    private(set) var isClosed = false

    init() { (fileDescriptor, peer) = socketPair() }

    deinit {
        Glibc.close(fileDescriptor)
        Glibc.close(peer)
    }

    func next() throws(KernelError) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 300)
        let n = buffer.withUnsafeMutableBytes { Glibc.recv(fileDescriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        return n > 0 ? Array(buffer.prefix(n)) : nil
    }

    func close() { isClosed = true }
}
