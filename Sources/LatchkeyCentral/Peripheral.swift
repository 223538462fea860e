import LatchkeyATT
import LatchkeyGATT
import LatchkeyManagers
import LatchkeyTransport

/// CBPeripheralDelegate. Every method has a default.
public protocol PeripheralDelegate: AnyObject {
    func peripheral(_ peripheral: Peripheral, didDiscoverServices error: BluetoothError?)
    func peripheral(_ peripheral: Peripheral, didDiscoverCharacteristicsFor service: RemoteService, error: BluetoothError?)
    func peripheral(_ peripheral: Peripheral, didDiscoverDescriptorsFor characteristic: RemoteCharacteristic,
                    error: BluetoothError?)
    /// A read completed, or a notification/indication arrived.
    func peripheral(_ peripheral: Peripheral, didUpdateValueFor characteristic: RemoteCharacteristic, error: BluetoothError?)
    func peripheral(_ peripheral: Peripheral, didUpdateValueFor descriptor: RemoteDescriptor, error: BluetoothError?)
    func peripheral(_ peripheral: Peripheral, didWriteValueFor characteristic: RemoteCharacteristic, error: BluetoothError?)
    func peripheral(_ peripheral: Peripheral, didUpdateNotificationStateFor characteristic: RemoteCharacteristic,
                    error: BluetoothError?)
    /// The link can take another write without response (peripheralIsReady(toSendWriteWithoutResponse:)).
    func peripheralIsReady(toSendWriteWithoutResponse peripheral: Peripheral)
    func peripheral(_ peripheral: Peripheral, didUpdateMTU mtu: Int)
    /// peripheral(_:didModifyServices:): the peripheral's database changed (a Service Changed
    /// indication, or a Database Hash that no longer matches the cache). `invalidatedServices`
    /// are gone from `services`, with their characteristics; requests on them fail. Discover
    /// again what the app needs.
    func peripheral(_ peripheral: Peripheral, didModifyServices invalidatedServices: [RemoteService])
    /// A Service Changed indication whose value is not a handle range arrived: it was
    /// confirmed (every indication is) and otherwise ignored.
    func peripheral(_ peripheral: Peripheral, didReceiveInvalidServiceChange value: [UInt8])
}

extension PeripheralDelegate {
    public func peripheral(_ peripheral: Peripheral, didDiscoverServices error: BluetoothError?) {}
    public func peripheral(_ peripheral: Peripheral, didDiscoverCharacteristicsFor service: RemoteService, error: BluetoothError?) {}
    public func peripheral(_ peripheral: Peripheral, didDiscoverDescriptorsFor characteristic: RemoteCharacteristic,
                           error: BluetoothError?) {}
    public func peripheral(_ peripheral: Peripheral, didUpdateValueFor characteristic: RemoteCharacteristic, error: BluetoothError?) {}
    public func peripheral(_ peripheral: Peripheral, didUpdateValueFor descriptor: RemoteDescriptor, error: BluetoothError?) {}
    public func peripheral(_ peripheral: Peripheral, didWriteValueFor characteristic: RemoteCharacteristic, error: BluetoothError?) {}
    public func peripheral(_ peripheral: Peripheral, didUpdateNotificationStateFor characteristic: RemoteCharacteristic,
                           error: BluetoothError?) {}
    public func peripheralIsReady(toSendWriteWithoutResponse peripheral: Peripheral) {}
    public func peripheral(_ peripheral: Peripheral, didUpdateMTU mtu: Int) {}
    public func peripheral(_ peripheral: Peripheral, didModifyServices invalidatedServices: [RemoteService]) {}
    public func peripheral(_ peripheral: Peripheral, didReceiveInvalidServiceChange value: [UInt8]) {}
}

/// The central's proxy for a remote peripheral (CBPeripheral). Identified by its address.
public final class Peripheral {
    public enum State: String, Sendable { case disconnected, connecting, connected, disconnecting }

