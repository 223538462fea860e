import LatchkeyATT
import LatchkeyGATT
import LatchkeyManagers
import LatchkeyTransport

/// A central connected to our peripheral manager (CBCentral).
public final class Central {
    public let identifier: BluetoothAddress
    let bearer: ATTBearer
    let server: GATTServer
    /// The Service Changed indication this central still has to receive or confirm
    /// (PeripheralManager+ServiceChanged.swift).
    var serviceChange = PendingServiceChange()
    init(identifier: BluetoothAddress, bearer: ATTBearer, server: GATTServer) {
        self.identifier = identifier; self.bearer = bearer; self.server = server
    }
    /// CBCentral.maximumUpdateValueLength: one notification's payload, MTU − 3.
    public var maximumUpdateValueLength: Int { server.mtu - 3 }
    public var linkID: LinkID { bearer.link.id }
    /// The link's connection interval, from the transport; nil while unknown.
    public var connectionInterval: Duration? { bearer.link.connectionInterval }
    /// Whether it enabled Service Changed indications (Vol 3 Part G 7.1).
    public var wantsServiceChanged: Bool { server.wantsServiceChanged }
    /// What the application kept with this link where it outlives the process
    /// (`keepLinkState`), handed back on a link adopted after a relaunch; nil when none was.
    public var keptLinkState: [UInt8]? { bearer.link.keptApplicationState }
    /// Keeps `state` with the link where it outlives the process, before it returns; false
    /// when the link ends with the process (nothing to keep it for).
    public func keepLinkState(_ state: [UInt8]) throws(TransportError) -> Bool {
        try bearer.link.keep(applicationState: state)
    }
}

/// A read from a central (CBATTRequest for reads). `offset` is already applied by the
/// server; the delegate returns the whole value.
public struct ReadRequest {
    public let central: Central
    public let characteristic: LocalCharacteristic
}

/// A write from a central (CBATTRequest for writes).
public struct WriteRequest {
    public let central: Central
    public let characteristic: LocalCharacteristic
    public let value: [UInt8]
    public let withResponse: Bool
}

/// CBPeripheralManagerDelegate.
///
/// Reads and writes are answered by returning the result, where Core Bluetooth has
/// `respond(to:withResult:)`: every callback runs on the one loop, so the answer is ready
/// before the next PDU is looked at, and a request can never be left unanswered.
public protocol PeripheralManagerDelegate: AnyObject {
    func peripheralManagerDidUpdateState(_ peripheral: PeripheralManager)
    func peripheralManager(_ peripheral: PeripheralManager, didAdd service: LocalService, error: BluetoothError?)
    func peripheralManagerDidStartAdvertising(_ peripheral: PeripheralManager, error: BluetoothError?)
    func peripheralManager(_ peripheral: PeripheralManager, didReceiveRead request: ReadRequest) -> Result<[UInt8], ATTErrorCode>
    func peripheralManager(_ peripheral: PeripheralManager, didReceiveWrite request: WriteRequest) -> ATTErrorCode?
    func peripheralManager(_ peripheral: PeripheralManager, central: Central, didSubscribeTo characteristic: LocalCharacteristic)
    func peripheralManager(_ peripheral: PeripheralManager, central: Central, didUnsubscribeFrom characteristic: LocalCharacteristic)
    /// A central asks to subscribe: nil allows it, an error refuses the CCCD write. (Core
    /// Bluetooth lets every subscription through; a lock must not tell strangers anything.)
    func peripheralManager(_ peripheral: PeripheralManager, central: Central,
                           shouldSubscribeTo characteristic: LocalCharacteristic) -> ATTErrorCode?
    /// After `updateValue` returned false, there is room again.
    func peripheralManagerIsReady(toUpdateSubscribers peripheral: PeripheralManager)
    func peripheralManager(_ peripheral: PeripheralManager, didConnect central: Central)
    func peripheralManager(_ peripheral: PeripheralManager, didDisconnect central: Central, reason: DisconnectReason)
    /// peripheralManager(_:willRestoreState:): the first callback of a manager re-created with
    /// a restore identifier that had state preserved, before the state update.
    func peripheralManager(_ peripheral: PeripheralManager, willRestoreState state: RestoredPeripheralState)
    /// The preserved state could not be written (or read back at start).
    func peripheralManager(_ peripheral: PeripheralManager, didFailToPreserveState error: any Error)
    /// The system refused one of the manager's requests (advertising, power): the request
    /// still stands and is asked again after `refusal.retryIn`.
    func peripheralManager(_ peripheral: PeripheralManager, didRefuse refusal: TransportRefusal)
    /// The database's structure changed in `range` while `centrals` were connected (or since
    /// the run a restored state was preserved by): each that enabled Service Changed
    /// indications is sent one (Vol 3 Part G 7.1), as soon as its link can carry it.
    func peripheralManager(_ peripheral: PeripheralManager, didChangeServicesIn range: ClosedRange<UInt16>,
                           centrals: [Central])
}

