import LatchkeyGPIO
import LatchkeyTransport

/// The board's status LED (`status_led_line`), showing at a glance what the lock is doing:
///     locked                      off
///     unlocked, locking/unlocking on    (the door can be opened, or soon can)
///     not fully locked (jammed)   blinking, 1 Hz
///     unknown (before start-up)   off
///
/// The only timer is the blink, and it runs only while the bolt is jammed, so an idle lock
/// never wakes for its LED. A failing LED line is reported and never stops the lock.
public final class StatusLight {
    public enum Pattern: Hashable, Sendable {
        case off, on, blinking
    }

    /// Half of the 1 Hz blink period: noticeable from across a hallway, and a rate that
    /// no one mistakes for "on" (a steady light means the door is open to a push).
    public static let blinkHalfPeriod: Duration = .milliseconds(500)

    private let output: any GPIOOutput
    private let loop: any EventLoop
    private var blink: Scheduled?
    public private(set) var pattern: Pattern = .off
    /// A failed write to the LED line.
    public var onError: ((GPIOError) -> Void)?

    public init(_ output: any GPIOOutput, loop: any EventLoop) {
        self.output = output
        self.loop = loop
    }

    public static func pattern(for state: LockState) -> Pattern {
        switch state {
        case .locked, .unknown: .off
        case .unlocked, .locking, .unlocking: .on
        case .notFullyLocked: .blinking
        }
    }

    /// Shows `state`; nothing changes on the line when the pattern is the same.
    public func show(_ state: LockState) {
        let next = Self.pattern(for: state)
        guard next != pattern else { return }
        pattern = next
        blink?.cancel()
        blink = nil
        switch next {
        case .off: write(false)
        case .on: write(true)
        case .blinking:
            write(true)
            scheduleToggle()
        }
    }

    private func scheduleToggle() {
        blink = loop.schedule(after: Self.blinkHalfPeriod) { [weak self] in
            guard let self, self.pattern == .blinking else { return }
            self.write(!self.output.isActive)
            self.scheduleToggle()
        }
    }

    private func write(_ lit: Bool) {
        do { try output.set(lit) } catch { onError?(error) }
    }
}
