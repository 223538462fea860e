import LatchkeyGPIO
import LatchkeyPosix

/// Finds a GPIO chip by label through libgpiod (1.6 or 2.x, whichever `LibgpiodLoader`
/// loaded), looking at every /dev/gpiochipN (never by number: the Pi 5's header chip moved
/// from gpiochip4 to gpiochip0 in 2024 kernels). A missing label is a `chipNotFound` that
/// lists the chips that do exist, so a typo or a wrong board shows at once; a missing
/// library is a `libraryMissing` naming the packages to install.
public struct LibgpiodChipFinder: GPIOChipFinder {
    public let loop: PosixEventLoop
    /// Failures after a request returned (reading an input's edge events), per chip.
    public var onError: ((GPIOError) -> Void)?
    let library: Result<any GPIODBackend, GPIOError>
    let devices: () -> [String]

    public init(loop: PosixEventLoop, onError: ((GPIOError) -> Void)? = nil) {
        self.init(loop: loop, library: LibgpiodLoader.shared, devices: Syscalls.gpioChipNames, onError: onError)
    }

    init(loop: PosixEventLoop, library: Result<any GPIODBackend, GPIOError>, devices: @escaping () -> [String],
         onError: ((GPIOError) -> Void)? = nil) {
        self.loop = loop
        self.library = library
        self.devices = devices
        self.onError = onError
    }

    /// The loaded library and its version ("libgpiod.so.3 (libgpiod 2.1.3)"), for `doctor`.
    public static var loadedLibrary: Result<String, GPIOError> { LibgpiodLoader.shared.map(\.description) }

    public func chip(labelled label: String) throws(GPIOError) -> any GPIOChip {
        let (backend, handle, name) = try Self.openChip(labelled: label, library: library, devices: devices)
        return LibgpiodChip(backend: backend, handle: handle, name: name, label: label, loop: loop, onError: onError)
    }

    /// The open chip with this label and its device name (the caller closes it). The
    /// devices are listed first, so a machine without GPIO says so even without the library.
    static func openChip(labelled label: String, library: Result<any GPIODBackend, GPIOError>,
                         devices: () -> [String]) throws(GPIOError)
        -> (backend: any GPIODBackend, handle: OpaquePointer, device: String)
    {
        let names = devices()
        if names.isEmpty { throw GPIOError(.chipNotFound, chip: label, detail: "GPIO chips present: none") }
        let backend: any GPIODBackend
        switch library {
        case .success(let loaded): backend = loaded
        case .failure(var error):
            error.chip = label
            throw error
        }
        var present: [String] = []
        for name in names {
            let handle: OpaquePointer
            do { handle = try backend.openChip(name) } catch {
                present.append("\(name) (cannot open: \(error.errno))")
                continue
            }
            let chipLabel = backend.chipLabel(handle)
            if chipLabel == label { return (backend, handle, name) }
            backend.closeChip(handle)
            present.append("\(name) '\(chipLabel)'")
        }
        throw GPIOError(.chipNotFound, chip: label, detail: "GPIO chips present: " + present.joined(separator: ", "))
    }
}