extension PeripheralManagerDelegate {
    public func peripheralManager(_ peripheral: PeripheralManager, didAdd service: LocalService, error: BluetoothError?) {}
    public func peripheralManagerDidStartAdvertising(_ peripheral: PeripheralManager, error: BluetoothError?) {}
    public func peripheralManager(_ peripheral: PeripheralManager, didReceiveRead request: ReadRequest) -> Result<[UInt8], ATTErrorCode> {
        .failure(.readNotPermitted)
    }
    public func peripheralManager(_ peripheral: PeripheralManager, didReceiveWrite request: WriteRequest) -> ATTErrorCode? {
        .writeNotPermitted
    }
    public func peripheralManager(_ peripheral: PeripheralManager, central: Central, didSubscribeTo characteristic: LocalCharacteristic) {}
    public func peripheralManager(_ peripheral: PeripheralManager, central: Central, didUnsubscribeFrom characteristic: LocalCharacteristic) {}
    public func peripheralManager(_ peripheral: PeripheralManager, central: Central,
                                  shouldSubscribeTo characteristic: LocalCharacteristic) -> ATTErrorCode? { nil }
    public func peripheralManagerIsReady(toUpdateSubscribers peripheral: PeripheralManager) {}
    public func peripheralManager(_ peripheral: PeripheralManager, didConnect central: Central) {}
    public func peripheralManager(_ peripheral: PeripheralManager, didDisconnect central: Central, reason: DisconnectReason) {}
    public func peripheralManager(_ peripheral: PeripheralManager, willRestoreState state: RestoredPeripheralState) {}
    public func peripheralManager(_ peripheral: PeripheralManager, didFailToPreserveState error: any Error) {}
    public func peripheralManager(_ peripheral: PeripheralManager, didRefuse refusal: TransportRefusal) {}
    public func peripheralManager(_ peripheral: PeripheralManager, didChangeServicesIn range: ClosedRange<UInt16>,
                                  centrals: [Central]) {}
}

/// A published service and its characteristics' handles (CBMutableService once added).
public final class LocalService {
    public let definition: GATTService
    public let handles: GATTServiceHandles
    public let characteristics: [LocalCharacteristic]
    init(definition: GATTService, handles: GATTServiceHandles) {
        self.definition = definition
        self.handles = handles
        characteristics = definition.characteristics.indices.map {
            LocalCharacteristic(definition: definition.characteristics[$0], valueHandle: handles.characteristicValues[$0])
        }
    }
    public var uuid: BluetoothUUID { definition.uuid }
    public func characteristic(_ uuid: BluetoothUUID) -> LocalCharacteristic? { characteristics.first { $0.uuid == uuid } }
}

/// A published characteristic (CBMutableCharacteristic once added).
public final class LocalCharacteristic {
    public let definition: GATTCharacteristic
    public let valueHandle: UInt16
    /// Centrals subscribed right now (CBMutableCharacteristic.subscribedCentrals).
    public internal(set) var subscribedCentrals: [Central] = []
    init(definition: GATTCharacteristic, valueHandle: UInt16) { self.definition = definition; self.valueHandle = valueHandle }
    public var uuid: BluetoothUUID { definition.uuid }
}

