import LatchkeyEvents
import LatchkeyManagers
import LatchkeyTransport

/// Which phone (key) each central address authenticated as, preserved like the manager's own
/// state. A link adopted after a restart carries no new command, so without this the
/// lock would not know whose departure to lock behind.
struct LockBindings: PreservedState {
    static let role = RestorationRole.peripheral
    static let version: UInt32 = 1
    static let identifier = "latchkey.lock.bindings"
    /// Central address (as printed) → key id.
    var keys: [String: UInt32]
    /// Bindings alone are not Bluetooth work to be relaunched for.
    var hasPendingWork: Bool { false }
}

/// The link→key bindings on the manager's restoration storage. Bindings that cannot be read
/// are not saved over (that would drop every other phone's); a binding then lives in memory
/// only, and `fault` says why until the storage takes writes again.
final class PreservedBindings {
    private let storage: (any RestorationStorage)?
    private let emit: (Event) -> Void
    /// Why the bindings could not be read or saved, until they can.
    private var faultReason: String?

    init(storage: (any RestorationStorage)?, emit: @escaping (Event) -> Void) {
        self.storage = storage
        self.emit = emit
    }

    /// Why the bindings could not be read or saved, until they can; nil when all is saved.
    var fault: String? { faultReason }

    /// Remembers that `address` authenticated with `key` (durable when storage is present).
    func preserve(_ address: BluetoothAddress, key: UInt32) {
        guard let storage, var bindings = load(storage) else { return }
        guard bindings.keys[address.description] != key else { return }
        bindings.keys[address.description] = key
        do {
            try storage.save(bindings, identifier: LockBindings.identifier)
            faultReason = nil
        } catch {
            faultReason = "\(error)"
            emit(.lockRestorationFailed(error: "bindings not saved: \(error)"))
        }
    }

    /// The store takes writes again: the bindings of the links up now are saved (those the
    /// store refused meanwhile). With none up, nothing is left unsaved: the fault clears.
    func preserveAgain(_ live: [(key: UInt32, address: BluetoothAddress)]) {
        faultReason = nil
        for (key, address) in live { preserve(address, key: key) }
    }

    /// A revoked key's addresses are no one's any more: its stored bindings go.
    func forget(key: UInt32) {
        guard let storage, var bindings = load(storage), bindings.keys.values.contains(key) else { return }
        bindings.keys = bindings.keys.filter { $0.value != key }
        do {
            try storage.save(bindings, identifier: LockBindings.identifier)
        } catch {
            faultReason = "\(error)"
            emit(.lockRestorationFailed(error: "bindings of revoked key \(key) not removed: \(error)"))
        }
    }

    /// The stored bindings by address; nil without storage or when they cannot be read.
    func stored() -> [String: UInt32]? {
        guard let storage else { return nil }
        return load(storage)?.keys
    }

    /// A deliberate stop: the bindings go with the rest of the preserved state.
    func remove() {
        do { try storage?.remove(.peripheral, identifier: LockBindings.identifier) } catch {
            emit(.lockRestorationFailed(error: "bindings not removed: \(error)"))  // the next start re-reads them: harmless
        }
    }

    /// The stored bindings (empty when there are none); nil when they cannot be read.
    private func load(_ storage: any RestorationStorage) -> LockBindings? {
        do {
            let bindings = try storage.load(LockBindings.self, identifier: LockBindings.identifier) ?? LockBindings(keys: [:])
            faultReason = nil
            return bindings
        } catch {
            faultReason = "\(error)"
            emit(.lockRestorationFailed(error: "bindings unreadable, left as they are: \(error)"))
            return nil
        }
    }
}
