import LatchkeyControl
import LatchkeyPosix

/// Writes a key secret as 64 hex digits, readable by the owner only (0600), atomically and
/// durably (`SecretFile`).
public func writeSecretFile(_ path: String, _ secret: [UInt8]) throws(RuntimeError) {
    try writeSecret(Array((hexString(secret) + "\n").utf8), to: path)
}

package func writeSecret(_ bytes: [UInt8], to path: String) throws(RuntimeError) {
    do { try SecretFile.write(bytes, to: path) } catch { throw RuntimeError("cannot write key file \(path): \(error)") }
}

/// A key file that group or others can read is refused, with the command that fixes it: a
/// key another user may have copied is no longer this phone's alone.
package func refuseExposedSecret(_ path: String) throws(RuntimeError) {
    if let why = SecretFile.exposure(of: path) { throw RuntimeError("refusing key file: \(why)") }
}