/// CBPeripheralManager on any `BluetoothTransport`. With a restore identifier it preserves its
/// advertisement, services and subscribed centrals for a re-created manager
/// (`PeripheralManager+Restoration.swift`). Like the system's GATT server under Core Bluetooth
/// it publishes Generic Access (0x0001–0x0005, from `genericAccess`) and Generic Attribute
/// (0x0006–0x000D) itself; app services follow from 0x000E, and connected centrals are told
/// when their handles change (`PeripheralManager+ServiceChanged.swift`).
public final class PeripheralManager: BluetoothTransportDelegate, GATTServerDelegate {
    public let transport: any BluetoothTransport
    public weak var delegate: (any PeripheralManagerDelegate)?
    public internal(set) var state: ManagerState
    public let database = GATTDatabase()
    public internal(set) var services: [LocalService] = []
    public internal(set) var centrals: [Central] = []
    /// What the app asked to advertise; re-armed after each connection and disconnection
    /// because a legacy connectable advertiser stops when a central connects.
    public internal(set) var advertisement: Advertisement?
    private var waitingForReady = false
    /// Execution mode, advertising schedule and suppression (PeripheralManager+Background.swift).
    var background = PeripheralBackgroundState()

    public var trace: ((BluetoothAddress, String, [UInt8]) -> Void)?

    /// Restoration bookkeeping (PeripheralManager+Restoration.swift); nil without an identifier.
    var preservation: Preservation<PeripheralRestorationState>?
    /// The device name and appearance the Generic Access service serves.
    public let genericAccess: GenericAccess
    /// The Generic Attribute service's handles, and what connected centrals were last told of
    /// the database's structure (PeripheralManager+ServiceChanged.swift).
    let genericAttribute: GATTServiceHandles
    var announced: AnnouncedLayout?
    var announcementScheduled = false

    /// `genericAccess`: what the Generic Access service says this device is (the system's
    /// name under Core Bluetooth; here the application's, given once).
    public convenience init(transport: any BluetoothTransport, delegate: (any PeripheralManagerDelegate)? = nil,
                            options: ManagerOptions = ManagerOptions(),
                            genericAccess: GenericAccess = GenericAccess(deviceName: "Latchkey")) {
        self.init(transport: transport, delegate: delegate, options: options, genericAccess: genericAccess,
                  fixedServices: .current)
    }

    /// `fixedServices`: another version's layout, for the tests of an update from it.
    init(transport: any BluetoothTransport, delegate: (any PeripheralManagerDelegate)?, options: ManagerOptions,
         genericAccess: GenericAccess, fixedServices: FixedServices) {
        self.transport = transport
        self.delegate = delegate
        self.state = ManagerState(transport.state)
        self.genericAccess = genericAccess
        preservation = options.restoration.map { Preservation(identifier: $0.identifier, storage: $0.storage) }
        genericAttribute = fixedServices.publish(in: database, genericAccess: genericAccess)
        announced = AnnouncedLayout(database.layout)
        transport.delegate = self
        transport.loop.execute { [weak self] in
            guard let self else { return }
            if self.preservation?.isRestoring == true {
                self.restoreWhenTransportIsReady()
            } else {
                self.delegate?.peripheralManagerDidUpdateState(self)
                self.reportLoadError()
            }
        }
    }

    // MARK: Services

    /// add(_:). `startHandle` pins the handles (restoration keeps a central's cache valid).
    @discardableResult
    public func add(_ service: GATTService, startHandle: UInt16? = nil) throws(BluetoothError) -> LocalService {
        let handles: GATTServiceHandles
        do { handles = try database.add(service, startHandle: startHandle) } catch {
            throw .invalidParameters(error.message)
        }
        let local = LocalService(definition: service, handles: handles)
        services.append(local)
        preserve()
        scheduleServiceChangeAnnouncement()
        // On the next turn, as Core Bluetooth does: never from inside the caller, and never
        // ahead of the state update that `init` queued.
        transport.loop.execute { [weak self] in
            guard let self else { return }
            self.delegate?.peripheralManager(self, didAdd: local, error: nil)
        }
        return local
    }

    public func remove(_ service: LocalService) {
        database.removeService(at: service.handles.service)
        services.removeAll { $0 === service }
        preserve()
        scheduleServiceChangeAnnouncement()
    }

    /// removeAllServices(). The Generic Access and Generic Attribute services stay.
    public func removeAllServices() {
        for service in services { database.removeService(at: service.handles.service) }
        services.removeAll()
        preserve()
        scheduleServiceChangeAnnouncement()
    }

