import LatchkeyPosix
import LatchkeyControl

/// An agent's control socket (`<state_directory>/control.sock`), reached as the bridge's
/// user: the socket's mode and group are the permission (docs/CONFIGURATION.md).
public final class ControlSocketLink: AgentLink {
    public let path: String
    private let loop: PosixEventLoop
    private var channels: [ObjectIdentifier: PacketChannel] = [:]

    public init(path: String, loop: PosixEventLoop) {
        self.path = path
        self.loop = loop
    }

    public func request(_ command: String, line: @escaping (String) -> Void,
                        done: @escaping (_ ok: Bool, _ final: String) -> Void) {
        var finished = false
        open(command, onMessage: { [weak self] text, channel in
            guard !finished else { return }
            if text.hasPrefix("ok") || text.hasPrefix("error") {
                finished = true
                self?.close(channel)
                done(text.hasPrefix("ok"), text)
            } else {
                line(text)
            }
        }, onClose: { why in
            guard !finished else { return }
            finished = true
            done(false, "error \(why)")
        })
    }

    public func stream(_ command: String, line: @escaping (String) -> Void, closed: @escaping (String) -> Void) {
        open(command, onMessage: { text, _ in line(text) }, onClose: closed)
    }

    private func open(_ command: String, onMessage: @escaping (String, PacketChannel) -> Void,
                      onClose: @escaping (String) -> Void) {
        let socket: SeqPacketSocket
        // A lock on a read-only card listens in the runtime directory (ControlSocketPath).
        do { socket = try ControlSocketPath.connect(to: path) } catch {
            // Reported on the loop, like every other outcome: the caller's state is settled first.
            loop.execute { onClose("cannot reach the agent at \(self.path) (\(error))") }
            return
        }
        let channel = PacketChannel(socket: socket, loop: loop)
        let id = ObjectIdentifier(channel)
        channels[id] = channel
        channel.onMessage = { [weak channel] bytes in
            guard let channel else { return }
            onMessage(String(decoding: bytes, as: UTF8.self), channel)
        }
        channel.onClose = { [weak self] error in
            self?.channels[id] = nil
            onClose(error.map { "the agent at \(self?.path ?? "?") closed the connection (\($0))" }
                    ?? "the agent at \(self?.path ?? "?") closed the connection")
        }
        channel.send(Array(command.utf8))
    }

    private func close(_ channel: PacketChannel) {
        channels[ObjectIdentifier(channel)] = nil
        channel.onClose = nil
        channel.close()
    }
}
