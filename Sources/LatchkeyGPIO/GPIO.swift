import LatchkeyTransport

// The GPIO seam: the few calls the lock needs from a GPIO character device, shaped after
// libgpiod 1.6 and 2.x so that each backend (LatchkeyKernel) is a thin wrapper
// (docs/ARCHITECTURE.md, "GPIO through libgpiod: 1.6 and 2.x, loaded at run time"). Values are
// LOGICAL above this file: `true` means "active"; active-low is part of the request. Every
// implementation keeps docs/LOCK-RULES.md, "Hardware and failure behaviour": an output is
// requested with its inactive value, never released and re-requested; a requested line is
// busy (`GPIOError.Code.lineBusy`); edge callbacks run on the event loop.

/// Finds chips by label (never by number: the Pi 5 header chip moved from gpiochip4 to
/// gpiochip0 in 2024 kernels; a Pi 4's is `pinctrl-bcm2711`).
public protocol GPIOChipFinder {
    func chip(labelled label: String) throws(GPIOError) -> any GPIOChip
}

/// One GPIO chip (one /dev/gpiochipN), whose lines are found by name.
public protocol GPIOChip: AnyObject {
    var label: String { get }
    /// Whether `requestInput` hands `GPIOLineConfig.debounce` to the kernel (libgpiod 2): the
    /// lock then adds no software debounce of its own (`LockHardware`).
    var debouncesInputs: Bool { get }
    /// Requests `line` as an output driven to its inactive level by the request itself.
    func requestOutput(_ line: String, _ config: GPIOLineConfig) throws(GPIOError) -> any GPIOOutput
    /// Requests `line` as an input with edge detection on both edges.
    func requestInput(_ line: String, _ config: GPIOLineConfig) throws(GPIOError) -> any GPIOInput
}

/// What a request carries besides the line name.
public struct GPIOLineConfig: Hashable, Sendable {
    /// Shown by `gpioinfo` as the holder of the line.
    public var consumer: String
    /// The line is active when its physical level is low.
    public var activeLow: Bool
    public var bias: GPIOBias
    /// For inputs of a chip that `debouncesInputs`: a change is reported once the line has
    /// held it this long (0: none). Other chips ignore it.
    public var debounce: Duration

    public init(consumer: String, activeLow: Bool = false, bias: GPIOBias = .asIs, debounce: Duration = .zero) {
        self.consumer = consumer
        self.activeLow = activeLow
        self.bias = bias
        self.debounce = debounce
    }
}

/// Pull resistor setting (libgpiod 1.6 GPIOD_LINE_REQUEST_FLAG_BIAS_*, 2.x enum gpiod_line_bias).
public enum GPIOBias: Hashable, Sendable {
    case asIs, disabled, pullUp, pullDown
}

/// A requested output line. Logical values only.
public protocol GPIOOutput: AnyObject {
    var name: String { get }
    /// The last value set (starts `false`: requested inactive).
    var isActive: Bool { get }
    func set(_ active: Bool) throws(GPIOError)
}

/// A requested input line. Logical values only.
public protocol GPIOInput: AnyObject {
    var name: String { get }
    /// Reads the line now.
    func read() throws(GPIOError) -> Bool
    /// Called on the event loop for each change of the line, in order.
    var onEdge: ((GPIOEdge) -> Void)? { get set }
}

/// One change of an input line.
public struct GPIOEdge: Hashable, Sendable {
    /// The logical value after the edge.
    public var isActive: Bool
    /// When the change happened on the loop's monotonic clock.
    public var time: Instant

    public init(isActive: Bool, time: Instant) {
        self.isActive = isActive
        self.time = time
    }
}

/// A GPIO failure, naming the chip and line (swift-system style: a code plus context).
public struct GPIOError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let raw: String
        public static let chipNotFound = Code(raw: "chip not found")
        /// Neither libgpiod.so.3 nor libgpiod.so.2 could be loaded (or the one forced).
        public static let libraryMissing = Code(raw: "library missing")
        public static let lineNotFound = Code(raw: "line not found")
        public static let lineBusy = Code(raw: "line busy")
        public static let invalidValue = Code(raw: "invalid value")
        public static let ioFailed = Code(raw: "I/O failed")
        public var description: String { raw }
    }

    public var code: Code
    public var chip: String
    public var line: String?
    /// The errno of the failing call, when there was one.
    public var errno: Int32?
    public var detail: String?

    public init(_ code: Code, chip: String, line: String? = nil, errno: Int32? = nil, detail: String? = nil) {
        self.code = code
        self.chip = chip
        self.line = line
        self.errno = errno
        self.detail = detail
    }

    public var description: String {
        var text = "GPIO \(code) on chip '\(chip)'"
        if let line { text += " line '\(line)'" }
        if let errno { text += " (errno \(errno))" }
        if let detail { text += ": \(detail)" }
        return text
    }
}

/// A finder over chips already at hand (the in-process simulation, or a test).
public struct GPIOChipSet: GPIOChipFinder {
    public var chips: [any GPIOChip]

    public init(_ chips: [any GPIOChip]) { self.chips = chips }

    public func chip(labelled label: String) throws(GPIOError) -> any GPIOChip {
        guard let chip = chips.first(where: { $0.label == label }) else {
            throw GPIOError(.chipNotFound, chip: label)
        }
        return chip
    }
}
