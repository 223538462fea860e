#if canImport(Glibc)
import Glibc
#endif
import LatchkeyControl
import LatchkeyDaemons
import LatchkeyLock
import LatchkeySecurity
import LatchkeySettings
import LatchkeyStore
import LatchkeyTransport

// Preparing the stage in-process (the demo does the same with `latchkey keys add`, as a
// user would; the torture does not need to show it).
extension AgentStage {
    /// Key 1 on the lock, its secret in the phone's key file.
    package func provisionKey() throws(RuntimeError) {
        let secret = CommandSealing.newSecret()
        do {
            try StateStores.openKeys(lockState).add(PhoneKey(id: 1, name: "stage-phone", secret: secret, role: .user))
        } catch { throw RuntimeError("cannot add the phone key: \(error)") }
        try writeSecretFile(keyFile, secret)
    }

    /// `rows` door events in the lock's log, in one transaction, before the lock first runs.
    package func fillLockLog(rows: Int) throws(RuntimeError) {
        guard rows > 0 else { return }
        let event = LockEvent(kind: .doorStateChange(.closed), time: .zero, lockStateBefore: .locked,
                              lockStateAfter: .locked, doorState: .closed)
        do { try StateStores.openEventLog(lockState).append(contentsOf: Array(repeating: event, count: rows)) } catch {
            throw RuntimeError("cannot fill the lock's log: \(error)")
        }
    }
}

/// A fresh private directory from a mkdtemp(3) template, or nil where it cannot be made
/// (no such parent, say); the caller falls back.
package func makeTemporaryDirectory(_ template: String) -> String? {
    var bytes = Array(template.utf8CString)
    guard bytes.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else { return nil }
    return String(decoding: bytes.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// Removes `path` and everything below it (the stage's scratch directory).
package func removeTree(_ path: String) {
    var info = stat()
    guard lstat(path, &info) == 0 else { return }
    if info.st_mode & S_IFMT == S_IFDIR, let directory = opendir(path) {
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        closedir(directory)
        for name in names { removeTree(path + "/" + name) }
        rmdir(path)
    } else {
        unlink(path)
    }
}
