import LatchkeyControl
import LatchkeyPosix
import LatchkeySecurity
import LatchkeySettings

/// `latchkey keys add`: a key made on the lock's side for a phone that cannot pair over the
/// air, its secret handed over in a file (docs/SECURITY.md, "Secret files").
public enum KeyExport {
    /// Writes `key`'s secret to `path` (`SecretFile`: 0600, exclusive, fsynced, renamed),
    /// then adds the key. The order is the point: a write that fails leaves no key that
    /// nobody holds, and a key the store refuses takes its just-written file with it.
    public static func add(_ key: PhoneKey, to keys: any KeyRegistry, exportingSecretTo path: String) throws(RuntimeError) {
        try writeSecretFile(path, key.secret)
        do { try keys.add(key) } catch {
            SecretFile.remove(path)
            throw RuntimeError("cannot add key \(key.id): \(error); \(path) removed again")
        }
    }
}
