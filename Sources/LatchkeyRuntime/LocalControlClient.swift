#if canImport(Glibc)
import Glibc
#endif
import LatchkeyPosix

/// The client side of an agent's control socket, for `latchkey phone-ctl`.
public enum LocalControlClient {
    /// Sends one command and prints replies until one starts with "ok" or "error".
    /// Returns whether the final reply was "ok".
    public static func send(_ command: String, to path: String, print: @escaping (String) -> Void) throws(RuntimeError) -> Bool {
        let loop = PosixEventLoop()
        let socket: SeqPacketSocket
        do { socket = try SeqPacketSocket.connect(to: path) } catch {
            throw RuntimeError("cannot reach the agent at \(path) (\(error)); is it running?")
        }
        let channel = PacketChannel(socket: socket, loop: loop)
        var final: Bool?
        channel.onMessage = { bytes in
            let line = String(decoding: bytes, as: UTF8.self)
            print(line)
            if line.hasPrefix("ok") { final = true } else if line.hasPrefix("error") { final = false }
        }
        channel.onClose = { _ in if final == nil { final = false } }
        channel.send(Array(command.utf8))
        // A probe of many commands takes a while; each answer arrives as it happens.
        _ = try? loop.run(until: { final != nil }, timeout: .seconds(600))
        channel.close()
        return final ?? false
    }
}
