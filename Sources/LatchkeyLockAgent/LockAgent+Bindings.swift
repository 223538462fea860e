import LatchkeyEvents
import LatchkeyManagers
import LatchkeyPeripheral
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

extension LockAgent {
    /// Remembers that `address` authenticated with `key` (durable when storage is present).
    /// Bindings that cannot be read are not saved over (that would drop every other phone's);
    /// the binding then lives in memory only, and `status` shows the fault.
    func preserveBinding(_ address: BluetoothAddress, key: UInt32) {
        guard let storage = bindingStorage, var bindings = loadBindings(storage) else { return }
        guard bindings.keys[address.description] != key else { return }
        bindings.keys[address.description] = key
        do {
            try storage.save(bindings, identifier: LockBindings.identifier)
            bindingsFault = nil
        } catch {
            bindingsFault = "\(error)"
            emit(.lockRestorationFailed(error: "bindings not saved: \(error)"))
        }
    }

    /// The store takes writes again: the bindings of the links up now are saved (those the
    /// store refused meanwhile). With none up, nothing is left unsaved: the fault clears.
    func preserveLiveBindings() {
        bindingsFault = nil
        for key in Set(keyOfLink.values).sorted() {
            guard let address = addressOfKey[key] else { continue }
            preserveBinding(address, key: key)
        }
    }

    /// A revoked key's addresses are no one's any more: its stored bindings go.
    func forgetBindings(of key: UInt32) {
        guard let storage = bindingStorage, var bindings = loadBindings(storage),
              bindings.keys.values.contains(key) else { return }
        bindings.keys = bindings.keys.filter { $0.value != key }
        do {
            try storage.save(bindings, identifier: LockBindings.identifier)
        } catch {
            bindingsFault = "\(error)"
            emit(.lockRestorationFailed(error: "bindings of revoked key \(key) not removed: \(error)"))
        }
    }

    /// The stored bindings (empty when there are none); nil when they cannot be read.
    private func loadBindings(_ storage: any RestorationStorage) -> LockBindings? {
        do {
            let bindings = try storage.load(LockBindings.self, identifier: LockBindings.identifier) ?? LockBindings(keys: [:])
            bindingsFault = nil
            return bindings
        } catch {
            bindingsFault = "\(error)"
            emit(.lockRestorationFailed(error: "bindings unreadable, left as they are: \(error)"))
            return nil
        }
    }

    /// After a restart: a restored link whose phone's session was kept with it, under the key
    /// its address was bound to, is that phone's again, so its loss starts the departure grace
    /// as before. An address alone proves nothing (anyone can send with a bound phone's): a
    /// link at a bound address without its kept session is dropped, and bound again when its
    /// phone re-links and proves its key.
    func restoreBindings(for centrals: [Central]) {
        guard let storage = bindingStorage, let bindings = loadBindings(storage) else { return }
        for central in centrals {
            guard let key = bindings.keys[central.identifier.description] else { continue }
            guard sessions[central.linkID]?.keyID == key else {
                // Its phone's never-ending connect request re-links at once and proves its key
                // with the `present` every link sends; anyone else using that address is gone.
                emit(.lockBindingNotRestored(key: key, central: "\(central.identifier)",
                                             reason: "no kept session of that key on the link"))
                drop(central, because: "a phone's address without its kept session: it re-links and proves its key")
                continue
            }
            rebind(central, to: key)
            emit(.lockBindingRestored(key: key, central: "\(central.identifier)"))
        }
    }
}
