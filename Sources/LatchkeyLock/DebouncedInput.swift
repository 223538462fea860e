import LatchkeyGPIO
import LatchkeyTransport

/// Software debounce for an input, on chips that do not debounce in the kernel
/// (`GPIOChip.debouncesInputs`: libgpiod 1.6, whose API has none, and the simulated and
/// file-backed chips; with libgpiod 2 `LockHardware` hands the period to the kernel instead). A change is reported once the raw line has stayed at the new value for
/// `interval`: every raw edge restarts the wait, so a bounce burst collapses into one
/// edge, or into none when the line ends where it started.
///
/// The debounced value is what `read()` returns: the lock sees one consistent view of the
/// line, never a bounce.
public final class DebouncedInput: GPIOInput {
    /// 20 ms. Linux gpio-keys debounces buttons for 5 ms by default
    /// (drivers/input/keyboard/gpio_keys.c: `button->debounce_interval = 5`), and boards
    /// whose buttons bounced longer raise it (Librem 5 volume buttons to 50 ms, "arm64:
    /// dts: imx8mq-librem5: set debounce interval of volume buttons to 50ms", 2021). Door
    /// reed switches and inside buttons are mechanical contacts; 20 ms is four times the
    /// kernel default and still far below what a person at a door notices.
    public static let defaultInterval: Duration = .milliseconds(20)

    private let raw: any GPIOInput
    private let loop: any EventLoop
    public let interval: Duration
    private var stable: Bool
    private var candidate: Bool
    private var settle: Scheduled?
    public var onEdge: ((GPIOEdge) -> Void)?

    /// Takes over `raw.onEdge`. The initial value is the raw line's value now.
    public init(_ raw: any GPIOInput, interval: Duration = DebouncedInput.defaultInterval, loop: any EventLoop) throws(GPIOError) {
        self.raw = raw
        self.loop = loop
        self.interval = interval
        stable = try raw.read()
        candidate = stable
        raw.onEdge = { [weak self] edge in self?.rawChanged(edge.isActive) }
    }

    public var name: String { raw.name }

    public func read() throws(GPIOError) -> Bool { stable }

    private func rawChanged(_ value: Bool) {
        candidate = value
        settle?.cancel()
        settle = loop.schedule(after: interval) { [weak self] in self?.settled() }
    }

    private func settled() {
        settle = nil
        guard candidate != stable else { return }
        stable = candidate
        onEdge?(GPIOEdge(isActive: stable, time: loop.now))
    }
}
