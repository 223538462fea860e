import LatchkeyGPIO
import LatchkeyPosix

/// One open GPIO chip through libgpiod 1.6 or 2.x (`GPIODBackend`). Lines are found by name
/// and requested once, with the consumer name, active-low and bias in the request; an
/// output is requested with its inactive value in the same request and never released (its
/// request, and the chip with it, go when the last line object goes away). With libgpiod 2
/// an input also carries the kernel's debounce (`debouncesInputs`).
public final class LibgpiodChip: GPIOChip {
    public let label: String
    /// The device name, gpiochipN.
    public let name: String
    let backend: any GPIODBackend
    private let handle: OpaquePointer
    let loop: PosixEventLoop
    let onError: ((GPIOError) -> Void)?

    init(backend: any GPIODBackend, handle: OpaquePointer, name: String, label: String, loop: PosixEventLoop,
         onError: ((GPIOError) -> Void)?) {
        self.backend = backend
        self.handle = handle
        self.name = name
        self.label = label
        self.loop = loop
        self.onError = onError
    }

    deinit { backend.closeChip(handle) }

    public var debouncesInputs: Bool { backend.debouncesInKernel }

    public func requestOutput(_ line: String, _ config: GPIOLineConfig) throws(GPIOError) -> any GPIOOutput {
        let request = try requestLine(line, .output, config)
        return LibgpiodOutput(chip: self, request: request, name: line)
    }

    public func requestInput(_ line: String, _ config: GPIOLineConfig) throws(GPIOError) -> any GPIOInput {
        let request = try requestLine(line, .input(debounce: config.debounce), config)
        do {
            return LibgpiodInput(chip: self, request: request, name: line, eventDescriptor: try request.eventDescriptor())
        } catch {
            throw failure(line, error)
        }
    }

    private func requestLine(_ line: String, _ direction: GPIODRequest.Direction, _ config: GPIOLineConfig)
        throws(GPIOError) -> any GPIODLineRequest
    {
        let found: GPIODLine
        do { found = try backend.findLine(handle, line) } catch {
            throw GPIOError(.lineNotFound, chip: label, line: line, errno: error.errno.rawValue,
                            detail: "no line of that name on \(name); its named lines: "
                                + backend.lineNames(handle).filter { !$0.isEmpty }.joined(separator: " "))
        }
        let request = GPIODRequest(direction: direction, consumer: config.consumer, activeLow: config.activeLow,
                                   bias: config.bias)
        do { return try backend.request(handle, found, request) } catch {
            if error.errno == .busy {
                throw GPIOError(.lineBusy, chip: label, line: line, errno: error.errno.rawValue,
                                detail: "another consumer holds it (see gpioinfo)")
            }
            throw failure(line, error)
        }
    }

    func failure(_ line: String, _ error: SystemError) -> GPIOError {
        GPIOError(.ioFailed, chip: label, line: line, errno: error.errno.rawValue, detail: error.call)
    }
}