    // MARK: Advertising

    public func startAdvertising(_ advertisement: Advertisement) {
        self.advertisement = advertisement
        beginFastAdvertising(reapply: false)
        preserve()
        let failure: BluetoothError?
        do {
            if !background.suppressed { try transport.startAdvertising(advertisingForMode(advertisement)) }
            failure = nil
        } catch {
            failure = Self.advertisingFailure(error)
        }
        // Reported on the next turn, like `didAdd`.
        transport.loop.execute { [weak self] in
            guard let self else { return }
            self.delegate?.peripheralManagerDidStartAdvertising(self, error: failure)
        }
    }

    public func stopAdvertising() {
        advertisement = nil
        endAdvertisingSchedule()
        transport.stopAdvertising()
        preserve()
    }

    public var isAdvertising: Bool { transport.isAdvertising }

    /// Ends the link to `central` (mgmt Disconnect on the kernel transport); its
    /// `didDisconnect` follows. Core Bluetooth has no such call: a lock needs one to shed
    /// a central that never authenticates.
    public func disconnect(_ central: Central) {
        central.bearer.link.disconnect()
    }

    func rearmAdvertising() {
        guard let advertisement, state == .poweredOn, !transport.isAdvertising, !background.suppressed else { return }
        advertiseAgain(advertisingForMode(advertisement))
    }

    /// Asks the transport again for advertising the app already started (a re-arm after a
    /// connection or a power-on, a mode's new interval); a refusal reaches the app the way
    /// the first start's does, `didStartAdvertising` with the error, at once.
    func advertiseAgain(_ wanted: Advertisement) {
        do { try transport.startAdvertising(wanted) } catch {
            delegate?.peripheralManagerDidStartAdvertising(self, error: Self.advertisingFailure(error))
        }
    }

    static func advertisingFailure(_ error: TransportError) -> BluetoothError {
        error.code == .poweredOff ? .poweredOff : .invalidParameters(error.description)
    }

    // MARK: Notifications

    /// updateValue(_:for:onSubscribedCentrals:). Stores the value and notifies (or
    /// indicates) the subscribed centrals. Returns false when a link's queue is full: the
    /// value was not sent to every central, and `peripheralManagerIsReady` follows.
    @discardableResult
    public func updateValue(_ value: [UInt8], for characteristic: LocalCharacteristic,
                            onSubscribedCentrals only: [Central]? = nil) -> Bool {
        if characteristic.definition.value != nil { database.setValue(value, at: characteristic.valueHandle) }
        var allSent = true
        for central in characteristic.subscribedCentrals where only == nil || only!.contains(where: { $0 === central }) {
            let config = central.server.clientConfigurations[characteristic.valueHandle, default: []]
            let pdu = config.contains(.notify)
                ? central.server.notification(value, forValueAt: characteristic.valueHandle)
                : central.server.indication(value, forValueAt: characteristic.valueHandle)
            switch pdu {
            case .success(let bytes):
                if !central.bearer.sendServerInitiated(bytes) {
                    allSent = false
                    // The indication never left, so no confirmation will come.
                    if config.contains(.indicate) { central.server.cancelIndication() }
                }
            case .failure(.indicationInFlight):
                allSent = false
            case .failure:
                allSent = false
            }
        }
        if !allSent { waitingForReady = true }
        return allSent
    }

    // MARK: BluetoothTransportDelegate

    public func transport(_ transport: any BluetoothTransport, didChangeState radio: RadioState) {
        state = ManagerState(radio)
        if preservation?.isRestoring == true {
            // Nothing reaches the delegate before `willRestoreState`.
            restoreWhenTransportIsReady()
            return
        }
        if state == .poweredOn { rearmAdvertising() }
        delegate?.peripheralManagerDidUpdateState(self)
    }

    public func transport(_ transport: any BluetoothTransport, didReceive report: AdvertisementReport) {}

    public func transport(_ transport: any BluetoothTransport, didRefuse refusal: TransportRefusal) {
        delegate?.peripheralManager(self, didRefuse: refusal)
    }

