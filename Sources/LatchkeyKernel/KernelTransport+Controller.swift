import LatchkeyKernelSockets
import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport

extension KernelTransport {
    /// Bounds the two startup reads (index list, controller information), which the kernel
    /// answers from memory at once: only a kernel that stopped answering hits it. Our
    /// choice, above the kernel's 2 s HCI command timeout (HCI_CMD_TIMEOUT).
    public static let startupTimeout: Duration = .seconds(5)

    /// Opens the kernel transport on `adapter` ("hci0", or the controller's address):
    /// resolves it to a mgmt index and reads the controller's address (bounded by
    /// `startupTimeout`), then powers it on with LE, connectable and not bondable, on the loop.
    /// On a kernel without Bluetooth this throws `.noBluetooth`.
    /// With `descriptorStore`, every link's socket is kept there and the links it hands back
    /// are adopted before anything is asked of the kernel (KernelTransport+DescriptorStore).
    public static func open(adapter: String, loop: PosixEventLoop,
                            descriptorStore: (any DescriptorStore)? = nil) throws(KernelError) -> KernelTransport {
        try open(adapter: adapter, mgmt: try MgmtClient.openDefault(loop: loop), sockets: L2CAPSockets(),
                 hciEvents: RawHCIEvents(), descriptorStore: descriptorStore)
    }

    static func open(adapter: String, mgmt: MgmtClient, sockets: any LinkSocketProvider,
                     hciEvents: any HCIEventSourceProvider,
                     descriptorStore: (any DescriptorStore)? = nil) throws(KernelError) -> KernelTransport
    {
        do throws(KernelError) {
            let parameters = try reply(to: .readControllerIndexList, on: .none, mgmt)
            let list = try decoded { () throws(MgmtError) in try ControllerIndexList(decoding: parameters) }
            let (index, info) = try resolve(adapter, among: list.indices, mgmt)
            return KernelTransport(mgmt: mgmt, index: index, info: info, loop: mgmt.loop, sockets: sockets,
                                   hciEvents: hciEvents, descriptorStore: descriptorStore)
        } catch {
            mgmt.close()
            throw error
        }
    }

    private static func resolve(_ adapter: String, among indices: [MgmtIndex], _ mgmt: MgmtClient) throws(KernelError)
        -> (MgmtIndex, ControllerInfo)
    {
        let present = indices.isEmpty ? "none" : indices.sorted().map(\.description).joined(separator: ", ")
        let notFound = KernelError(.adapterNotFound, "no Bluetooth adapter \(adapter); adapters present: \(present)")
        if let index = MgmtIndex(adapterName: adapter) {
            guard indices.contains(index) else { throw notFound }
            return (index, try info(of: index, mgmt))
        }
        guard let wanted = BluetoothAddress(string: adapter) else {
            throw KernelError(.adapterNotFound, "adapter '\(adapter)' is neither a name like hci0 nor an address")
        }
        for index in indices.sorted() {
            let info = try info(of: index, mgmt)
            if info.address == wanted { return (index, info) }
        }
        throw notFound
    }

    private static func info(of index: MgmtIndex, _ mgmt: MgmtClient) throws(KernelError) -> ControllerInfo {
        let parameters = try reply(to: .readControllerInfo, on: index, mgmt)
        return try decoded { () throws(MgmtError) in try ControllerInfo(decoding: parameters) }
    }

    /// Sends one command and turns the loop until it is answered (startup only).
    private static func reply(to command: MgmtCommand, on index: MgmtIndex, _ mgmt: MgmtClient) throws(KernelError)
        -> [UInt8]
    {
        var result: Result<[UInt8], MgmtError>?
        mgmt.send(command, to: index) { result = $0 }
        do {
            _ = try mgmt.loop.run(until: { result != nil }, timeout: startupTimeout)
        } catch {
            throw KernelError(error)
        }
        switch result {
        case .success(let parameters)?: return parameters
        case .failure(let error)?: throw KernelError(error)
        case nil: throw KernelError(.timedOut, "the kernel did not answer \(command.opcode) within \(startupTimeout)")
        }
    }
}

/// Runs a decoder, turning its `MgmtError` into a `KernelError`.
func decoded<T>(_ body: () throws(MgmtError) -> T) throws(KernelError) -> T {
    do { return try body() } catch { throw KernelError(error) }
}
