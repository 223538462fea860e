import LatchkeyKernelSockets
import LatchkeyMgmt
import LatchkeyTransport

/// What `ConnectedDevices` needs of its coordinator: a way to the controller, which links it
/// keeps, and where a device linking goes.
protocol ConnectedDevicesHost: AnyObject {
    /// Sends `command` to our controller; while it is detached nothing is sent and false is returned.
    @discardableResult
    func send(_ command: MgmtCommand, _ completion: @escaping MgmtClient.Completion) -> Bool
    /// Whether the link to `peer` is one we hold a socket for or want (the sweep leaves it up).
    func keeps(_ peer: BluetoothAddress) -> Bool
    /// Whether the sweep runs once Get Connections answered: only while we advertise.
    var sweepIsDue: Bool { get }
    /// A baseband link to `peer` is up: a wanted one is claimed.
    func deviceLinked(_ peer: BluetoothAddress)
    /// A device linked or left, or the linked ones were read.
    func linkedDevicesChanged()
}

/// The LE devices with a baseband link up, as mgmt reports them (Device Connected and
/// Disconnected, Get Connections), each one's last disconnect reason until its link's socket
/// asks for it, and the one sweep of links a predecessor left. It owns that state and those
/// events; the host claims the devices and is told when they change.
final class ConnectedDevices {
    weak var host: (any ConnectedDevicesHost)?
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

    /// Device Connected and Device Disconnected on our controller are handled here and true is
    /// returned; any other event is the host's to route.
    func handle(_ event: MgmtEvent) -> Bool {
        switch event {
        case .deviceConnected(let connected):
            guard let peer = connected.address.address else { return true }
            self.connected(peer)
            host?.deviceLinked(peer)
            host?.linkedDevicesChanged()
        case .deviceDisconnected(let device, let reason):
            guard let peer = device.address else { return true }
            disconnected(peer, reason: reason.hciReason)
            host?.linkedDevicesChanged()
        default:
            return false
        }
        return true
    }

    /// Asks the kernel which devices are linked already (Get Connections), to sweep the stale
    /// ones and claim the ones we want.
    func read() {
        host?.send(.getConnections) { [weak self] result in
            guard let self else { return }
            guard case .success(let parameters) = result,
                  let devices = try? MgmtReply.connections(parameters) else {  // Not Powered: nothing linked
                return self.learned(nil)
            }
            self.learned(Set(devices.compactMap(\.address)))
            if self.host?.sweepIsDue == true { self.sweepStaleLinks() }
            for peer in self.sorted { self.host?.deviceLinked(peer) }
            self.host?.linkedDevicesChanged()
        }
    }

    /// Once, when we first advertise and know the links that are up: a link we hold no
    /// socket for and do not want was made to a predecessor's advertising (a lock agent
    /// SIGKILLed: the kernel kept its instance). Its peer would talk to nobody until a
    /// timeout ended it, and could not link to us meanwhile: it is disconnected.
    func sweepStaleLinks() {
        let stale = sweepStale { host?.keeps($0) ?? true }
        for peer in stale {
            host?.send(.disconnect(peer)) { _ in }  // Not Connected: it went by itself
        }
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
