import LatchkeyATT
import LatchkeyGATT
import LatchkeyManagers

// The order of a link's setup, the part Core Bluetooth does for the app (Core Vol 3 Part G
// 2.5.2). Before the app's first request: the Database Hash, read by its UUID, so a cache made
// against another database is dropped before any of its handles goes out (a returning
// central reads it with its first read in one Read Multiple, `checkDatabaseHash`). After the
// app's requests have run out (`GATTClient.onIdle`): the Service Changed chores. Why this
// order is safe, and what it saves: docs/RESTORATION.md, "The order of a link's setup, and
// its cost".
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