    public let identifier: BluetoothAddress
    public internal(set) var name: String?
    public internal(set) var state: State = .disconnected
    public weak var delegate: (any PeripheralDelegate)?
    /// Nil until discovered (CBPeripheral.services).
    public internal(set) var services: [RemoteService]?

    /// The peer's Database Hash the cache was made against; nil when unknown (or it has none).
    public internal(set) var databaseHash: [UInt8]?
    /// Where its Generic Attribute service is, once found (part of the cache, hidden from
    /// `services` as under Core Bluetooth), and whether Service Changed indications are on
    /// for the current link (Peripheral+ServiceChanged.swift).
    var genericAttribute: GenericAttributeCache?
    var serviceChangedSubscribed = false
    /// App requests held while a cache is checked against the Database Hash at the start of
    /// a link; nil when nothing is being checked (Peripheral+LinkSetup.swift).
    var heldUntilValidated: [() -> Void]?
    /// The app's first read on a link whose cache is being checked, sent in one request with
    /// the hash when the hash's handle is known (Peripheral+LinkSetup.swift).
    var companionRead: RemoteCharacteristic?
    /// Where the peer's Database Hash is, learnt from the last read by UUID; this process
    /// only (a relaunch reads the hash by its UUID once more).
    var databaseHashHandle: UInt16?
    /// The link's hash check has been asked for (alone or with the companion read).
    var hashCheckSent = false
    /// The link's Service Changed chores wait for the app's requests to run out.
    var choresPending = false

    var bearer: ATTBearer?
    var client: GATTClient? { bearer?.client }
    /// Called when the attribute cache or a subscription changed, before the delegate
    /// hears of it: the manager preserves it (restoration).
    var onCacheChange: (() -> Void)?

    init(identifier: BluetoothAddress) { self.identifier = identifier }

    /// The ATT MTU in force on the link (23 until the exchange completes).
    public var mtu: Int { bearer?.mtu ?? ATTLimits.minimumMTU }

    /// The link's connection interval as its controller reports it; nil without a link.
    public var connectionInterval: Duration? { bearer?.link.connectionInterval }

    /// Asks for another connection interval on the link (the central's LE Connection
    /// Update; Core Bluetooth leaves this to iOS). False without a link, or when the
    /// transport cannot (`ATTLink.requestConnectionInterval`).
    public func requestConnectionInterval(_ interval: Duration) -> Bool {
        bearer?.link.requestConnectionInterval(interval) ?? false
    }

    /// CBPeripheral.maximumWriteValueLength(for:).
    public func maximumWriteValueLength(withResponse: Bool) -> Int {
        withResponse ? ATTLimits.maximumAttributeLength : mtu - 3
    }

    /// CBPeripheral.canSendWriteWithoutResponse.
    public var canSendWriteWithoutResponse: Bool { bearer.map { !$0.isBlocked } ?? false }

    public func service(_ uuid: BluetoothUUID) -> RemoteService? { services?.first { $0.uuid == uuid } }

    /// Forgets every discovered service, characteristic and descriptor (the peripheral's
    /// database changed: a cached handle was refused). The next setup discovers again.
    public func discardAttributeCache() {
        for s in services ?? [] { s.isInvalidated = true }
        services = nil
        onCacheChange?()
    }

    // MARK: Discovery

    /// Discovers primary services; with a filter, only those (by Find By Type Value per UUID).
    public func discoverServices(_ uuids: [BluetoothUUID]? = nil) {
        if hold({ self.discoverServices(uuids) }) { return }
        guard let client else { delegate?.peripheral(self, didDiscoverServices: .notConnected); return }
        if let uuids, !uuids.isEmpty {
            var collected: [DiscoveredService] = []
            var remaining = uuids.count
            var failure: BluetoothError?
            for uuid in uuids {
                client.discoverPrimaryServices(uuid) { [weak self] result in
                    switch result {
                    case .success(let s): collected += s
                    case .failure(let e): failure = failure ?? BluetoothError(e)
                    }
                    remaining -= 1
                    if remaining == 0 {
                        self?.finishServiceDiscovery(collected.sorted { $0.startHandle < $1.startHandle }, failure, asked: uuids)
                    }
                }
            }
        } else {
            client.discoverPrimaryServices(nil) { [weak self] result in
                switch result {
                case .success(let s): self?.finishServiceDiscovery(s, nil)
                case .failure(let e): self?.finishServiceDiscovery([], BluetoothError(e))
                }
            }
        }
        bearer?.flush()
    }

