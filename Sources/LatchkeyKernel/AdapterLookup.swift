import LatchkeyKernelSockets
import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport

/// Which mgmt index an adapter name ("hci0") or controller address is, read from the kernel
/// at startup: the only reads the transport waits for (each bounded by `timeout`).
enum AdapterLookup {
    /// Read Controller Index List, then Read Controller Information of the index named, or of
    /// each until one has the address asked for.
    static func resolve(_ adapter: String, _ mgmt: MgmtClient, timeout: Duration) throws(KernelError)
        -> (MgmtIndex, ControllerInfo)
    {
        let parameters = try reply(to: .readControllerIndexList, on: .none, mgmt, timeout)
        let list = try decoded { () throws(MgmtError) in try ControllerIndexList(decoding: parameters) }
        return try resolve(adapter, among: list.indices, mgmt, timeout)
    }

    private static func resolve(_ adapter: String, among indices: [MgmtIndex], _ mgmt: MgmtClient,
                                _ timeout: Duration) throws(KernelError) -> (MgmtIndex, ControllerInfo)
    {
        let present = indices.isEmpty ? "none" : indices.sorted().map(\.description).joined(separator: ", ")
        let notFound = KernelError(.adapterNotFound, "no Bluetooth adapter \(adapter); adapters present: \(present)")
        if let index = MgmtIndex(adapterName: adapter) {
            guard indices.contains(index) else { throw notFound }
            return (index, try info(of: index, mgmt, timeout))
        }
        guard let wanted = BluetoothAddress(string: adapter) else {
            throw KernelError(.adapterNotFound, "adapter '\(adapter)' is neither a name like hci0 nor an address")
        }
        for index in indices.sorted() {
            let info = try info(of: index, mgmt, timeout)
            if info.address == wanted { return (index, info) }
        }
        throw notFound
    }

    private static func info(of index: MgmtIndex, _ mgmt: MgmtClient, _ timeout: Duration) throws(KernelError)
        -> ControllerInfo
    {
        let parameters = try reply(to: .readControllerInfo, on: index, mgmt, timeout)
        return try decoded { () throws(MgmtError) in try ControllerInfo(decoding: parameters) }
    }

    /// Sends one command and turns the loop until it is answered (startup only).
    private static func reply(to command: MgmtCommand, on index: MgmtIndex, _ mgmt: MgmtClient,
                              _ timeout: Duration) throws(KernelError) -> [UInt8]
    {
        var result: Result<[UInt8], MgmtError>?
        mgmt.send(command, to: index) { result = $0 }
        do {
            _ = try mgmt.loop.run(until: { result != nil }, timeout: timeout)
        } catch {
            throw KernelError(error)
        }
        switch result {
        case .success(let parameters)?: return parameters
        case .failure(let error)?: throw KernelError(error)
        case nil: throw KernelError(.timedOut, "the kernel did not answer \(command.opcode) within \(timeout)")
        }
    }

    /// Runs a decoder, turning its `MgmtError` into a `KernelError`.
    private static func decoded<T>(_ body: () throws(MgmtError) -> T) throws(KernelError) -> T {
        do { return try body() } catch { throw KernelError(error) }
    }
}
