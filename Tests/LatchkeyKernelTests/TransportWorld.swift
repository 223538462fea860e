import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport
import Testing

import LatchkeyKernelSockets
@testable import LatchkeyKernel

/// A kernel's answers to the commands the transport sends, keeping the controller's
/// settings as the kernel would (each settings command answers with Current_Settings).
final class KernelModel {
    var settings: MgmtSettings
    /// Return parameters of Get Connections: the LE devices linked now.
    var connections: [BluetoothAddress] = []
    /// Statuses to answer instead of Success, by opcode (consumed once).
    var refusals: [UInt16: UInt8] = [:]
    /// Statuses to answer instead of Success the next `times` times, by opcode.
    var repeatedRefusals: [UInt16: (status: UInt8, times: Int)] = [:]

    init(settings: MgmtSettings) { self.settings = settings }

    func answer(_ p: MgmtPacket) -> [[UInt8]] {
        if let status = refusals.removeValue(forKey: p.code) { return [FakeKernel.status(p.code, p.index, status)] }
        if let (status, times) = repeatedRefusals[p.code], times > 0 {
            repeatedRefusals[p.code] = (status, times - 1)
            return [FakeKernel.status(p.code, p.index, status)]
        }
        let bits: [UInt16: MgmtSettings] = [0x0005: .powered, 0x0007: .connectable, 0x0009: .bondable, 0x000D: .lowEnergy]
        if let bit = bits[p.code] {
            if p.parameters == [1] { settings.insert(bit) } else { settings.remove(bit) }
            return [FakeKernel.complete(p.code, p.index, FakeKernel.settings(settings))]
        }
        switch p.code {
        case 0x0015:
            let entries: [UInt8] = connections.flatMap { address -> [UInt8] in
                address.littleEndianBytes + [UInt8(address.kind == .random ? 2 : 1)]
            }
            return [FakeKernel.complete(p.code, p.index, [UInt8(connections.count), 0] + entries)]
        case 0x0014, 0x0033, 0x0034:  // answer with the address
            return [FakeKernel.complete(p.code, p.index, Array(p.parameters.prefix(7)))]
        case 0x0023, 0x0024, 0x003E, 0x003F:  // answer with the first parameter octet
            return [FakeKernel.complete(p.code, p.index, Array(p.parameters.prefix(1)))]
        default:
            return [FakeKernel.complete(p.code, p.index)]
        }
    }
}

/// A transport on a scripted kernel: index list [hci0], the controller's information,
/// then a `KernelModel` answering everything else.
final class TransportWorld {
    static let lock = BluetoothAddress(string: "C0:FF:EE:00:00:01")!
    static let phone = BluetoothAddress(string: "C0:FF:EE:00:00:02")!
    static let hci0 = MgmtIndex(0)

    let loop = PosixEventLoop()
    let kernel: FakeKernel
    let model: KernelModel
    let sockets: FakeLinkSockets
    let hciEvents: FakeHCIEvents
    let delegate = RecordingDelegate()
    let transport: KernelTransport
    var failures: [KernelError] = []

    /// `hciEventWatch: false`: the HCI event watch cannot be opened (the timer fallback).
    /// `store`: links kept in a descriptor store (and adopted from it at start); `sockets`:
    /// a predecessor's, whose links a restarted transport adopts.
    init(address: BluetoothAddress = TransportWorld.phone, settings: MgmtSettings = [.lowEnergy],
         hciEventWatch: Bool = true, store: (any DescriptorStore)? = nil, sockets: FakeLinkSockets = FakeLinkSockets(),
         beforeOpen: (KernelModel) -> Void = { _ in }) throws {
        self.sockets = sockets
        kernel = FakeKernel(loop: loop)
        hciEvents = FakeHCIEvents()
        if !hciEventWatch {
            hciEvents.openFailure = KernelError(.permissionDenied, "setsockopt(HCI_FILTER) on hci0: the kernel dropped "
                                                + "event(s) 0x3e from the filter (LE Meta events need CAP_NET_RAW)")
        }
        model = KernelModel(settings: settings)
        let info = ControllerInfo(address: address, supportedSettings: [.powered, .connectable, .bondable, .lowEnergy],
                                  currentSettings: settings)
        kernel.expect(bytes("03 00 ff ff 00 00"), reply: FakeKernel.complete(0x0003, .none, [1, 0, 0, 0]))
        kernel.expect(bytes("04 00 00 00 00 00"), reply: FakeKernel.complete(0x0004, Self.hci0, info.encoded()))
        kernel.respond = { [model] in model.answer($0) }
        beforeOpen(model)
        let mgmt = MgmtClient(fileDescriptor: kernel.clientDescriptor, loop: loop)
        transport = try KernelTransport.open(adapter: "hci0", mgmt: mgmt, sockets: sockets, hciEvents: hciEvents,
                                             descriptorStore: store)
        transport.delegate = delegate
        transport.onFailure = { [unowned self] in self.failures.append($0) }
    }

    /// Turns the loop until every command is answered and nothing more is readable.
    func settle() throws {
        #expect(try loop.run(until: { self.transport.mgmt.pendingCount == 0 }, timeout: .seconds(2)))
        for _ in 0..<3 { try loop.runOnce(timeout: .milliseconds(5)) }
    }

    func until(_ condition: @escaping () -> Bool) throws {
        #expect(try loop.run(until: condition, timeout: .seconds(2)))
    }

    /// The opcodes received since `start`.
    func opcodes(since start: Int) -> [UInt16] { kernel.received.dropFirst(start).map(\.code) }
}
