import LatchkeyDaemons
import LatchkeyPosix

/// One command to an agent's control socket (what `latchkey phone-ctl` sends), on the
/// caller's loop, without blocking it: the answer is the first reply that starts with "ok"
/// or "error"; a socket that cannot be reached, or closes first, answers "error".
final class ControlRequest {
    private(set) var reply: String?
    private var channel: PacketChannel?

    init(_ command: String, socketPath: String, loop: PosixEventLoop) {
        do {
            let channel = PacketChannel(socket: try SeqPacketSocket.connect(to: socketPath), loop: loop)
            channel.onMessage = { [weak self] bytes in
                let line = String(decoding: bytes, as: UTF8.self)
                if line.hasPrefix("ok") || line.hasPrefix("error") { self?.finish(line) }
            }
            channel.onClose = { [weak self] _ in self?.finish("error connection closed") }
            channel.send(Array(command.utf8))
            self.channel = channel
        } catch {
            reply = "error cannot connect: \(error)"
        }
    }

    var isAnswered: Bool { reply != nil }
    var succeeded: Bool { reply?.hasPrefix("ok") ?? false }

    private func finish(_ line: String) {
        guard reply == nil else { return }
        reply = line
        channel?.onClose = nil
        channel?.close()
        channel = nil
    }
}
