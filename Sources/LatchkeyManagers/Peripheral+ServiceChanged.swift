import LatchkeyATT
import LatchkeyGATT

/// Where a peer's Generic Attribute service is: found once, kept with the attribute cache.
struct GenericAttributeCache: Equatable {
    var service: ClosedRange<UInt16>
    var serviceChanged: UInt16?
    var serviceChangedConfiguration: UInt16?
    var clientFeatures: UInt16?
}

// Keeping the attribute cache true to the peer's database (Core Vol 3 Part G 2.5.2), the part
// of a link's setup that Core Bluetooth does for the app. On every link, new or adopted after
// a relaunch, before any request of the app goes out (they are held meanwhile):
// - the Database Hash is read; a cache made against another hash — or whose hash was never
//   known — is invalidated, and the app told through `didModifyServices`;
// - Service Changed indications are enabled, with Robust Caching (unless the adopted link
//   still has them).
// Then a Service Changed indication invalidates the cached services in its range (the app is
// told and discovers them again) and the hash is read again for the cache.
extension Peripheral {
    /// The link's setup: hash, then Service Changed; the app's requests wait for both, so that
    /// none is built from a cache about to be invalidated, and none interleaves with it.
    func synchronizeCache() {
        guard let client else { return }
        heldUntilValidated = heldUntilValidated ?? []
        client.read(using: .databaseHash) { [weak self] result in
            guard let self else { return }
            if case .success(let found) = result, let hash = found.first?.value, hash.count == 16 {
                self.check(hash)
            }
            // A peer without a hash, or a failed read: the cache is kept as it is, and a
            // handle it refuses sends the app back to discovery.
            guard !self.serviceChangedSubscribed else { self.releaseHeld(); return }
            self.subscribeToServiceChanged { [weak self] in self?.releaseHeld() }
        }
        bearer?.flush()
    }

    /// Queues `request` while the link's setup runs. True when it was held.
    func hold(_ request: @escaping () -> Void) -> Bool {
        guard heldUntilValidated != nil else { return false }
        heldUntilValidated!.append(request)
        return true
    }

    func releaseHeld() {
        guard let held = heldUntilValidated else { return }
        heldUntilValidated = nil
        for request in held { request() }
    }

    /// The hash read on a link: a cache made against another database (or against one whose
    /// hash nobody knew) cannot be trusted in any part.
    private func check(_ hash: [UInt8]) {
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
        databaseHash = nil
        client?.read(using: .databaseHash) { [weak self] result in
            guard let self, case .success(let found) = result, let hash = found.first?.value, hash.count == 16 else { return }
            self.databaseHash = hash
            self.onCacheChange?()
        }
        invalidate(change.range)
        if genericAttribute == nil { subscribeToServiceChanged {} }
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

    /// Finds Service Changed (its CCCD) and Client Supported Features once, then enables
    /// the indication and Robust Caching on this link; `done` runs at the end, whatever the
    /// peer answered.
    func subscribeToServiceChanged(then done: @escaping () -> Void) {
        guard let client else { return done() }
        if let g = genericAttribute { return enableServiceChanged(g, then: done) }
        client.discoverPrimaryServices(.genericAttributeService) { [weak self] result in
            guard let self, case .success(let found) = result, let service = found.first,
                  let client = self.client else { return done() }
            client.discoverCharacteristics(of: service) { [weak self] result in
                guard let self, case .success(let characteristics) = result, let client = self.client else { return done() }
                var g = GenericAttributeCache(service: service.startHandle...service.endHandle)
                g.clientFeatures = characteristics.first { $0.uuid == .clientSupportedFeatures }?.valueHandle
                guard let sc = characteristics.first(where: { $0.uuid == .serviceChanged }) else {
                    return self.found(g, then: done)
                }
                g.serviceChanged = sc.valueHandle
                client.discoverDescriptors(of: sc) { [weak self] result in
                    guard let self else { return done() }
                    if case .success(let descriptors) = result {
                        g.serviceChangedConfiguration = descriptors.first { $0.uuid == .clientCharacteristicConfiguration }?.handle
                    }
                    self.found(g, then: done)
                }
                self.bearer?.flush()
            }
            self.bearer?.flush()
        }
        bearer?.flush()
    }

    private func found(_ g: GenericAttributeCache, then done: @escaping () -> Void) {
        genericAttribute = g
        onCacheChange?()
        enableServiceChanged(g, then: done)
    }

    private func enableServiceChanged(_ g: GenericAttributeCache, then done: @escaping () -> Void) {
        guard let client else { return done() }
        if let features = g.clientFeatures {
            client.write([ClientSupportedFeatures.robustCaching.rawValue], to: features) { _ in }
        }
        guard let cccd = g.serviceChangedConfiguration else {
            // The feature write is queued first: whatever follows it comes after it.
            bearer?.flush()
            return done()
        }
        client.setClientConfiguration(.indicate, descriptor: cccd) { [weak self] result in
            if let self, case .success = result {
                self.serviceChangedSubscribed = true
                self.onCacheChange?()
            }
            done()
        }
        bearer?.flush()
    }
}
