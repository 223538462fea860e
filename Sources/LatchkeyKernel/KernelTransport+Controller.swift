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
    /// are adopted before anything is asked of the kernel (`KernelLinks.adoptHanded`).
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
            let (index, info) = try AdapterLookup.resolve(adapter, mgmt, timeout: startupTimeout)
            return KernelTransport(mgmt: mgmt, index: index, info: info, loop: mgmt.loop, sockets: sockets,
                                   hciEvents: hciEvents, descriptorStore: descriptorStore)
        } catch {
            mgmt.close()
            throw error
        }
    }
}
