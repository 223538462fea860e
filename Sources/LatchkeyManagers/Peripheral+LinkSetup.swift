import LatchkeyATT
import LatchkeyGATT

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
    /// Starts a link's setup, right after the MTU exchange or the barrier is queued.
    func beginLinkSetup() {
        guard let client else { return }
        client.onIdle = { [weak self] in self?.runPendingChores() }
        client.onDatabaseOutOfSync = { [weak self] in self?.databaseOutOfSync() }
        heldUntilValidated = heldUntilValidated ?? []
        client.read(using: .databaseHash) { [weak self] result in
            guard let self else { return }
            if case .success(let found) = result, let hash = found.first?.value, hash.count == 16 {
                self.check(hash)
            }
            // A peer without a hash, or a failed read: the cache is kept as it is, and a
            // handle it refuses sends the app back to discovery.
            self.releaseHeld()  // first, so that the app's requests are queued ahead of the chores
            if !self.serviceChangedSubscribed { self.deferChores() }
        }
        bearer?.flush()
    }

    /// Queues `request` while the hash is read. True when it was held.
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
