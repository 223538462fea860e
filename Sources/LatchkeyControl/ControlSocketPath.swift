import LatchkeyPosix

/// Where an agent's control socket is. `<state_directory>/control.sock`, except when the
/// state directory is on a read-only file system (an SD card gone read-only: no socket can
/// be made there, yet the lock runs degraded and must answer `status`): then
/// `/run/latchkey/<the state directory's last component>/control.sock` — for the packaged
/// lock, `/run/latchkey/lock`, the unit's `RuntimeDirectory=` — and every client that
/// cannot reach the first tries the second (`connect`: `LocalControlClient`, the MQTT bridge).
public enum ControlSocketPath {
    package static let fileName = "control.sock"
    package static let runtimeRoot = "/run/latchkey"

    /// Connects to the control socket at `path`; when that fails and `path` is a state
    /// directory's, to the read-only fallback. The first error is the one thrown.
    public static func connect(to path: String) throws(SystemError) -> SeqPacketSocket {
        do { return try SeqPacketSocket.connect(to: path) } catch {
            // Not there either: the first error (about the path the user gave) is the one to tell.
            guard let other = readOnlyFallback(forSocket: path), let socket = try? SeqPacketSocket.connect(to: other)
            else { throw error }
            return socket
        }
    }

    package static func primary(_ stateDirectory: String) -> String { stateDirectory + "/" + fileName }

    package static func readOnlyFallback(_ stateDirectory: String) -> String {
        let name = stateDirectory.split(separator: "/").last.map(String.init) ?? "agent"
        return runtimeRoot + "/" + name + "/" + fileName
    }

    /// The fallback for a socket path a client was given, when it is a state directory's
    /// control socket; nil otherwise.
    package static func readOnlyFallback(forSocket path: String) -> String? {
        guard path.hasSuffix("/" + fileName) else { return nil }
        return readOnlyFallback(String(path.dropLast(fileName.count + 1)))
    }

    package static func directory(of socket: String) -> String {
        String(socket[..<(socket.lastIndex(of: "/") ?? socket.endIndex)])
    }
}
