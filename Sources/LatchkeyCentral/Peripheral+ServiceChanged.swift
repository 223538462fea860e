import LatchkeyATT
import LatchkeyGATT
import LatchkeyManagers

/// Where a peer's Generic Attribute service is: found once, kept with the attribute cache.
struct GenericAttributeCache: Equatable {
    var service: ClosedRange<UInt16>
    var serviceChanged: UInt16?
    var serviceChangedConfiguration: UInt16?
    var clientFeatures: UInt16?
}

// Keeping the attribute cache true to the peer's database (Core Vol 3 Part G 2.5.2), the part
// of a link's setup that Core Bluetooth does for the app (ordered in Peripheral+LinkSetup.swift):
// - the Database Hash read on every link: a cache made against another hash — or whose hash
//   was never known — is invalidated, and the app told through `didModifyServices`;
// - Service Changed indications enabled, with Robust Caching (unless the adopted link still
//   has them).
// Then a Service Changed indication invalidates the cached services in its range (the app is
// told and discovers them again) and the hash is read again for the cache.
extension Peripheral {
    /// The hash read on a link: a cache made against another database (or against one whose
    /// hash nobody knew) cannot be trusted in any part.
    func check(_ hash: [UInt8]) {
        let cached = services != nil || genericAttribute != nil
        let stale = cached && databaseHash != hash
        if databaseHash != hash {
            databaseHash = hash
            onCacheChange?()
        }
        if stale { invalidate(0x0001...0xFFFF) }
    }

    /// A Service Changed indication (already confirmed by the client).
    func serviceChanged(_ value: ATTBytes) {
        guard let change = ServiceChangedRange(value: value) else {
            delegate?.peripheral(self, didReceiveInvalidServiceChange: Array(value))
            return
        }
        // The hash is read again for the cache, ahead of the app's rediscovery.
        readDatabaseHash()
        invalidate(change.range)
        if genericAttribute == nil { deferChores() }
        bearer?.flush()
    }

    /// Drops the cached services that overlap `range` (and the Generic Attribute service's
    /// handles, if they are in it) and tells the app which services it lost.
    func invalidate(_ range: ClosedRange<UInt16>) {
        let gone = (services ?? []).filter { ($0.startHandle...$0.endHandle).overlaps(range) }
        for s in gone { s.isInvalidated = true }
        if !gone.isEmpty {
            let kept = (services ?? []).filter { !$0.isInvalidated }
            services = kept.isEmpty ? nil : kept
        }
        if let g = genericAttribute, g.service.overlaps(range) {
            genericAttribute = nil
            serviceChangedSubscribed = false
        }
        onCacheChange?()
        delegate?.peripheral(self, didModifyServices: gone)
    }

    /// Finds Service Changed (its CCCD) and Client Supported Features once, then enables Robust
    /// Caching and the indication on this link; a step whose Generic Attribute service was dropped
    /// meanwhile stops, and the chores run again from the start. The lookup asks no more than it
    /// needs (Vol 3 Part G 7, 3.3.3.3): against a Latchkey lock, one Find By Type Value and one
    /// Read By Type (docs/RESTORATION.md, "The order of a link's setup, and its cost").
    func subscribeToServiceChanged() {
        guard let client else { return }
        if let g = genericAttribute { return enableServiceChanged(g) }
        client.discoverPrimaryServices(.genericAttributeService, firstOnly: true) { [weak self] result in
            guard let self, case .success(let found) = result, let service = found.first,
                  let client = self.client else { return }
            client.discoverCharacteristics(of: service, until: Self.serviceChangedIsBounded) { [weak self] result in
                guard let self, case .success(let characteristics) = result, let client = self.client else { return }
                var g = GenericAttributeCache(service: service.startHandle...service.endHandle)
                g.clientFeatures = characteristics.first { $0.uuid == .clientSupportedFeatures }?.valueHandle
                guard let sc = characteristics.first(where: { $0.uuid == .serviceChanged }) else { return self.found(g) }
                g.serviceChanged = sc.valueHandle
                if sc.endHandle == sc.valueHandle + 1 {
                    g.serviceChangedConfiguration = sc.endHandle
                    return self.found(g)
                }
                client.discoverDescriptors(of: sc) { [weak self] result in
                    guard let self else { return }
                    if case .success(let descriptors) = result {
                        g.serviceChangedConfiguration = descriptors.first { $0.uuid == .clientCharacteristicConfiguration }?.handle
                    }
                    self.found(g)
                }
                self.bearer?.flush()
            }
            self.bearer?.flush()
        }
        bearer?.flush()
    }

    /// Service Changed and Client Supported Features are found, and a declaration follows
    /// Service Changed's: its range is known.
    private static func serviceChangedIsBounded(_ found: [DiscoveredCharacteristic]) -> Bool {
        guard let sc = found.firstIndex(where: { $0.uuid == .serviceChanged }) else { return false }
        return sc < found.count - 1 && found.contains { $0.uuid == .clientSupportedFeatures }
    }

    private func found(_ g: GenericAttributeCache) {
        guard genericAttribute == nil else { return }  // found meanwhile by chores run again
        genericAttribute = g
        onCacheChange?()
        enableServiceChanged(g)
    }

    /// Client Supported Features first: from its write on, a change of the database makes the
    /// peer refuse our next request (Robust Caching), the indication's CCCD write included.
    private func enableServiceChanged(_ g: GenericAttributeCache) {
        guard let client else { return }
        guard let features = g.clientFeatures else { return enableIndication(g) }
        client.write([ClientSupportedFeatures.robustCaching.rawValue], to: features) { [weak self] _ in
            guard let self, self.genericAttribute == g else { return }
            self.enableIndication(g)
        }
        bearer?.flush()
    }

    private func enableIndication(_ g: GenericAttributeCache) {
        guard let client, let cccd = g.serviceChangedConfiguration, !serviceChangedSubscribed else { return }
        client.setClientConfiguration(.indicate, descriptor: cccd) { [weak self] result in
            guard let self, self.genericAttribute == g, case .success = result else { return }
            self.serviceChangedSubscribed = true
            self.onCacheChange?()
        }
        bearer?.flush()
    }
}
