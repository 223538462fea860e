import LatchkeyLock
import LatchkeyPosix

/// Finds a GPIO chip by label through libgpiod 1.6, looking at every /dev/gpiochipN (never
/// by number: the Pi 5's header chip moved from gpiochip4 to gpiochip0 in 2024 kernels).
/// A missing label is a `chipNotFound` that lists the chips that do exist, so a typo or a
/// wrong board shows at once.
public struct LibgpiodChipFinder: GPIOChipFinder {
    public let loop: PosixEventLoop
    /// Failures after a request returned (reading an input's edge events), per chip.
    public var onError: ((GPIOError) -> Void)?

    public init(loop: PosixEventLoop, onError: ((GPIOError) -> Void)? = nil) {
        self.loop = loop
        self.onError = onError
    }

    public func chip(labelled label: String) throws(GPIOError) -> any GPIOChip {
        let (handle, name) = try Self.openChip(labelled: label)
        return LibgpiodChip(handle: handle, name: name, label: label, loop: loop, onError: onError)
    }

    /// The open chip with this label and its device name (the caller closes it).
    static func openChip(labelled label: String) throws(GPIOError) -> (handle: OpaquePointer, device: String) {
        var present: [String] = []
        for name in Syscalls.gpioChipNames() {
            let handle: OpaquePointer
            do { handle = try Syscalls.gpiodChipOpen(name) } catch {
                present.append("\(name) (cannot open: \(error.errno))")
                continue
            }
            let chipLabel = Syscalls.gpiodChipLabel(handle)
            if chipLabel == label { return (handle, name) }
            Syscalls.gpiodChipClose(handle)
            present.append("\(name) '\(chipLabel)'")
        }
        throw GPIOError(.chipNotFound, chip: label,
                        detail: "GPIO chips present: " + (present.isEmpty ? "none" : present.joined(separator: ", ")))
    }
}
