import LatchkeyATT
import LatchkeyGATT
import LatchkeyTransport

/// CBManagerState.
public enum ManagerState: String, Sendable {
    case unknown, resetting, unsupported, unauthorized, poweredOff, poweredOn

    package init(_ radio: RadioState) {
        switch radio {
        case .unknown: self = .unknown
        case .unsupported: self = .unsupported
        case .unauthorized: self = .unauthorized
        case .poweredOff: self = .poweredOff
        case .poweredOn: self = .poweredOn
        }
    }
}

/// Errors the managers report (CBError / CBATTError).
public enum BluetoothError: Error, Equatable, Sendable, CustomStringConvertible {
    case poweredOff
    case notConnected
    /// The link dropped; carries the HCI reason.
    case disconnected(DisconnectReason)
    /// The server answered with an ATT error.
    case att(ATTErrorCode)
    case transactionTimeout
    case invalidParameters(String)
    case operationNotSupported(String)

    public var description: String {
        switch self {
        case .poweredOff: "Bluetooth is powered off"
        case .notConnected: "the peripheral is not connected"
        case .disconnected(let r): "disconnected (\(r))"
        case .att(let c): "ATT error: \(c)"
        case .transactionTimeout: "ATT transaction timed out"
        case .invalidParameters(let m): "invalid parameters: \(m)"
        case .operationNotSupported(let m): "not supported: \(m)"
        }
    }

    package init(_ e: GATTClientError) {
        switch e {
        case .att(let code, _): self = .att(code)
        case .timeout: self = .transactionTimeout
        case .disconnected: self = .notConnected
        case .invalidResponse(let m): self = .operationNotSupported("invalid response: \(m)")
        case .invalidValue(let m): self = .invalidParameters(m)
        }
    }
}

/// CBConnectPeripheralOption* keys: ask the system to alert the user about these events
/// when the application layer is suspended. Stored with the pending request.
public struct ConnectOptions: Hashable, Sendable, Codable {
    public var notifyOnConnection: Bool
    public var notifyOnDisconnection: Bool
    public var notifyOnNotification: Bool
    public init(notifyOnConnection: Bool = false, notifyOnDisconnection: Bool = false, notifyOnNotification: Bool = false) {
        self.notifyOnConnection = notifyOnConnection
        self.notifyOnDisconnection = notifyOnDisconnection
        self.notifyOnNotification = notifyOnNotification
    }
}

/// CBCentralManagerScanOption*, plus the bound on duration Latchkey insists on.
public struct ScanOptions: Hashable, Sendable {
    /// CBCentralManagerScanOptionAllowDuplicatesKey: report every advertising packet
    /// instead of one discovery per peripheral.
    public var allowDuplicates: Bool
    /// How long the scan runs before it stops by itself. An unbounded scan drains the
    /// battery and, on Linux, suspends the kernel's auto-connect (docs/LINUX-BLE.md).
    public var duration: Duration
    /// Active scanning asks for scan responses (longer names, more UUIDs).
    public var active: Bool

    /// 10 s: long enough to hear a peripheral advertising at Apple's slowest recommended
    /// interval (1285 ms) several times over, short enough to stay a foreground action.
    public static let defaultDuration: Duration = .seconds(10)

    public init(allowDuplicates: Bool = false, duration: Duration = ScanOptions.defaultDuration, active: Bool = true) {
        self.allowDuplicates = allowDuplicates
        self.duration = duration
        self.active = active
    }
}

/// Why a scan ended.
public enum ScanStopReason: String, Sendable {
    case durationElapsed, stopped, poweredOff
}
