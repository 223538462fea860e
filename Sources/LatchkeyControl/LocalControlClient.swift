#if canImport(Glibc)
import Glibc
#endif
import LatchkeyPosix

/// The client side of an agent's control socket, for `latchkey phone-ctl` and `lock-ctl`.
public enum LocalControlClient {
    /// Sends one command and prints replies until one starts with "ok" or "error".
    /// Returns whether the final reply was "ok". `answer` may send one more command on the same
    /// connection in reply to a line (the owner's answer to `pair`'s "confirm" line).
    public static func send(_ command: String, to path: String, print: @escaping (String) -> Void,
                            answer: @escaping (String) -> String? = { _ in nil }) throws(RuntimeError) -> Bool {
        let loop = PosixEventLoop()
        var final: Bool?
        var channel: PacketChannel?
        channel = try send(command, to: path, on: loop, line: { line in
            print(line)
            if let reply = answer(line) { channel?.send(Array(reply.utf8)) }
        }) { final = $0 }
        // A probe of many commands takes a while; each answer arrives as it happens.
        // A loop error ends the wait like the timeout: no final reply, so false is returned.
        _ = try? loop.run(until: { final != nil }, timeout: .seconds(900))
        channel?.close()
        return final ?? false
    }

    /// Sends one command on a loop the caller runs: `line` gets every reply, `done` once
    /// whether the final one was "ok" (false too when the agent closed the connection).
    package static func send(_ command: String, to path: String, on loop: PosixEventLoop, line: @escaping (String) -> Void,
                     done: @escaping (Bool) -> Void) throws(RuntimeError) -> PacketChannel {
        // A zero-length packet reads as end-of-file on the agent's side: say so here instead.
        guard command.contains(where: { $0 != " " }) else { throw RuntimeError("no command given; try `status`") }
        let socket: SeqPacketSocket
        // An agent on a read-only state directory listens in the runtime directory (ControlSocketPath).
        do { socket = try ControlSocketPath.connect(to: path) } catch {
            throw RuntimeError("cannot reach the agent at \(path) (\(error)); is it running?")
        }
        let channel = PacketChannel(socket: socket, loop: loop)
        var finished = false
        func finish(_ ok: Bool) {
            guard !finished else { return }
            finished = true
            done(ok)
        }
        channel.onMessage = { bytes in
            let text = String(decoding: bytes, as: UTF8.self)
            line(text)
            if text.hasPrefix("ok") { finish(true) } else if text.hasPrefix("error") { finish(false) }
        }
        channel.onClose = { _ in finish(false) }
        channel.send(Array(command.utf8))
        return channel
    }
}
