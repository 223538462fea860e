import LatchkeyTransport

/// An alert the always-on part of an agent raises for a connect request's notify options
/// (CBConnectPeripheralOptionNotifyOn*), when the event happens while the application
/// layer is suspended.
public struct ConnectionAlert: Hashable, Sendable {
    public enum Event: String, Sendable {
        case connection, disconnection, notification
    }
    public var device: BluetoothAddress
    public var event: Event
    /// Monotonic loop time of the event; sinks add wall-clock time themselves.
    public var time: Instant
    /// A short human-readable detail (the disconnect reason, the characteristic).
    public var detail: String

    public init(device: BluetoothAddress, event: Event, time: Instant, detail: String = "") {
        self.device = device; self.event = event; self.time = time; self.detail = detail
    }
}

/// Where alerts go: a log line, a hook command, an integration message.
public protocol ConnectionAlertSink: AnyObject {
    func raise(_ alert: ConnectionAlert)
}

/// Keeps alerts in memory (tests).
public final class RecordingAlertSink: ConnectionAlertSink {
    public private(set) var alerts: [ConnectionAlert] = []
    public init() {}
    public func raise(_ alert: ConnectionAlert) { alerts.append(alert) }
}

extension ConnectOptions {
    /// Whether these options ask for an alert about `event`.
    public func wantsAlert(for event: ConnectionAlert.Event) -> Bool {
        switch event {
        case .connection: notifyOnConnection
        case .disconnection: notifyOnDisconnection
        case .notification: notifyOnNotification
        }
    }
}