    public func transport(_ transport: any BluetoothTransport, didConnect link: any ATTLink) {
        guard link.role == .peripheral else { return }
        // Restoration pending: reconciliation adopts it from `connectedLinks`.
        guard preservation?.isRestoring != true else { return }
        let central = makeCentral(link)
        delegate?.peripheralManager(self, didConnect: central)
        transport.loop.execute { [weak self] in self?.rearmAdvertising() }
    }

    /// Attaches a bearer and a GATT server to an incoming link.
    func makeCentral(_ link: any ATTLink) -> Central {
        let server = GATTServer(database: database, preferredMTU: link.maximumTransmissionUnit)
        server.delegate = self
        let bearer = ATTBearer(link: link, loop: transport.loop)
        bearer.server = server
        let central = Central(identifier: link.peer, bearer: bearer, server: server)
        let address = link.peer
        bearer.trace = { [weak self] dir, pdu in self?.trace?(address, dir, pdu) }
        bearer.onWritable = { [weak self, weak central] in
            guard let self else { return }
            if let central { self.sendPendingServiceChange(to: central) }
            guard self.waitingForReady else { return }
            self.waitingForReady = false
            self.delegate?.peripheralManagerIsReady(toUpdateSubscribers: self)
        }
        bearer.onDisconnect = { [weak self, weak central] reason in
            guard let self, let central else { return }
            self.centralLeft(central, reason: reason)
        }
        centrals.append(central)
        preserve()
        return central
    }

    private func centralLeft(_ central: Central, reason: DisconnectReason) {
        centrals.removeAll { $0 === central }
        for s in services {
            for c in s.characteristics where c.subscribedCentrals.contains(where: { $0 === central }) {
                c.subscribedCentrals.removeAll { $0 === central }
                delegate?.peripheralManager(self, central: central, didUnsubscribeFrom: c)
            }
        }
        preserve()
        delegate?.peripheralManager(self, didDisconnect: central, reason: reason)
        beginFastAdvertising()
        rearmAdvertising()
    }

    // MARK: GATTServerDelegate

    private func lookup(_ handle: UInt16) -> LocalCharacteristic? {
        for s in services { if let c = s.characteristics.first(where: { $0.valueHandle == handle }) { return c } }
        return nil
    }

    func central(for server: GATTServer) -> Central? { centrals.first { $0.server === server } }

    public func server(_ server: GATTServer, readDynamicValueAt handle: UInt16) -> Result<[UInt8], ATTErrorCode> {
        guard let c = lookup(handle), let central = central(for: server), let delegate else { return .failure(.unlikelyError) }
        return delegate.peripheralManager(self, didReceiveRead: ReadRequest(central: central, characteristic: c))
    }

    public func server(_ server: GATTServer, write value: ATTBytes, at handle: UInt16, withResponse: Bool) -> ATTErrorCode? {
        guard let c = lookup(handle), let central = central(for: server) else { return nil }  // descriptors: stored
        guard let delegate else { return .writeNotPermitted }
        return delegate.peripheralManager(
            self, didReceiveWrite: WriteRequest(central: central, characteristic: c, value: Array(value), withResponse: withResponse))
    }

    public func server(_ server: GATTServer, shouldChangeClientConfiguration configuration: ClientConfiguration,
                       forValueAt handle: UInt16) -> ATTErrorCode? {
        guard let c = lookup(handle), let central = central(for: server) else { return nil }
        return delegate?.peripheralManager(self, central: central, shouldSubscribeTo: c)
    }

    public func server(_ server: GATTServer, didChangeClientConfiguration configuration: ClientConfiguration,
                       forValueAt handle: UInt16) {
        // Preserved first: a relaunch keeps exactly the subscriptions the client set
        // (Service Changed's, which no app characteristic reports, included).
        preserve()
        guard let c = lookup(handle), let central = central(for: server) else { return }
        let was = c.subscribedCentrals.contains { $0 === central }
        if configuration.isEmpty {
            guard was else { return }
            c.subscribedCentrals.removeAll { $0 === central }
            delegate?.peripheralManager(self, central: central, didUnsubscribeFrom: c)
        } else if !was {
            c.subscribedCentrals.append(central)
            delegate?.peripheralManager(self, central: central, didSubscribeTo: c)
        }
    }
}
