import LatchkeyATT

/// The seam between the Bluetooth managers and whatever moves the bytes.
/// Two worlds implement it: the Linux kernel (mgmt socket + L2CAP ATT sockets) and the
/// simulated radio. Nothing above this file knows which one it runs on. The protocol is
/// deliberately the shape of the kernel's interface, not of Core Bluetooth's: Core
/// Bluetooth semantics (connect that never times out, restoration, ...) are built on top
/// by the managers.
///
/// Threading: every call and every delegate callback happens on `loop`.
public protocol BluetoothTransport: AnyObject {
    /// The loop this transport delivers its callbacks on.
    var loop: any EventLoop { get }
    /// Our own controller address.
    var address: BluetoothAddress { get }
    var state: RadioState { get }
    var delegate: (any BluetoothTransportDelegate)? { get set }

    // MARK: Advertising (peripheral role)
    /// Starts (or replaces) connectable advertising. Throws when powered off.
    func startAdvertising(_ advertisement: Advertisement) throws(TransportError)
    func stopAdvertising()
    var isAdvertising: Bool { get }

    // MARK: Scanning (central role)
    /// Starts (or reconfigures) a scan. Results arrive as `didReceive(_:)`. The transport
    /// never stops a scan by itself: bounding it is the caller's job, because an open
    /// scan drains batteries and, on Linux, suspends the kernel's auto-connect.
    func startScanning(_ parameters: ScanParameters) throws(TransportError)
    func stopScanning()
    var isScanning: Bool { get }

    // MARK: The pending-connection list, held below the application
    /// Asks the controller to connect to `peer` whenever it is seen advertising, with no
    /// timeout. The entry stays until removed: after a link loss the controller connects
    /// again by itself (kernel mgmt Add Device, action 0x02 "auto-connect"). The list is
    /// owned by the system, not by this process: it outlives the application.
    func addPendingConnection(to peer: BluetoothAddress) throws(TransportError)
    /// Removes the entry (mgmt Remove Device). A link that is up is not dropped.
    func removePendingConnection(to peer: BluetoothAddress)
    /// What the system holds right now (used to reconcile after a relaunch).
    var pendingConnections: Set<BluetoothAddress> { get }

    // MARK: Links
    /// Links that are up right now, including links formed while this process was gone.
    var connectedLinks: [any ATTLink] { get }
    /// Connection and scan timing for the pending-connection machinery (mgmt Set Default
    /// System Configuration on Linux).
    func setConnectionParameters(_ parameters: ConnectionParameters) throws(TransportError)

    // MARK: Confirmation
    /// Runs `body` on the loop once the system has answered every request made so far (the
    /// kernel answers each mgmt command; a refusal has corrected `isAdvertising` and
    /// `pendingConnections` by then). What a service manager is told is ready must be
    /// registered, not just asked for.
    func afterRequestsAnswered(_ body: @escaping () -> Void)
}

extension BluetoothTransport {
    /// A transport that takes every request at once (the simulated radio): the next turn.
    public func afterRequestsAnswered(_ body: @escaping () -> Void) { loop.execute(body) }
}

/// Callbacks from a transport, always on its loop.
public protocol BluetoothTransportDelegate: AnyObject {
    func transport(_ transport: any BluetoothTransport, didChangeState state: RadioState)
    func transport(_ transport: any BluetoothTransport, didReceive report: AdvertisementReport)
    /// A link came up: an incoming connection (we advertise) or one the pending list made.
    /// The receiver must set `link.delegate` before returning, or the link is dropped the
    /// way the kernel drops an unclaimed link.
    func transport(_ transport: any BluetoothTransport, didConnect link: any ATTLink)
    /// The system refused a request that carries a wanted state (advertising, a scan, a
    /// pending connection, power, timing). The transport keeps the wish and asks again after
    /// `refusal.retryIn`, until it takes or the request is withdrawn; this is the report.
    func transport(_ transport: any BluetoothTransport, didRefuse refusal: TransportRefusal)
}

extension BluetoothTransportDelegate {
    /// A transport that never refuses (the simulated radio) never calls it.
    public func transport(_ transport: any BluetoothTransport, didRefuse refusal: TransportRefusal) {}
}

/// A refused request the transport will make again (see `didRefuse`).
public struct TransportRefusal: Sendable, Hashable, CustomStringConvertible {
    /// What was asked for.
    public enum Request: Sendable, Hashable, CustomStringConvertible {
        case power, advertising, scanning, connectionTiming
        case pendingConnection(BluetoothAddress)
        public var description: String {
            switch self {
            case .power: "power"
            case .advertising: "advertising"
            case .scanning: "scanning"
            case .connectionTiming: "connection timing"
            case .pendingConnection(let peer): "pending connection to \(peer)"
            }
        }
    }

    public var request: Request
    /// The system's words for the refusal.
    public var reason: String
    /// How many times in a row this request has been refused (1 for the first).
    public var attempt: Int
    /// When the request is made again.
    public var retryIn: Duration

    public init(request: Request, reason: String, attempt: Int, retryIn: Duration) {
        self.request = request; self.reason = reason; self.attempt = attempt; self.retryIn = retryIn
    }

