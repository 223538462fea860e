import LatchkeyEvents
import LatchkeyGATT
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeyPeripheral
import LatchkeyTransport

/// The lock service as published on the peripheral manager, and the advertising that offers
/// it: published when the radio comes on, advertised while a link is free, replaced when a
/// relaunch restores another version's, withdrawn at a deliberate stop. A radio that was on,
/// went off and came back is a power cycle, an alarm for the audit log (`powerCycled`).
final class PublishedService {
    private let peripheral: PeripheralManager
    private let definition: GATTService
    private let name: String
    private let interval: Duration
    private let maximumLinks: Int
    private let beacon: () -> AdvertisingData?
    private let powerCycled: () -> Void
    private let emit: (Event) -> Void

    private var service: LocalService?
    private var stateCharacteristic: LocalCharacteristic?
    private var transferCharacteristic: LocalCharacteristic?
    /// The radio was on and went off: the next power-on is a power cycle (an alarm).
    private var radioWentDown = false

    /// `beacon` is the pairing beacon for the scan response while a window takes a request.
    init(peripheral: PeripheralManager, definition: GATTService, name: String, interval: Duration,
         maximumLinks: Int, beacon: @escaping () -> AdvertisingData?, powerCycled: @escaping () -> Void,
         emit: @escaping (Event) -> Void) {
        self.peripheral = peripheral
        self.definition = definition
        self.name = name
        self.interval = interval
        self.maximumLinks = maximumLinks
        self.beacon = beacon
        self.powerCycled = powerCycled
        self.emit = emit
    }

    var isPublished: Bool { service != nil }

    /// The centrals subscribed to the lock state, and to the log transfer.
    var stateSubscribers: [Central] { stateCharacteristic?.subscribedCentrals ?? [] }
    var transferSubscribers: [Central] { transferCharacteristic?.subscribedCentrals ?? [] }

    func isState(_ characteristic: LocalCharacteristic) -> Bool { characteristic === stateCharacteristic }

    /// The lock state and the log transfer: what only a link with a session may subscribe to.
    func isForSessions(_ characteristic: LocalCharacteristic) -> Bool {
        characteristic === stateCharacteristic || characteristic === transferCharacteristic
    }

    /// Sends the lock state to `central`; true (nothing to retry) while no service is published.
    func sendState(_ value: [UInt8], to central: Central) -> Bool {
        guard let c = stateCharacteristic else { return true }
        return peripheral.updateValue(value, for: c, onSubscribedCentrals: [central])
    }

    /// Sends a log chunk to `central`; false while no service is published.
    func sendTransfer(_ value: [UInt8], to central: Central) -> Bool {
        guard let c = transferCharacteristic else { return false }
        return peripheral.updateValue(value, for: c, onSubscribedCentrals: [central])
    }

    /// The manager's state changed: note a power cycle, and once on, publish and advertise.
    func radioChanged() {
        noteRadioState(peripheral.state)
        guard peripheral.state == .poweredOn else { return }
        if service == nil {
            do {
                let s = try peripheral.add(definition)
                service = s
                stateCharacteristic = s.characteristic(LockServiceUUID.lockState)
                transferCharacteristic = s.characteristic(LockServiceUUID.dataTransfer)
            } catch {
                emit(.lockFault(fault: "cannot publish service: \(error)"))
                return
            }
        }
        advertise()
    }

    private func noteRadioState(_ state: ManagerState) {
        switch state {
        case .poweredOn:
            if radioWentDown { powerCycled() }
            radioWentDown = false
        case .poweredOff, .resetting:
            radioWentDown = true
        case .unknown, .unsupported, .unauthorized:
            break
        }
    }

    /// A relaunch restored `restored`: it is this service, or another version's, which this
    /// one's replaces (the manager tells the phones whose links survived which handles changed).
    func restore(_ restored: LocalService) {
        service = restored.definition == definition ? restored : replace(restored)
        stateCharacteristic = service?.characteristic(LockServiceUUID.lockState)
        transferCharacteristic = service?.characteristic(LockServiceUUID.dataTransfer)
    }

    private func replace(_ restored: LocalService) -> LocalService? {
        peripheral.remove(restored)
        do { return try peripheral.add(definition) } catch {
            emit(.lockFault(fault: "cannot publish service: \(error)"))
            return nil
        }
    }

    /// A deliberate stop: no advertising, no service.
    func withdraw() {
        peripheral.stopAdvertising()
        peripheral.removeAllServices()
        service = nil
        stateCharacteristic = nil
        transferCharacteristic = nil
    }

    /// The lock's advertising: its service UUID (what a phone filters on) and the name the
    /// owner chose, and while a pairing window takes a request, the pairing beacon in the
    /// scan response (`PairingBeacon`). Nothing else.
    var advertisement: Advertisement {
        Advertisement(data: AdvertisingData(serviceUUIDs: [LockServiceUUID.service], localName: name),
                      scanResponse: beacon(), interval: interval)
    }

    /// (Re)starts advertising with the current `advertisement` (the beacon comes and goes
    /// with the pairing window), but never while every link is taken: that limit belongs to
    /// `advertiseWhileLinksAreFree`.
    func advertise() {
        guard peripheral.state == .poweredOn, service != nil else { return }
        guard peripheral.centrals.count < maximumLinks else { return }
        peripheral.startAdvertising(advertisement)
    }

    /// Advertises while fewer than `maximumLinks` centrals are linked, and not at the limit:
    /// a phone must always be able to link beside an idle stranger, and a crowd of them must
    /// not take every link the controller has.
    func advertiseWhileLinksAreFree() {
        guard peripheral.state == .poweredOn, service != nil else { return }
        let full = peripheral.centrals.count >= maximumLinks
        if full, peripheral.advertisement != nil {
            emit(.lockAdvertisingPaused(links: peripheral.centrals.count))
            peripheral.stopAdvertising()
        } else if !full, peripheral.advertisement == nil {
            emit(.lockAdvertisingResumed(links: peripheral.centrals.count))
            peripheral.startAdvertising(advertisement)
        }
    }
}
