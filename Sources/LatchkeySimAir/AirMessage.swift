import LatchkeyTransport

/// One message of the air protocol: one `SOCK_SEQPACKET` message on the air socket.
///
/// A pure value with `encoded()` / `init(decoding:)` (AirMessage+Codec.swift). The first
/// byte is the message kind; integers are little-endian. A connection starts with a hello
/// carrying `AirMessage.version`: `.helloAgent` attaches an application to the controller
/// of its address, `.helloControl` opens the control channel.
public enum AirMessage: Hashable, Sendable {
    public static let version: UInt8 = 3  // 2: links carry their connection interval; 3: and update it

    // MARK: Agent → air (the BluetoothTransport calls)
    /// `position` places the device when the air creates it; an existing device stays where it is.
    case helloAgent(version: UInt8, address: BluetoothAddress, position: Double?)
    case startAdvertising(Advertisement)
    case stopAdvertising
    case startScanning(ScanParameters)
    case stopScanning
    case addPendingConnection(BluetoothAddress)
    case removePendingConnection(BluetoothAddress)
    case setConnectionParameters(ConnectionParameters)
    // The ATTLink calls. `linkClaim`/`linkRelease` follow the remote link's delegate.
    case linkSend(LinkID, [UInt8])
    case linkDisconnect(LinkID)
    /// The central's LE Connection Update (`ATTLink.requestConnectionInterval`).
    case linkRequestInterval(LinkID, Duration)
    case linkClaim(LinkID)
    case linkRelease(LinkID)

    // MARK: Air → agent (state and delegate callbacks)
    /// The answer to `.helloAgent`: the controller as it is, with links already up.
    case welcome(version: UInt8, status: ControllerStatus, links: [LinkDescription])
    /// The controller now. `commandsProcessed` counts the agent's transport commands the air
    /// has handled, so the agent can tell a status that predates its latest call.
    case status(ControllerStatus, commandsProcessed: UInt32)
    case advertisementReport(AdvertisementReport)
    case linkUp(LinkDescription)
    case linkReceived(LinkID, [UInt8])
    /// `count` PDUs the air-side link accepted: credits back to the remote sender.
    case linkAccepted(LinkID, count: UInt16)
    case linkDown(LinkID, DisconnectReason)
    /// A connection update took effect on the link: its interval from now on.
    case linkInterval(LinkID, Duration)
    /// A transport call the air-side controller refused (the remote call had returned).
    case commandFailed(TransportError)
    /// The air refuses the connection's last message and closes it.
    case rejected(String)

    // MARK: Control channel
    case helloControl(version: UInt8)
    case setPosition(request: UInt32, address: BluetoothAddress, position: Double)
    case powerOff(request: UInt32, address: BluetoothAddress)
    case powerOn(request: UInt32, address: BluetoothAddress)
    case listDevices(request: UInt32)
    case done(request: UInt32)
    case failed(request: UInt32, reason: String)
    case devices(request: UInt32, [DeviceSnapshot])
}

/// The mirrored state of a controller.
public struct ControllerStatus: Hashable, Sendable {
    public var state: RadioState
    public var isAdvertising: Bool
    public var isScanning: Bool
    /// Sorted, so equal sets encode equally.
    public var pendingConnections: [BluetoothAddress]

    public init(state: RadioState, isAdvertising: Bool, isScanning: Bool, pendingConnections: [BluetoothAddress]) {
        self.state = state
        self.isAdvertising = isAdvertising
        self.isScanning = isScanning
        self.pendingConnections = pendingConnections.sorted()
    }

    public init(of transport: any BluetoothTransport) {
        self.init(state: transport.state, isAdvertising: transport.isAdvertising, isScanning: transport.isScanning,
                  pendingConnections: Array(transport.pendingConnections))
    }
}

/// A link as the remote side needs to mirror it.
public struct LinkDescription: Hashable, Sendable {
    public var id: LinkID
    public var peer: BluetoothAddress
    public var role: LinkRole
    public var maximumTransmissionUnit: Int
    /// PDUs the remote sender may have in flight before its `send` says `.full`.
    public var window: Int
    /// The air-side link's connection interval (nil: unknown; on the wire in µs, 0 = nil).
    public var connectionInterval: Duration?

    public init(id: LinkID, peer: BluetoothAddress, role: LinkRole, maximumTransmissionUnit: Int, window: Int,
                connectionInterval: Duration? = nil) {
        self.id = id
        self.peer = peer
        self.role = role
        self.maximumTransmissionUnit = maximumTransmissionUnit
        self.window = window
        self.connectionInterval = connectionInterval
    }
}

/// One device as the control channel lists it.
public struct DeviceSnapshot: Hashable, Sendable {
    public struct Link: Hashable, Sendable {
        public var id: LinkID
        public var peer: BluetoothAddress
        public var role: LinkRole
        /// Whether an attached application holds the link (its delegate is set).
        public var claimed: Bool
        public init(id: LinkID, peer: BluetoothAddress, role: LinkRole, claimed: Bool) {
            self.id = id; self.peer = peer; self.role = role; self.claimed = claimed
        }
    }

    public var address: BluetoothAddress
    public var position: Double
    /// Whether an agent process is attached right now.
    public var attached: Bool
    public var status: ControllerStatus
    public var links: [Link]

    public init(address: BluetoothAddress, position: Double, attached: Bool, status: ControllerStatus, links: [Link]) {
        self.address = address
        self.position = position
        self.attached = attached
        self.status = status
        self.links = links
    }
}
