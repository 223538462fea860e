import LatchkeyPosix
import LatchkeyTransport

/// Why a control request failed.
public struct AirControlError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// The control channel of the air, for the demo and tests: move devices (walk away, come
/// back), power controllers off and on, list devices with their pending lists and links.
/// Each request completes once, on the loop, when the air answers (or the socket closes).
public final class AirControlClient {
    private let channel: PacketChannel
    private let loop: PosixEventLoop
    private var nextRequest: UInt32 = 0
    private var waiting: [UInt32: (AirMessage?) -> Void] = [:]

    public init(socketPath: String, loop: PosixEventLoop) throws(SystemError) {
        self.loop = loop
        channel = PacketChannel(socket: try SeqPacketSocket.connect(to: socketPath), loop: loop)
        channel.onMessage = { [weak self] bytes in self?.receive(bytes) }
        channel.onClose = { [weak self] _ in self?.failAll() }
        channel.send(AirMessage.helloControl(version: AirMessage.version).encoded())
    }

    public var isOpen: Bool { channel.isOpen }

    public func close() { channel.close() }

    public func setPosition(_ position: Double, of address: BluetoothAddress,
                            _ completion: @escaping (Result<Void, AirControlError>) -> Void) {
        request({ .setPosition(request: $0, address: address, position: position) }, completion)
    }

    public func powerOff(_ address: BluetoothAddress, _ completion: @escaping (Result<Void, AirControlError>) -> Void) {
        request({ .powerOff(request: $0, address: address) }, completion)
    }

    public func powerOn(_ address: BluetoothAddress, _ completion: @escaping (Result<Void, AirControlError>) -> Void) {
        request({ .powerOn(request: $0, address: address) }, completion)
    }

    public func listDevices(_ completion: @escaping (Result<[DeviceSnapshot], AirControlError>) -> Void) {
        send({ .listDevices(request: $0) }) { reply in
            switch reply {
            case .devices(_, let devices): completion(.success(devices))
            case .failed(_, let reason): completion(.failure(AirControlError(reason)))
            default: completion(.failure(AirControlError("the air closed the control channel")))
            }
        }
    }

    private func request(_ make: (UInt32) -> AirMessage, _ completion: @escaping (Result<Void, AirControlError>) -> Void) {
        send(make) { reply in
            switch reply {
            case .done: completion(.success(()))
            case .failed(_, let reason): completion(.failure(AirControlError(reason)))
            default: completion(.failure(AirControlError("the air closed the control channel")))
            }
        }
    }

    private func send(_ make: (UInt32) -> AirMessage, _ handler: @escaping (AirMessage?) -> Void) {
        guard channel.isOpen else { return loop.execute { handler(nil) } }  // never re-entrant
        nextRequest &+= 1
        waiting[nextRequest] = handler
        channel.send(make(nextRequest).encoded())
    }

    private func receive(_ bytes: [UInt8]) {
        // A peer speaking garbage is hung up on; the close reaches the caller's completion.
        guard let message = try? AirMessage(decoding: bytes) else { return channel.close() }
        let request: UInt32
        switch message {
        case .done(let r), .failed(let r, _), .devices(let r, _): request = r
        default: return channel.close()  // .rejected or a message that has no place here
        }
        waiting.removeValue(forKey: request)?(message)
    }

    private func failAll() {
        let handlers = waiting
        waiting = [:]
        for (_, handler) in handlers.sorted(by: { $0.key < $1.key }) { handler(nil) }
    }
}
