#if canImport(Glibc)
import Glibc
#endif
import CGPIOD
import LatchkeyGPIO
import LatchkeyPosix

/// libgpiod 1.6 (libgpiod.so.2, the v1 API). Lines belong to their chip: a request is
/// never released on its own, it goes with `gpiod_chip_close`. No kernel debounce (the v1
/// API has none): `DebouncedInput` debounces in software.
final class Libgpiod1: GPIODBackend, @unchecked Sendable {  // an immutable table of C function pointers
    static let soname = "libgpiod.so.2"
    let table: latchkey_gpiod1
    let description: String
    var debouncesInKernel: Bool { false }

    init(_ table: latchkey_gpiod1) {
        self.table = table
        description = "\(Self.soname) (libgpiod \(table.gpiod_version_string!().map { String(cString: $0) } ?? "?"))"
    }

    func openChip(_ device: String) throws(SystemError) -> OpaquePointer {
        try Syscalls.pointer("gpiod_chip_open_by_name", "(\(device))") { table.gpiod_chip_open_by_name!(device) }
    }

    func closeChip(_ chip: OpaquePointer) { table.gpiod_chip_close!(chip) }

    func chipLabel(_ chip: OpaquePointer) -> String { table.gpiod_chip_label!(chip).map { String(cString: $0) } ?? "" }

    func lineNames(_ chip: OpaquePointer) -> [String] {
        (0..<table.gpiod_chip_num_lines!(chip)).map { offset in
            table.gpiod_chip_get_line!(chip, offset).flatMap { table.gpiod_line_name!($0) }.map { String(cString: $0) } ?? ""
        }
    }

    func findLine(_ chip: OpaquePointer, _ name: String) throws(SystemError) -> GPIODLine {
        .v1(try Syscalls.pointer("gpiod_chip_find_line", "(\(name))") { table.gpiod_chip_find_line!(chip, name) })
    }

    /// GPIOD_LINE_REQUEST_FLAG_*: active-low and one bias (none for "as is").
    static func requestFlags(_ request: GPIODRequest) -> Int32 {
        var flags: Int32 = request.activeLow ? Int32(LATCHKEY_GPIOD1_FLAG_ACTIVE_LOW) : 0
        switch request.bias {
        case .asIs: break
        case .disabled: flags |= Int32(LATCHKEY_GPIOD1_FLAG_BIAS_DISABLE)
        case .pullUp: flags |= Int32(LATCHKEY_GPIOD1_FLAG_BIAS_PULL_UP)
        case .pullDown: flags |= Int32(LATCHKEY_GPIOD1_FLAG_BIAS_PULL_DOWN)
        }
        return flags
    }

    func request(_ chip: OpaquePointer, _ line: GPIODLine, _ request: GPIODRequest) throws(SystemError)
        -> any GPIODLineRequest
    {
        guard case .v1(let handle) = line else { preconditionFailure("a libgpiod 2 line given to libgpiod 1.6") }
        let flags = Self.requestFlags(request)
        switch request.direction {
        case .output:
            // default_val 0 is the inactive level: with FLAG_ACTIVE_LOW the kernel drives it high.
            _ = try Syscalls.blocking("gpiod_line_request_output_flags") {
                Int(table.gpiod_line_request_output_flags!(handle, request.consumer, flags, 0))
            }
        case .input:
            _ = try Syscalls.blocking("gpiod_line_request_both_edges_events_flags") {
                Int(table.gpiod_line_request_both_edges_events_flags!(handle, request.consumer, flags))
            }
        }
        return Libgpiod1Line(table: table, line: handle)
    }
}

/// A requested v1 line; its event fd belongs to the line and closes with the chip.
final class Libgpiod1Line: GPIODLineRequest {
    private let table: latchkey_gpiod1
    private let line: OpaquePointer
    private var descriptor: CInt?

    init(table: latchkey_gpiod1, line: OpaquePointer) {
        self.table = table
        self.line = line
    }

    func setValue(_ active: Bool) throws(SystemError) {
        _ = try Syscalls.blocking("gpiod_line_set_value") { Int(table.gpiod_line_set_value!(line, active ? 1 : 0)) }
    }

    func value() throws(SystemError) -> Bool {
        try Syscalls.blocking("gpiod_line_get_value") { Int(table.gpiod_line_get_value!(line)) } == 1
    }

    func eventDescriptor() throws(SystemError) -> CInt {
        if let descriptor { return descriptor }
        let fd = CInt(try Syscalls.blocking("gpiod_line_event_get_fd") { Int(table.gpiod_line_event_get_fd!(line)) })
        try Syscalls.setNonBlocking(fd)
        descriptor = fd
        return fd
    }

    /// One event per gpiod_line_event_read_fd (1.6 reads one at a time). The event's time
    /// is not used: an edge's time is the loop's clock when it is read (v1 behaviour).
    func readEdges(limit: Int) throws(SystemError) -> IOResult<[GPIODEdgeEvent]> {
        let fd = try eventDescriptor()
        var edges: [GPIODEdgeEvent] = []
        while edges.count < limit {
            var event = latchkey_gpiod1_line_event()
            let result: IOResult<Int>
            do {
                result = try Syscalls.call("gpiod_line_event_read_fd") {
                    Int(withUnsafeMutablePointer(to: &event) { table.gpiod_line_event_read_fd!(fd, OpaquePointer($0)) })
                }
            } catch where !edges.isEmpty {
                break  // deliver what was read; the failure repeats on the next read and is reported then
            }
            guard case .done = result else { break }
            edges.append(GPIODEdgeEvent(rising: event.event_type == Int32(LATCHKEY_GPIOD1_EVENT_RISING_EDGE),
                                        timestampNanoseconds: nil))
        }
        return edges.isEmpty ? .wouldBlock : .done(edges)
    }
}