    static let systemServices: Set<BluetoothUUID> = [.genericAccessService, .genericAttributeService]

    private func finishServiceDiscovery(_ found: [DiscoveredService], _ error: BluetoothError?,
                                        asked uuids: [BluetoothUUID]? = nil) {
        // The Generic Access and Generic Attribute services are the manager's, as the
        // system's are under Core Bluetooth: not listed unless asked for by UUID.
        let found = found.filter { !Self.systemServices.contains($0.uuid) || uuids?.contains($0.uuid) == true }
        if error == nil || !found.isEmpty {
            // Keep already-discovered service objects so their characteristics survive a re-discovery.
            let old = services ?? []
            services = found.map { d in
                old.first { $0.startHandle == d.startHandle && $0.uuid == d.uuid } ?? RemoteService(d, peripheral: self)
            }
            onCacheChange?()
        }
        delegate?.peripheral(self, didDiscoverServices: error)
    }

    public func discoverCharacteristics(_ uuids: [BluetoothUUID]? = nil, for service: RemoteService) {
        if hold({ self.discoverCharacteristics(uuids, for: service) }) { return }
        guard !service.isInvalidated else {
            delegate?.peripheral(self, didDiscoverCharacteristicsFor: service, error: .att(.invalidHandle)); return
        }
        guard let client else {
            delegate?.peripheral(self, didDiscoverCharacteristicsFor: service, error: .notConnected); return
        }
        client.discoverCharacteristics(of: service.discovered) { [weak self, weak service] result in
            guard let self, let service else { return }
            switch result {
            case .success(let found):
                let wanted = found.filter { uuids == nil || uuids!.contains($0.uuid) }
                let old = service.characteristics ?? []
                service.characteristics = wanted.map { d in
                    old.first { $0.valueHandle == d.valueHandle } ?? RemoteCharacteristic(d, service: service)
                }
                self.onCacheChange?()
                self.delegate?.peripheral(self, didDiscoverCharacteristicsFor: service, error: nil)
            case .failure(let e):
                self.delegate?.peripheral(self, didDiscoverCharacteristicsFor: service, error: BluetoothError(e))
            }
        }
        bearer?.flush()
    }

    public func discoverDescriptors(for characteristic: RemoteCharacteristic) {
        if hold({ self.discoverDescriptors(for: characteristic) }) { return }
        guard !characteristic.isInvalidated else {
            delegate?.peripheral(self, didDiscoverDescriptorsFor: characteristic, error: .att(.invalidHandle)); return
        }
        guard let client else {
            delegate?.peripheral(self, didDiscoverDescriptorsFor: characteristic, error: .notConnected); return
        }
        client.discoverDescriptors(of: characteristic.discovered) { [weak self, weak characteristic] result in
            guard let self, let characteristic else { return }
            switch result {
            case .success(let found):
                characteristic.descriptors = found.map { RemoteDescriptor($0, characteristic: characteristic) }
                self.onCacheChange?()
                self.delegate?.peripheral(self, didDiscoverDescriptorsFor: characteristic, error: nil)
            case .failure(let e):
                self.delegate?.peripheral(self, didDiscoverDescriptorsFor: characteristic, error: BluetoothError(e))
            }
        }
        bearer?.flush()
    }

    // MARK: Reads and writes

