import LatchkeyLock
import LatchkeyPosix
import LatchkeyTransport

/// A requested output line. Values are logical: active-low is part of the request.
final class LibgpiodOutput: GPIOOutput {
    let name: String
    private let chip: LibgpiodChip
    private let line: OpaquePointer
    private(set) var isActive = false

    init(chip: LibgpiodChip, line: OpaquePointer, name: String) {
        self.chip = chip
        self.line = line
        self.name = name
    }

    func set(_ active: Bool) throws(GPIOError) {
        do { try Syscalls.gpiodSetValue(line, active) } catch { throw chip.failure(name, error) }
        isActive = active
    }
}

/// A requested input with both-edge events, whose event fd the loop watches. Edges are
/// raw (libgpiod 1.6 has no debounce): `DebouncedInput` sits on top. An edge's time is
/// the loop's clock when it is read, the clock every timer here uses.
final class LibgpiodInput: GPIOInput {
    let name: String
    private let chip: LibgpiodChip
    private let line: OpaquePointer
    private let eventDescriptor: CInt
    private var watch: Watch?
    var onEdge: ((GPIOEdge) -> Void)?

    /// Events read per readiness callback before yielding to other fds (fairness).
    static let readBatch = 64

    init(chip: LibgpiodChip, line: OpaquePointer, name: String, eventDescriptor: CInt) {
        self.chip = chip
        self.line = line
        self.name = name
        self.eventDescriptor = eventDescriptor
        watch = chip.loop.watch(fd: eventDescriptor, events: .readable) { [weak self] _ in self?.readEvents() }
    }

    deinit { watch?.cancel() }  // the fd belongs to the line, closed with the chip

    func read() throws(GPIOError) -> Bool {
        do { return try Syscalls.gpiodGetValue(line) } catch { throw chip.failure(name, error) }
    }

    private func readEvents() {
        for _ in 0..<Self.readBatch {
            do {
                guard case .done(let rising) = try Syscalls.gpiodReadEvent(eventDescriptor) else { return }
                onEdge?(GPIOEdge(isActive: rising, time: chip.loop.now))
            } catch {
                // Stop watching rather than spin on a broken fd; the lock hears of it.
                watch?.cancel()
                watch = nil
                var failure = chip.failure(name, error)
                failure.detail = "\(error.call); edges of this input are no longer read"
                chip.onError?(failure)
                return
            }
        }
    }
}
