import LatchkeyManagers
import LatchkeyTransport

/// Which phone (key) each central address authenticated as, preserved like the manager's own
/// state (M6). A link adopted after a restart carries no new command, so without this the
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

extension LockAgent {
    /// Remembers that `address` authenticated with `key` (durable when storage is present).
    func preserveBinding(_ address: BluetoothAddress, key: UInt32) {
        guard let storage = bindingStorage else { return }
        var bindings = (try? storage.load(LockBindings.self, identifier: LockBindings.identifier)) ?? nil
            ?? LockBindings(keys: [:])
        guard bindings.keys[address.description] != key else { return }
        bindings.keys[address.description] = key
        do { try storage.save(bindings, identifier: LockBindings.identifier) } catch {
            emit("lock.restoration_failed", ["error": "bindings: \(error)"])
        }
    }

    /// After a restart: the restored links of phones that had authenticated are theirs again,
    /// so their loss starts the departure grace as before.
    func restoreBindings(for centrals: [Central]) {
        guard let storage = bindingStorage,
              let bindings = (try? storage.load(LockBindings.self, identifier: LockBindings.identifier)) ?? nil
        else { return }
        for central in centrals {
            guard let key = bindings.keys[central.identifier.description] else { continue }
            rebind(central, to: key)
            emit("lock.binding_restored", ["key": "\(key)", "central": "\(central.identifier)"])
        }
    }
}
