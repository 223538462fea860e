import LatchkeyGPIO
import LatchkeyPosix
import LatchkeyTransport

/// A requested output line. Values are logical: active-low is part of the request.
final class LibgpiodOutput: GPIOOutput {
    let name: String
    private let chip: LibgpiodChip
    private let request: any GPIODLineRequest
    private(set) var isActive = false

    init(chip: LibgpiodChip, request: any GPIODLineRequest, name: String) {
        self.chip = chip
        self.request = request
        self.name = name
    }

    func set(_ active: Bool) throws(GPIOError) {
        do { try request.setValue(active) } catch { throw chip.failure(name, error) }
        isActive = active
    }
}

/// A requested input with both-edge events, whose event fd the loop watches. With libgpiod
/// 1.6 edges are raw (no debounce in the v1 API: `DebouncedInput` sits on top) and an
/// edge's time is the loop's clock when it is read; with libgpiod 2 the kernel debounces
/// and stamps each edge on CLOCK_MONOTONIC, the loop's clock (never later than now).
final class LibgpiodInput: GPIOInput {
    let name: String
    private let chip: LibgpiodChip
    private let request: any GPIODLineRequest
    private var watch: Watch?
    var onEdge: ((GPIOEdge) -> Void)?

    /// Events read per readiness callback before yielding to other fds (fairness).
    static let readBatch = 64

    init(chip: LibgpiodChip, request: any GPIODLineRequest, name: String, eventDescriptor: CInt) {
        self.chip = chip
        self.request = request
        self.name = name
        watch = chip.loop.watch(fd: eventDescriptor, events: .readable) { [weak self] _ in self?.readEvents() }
    }

    deinit { watch?.cancel() }  // the fd belongs to the request, closed with it

    func read() throws(GPIOError) -> Bool {
        do { return try request.value() } catch { throw chip.failure(name, error) }
    }

    private func readEvents() {
        do {
            guard case .done(let edges) = try request.readEdges(limit: Self.readBatch) else { return }
            let now = chip.loop.now
            for edge in edges {
                let time = edge.timestampNanoseconds.map { Instant(nanoseconds: min($0, now.nanoseconds)) } ?? now
                onEdge?(GPIOEdge(isActive: edge.rising, time: time))
            }
        } catch {
            // Stop watching rather than spin on a broken fd; the lock hears of it.
            watch?.cancel()
            watch = nil
            var failure = chip.failure(name, error)
            failure.detail = "\(error.call); edges of this input are no longer read"
            chip.onError?(failure)
        }
    }
}
