import LatchkeyMgmt
import LatchkeyTransport

/// What `MgmtEventRouter` hands its coordinator: what is found while scanning.
protocol MgmtEventRouterHost: AnyObject {
    /// An advertisement was received while the application scans.
    func found(_ report: AdvertisementReport)
}

/// Routes each mgmt event to the component that owns it: the controller's own events to
/// `ControllerLifecycle` (which swallows another controller's, and ours while detached),
/// devices linking and leaving to `ConnectedDevices`, discovery ending and what other mgmt
/// clients undo to `ControllerRequests`, and advertisement reports while scanning to the host.
/// It decides only where an event goes; each component decides what it means.
final class MgmtEventRouter {
    weak var host: (any MgmtEventRouterHost)?
    private let lifecycle: ControllerLifecycle
    private let devices: ConnectedDevices
    private let requests: ControllerRequests

    init(lifecycle: ControllerLifecycle, devices: ConnectedDevices, requests: ControllerRequests) {
        self.lifecycle = lifecycle
        self.devices = devices
        self.requests = requests
    }

    func route(_ event: MgmtEvent, on index: MgmtIndex) {
        guard !lifecycle.handle(event, on: index), !devices.handle(event) else { return }
        switch event {
        case .deviceFound(let found):
            // A neighbour's malformed advertisement is not ours to report: it is skipped, like radio noise.
            guard requests.isScanning, let peer = found.address.address,
                  let data = try? AdvertisingData(decoding: found.eir) else { return }
            host?.found(AdvertisementReport(address: peer, data: data, rssi: found.rssi, connectable: found.isConnectable))
        case .discovering(_, let discovering):
            // LE discovery ends by itself after 10.24 s (DISCOV_LE_TIMEOUT); the seam's scan
            // runs until stopped, so it is restarted unless the end was our own doing.
            if !discovering { requests.discoveryStopped() }
        case .deviceRemoved(let device):
            // Another client (bluetoothd initialising the adapter) removed our entry.
            if let peer = device.address { requests.deviceRemoved(peer) }
        case .advertisingRemoved(let instance):
            if instance == KernelTransport.advertisingInstance { requests.advertiseAgain() }
        default:
            break
        }
    }
}