    public var description: String { "\(request) refused (\(reason)), attempt \(attempt), asking again in \(retryIn)" }
}

public enum RadioState: String, Sendable {
    case unknown, unsupported, unauthorized, poweredOff, poweredOn
}

/// One ATT bearer (L2CAP fixed channel 4 on a real link). One PDU per `send`.
public protocol ATTLink: AnyObject {
    var id: LinkID { get }
    var peer: BluetoothAddress { get }
    /// Our role on this link.
    var role: LinkRole { get }
    /// The largest ATT_MTU the bearer can carry; GATT negotiates the ATT MTU within it.
    var maximumTransmissionUnit: Int { get }
    var isConnected: Bool { get }
    /// The link's connection interval as the controller last reported it (LE Connection
    /// Complete, then each LE Connection Update Complete); nil while unknown. The central
    /// chooses it, so on the lock's side it is a fact about whoever connected: the arrival
    /// rule refuses a link whose interval is above its ceiling, or unknown (docs/SECURITY.md).
    var connectionInterval: Duration? { get }
    var delegate: (any ATTLinkDelegate)? { get set }
    /// What the application kept with this link (`keep(applicationState:)`), handed back
    /// when a new process adopts the link after the one that kept it died; nil when nothing
    /// was kept, or what was kept could not be trusted (the transport reported why).
    var keptApplicationState: [UInt8]? { get }
    /// Keeps `state` with the link where it outlives this process, replacing what was kept,
    /// before it returns (the kernel transport: a sealed memfd kept in systemd's file
    /// descriptor store beside the link's socket). False when this link does not outlive
    /// the process (nothing to keep it for); throws when it does and the state could not be kept.
    func keep(applicationState state: [UInt8]) throws(TransportError) -> Bool
    /// Asks the controller to move the link to `interval` (the central's LE Connection
    /// Update); it shows in `connectionInterval` once it takes effect, some connection events
    /// later. False when this side or this transport cannot: the kernel has no socket or mgmt
    /// call for it (docs/ARCHITECTURE.md, "Link to unlock").
    func requestConnectionInterval(_ interval: Duration) -> Bool
    /// Queues one PDU. `.full` means nothing was queued: wait for `linkIsWritable`.
    func send(_ pdu: [UInt8]) -> SendResult
    /// Ends the link (HCI reason 0x16, local host terminated).
    func disconnect()
}

extension ATTLink {
    /// A link that ends with its process keeps nothing (the simulated air across processes).
    public var keptApplicationState: [UInt8]? { nil }
    public func keep(applicationState state: [UInt8]) throws(TransportError) -> Bool { false }
    /// The kernel's links: no way to update a live link's parameters through them yet.
    public func requestConnectionInterval(_ interval: Duration) -> Bool { false }
}

extension ATTLinkDelegate {
    /// Most ends do not care: the interval is read when needed.
    public func linkDidUpdateConnectionInterval(_ link: any ATTLink) {}
}

public protocol ATTLinkDelegate: AnyObject {
    func link(_ link: any ATTLink, didReceive pdu: [UInt8])
    /// A connection update took effect: `link.connectionInterval` is the new interval.
    func linkDidUpdateConnectionInterval(_ link: any ATTLink)
    /// The transmit queue has room again after a `.full`.
    func linkIsWritable(_ link: any ATTLink)
    func link(_ link: any ATTLink, didDisconnect reason: DisconnectReason)
}

public struct LinkID: Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt64
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public var description: String { "link#\(rawValue)" }
}

public enum LinkRole: String, Sendable { case central, peripheral }

public enum SendResult: Sendable, Equatable {
    case sent
    /// The link's transmit buffer is full; nothing was queued. `linkIsWritable` follows.
    case full
    /// The link is gone.
    case disconnected
}

/// Why a link ended, as HCI disconnect reasons (Core spec Vol 1 Part F).
public struct DisconnectReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let connectionTimeout = Self(rawValue: 0x08)  // supervision timeout
    public static let remoteUserTerminated = Self(rawValue: 0x13)
    public static let remotePowerOff = Self(rawValue: 0x15)
    public static let localHostTerminated = Self(rawValue: 0x16)
    public static let failedToEstablish = Self(rawValue: 0x3E)
    public var description: String {
        switch self {
        case .connectionTimeout: "supervision timeout"
        case .remoteUserTerminated: "remote user terminated"
        case .remotePowerOff: "remote power off"
        case .localHostTerminated: "local host terminated"
        case .failedToEstablish: "failed to be established"
        default: "HCI reason 0x" + String(rawValue, radix: 16)
        }
    }
}

public struct TransportError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable {
        let raw: String
        public static let poweredOff = Code(raw: "powered off")
        public static let unsupported = Code(raw: "unsupported")
        public static let invalidParameters = Code(raw: "invalid parameters")
        public static let busy = Code(raw: "busy")
        public static let failed = Code(raw: "failed")
    }
    public var code: Code
    public var message: String
    public init(_ code: Code, _ message: String) { self.code = code; self.message = message }
    public var description: String { "\(code.raw): \(message)" }
}
