import CGPIOD
import LatchkeyLock

/// What `latchkey doctor` needs from libgpiod without requesting anything: the line names
/// of the chip with a given label (requesting would take the lines from a running agent).
public enum GPIOInventory {
    /// The chip's device name and its line names (unnamed lines are ""), or `chipNotFound`
    /// listing the chips present, as `LibgpiodChipFinder` reports it.
    public static func lines(ofChipLabelled label: String) throws(GPIOError) -> (device: String, lines: [String]) {
        let (handle, device) = try LibgpiodChipFinder.openChip(labelled: label)
        defer { Syscalls.gpiodChipClose(handle) }
        return (device, lineNames(handle))
    }

    /// Every line's name by offset ("" for an unnamed line). gpiod_chip_get_line reads the
    /// line's info (GPIO_GET_LINEINFO_IOCTL); nothing is requested.
    static func lineNames(_ chip: OpaquePointer) -> [String] {
        (0..<gpiod_chip_num_lines(chip)).map { offset in
            gpiod_chip_get_line(chip, offset).flatMap { gpiod_line_name($0) }.map { String(cString: $0) } ?? ""
        }
    }
}
