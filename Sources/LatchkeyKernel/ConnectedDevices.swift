import LatchkeyTransport

/// The LE devices with a baseband link up, as mgmt reports them (Device Connected and
/// Disconnected, Get Connections), each one's last disconnect reason until its link's socket
/// asks for it, and the one sweep of links a predecessor left. It owns that state; the transport
/// sends what it decides (a claim, a Disconnect).
final class ConnectedDevices {
    private var devices: Set<BluetoothAddress> = []
    private var reasons: [BluetoothAddress: DisconnectReason] = [:]
    /// Set until the sweep has run; `known` once Get Connections answered.
    private var sweepPending = true
    private var known = false

    /// Whether a baseband link to `peer` is up.
    func contains(_ peer: BluetoothAddress) -> Bool { devices.contains(peer) }

    /// The devices linked now, in address order.
    var sorted: [BluetoothAddress] { devices.sorted() }

    /// The entries of `pending` with no link up, in address order.
    func unlinked(among pending: Set<BluetoothAddress>) -> [BluetoothAddress] { pending.subtracting(devices).sorted() }

    /// Device Connected: a reason left from the device's previous link is stale.
    func connected(_ peer: BluetoothAddress) {
        devices.insert(peer)
        reasons[peer] = nil
    }

    /// Device Disconnected (its reason nil when it maps to no HCI reason), which the kernel
    /// queues before it fails the link's sockets.
    func disconnected(_ peer: BluetoothAddress, reason: DisconnectReason?) {
        devices.remove(peer)
        reasons[peer] = reason
    }

    /// Get Connections answered (`devices` nil: refused, as when not powered); from now on the
    /// sweep may run.
    func learned(_ linked: Set<BluetoothAddress>?) {
        known = true
        if let linked { devices = linked }
    }

    /// The controller went away: no link of it is up.
    func removeAll() { devices = [] }

    /// The reason mgmt gave for the end of the link to `peer`, once.
    func takeReason(for peer: BluetoothAddress) -> DisconnectReason? { reasons.removeValue(forKey: peer) }

    /// Once, when the links up are known: the devices none of whose links we `hold`, no longer
    /// counted as linked; the transport disconnects each. Empty before Get Connections
    /// answered and after the sweep ran.
    func sweepStale(holding hold: (BluetoothAddress) -> Bool) -> [BluetoothAddress] {
        guard sweepPending, known else { return [] }
        sweepPending = false
        let stale = devices.sorted().filter { !hold($0) }
        devices.subtract(stale)
        return stale
    }
}