    public func readValue(for characteristic: RemoteCharacteristic) {
        if holdAsCompanion(characteristic) { return }
        if hold({ self.readValue(for: characteristic) }) { return }
        guard !characteristic.isInvalidated else {
            delegate?.peripheral(self, didUpdateValueFor: characteristic, error: .att(.invalidHandle)); return
        }
        guard let client else {
            delegate?.peripheral(self, didUpdateValueFor: characteristic, error: .notConnected); return
        }
        client.read(characteristic.valueHandle) { [weak self, weak characteristic] result in
            guard let self, let characteristic else { return }
            switch result {
            case .success(let v):
                characteristic.value = v
                self.delegate?.peripheral(self, didUpdateValueFor: characteristic, error: nil)
            case .failure(let e):
                self.delegate?.peripheral(self, didUpdateValueFor: characteristic, error: BluetoothError(e))
            }
        }
        bearer?.flush()
    }

    public func readValue(for descriptor: RemoteDescriptor) {
        if hold({ self.readValue(for: descriptor) }) { return }
        guard descriptor.characteristic?.isInvalidated == false else {
            delegate?.peripheral(self, didUpdateValueFor: descriptor, error: .att(.invalidHandle)); return
        }
        guard let client else { delegate?.peripheral(self, didUpdateValueFor: descriptor, error: .notConnected); return }
        client.read(descriptor.handle) { [weak self, weak descriptor] result in
            guard let self, let descriptor else { return }
            switch result {
            case .success(let v):
                descriptor.value = v
                self.delegate?.peripheral(self, didUpdateValueFor: descriptor, error: nil)
            case .failure(let e):
                self.delegate?.peripheral(self, didUpdateValueFor: descriptor, error: BluetoothError(e))
            }
        }
        bearer?.flush()
    }

    /// CBPeripheral.writeValue(_:for:type:). With response: a Write Request (or a reliable
    /// long write) and a `didWriteValueFor` callback. Without: a Write Command; check
    /// `canSendWriteWithoutResponse` first, as on iOS; when the link is full it is refused.
    public func writeValue(_ value: [UInt8], for characteristic: RemoteCharacteristic, withResponse: Bool = true) {
        if hold({ self.writeValue(value, for: characteristic, withResponse: withResponse) }) { return }
        guard !characteristic.isInvalidated else {
            if withResponse { delegate?.peripheral(self, didWriteValueFor: characteristic, error: .att(.invalidHandle)) }
            return
        }
        guard let client, let bearer else {
            if withResponse { delegate?.peripheral(self, didWriteValueFor: characteristic, error: .notConnected) }
            return
        }
        if withResponse {
            client.write(value, to: characteristic.valueHandle) { [weak self, weak characteristic] result in
                guard let self, let characteristic else { return }
                self.delegate?.peripheral(self, didWriteValueFor: characteristic,
                                          error: result.failure.map(BluetoothError.init))
            }
        } else {
            // As on iOS a Write Command has no answer: one longer than maximumWriteValueLength is dropped (callers check it).
            try? client.writeWithoutResponse(value, to: characteristic.valueHandle)
        }
        bearer.flush()
    }

    /// CBPeripheral.setNotifyValue(_:for:): writes the CCCD (notify, or indicate when the
    /// characteristic only indicates). Descriptors are discovered first if needed.
    public func setNotifyValue(_ enabled: Bool, for characteristic: RemoteCharacteristic) {
        if hold({ self.setNotifyValue(enabled, for: characteristic) }) { return }
        guard !characteristic.isInvalidated else {
            delegate?.peripheral(self, didUpdateNotificationStateFor: characteristic, error: .att(.invalidHandle)); return
        }
        guard client != nil else {
            delegate?.peripheral(self, didUpdateNotificationStateFor: characteristic, error: .notConnected); return
        }
        guard !characteristic.properties.isDisjoint(with: [.notify, .indicate]) else {
            delegate?.peripheral(self, didUpdateNotificationStateFor: characteristic,
                                 error: .operationNotSupported("characteristic neither notifies nor indicates"))
            return
        }
        if let cccd = characteristic.clientConfigurationHandle {
            writeClientConfiguration(enabled, cccd, characteristic)
            return
        }
        client!.discoverDescriptors(of: characteristic.discovered) { [weak self, weak characteristic] result in
            guard let self, let characteristic else { return }
            if case .success(let found) = result {
                characteristic.descriptors = found.map { RemoteDescriptor($0, characteristic: characteristic) }
                self.onCacheChange?()
            }
            guard let cccd = characteristic.clientConfigurationHandle else {
                self.delegate?.peripheral(self, didUpdateNotificationStateFor: characteristic,
                                          error: .att(.attributeNotFound))
                return
            }
            self.writeClientConfiguration(enabled, cccd, characteristic)
        }
        bearer?.flush()
    }

