import LatchkeyATT
import LatchkeyGATT
import LatchkeyManagers

// The order of a link's setup, the part Core Bluetooth does for the app: what must come
// before the app's first request, and what can wait until its requests have run out
// (Core Vol 3 Part G 2.5.2).
//
// Before — the Database Hash, read by its UUID (Read Using Characteristic UUID: one Read By
// Type Request over 0x0001–0xFFFF, 4.8.2; one round trip, no discovery). The app's requests
// are held until it answers. It is what lets a cache be used without a bond: a cache made
// against another hash is dropped before any of its handles goes out, and the app told. On a
// link with no cache it is read all the same: it must describe what the app discovers next,
// so it has to be read before that discovery — a hash read after it could already belong to
// a changed database and vouch for a stale cache on every later link.
// A returning central whose first request is a read of a cached characteristic (the phone's
// challenge) sends both in one Read Multiple Request once it knows the hash's handle: the
// read's value reaches the app only if the hash matches the cache, so no stale handle's
// value is ever taken for the one asked for (`checkDatabaseHash`).
//
// After — the Service Changed chores, once the bearer has nothing queued (`GATTClient.onIdle`):
// find Service Changed and Client Supported Features (once; kept with the cache), write
// Client Supported Features (Robust Caching), enable the indication. They used to go first:
// seven round trips on a first link and two on a returning one, all in front of the arrival
// unlock (docs/RESTORATION.md, "The order of a link's setup").
//
// What waiting costs, and why it is enough: a change of the peer's database after the hash
// read and before the chores is not indicated (nothing is subscribed yet), and the app's
// requests in that window are answered from the handles as they now are. From the features
// write on, the peer refuses this client's next request after any change since the link began
// with Database Out Of Sync (2.5.2.1: every connected client becomes change-unaware at a change,
// and one that enabled Robust Caching has its next request refused): that drops the whole
// cache here (`databaseOutOfSync`), the app is told, and the hash read first makes the client
// change-aware again. A peer that has a hash but no Robust Caching gets no such check. The app's requests are never delayed by more than the one chore
// request in flight when they are made.
extension Peripheral {
    /// Starts a link's setup, right after the MTU exchange or the barrier is queued; the
    /// hash check now, or (`checkingHashNow` false) when the MTU exchange calls it.
    func beginLinkSetup(checkingHashNow: Bool = true) {
        guard let client else { return }
        client.onIdle = { [weak self] in self?.runPendingChores() }
        client.onDatabaseOutOfSync = { [weak self] in self?.databaseOutOfSync() }
        heldUntilValidated = heldUntilValidated ?? []
        hashCheckSent = false
        if checkingHashNow { checkDatabaseHash() }
        bearer?.flush()  // the MTU exchange or the barrier, queued by the caller
    }

    /// The link's hash check. With the hash's handle known and the app's first request a
    /// read of a cached characteristic (a returning phone's challenge), both go in one Read
    /// Multiple Request: a round trip less before the app's command. The value is given to
    /// the app only when the hash is the one the cache was made against; otherwise it is
    /// dropped unseen and the check runs as on a first link (Read Using Characteristic UUID),
    /// then the read is asked again, on whatever handles the cache has by then.
    func checkDatabaseHash() {
        guard let client, heldUntilValidated != nil, !hashCheckSent else { return }
        hashCheckSent = true
        guard let hashHandle = databaseHashHandle, let cachedHash = databaseHash, let read = companionRead,
              !read.isInvalidated, read.valueHandle != hashHandle else {
            return readHashByUUID()
        }
        client.readMultiple([hashHandle, read.valueHandle]) { [weak self, weak read] result in
            guard let self else { return }
            guard case .success(let values) = result, values.count >= cachedHash.count,
                  Array(values.prefix(cachedHash.count)) == cachedHash, let read, self.companionRead === read else {
                self.databaseHashHandle = nil  // it may have moved: learn it again
                return self.readHashByUUID()
            }
            self.companionRead = nil
            self.releaseHeld()
            read.value = Array(values.dropFirst(cachedHash.count))
            // The app's next request (its command) goes out before the chores.
            self.delegate?.peripheral(self, didUpdateValueFor: read, error: nil)
            if !self.serviceChangedSubscribed { self.deferChores() }
        }
        bearer?.flush()
    }

