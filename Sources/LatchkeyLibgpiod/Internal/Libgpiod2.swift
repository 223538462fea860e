#if canImport(Glibc)
import Glibc
#endif
import CGPIOD
import LatchkeyGPIO
import LatchkeyPosix

/// libgpiod 2.x (libgpiod.so.3, the v2 API): a line is requested through line settings
/// (direction, edges, bias, active-low, the kernel's debounce, the event clock, the output's
/// first value), a line config and a request config; the request is its own object, released
/// when the request object goes away. Edge events come in a buffer with CLOCK_MONOTONIC
/// timestamps, the clock of `PosixEventLoop`.
final class Libgpiod2: GPIODBackend, @unchecked Sendable {  // an immutable table of C function pointers
    static let soname = "libgpiod.so.3"
    let table: latchkey_gpiod2
    let description: String
    var debouncesInKernel: Bool { true }

    init(_ table: latchkey_gpiod2) {
        self.table = table
        description = "\(Self.soname) (libgpiod \(table.gpiod_api_version!().map { String(cString: $0) } ?? "?"))"
    }

    func openChip(_ device: String) throws(SystemError) -> OpaquePointer {
        try Syscalls.pointer("gpiod_chip_open", "(/dev/\(device))") { table.gpiod_chip_open!("/dev/" + device) }
    }

    func closeChip(_ chip: OpaquePointer) { table.gpiod_chip_close!(chip) }

    /// "" when the chip's info cannot be read (the finder then lists it with that label).
    func chipLabel(_ chip: OpaquePointer) -> String {
        guard let info = table.gpiod_chip_get_info!(chip) else { return "" }
        defer { table.gpiod_chip_info_free!(info) }
        return table.gpiod_chip_info_get_label!(info).map { String(cString: $0) } ?? ""
    }

    func lineNames(_ chip: OpaquePointer) -> [String] {
        guard let info = table.gpiod_chip_get_info!(chip) else { return [] }
        let count = table.gpiod_chip_info_get_num_lines!(info)
        table.gpiod_chip_info_free!(info)
        return (0..<UInt32(count)).map { offset in
            guard let line = table.gpiod_chip_get_line_info!(chip, offset) else { return "" }
            defer { table.gpiod_line_info_free!(line) }
            return table.gpiod_line_info_get_name!(line).map { String(cString: $0) } ?? ""
        }
    }

    func findLine(_ chip: OpaquePointer, _ name: String) throws(SystemError) -> GPIODLine {
        let offset = try Syscalls.blocking("gpiod_chip_get_line_offset_from_name", "(\(name))") {
            Int(table.gpiod_chip_get_line_offset_from_name!(chip, name))
        }
        return .v2(offset: UInt32(offset))
    }

    static func bias(_ bias: GPIOBias) -> UInt32 {
        switch bias {
        case .asIs: UInt32(LATCHKEY_GPIOD2_BIAS_AS_IS)
        case .disabled: UInt32(LATCHKEY_GPIOD2_BIAS_DISABLED)
        case .pullUp: UInt32(LATCHKEY_GPIOD2_BIAS_PULL_UP)
        case .pullDown: UInt32(LATCHKEY_GPIOD2_BIAS_PULL_DOWN)
        }
    }

    /// Microseconds, rounded up so that a sub-microsecond period is not "no debounce".
    static func debounceMicroseconds(_ period: Duration) -> UInt {
        let nanoseconds = max(0, period.nanoseconds)
        return UInt((nanoseconds + 999) / 1000)
    }

