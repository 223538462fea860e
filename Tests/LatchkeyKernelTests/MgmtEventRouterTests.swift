import LatchkeyMgmt
import LatchkeySim
import LatchkeyTransport
import Testing

@testable import LatchkeyKernel

/// `MgmtEventRouter` on its own: the components it routes to, each with the fake host of its
/// own tests, on a manual clock; what reaches them is what their hosts saw.
@Suite struct MgmtEventRouterTests {
    final class Host: MgmtEventRouterHost {
        var reports: [AdvertisementReport] = []
        func found(_ report: AdvertisementReport) { reports.append(report) }
    }

    static let ours = BluetoothAddress(0x66_55_44_33_22_11)
    static let phone = BluetoothAddress(0x11_22_33_44_55_66)
    let loop = ManualEventLoop()
    let host = Host()
    let lifecycleHost = ControllerLifecycleTests.Host()
    let devicesHost = ConnectedDevicesTests.Host()
    let requestsHost = ControllerRequestsTests.Host()
    let lifecycle: ControllerLifecycle
    let devices = ConnectedDevices()
    let requests: ControllerRequests
    let router: MgmtEventRouter

    init() {
        lifecycle = ControllerLifecycle(index: MgmtIndex(0), info: ControllerInfo(
            address: Self.ours, supportedSettings: [], currentSettings: [.powered, .lowEnergy]))
        requests = ControllerRequests(loop: loop)
        router = MgmtEventRouter(lifecycle: lifecycle, devices: devices, requests: requests)
        lifecycle.host = lifecycleHost
        devices.host = devicesHost
        requests.host = requestsHost
        router.host = host
    }

    func found(_ eir: [UInt8]) -> MgmtEvent {
        .deviceFound(DeviceFound(address: MgmtDeviceAddress(Self.phone), rssi: -60, flags: 0, eir: eir))
    }

    @Test func eachEventReachesTheComponentThatOwnsIt() {
        router.route(.newSettings([.lowEnergy]), on: MgmtIndex(0))
        #expect(lifecycleHost.states == [.poweredOff])
        router.route(.deviceConnected(DeviceConnected(address: MgmtDeviceAddress(Self.phone), flags: 0)), on: MgmtIndex(0))
        #expect(devices.contains(Self.phone) && devicesHost.linked == [Self.phone])
        _ = requests.addPending(Self.phone)
        _ = requestsHost.answer()
        router.route(.deviceRemoved(MgmtDeviceAddress(Self.phone)), on: MgmtIndex(0))
        #expect(requestsHost.answer().map(\.opcode) == [.addDevice], "our entry, removed by another client, sent again")
    }

    @Test func reportsGoToTheHostOnlyWhileScanningAndWellFormed() throws {
        let eir = AdvertisingData(localName: "Door").encoded()
        router.route(found(eir), on: MgmtIndex(0))
        #expect(host.reports.isEmpty, "not scanning")
        let scan = ScanParameters()
        requests.startScanning(scan, timing: try SystemConfiguration.discovery(scan))
        _ = requestsHost.answer()
        router.route(found(eir), on: MgmtIndex(0))
        router.route(found([0x05, 0x09, 0x44]), on: MgmtIndex(0))
        #expect(host.reports.map(\.address) == [Self.phone], "the malformed one is skipped")
        #expect(host.reports.first?.data.localName == "Door")
        router.route(.discovering(0x06, false), on: MgmtIndex(0))
        #expect(requestsHost.answer().map(\.opcode) == [.startDiscovery], "the kernel ended the scan: restarted")
    }

    @Test func anotherControllersEventsAndOursWhileDetachedGoNowhere() throws {
        let scan = ScanParameters()
        requests.startScanning(scan, timing: try SystemConfiguration.discovery(scan))
        _ = requestsHost.answer()
        router.route(found(AdvertisingData(localName: "Door").encoded()), on: MgmtIndex(1))
        router.route(.deviceConnected(DeviceConnected(address: MgmtDeviceAddress(Self.phone), flags: 0)), on: MgmtIndex(1))
        #expect(host.reports.isEmpty && devicesHost.linked.isEmpty)
        router.route(.indexRemoved, on: MgmtIndex(0))
        #expect(lifecycleHost.detached == 1)
        router.route(.discovering(0x06, false), on: MgmtIndex(0))
        #expect(requestsHost.sent.isEmpty)
    }

    @Test func onlyOurAdvertisingInstanceRemovedIsAddedAgain() throws {
        let advertisement = Advertisement(data: AdvertisingData(localName: "Door"))
        requests.advertise(.init(advertisement: advertisement,
                                 instance: try AdvertisingInstance(instance: KernelTransport.advertisingInstance, advertisement),
                                 timing: try SystemConfiguration.peripheral(advertisingInterval: advertisement.interval)))
        _ = requestsHost.answer()
        router.route(.advertisingRemoved(instance: 2), on: MgmtIndex(0))
        #expect(requestsHost.sent.isEmpty, "not ours")
        router.route(.advertisingRemoved(instance: KernelTransport.advertisingInstance), on: MgmtIndex(0))
        #expect(requestsHost.answer().map(\.opcode) == [.setDefaultSystemConfiguration, .addAdvertising])
    }
}
