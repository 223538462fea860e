import LatchkeyLock
import LatchkeyPosix

/// One open GPIO chip (libgpiod 1.6 `struct gpiod_chip`). Lines are found by name and
/// requested once, with the consumer name, active-low and bias in the request; an output
/// is requested with its inactive value in the same request and never released (the
/// chip, and every line with it, is closed when the last line object goes away).
public final class LibgpiodChip: GPIOChip {
    public let label: String
    /// The device name, gpiochipN.
    public let name: String
    private let handle: OpaquePointer
    let loop: PosixEventLoop
    let onError: ((GPIOError) -> Void)?

    init(handle: OpaquePointer, name: String, label: String, loop: PosixEventLoop, onError: ((GPIOError) -> Void)?) {
        self.handle = handle
        self.name = name
        self.label = label
        self.loop = loop
        self.onError = onError
    }

    deinit { Syscalls.gpiodChipClose(handle) }

    public func requestOutput(_ line: String, _ config: GPIOLineConfig) throws(GPIOError) -> any GPIOOutput {
        let handle = try findLine(line)
        do {
            // default_val 0 is the inactive level: with FLAG_ACTIVE_LOW the kernel drives it high.
            try Syscalls.gpiodRequestOutput(handle, consumer: config.consumer, flags: Self.requestFlags(config), value: false)
        } catch {
            throw requestError(line, error)
        }
        return LibgpiodOutput(chip: self, line: handle, name: line)
    }

    public func requestInput(_ line: String, _ config: GPIOLineConfig) throws(GPIOError) -> any GPIOInput {
        let handle = try findLine(line)
        do {
            try Syscalls.gpiodRequestBothEdges(handle, consumer: config.consumer, flags: Self.requestFlags(config))
            return LibgpiodInput(chip: self, line: handle, name: line, eventDescriptor: try Syscalls.gpiodEventDescriptor(handle))
        } catch {
            throw requestError(line, error)
        }
    }

    /// GPIOD_LINE_REQUEST_FLAG_*: active-low and one bias (none for "as is").
    static func requestFlags(_ config: GPIOLineConfig) -> Int32 {
        var flags = config.activeLow ? GPIOFlag.activeLow : 0
        switch config.bias {
        case .asIs: break
        case .disabled: flags |= GPIOFlag.biasDisable
        case .pullUp: flags |= GPIOFlag.biasPullUp
        case .pullDown: flags |= GPIOFlag.biasPullDown
        }
        return flags
    }

    private func findLine(_ line: String) throws(GPIOError) -> OpaquePointer {
        do { return try Syscalls.gpiodFindLine(handle, line) } catch {
            throw GPIOError(.lineNotFound, chip: label, line: line, errno: error.errno.rawValue,
                            detail: "no line of that name on \(name); its named lines: "
                                + GPIOInventory.lineNames(handle).filter { !$0.isEmpty }.joined(separator: " "))
        }
    }

    private func requestError(_ line: String, _ error: SystemError) -> GPIOError {
        if error.errno == .busy {
            return GPIOError(.lineBusy, chip: label, line: line, errno: error.errno.rawValue,
                             detail: "another consumer holds it (see gpioinfo)")
        }
        return failure(line, error)
    }

    func failure(_ line: String, _ error: SystemError) -> GPIOError {
        GPIOError(.ioFailed, chip: label, line: line, errno: error.errno.rawValue, detail: error.call)
    }
}