    func request(_ chip: OpaquePointer, _ line: GPIODLine, _ request: GPIODRequest) throws(SystemError)
        -> any GPIODLineRequest
    {
        guard case .v2(let offset) = line else { preconditionFailure("a libgpiod 1.6 line given to libgpiod 2") }
        let settings = try Syscalls.pointer("gpiod_line_settings_new") { table.gpiod_line_settings_new!() }
        defer { table.gpiod_line_settings_free!(settings) }
        switch request.direction {
        case .output:
            try setting("gpiod_line_settings_set_direction") {
                table.gpiod_line_settings_set_direction!(settings, UInt32(LATCHKEY_GPIOD2_DIRECTION_OUTPUT))
            }
            // The inactive value, in the request itself: with active-low the kernel drives it high.
            try setting("gpiod_line_settings_set_output_value") {
                table.gpiod_line_settings_set_output_value!(settings, Int32(LATCHKEY_GPIOD2_VALUE_INACTIVE))
            }
        case .input(let debounce):
            try setting("gpiod_line_settings_set_direction") {
                table.gpiod_line_settings_set_direction!(settings, UInt32(LATCHKEY_GPIOD2_DIRECTION_INPUT))
            }
            try setting("gpiod_line_settings_set_edge_detection") {
                table.gpiod_line_settings_set_edge_detection!(settings, UInt32(LATCHKEY_GPIOD2_EDGE_BOTH))
            }
            try setting("gpiod_line_settings_set_event_clock") {
                table.gpiod_line_settings_set_event_clock!(settings, UInt32(LATCHKEY_GPIOD2_CLOCK_MONOTONIC))
            }
            table.gpiod_line_settings_set_debounce_period_us!(settings, Self.debounceMicroseconds(debounce))
        }
        try setting("gpiod_line_settings_set_bias") { table.gpiod_line_settings_set_bias!(settings, Self.bias(request.bias)) }
        table.gpiod_line_settings_set_active_low!(settings, request.activeLow)

        let lineConfig = try Syscalls.pointer("gpiod_line_config_new") { table.gpiod_line_config_new!() }
        defer { table.gpiod_line_config_free!(lineConfig) }
        var offsets = [offset]
        try setting("gpiod_line_config_add_line_settings") {
            table.gpiod_line_config_add_line_settings!(lineConfig, &offsets, 1, settings)
        }
        let requestConfig = try Syscalls.pointer("gpiod_request_config_new") { table.gpiod_request_config_new!() }
        defer { table.gpiod_request_config_free!(requestConfig) }
        table.gpiod_request_config_set_consumer!(requestConfig, request.consumer)

        let handle = try Syscalls.pointer("gpiod_chip_request_lines") {
            table.gpiod_chip_request_lines!(chip, requestConfig, lineConfig)
        }
        guard case .input = request.direction else { return Libgpiod2Line(table: table, request: handle, offset: offset) }
        do {
            let buffer = try Syscalls.pointer("gpiod_edge_event_buffer_new") {
                table.gpiod_edge_event_buffer_new!(LibgpiodInput.readBatch)
            }
            return Libgpiod2Line(table: table, request: handle, offset: offset, events: buffer)
        } catch {
            table.gpiod_line_request_release!(handle)
            throw error
        }
    }

    /// A settings call (0, or -1 with errno) under the errno policy and the hook.
    private func setting(_ function: String, _ body: () -> Int32) throws(SystemError) {
        _ = try Syscalls.blocking(function) { Int(body()) }
    }
}

/// A v2 line request for one offset; inputs carry an edge event buffer.
final class Libgpiod2Line: GPIODLineRequest {
    private let table: latchkey_gpiod2
    private let request: OpaquePointer
    private let offset: UInt32
    private let events: OpaquePointer?
    private var descriptor: CInt?

    init(table: latchkey_gpiod2, request: OpaquePointer, offset: UInt32, events: OpaquePointer? = nil) {
        self.table = table
        self.request = request
        self.offset = offset
        self.events = events
    }

    deinit {
        table.gpiod_line_request_release!(request)  // closes the request's fd
        if let events { table.gpiod_edge_event_buffer_free!(events) }
    }

    func setValue(_ active: Bool) throws(SystemError) {
        let value = Int32(active ? LATCHKEY_GPIOD2_VALUE_ACTIVE : LATCHKEY_GPIOD2_VALUE_INACTIVE)
        _ = try Syscalls.blocking("gpiod_line_request_set_value") {
            Int(table.gpiod_line_request_set_value!(request, offset, value))
        }
    }

    func value() throws(SystemError) -> Bool {
        try Syscalls.blocking("gpiod_line_request_get_value") {
            Int(table.gpiod_line_request_get_value!(request, offset))
        } == Int(LATCHKEY_GPIOD2_VALUE_ACTIVE)
    }

    func eventDescriptor() throws(SystemError) -> CInt {
        if let descriptor { return descriptor }
        let fd = CInt(try Syscalls.blocking("gpiod_line_request_get_fd") { Int(table.gpiod_line_request_get_fd!(request)) })
        try Syscalls.setNonBlocking(fd)
        descriptor = fd
        return fd
    }

    /// One read of up to `limit` events (at most the buffer's capacity) into the buffer.
    func readEdges(limit: Int) throws(SystemError) -> IOResult<[GPIODEdgeEvent]> {
        guard let events else { preconditionFailure("edge events read from an output") }
        _ = try eventDescriptor()  // non-blocking before the first read
        let count = try Syscalls.call("gpiod_line_request_read_edge_events") {
            Int(table.gpiod_line_request_read_edge_events!(request, events, min(limit, LibgpiodInput.readBatch)))
        }
        guard case .done(let n) = count, n > 0 else { return .wouldBlock }
        return .done((0..<n).map { index in
            // Non-NULL for every index below the count read_edge_events returned.
            let event = table.gpiod_edge_event_buffer_get_event!(events, UInt(index))!
            return GPIODEdgeEvent(
                rising: table.gpiod_edge_event_get_event_type!(event) == UInt32(LATCHKEY_GPIOD2_EVENT_RISING_EDGE),
                timestampNanoseconds: Int64(truncatingIfNeeded: table.gpiod_edge_event_get_timestamp_ns!(event)))
        })
    }
}
