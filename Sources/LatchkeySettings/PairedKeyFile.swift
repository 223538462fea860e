import LatchkeyControl
import LatchkeySecurity
import LatchkeyTransport

/// The phone's key as `latchkey phone pair` stores it: `<state_directory>/paired.key`, mode
/// 0600 in the 0700 state directory (docs/LOCK-RULES.md rule 7), one `name: value` per line:
/// `key_id`, `secret` (64 hex digits), `role`, `arrival_unlock`, `lock_identity`,
/// `lock_fingerprint` and `lock_address`, the lock the phone paired with (found by a scan or
/// named in the configuration), used when the configuration names none.
public enum PairedKeyFile {
    public static let fileName = "paired.key"

    /// What to do when there is no key at `path` (the agent's exit and `doctor` say the same).
    public static func missingAdvice(_ path: String) -> String {
        "no key at \(path): pair this phone with the lock (`latchkey pair` on the lock, then "
            + "`latchkey phone pair --config <phone.yaml> --name <name>` here), or set `key_secret_file:`"
    }

    public static func write(_ key: PairedKey, lockAddress: BluetoothAddress, to path: String) throws(RuntimeError) {
        let text = """
            # Written by `latchkey phone pair`: this phone's key for its lock. Keep it secret.
            key_id: \(key.keyID)
            secret: \(hexString(key.secret))
            role: \(key.role.rawValue)
            arrival_unlock: \(key.mayRequestArrivalUnlock ? "yes" : "no")
            lock_identity: \(hexString(key.lockIdentity))
            lock_fingerprint: \(key.lockFingerprint)
            lock_address: \(lockAddress)
            """
        try writeSecret(Array((text + "\n").utf8), to: path)
    }

    /// The key id, the secret and the lock's address (nil in a file written by a version before pairing recorded it)
    /// from a paired-key file.
    public static func read(_ path: String) throws(RuntimeError)
        -> (keyID: UInt32, secret: [UInt8], lockAddress: BluetoothAddress?)
    {
        try refuseExposedSecret(path)
        let text: String
        do { text = try readTextFile(path) } catch { throw RuntimeError("cannot read key file \(path): \(error)") }
        var fields: [String: String] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[String(line[..<colon])] = line[line.index(after: colon)...].trimmingSpaces
        }
        guard let id = fields["key_id"].flatMap({ UInt32($0) }), id > 0 else {
            throw RuntimeError("key file \(path): no key_id line (pair with `latchkey phone pair`)")
        }
        guard let hex = fields["secret"], let secret = bytes(fromHex: hex), secret.count == 32 else {
            throw RuntimeError("key file \(path): secret must be 64 hex digits")
        }
        var lock: BluetoothAddress?
        if let text = fields["lock_address"] {
            guard let address = BluetoothAddress(string: text) else {
                throw RuntimeError("key file \(path): lock_address is not an address like C0:FF:EE:00:00:01")
            }
            lock = address
        }
        return (id, secret, lock)
    }
}

package func hexString(_ bytes: [UInt8]) -> String {
    bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
}

package func bytes(fromHex hex: String) -> [UInt8]? {
    let digits = Array(hex)
    guard digits.count % 2 == 0 else { return nil }
    var out: [UInt8] = []
    for i in stride(from: 0, to: digits.count, by: 2) {
        guard let v = UInt8(String(digits[i...i + 1]), radix: 16) else { return nil }
        out.append(v)
    }
    return out
}

extension Substring {
    package var trimmingSpaces: String { String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed()) }
}
