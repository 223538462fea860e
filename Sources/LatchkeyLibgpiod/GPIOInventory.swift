import LatchkeyGPIO

/// What `latchkey doctor` needs from libgpiod without requesting anything: the line names
/// of the chip with a given label (requesting would take the lines from a running agent),
/// and which libgpiod read them.
public enum GPIOInventory {
    /// The chip's device name, its line names (unnamed lines are "") and the library
    /// ("libgpiod.so.3 (libgpiod 2.1.3)"), or `chipNotFound` listing the chips present, as
    /// `LibgpiodChipFinder` reports it.
    public static func lines(ofChipLabelled label: String) throws(GPIOError) -> (device: String, lines: [String], library: String) {
        try lines(ofChipLabelled: label, library: LibgpiodLoader.shared, devices: Syscalls.gpioChipNames)
    }

    static func lines(ofChipLabelled label: String, library: Result<any GPIODBackend, GPIOError>,
                      devices: () -> [String]) throws(GPIOError) -> (device: String, lines: [String], library: String) {
        let (backend, handle, device) = try LibgpiodChipFinder.openChip(labelled: label, library: library, devices: devices)
        defer { backend.closeChip(handle) }
        return (device, backend.lineNames(handle), backend.description)
    }
}