    private func writeClientConfiguration(_ enabled: Bool, _ handle: UInt16, _ characteristic: RemoteCharacteristic) {
        guard let client else { return }
        let config: ClientConfiguration = !enabled ? [] : characteristic.properties.contains(.notify) ? .notify : .indicate
        client.setClientConfiguration(config, descriptor: handle) { [weak self, weak characteristic] result in
            guard let self, let characteristic else { return }
            if case .success = result {
                characteristic.isNotifying = enabled
                self.onCacheChange?()
            }
            self.delegate?.peripheral(self, didUpdateNotificationStateFor: characteristic,
                                      error: result.failure.map(BluetoothError.init))
        }
        bearer?.flush()
    }

    // MARK: Link plumbing (driven by CentralManager)

    /// Finds the characteristic that owns a value handle.
    func characteristic(valueHandle: UInt16) -> RemoteCharacteristic? {
        for s in services ?? [] {
            if let c = s.characteristics?.first(where: { $0.valueHandle == valueHandle }) { return c }
        }
        return nil
    }

    /// `restoredMTU`: an adopted link whose MTU was exchanged by the previous process (a
    /// client exchanges once per connection, Vol 3 Part F 3.4.2.1).
    func attach(_ bearer: ATTBearer, restoredMTU: Int? = nil) {
        self.bearer = bearer
        let client = GATTClient(preferredMTU: bearer.link.maximumTransmissionUnit)
        bearer.client = client
        client.onValue = { [weak self] handle, value, isIndication in
            guard let self else { return }
            if isIndication, handle == self.genericAttribute?.serviceChanged {
                self.serviceChanged(value)
                return
            }
            guard let c = self.characteristic(valueHandle: handle) else {
                // An indication from a handle the cache does not know (already confirmed): the
                // peer's database may not be the one cached — Service Changed moved, say. The
                // hash says.
                if isIndication { self.verifyDatabaseHash() }
                return
            }
            c.value = Array(value)
            self.delegate?.peripheral(self, didUpdateValueFor: c, error: nil)
        }
        bearer.onWritable = { [weak self] in
            guard let self else { return }
            self.delegate?.peripheralIsReady(toSendWriteWithoutResponse: self)
        }
        state = .connected
        if let restoredMTU {
            // A link the previous process used: its MTU stands, and a barrier keeps an answer
            // meant for that process from being taken for ours.
            client.restoreMTU(restoredMTU)
            let nonce = UInt16(truncatingIfNeeded: bearer.loop.now.nanoseconds / 1_000) | 1
            client.synchronize(nonce: nonce) { _ in }
            beginLinkSetup()
            return
        }
        // iOS exchanges the MTU as soon as a link is up; so do we. The hash check follows
        // it, chosen when the answer is in: by then the app's first read is known, and can
        // go with the hash in one request.
        client.exchangeMTU { [weak self, weak client] result in
            guard let self, let client, self.client === client else { return }
            if case .success(let mtu) = result {
                self.onCacheChange?()  // the preserved link carries its MTU
                self.delegate?.peripheral(self, didUpdateMTU: mtu)
            }
            self.checkDatabaseHash()
        }
        beginLinkSetup(checkingHashNow: false)
    }

    func detach() {
        bearer = nil
        state = .disconnected
        clearSubscriptions()
        choresPending = false
        releaseHeld()  // they fail: not connected
    }
}

extension Result {
    var failure: Failure? { if case .failure(let e) = self { return e } else { return nil } }
}