    /// The hash by its UUID, wherever it is (and from now on, where it is).
    private func readHashByUUID() {
        client?.read(using: .databaseHash) { [weak self] result in
            guard let self else { return }
            if case .success(let found) = result, let first = found.first, first.value.count == 16 {
                self.databaseHashHandle = first.handle
                self.check(first.value)
            }
            // A peer without a hash, or a failed read: the cache is kept as it is, and a
            // handle it refuses sends the app back to discovery.
            self.releaseHeld()  // first, so that the app's requests are queued ahead of the chores
            if !self.serviceChangedSubscribed { self.deferChores() }
        }
        bearer?.flush()
    }

    /// Takes the app's first read while the hash is still to be asked for, to go with it.
    /// True when it was taken.
    func holdAsCompanion(_ characteristic: RemoteCharacteristic) -> Bool {
        guard let held = heldUntilValidated, held.isEmpty, companionRead == nil, !hashCheckSent,
              databaseHashHandle != nil, !characteristic.isInvalidated else { return false }
        companionRead = characteristic
        return true
    }

    /// Queues `request` while the hash is read. True when it was held.
    func hold(_ request: @escaping () -> Void) -> Bool {
        guard heldUntilValidated != nil else { return false }
        heldUntilValidated!.append(request)
        return true
    }

    /// Sends what waited for the hash check, in the order it was asked (a companion read
    /// that did not go with the hash first).
    func releaseHeld() {
        guard var held = heldUntilValidated else { return }
        if let read = companionRead {
            companionRead = nil
            held.insert({ [weak self] in self?.readValue(for: read) }, at: 0)
        }
        heldUntilValidated = nil
        for request in held { request() }
    }

    /// The Service Changed chores run once the app's requests have run out; at once when
    /// none waits.
    func deferChores() {
        choresPending = true
        if client?.isIdle == true { runPendingChores() }
    }

    func runPendingChores() {
        guard choresPending, client != nil else { return }
        choresPending = false
        subscribeToServiceChanged()
    }

    /// Database Out Of Sync: the peer's database changed while this client did not know it.
    /// With Service Changed on, the indication that names the range is on its way or already
    /// handled (the server sends it at the change, ahead of the refusal): it does the rest.
    /// Without, nothing says where. The hash is read first — it makes this client
    /// change-aware again (2.5.2.1), and describes what the app discovers next — then the
    /// whole cache goes and the app is told; Service Changed is found and enabled again after
    /// the app's requests.
    func databaseOutOfSync() {
        // An indication the peer could not send (its Service Changed moved, or it dropped the
        // subscription) would leave a cache it never corrects: the hash checks that.
        guard !serviceChangedSubscribed else { return verifyDatabaseHash() }
        readDatabaseHash()
        invalidate(0x0001...0xFFFF)
        deferChores()
    }

    /// Reads the hash and, if it is not the one the cache was made against, drops the whole
    /// cache (the app is told) and finds Service Changed again. A hash being read again
    /// meanwhile (after a Service Changed indication, which said what changed) decides alone.
    func verifyDatabaseHash() {
        client?.read(using: .databaseHash) { [weak self] result in
            guard let self, case .success(let found) = result, let hash = found.first?.value, hash.count == 16,
                  let cached = self.databaseHash, cached != hash else { return }
            self.databaseHash = hash
            self.invalidate(0x0001...0xFFFF)
            self.deferChores()
        }
        bearer?.flush()
    }

    /// Reads the hash for the cache; what the app discovers after this is stamped with it.
    func readDatabaseHash() {
        databaseHash = nil
        client?.read(using: .databaseHash) { [weak self] result in
            guard let self, case .success(let found) = result, let hash = found.first?.value, hash.count == 16 else { return }
            self.databaseHash = hash
            self.onCacheChange?()
        }
        bearer?.flush()
    }
}
