#if canImport(Glibc)
import Glibc
#endif
import CGPIOD
import LatchkeyGPIO
import LatchkeyLock

/// A GPIO character device as both libgpiod APIs see it, for tests on a kernel without GPIO:
/// `v1Table` and `v2Table` are the function tables `Libgpiod1` / `Libgpiod2` would get from
/// dlsym, each entry a C function over this one model. The model keeps what the kernel keeps:
/// physical levels, who holds each line with which settings, and a queue of edge events
/// per input request behind a real pipe, so the event loop polls a real fd. Levels and edges
/// are logical above the request (active-low inverts), as in the kernel.
/// The C functions cannot capture state: they find the model in `FakeLibgpiod.current`, a
/// task-local value each test installs with `run(_:)`, so tests in parallel never share one.
final class FakeLibgpiod: @unchecked Sendable {  // touched only by the task that installed it
    struct Chip {
        var device: String
        var label: String
        var lines: [String]
    }

    /// A request as the kernel holds it, whichever API made it.
    struct Held: Equatable {
        var chip: Int
        var offset: UInt32
        var consumer: String
        var output: Bool
        var activeLow: Bool
        var bias: GPIOBias
        var bothEdges: Bool
        /// The kernel's debounce period; nil when the API never set one (v1).
        var debounceMicroseconds: UInt?
        /// Whether edge events carry CLOCK_MONOTONIC timestamps (v2's event clock).
        var monotonicClock: Bool
    }

    struct Event {
        var rising: Bool
        var nanoseconds: UInt64
    }

    final class Request {
        var held: Held
        var events: [Event] = []
        let readEnd: CInt
        let writeEnd: CInt
        var released = false
        init(held: Held) {
            self.held = held
            var fds: [CInt] = [0, 0]
            precondition(pipe(&fds) == 0)
            readEnd = fds[0]
            writeEnd = fds[1]
        }
        deinit { close(readEnd); close(writeEnd) }
    }

    @TaskLocal static var current: FakeLibgpiod?

    var chips: [Chip]
    /// Physical levels (true: high) by chip and offset; unset lines read low.
    var levels: [Int: [UInt32: Bool]] = [:]
    /// Lines another process holds (gpioinfo would show them used): requests fail with EBUSY.
    var heldElsewhere: Set<String> = []
    private(set) var requests: [Request] = []
    /// v2 objects by their fake pointer: settings, configs, infos, buffers, events.
    fileprivate var objects: [Int: Any] = [:]
    private var nextObject = 0x10_0000

    init(chips: [Chip]) { self.chips = chips }

    var devices: [String] { chips.map(\.device) }

    func run<T>(_ body: () throws -> T) rethrows -> T { try Self.$current.withValue(self, operation: body) }

    /// The live (not released) requests, as the kernel holds them.
    var held: [Held] { requests.filter { !$0.released }.map(\.held) }

    func level(_ line: String) -> Bool {
        let (chip, offset) = find(line)!
        return levels[chip]?[offset] ?? false
    }

    /// Drives an input's physical level from outside (gpio-sim's pull); a change queues an
    /// edge event on each request with edge detection, at `nanoseconds` on CLOCK_MONOTONIC.
    func drive(_ line: String, high: Bool, at nanoseconds: UInt64 = 0) {
        let (chip, offset) = find(line)!
        guard levels[chip]?[offset] ?? false != high else { return }
        levels[chip, default: [:]][offset] = high
        for request in requests where !request.released && request.held.chip == chip && request.held.offset == offset
            && request.held.bothEdges
        {
            request.events.append(Event(rising: high != request.held.activeLow, nanoseconds: nanoseconds))
            _ = write(request.writeEnd, [UInt8(1)], 1)
        }
    }

    fileprivate func find(_ line: String) -> (chip: Int, offset: UInt32)? {
        for (index, chip) in chips.enumerated() {
            if let offset = chip.lines.firstIndex(of: line) { return (index, UInt32(offset)) }
        }
        return nil
    }

    /// Takes a request for the kernel: EBUSY when the line is held, by us or another process.
    fileprivate func take(_ held: Held, initialActive: Bool) -> Request? {
        let name = chips[held.chip].lines[Int(held.offset)]
        if heldElsewhere.contains(name)
            || requests.contains(where: { !$0.released && $0.held.chip == held.chip && $0.held.offset == held.offset })
        {
            errno = EBUSY
            return nil
        }
        let request = Request(held: held)
        requests.append(request)
        if held.output { levels[held.chip, default: [:]][held.offset] = initialActive != held.activeLow }
        return request
    }

    fileprivate func setLogical(_ request: Request, _ active: Bool) {
        levels[request.held.chip, default: [:]][request.held.offset] = active != request.held.activeLow
    }

    fileprivate func logical(_ request: Request) -> Bool {
        (levels[request.held.chip]?[request.held.offset] ?? false) != request.held.activeLow
    }

    /// Pops up to `limit` queued events of the request reading `fd`; EAGAIN when none wait.
    fileprivate func popEvents(fd: CInt, limit: Int) -> [Event]? {
        guard let request = requests.first(where: { $0.readEnd == fd }) else {
            errno = EBADF
            return nil
        }
        var bytes = [UInt8](repeating: 0, count: max(1, limit))
        let count = read(fd, &bytes, bytes.count)
        if count <= 0 { return nil }  // errno is read(2)'s: EAGAIN on the non-blocking fd
        let events = Array(request.events.prefix(count))
        request.events.removeFirst(count)
        return events
    }

    fileprivate func store(_ object: Any) -> OpaquePointer {
        nextObject += 16
        objects[nextObject] = object
        return OpaquePointer(bitPattern: nextObject)!
    }

    fileprivate func object<T>(_ pointer: OpaquePointer?, as type: T.Type) -> T? {
        pointer.flatMap { objects[Int(bitPattern: UnsafeRawPointer($0))] as? T }
    }

    fileprivate func replace(_ pointer: OpaquePointer?, with object: Any) {
        if let pointer { objects[Int(bitPattern: UnsafeRawPointer(pointer))] = object }
    }

    fileprivate func free(_ pointer: OpaquePointer?) {
        if let pointer { objects[Int(bitPattern: UnsafeRawPointer(pointer))] = nil }
    }
}

// MARK: handles shared by both APIs

/// A chip handle is its index + 1; a v1 line handle packs chip and offset.
private func chipHandle(_ index: Int) -> OpaquePointer { OpaquePointer(bitPattern: 0x1000 + index)! }
private func chipIndex(_ handle: OpaquePointer?) -> Int { Int(bitPattern: UnsafeRawPointer(handle)) - 0x1000 }
private func lineHandle(_ chip: Int, _ offset: UInt32) -> OpaquePointer {
    OpaquePointer(bitPattern: 0x2_0000 + chip << 8 + Int(offset))!
}
private func lineOf(_ handle: OpaquePointer?) -> (chip: Int, offset: UInt32) {
    let raw = Int(bitPattern: UnsafeRawPointer(handle)) - 0x2_0000
    return (raw >> 8, UInt32(raw & 0xFF))
}

private func openChip(device: String) -> OpaquePointer? {
    guard let fake = FakeLibgpiod.current, let index = fake.chips.firstIndex(where: { $0.device == device }) else {
        errno = ENOENT
        return nil
    }
    return chipHandle(index)
}

private func cString(_ text: String) -> UnsafePointer<CChar> {
    // Kept for the process's life, as the library's own strings live as long as their object.
    UnsafePointer(strdup(text)!)
}

private func gpiodBias(_ flags: Int32) -> GPIOBias {
    if flags & Int32(LATCHKEY_GPIOD1_FLAG_BIAS_DISABLE) != 0 { return .disabled }
    if flags & Int32(LATCHKEY_GPIOD1_FLAG_BIAS_PULL_UP) != 0 { return .pullUp }
    if flags & Int32(LATCHKEY_GPIOD1_FLAG_BIAS_PULL_DOWN) != 0 { return .pullDown }
    return .asIs
}

// MARK: libgpiod 1.6

extension FakeLibgpiod {
    private static func v1Request(_ line: OpaquePointer?, _ consumer: UnsafePointer<CChar>?, _ flags: Int32,
                                  output: Bool, initialActive: Bool) -> Int32 {
        guard let fake = current else { return -1 }
        let (chip, offset) = lineOf(line)
        let held = Held(chip: chip, offset: offset, consumer: consumer.map { String(cString: $0) } ?? "", output: output,
                        activeLow: flags & Int32(LATCHKEY_GPIOD1_FLAG_ACTIVE_LOW) != 0, bias: gpiodBias(flags),
                        bothEdges: !output, debounceMicroseconds: nil, monotonicClock: false)
        return fake.take(held, initialActive: initialActive) == nil ? -1 : 0
    }

    private static func v1Held(_ line: OpaquePointer?) -> Request? {
        let (chip, offset) = lineOf(line)
        return current?.requests.last { !$0.released && $0.held.chip == chip && $0.held.offset == offset }
    }

    var v1Table: latchkey_gpiod1 {
        var table = latchkey_gpiod1()
        table.gpiod_chip_open_by_name = { name in openChip(device: String(cString: name!)) }
        table.gpiod_chip_close = { _ in }
        table.gpiod_chip_label = { chip in cString(FakeLibgpiod.current!.chips[chipIndex(chip)].label) }
        table.gpiod_chip_num_lines = { chip in UInt32(FakeLibgpiod.current!.chips[chipIndex(chip)].lines.count) }
        table.gpiod_chip_get_line = { chip, offset in lineHandle(chipIndex(chip), offset) }
        table.gpiod_chip_find_line = { chip, name in
            let lines = FakeLibgpiod.current!.chips[chipIndex(chip)].lines
            guard let offset = lines.firstIndex(of: String(cString: name!)) else {
                errno = ENOENT
                return nil
            }
            return lineHandle(chipIndex(chip), UInt32(offset))
        }
        table.gpiod_line_name = { line in
            let (chip, offset) = lineOf(line)
            let name = FakeLibgpiod.current!.chips[chip].lines[Int(offset)]
            return name.isEmpty ? nil : cString(name)
        }
        table.gpiod_line_request_output_flags = { line, consumer, flags, value in
            FakeLibgpiod.v1Request(line, consumer, flags, output: true, initialActive: value != 0)
        }
        table.gpiod_line_request_both_edges_events_flags = { line, consumer, flags in
            FakeLibgpiod.v1Request(line, consumer, flags, output: false, initialActive: false)
        }
        table.gpiod_line_set_value = { line, value in
            guard let request = FakeLibgpiod.v1Held(line) else { errno = EPERM; return -1 }
            FakeLibgpiod.current!.setLogical(request, value != 0)
            return 0
        }
        table.gpiod_line_get_value = { line in
            guard let request = FakeLibgpiod.v1Held(line) else { errno = EPERM; return -1 }
            return FakeLibgpiod.current!.logical(request) ? 1 : 0
        }
        table.gpiod_line_event_get_fd = { line in
            guard let request = FakeLibgpiod.v1Held(line), request.held.bothEdges else { errno = EPERM; return -1 }
            return request.readEnd
        }
        table.gpiod_line_event_read_fd = { fd, event in
            guard let popped = FakeLibgpiod.current?.popEvents(fd: fd, limit: 1) else { return -1 }
            let out = UnsafeMutableRawPointer(event!).assumingMemoryBound(to: latchkey_gpiod1_line_event.self)
            out.pointee.ts = timespec(tv_sec: Int(popped[0].nanoseconds / 1_000_000_000),
                                      tv_nsec: Int(popped[0].nanoseconds % 1_000_000_000))
            out.pointee.event_type = Int32(popped[0].rising ? LATCHKEY_GPIOD1_EVENT_RISING_EDGE
                                                             : LATCHKEY_GPIOD1_EVENT_FALLING_EDGE)
            return 0
        }
        table.gpiod_version_string = { cString("1.6.3") }
        return table
    }
}

// MARK: libgpiod 2.x

extension FakeLibgpiod {
    /// gpiod_line_settings: unset fields are the library's defaults (input, as-is, no edges).
    struct Settings {
        var direction = UInt32(LATCHKEY_GPIOD2_DIRECTION_INPUT)
        var edge: UInt32 = 1  // GPIOD_LINE_EDGE_NONE
        var bias = UInt32(LATCHKEY_GPIOD2_BIAS_AS_IS)
        var activeLow = false
        var debounce: UInt = 0
        var clock: UInt32 = 1  // GPIOD_LINE_CLOCK_MONOTONIC, the library's default
        var outputValue = Int32(LATCHKEY_GPIOD2_VALUE_INACTIVE)
    }

    struct LineConfig { var lines: [(offset: UInt32, settings: Settings)] = [] }
    struct RequestConfig { var consumer = "" }
    struct ChipInfo { var chip: Int }
    struct LineInfo { var name: String }
    struct Buffer { var capacity: Int; var events: [OpaquePointer] = [] }

    private static func update(_ settings: OpaquePointer?, _ change: (inout Settings) -> Void) {
        guard let fake = current, var value = fake.object(settings, as: Settings.self) else { return }
        change(&value)
        fake.replace(settings, with: value)
    }

    private static func bias(_ value: UInt32) -> GPIOBias {
        switch value {
        case UInt32(LATCHKEY_GPIOD2_BIAS_DISABLED): .disabled
        case UInt32(LATCHKEY_GPIOD2_BIAS_PULL_UP): .pullUp
        case UInt32(LATCHKEY_GPIOD2_BIAS_PULL_DOWN): .pullDown
        default: .asIs
        }
    }

    private static func requestLines(_ chip: OpaquePointer?, _ requestConfig: OpaquePointer?,
                                      _ lineConfig: OpaquePointer?) -> OpaquePointer? {
        guard let fake = current, let config = fake.object(lineConfig, as: LineConfig.self),
              config.lines.count == 1, let line = config.lines.first  // Latchkey requests one line at a time
        else {
            errno = EINVAL
            return nil
        }
        let settings = line.settings
        let output = settings.direction == UInt32(LATCHKEY_GPIOD2_DIRECTION_OUTPUT)
        let held = Held(chip: chipIndex(chip), offset: line.offset,
                        consumer: fake.object(requestConfig, as: RequestConfig.self)?.consumer ?? "", output: output,
                        activeLow: settings.activeLow, bias: bias(settings.bias),
                        bothEdges: settings.edge == UInt32(LATCHKEY_GPIOD2_EDGE_BOTH),
                        debounceMicroseconds: settings.debounce,
                        monotonicClock: settings.clock == UInt32(LATCHKEY_GPIOD2_CLOCK_MONOTONIC))
        guard let request = fake.take(held, initialActive: settings.outputValue == Int32(LATCHKEY_GPIOD2_VALUE_ACTIVE))
        else { return nil }
        return fake.store(request)
    }

    private static func request(_ pointer: OpaquePointer?, _ offset: UInt32) -> Request? {
        guard let request = current?.object(pointer, as: Request.self), !request.released,
              request.held.offset == offset
        else {
            errno = EINVAL
            return nil
        }
        return request
    }

    var v2Table: latchkey_gpiod2 {
        var table = latchkey_gpiod2()
        table.gpiod_chip_open = { path in
            let path = String(cString: path!)
            guard path.hasPrefix("/dev/") else { errno = ENOENT; return nil }
            return openChip(device: String(path.dropFirst(5)))
        }
        table.gpiod_chip_close = { _ in }
        table.gpiod_chip_get_info = { chip in FakeLibgpiod.current!.store(ChipInfo(chip: chipIndex(chip))) }
        table.gpiod_chip_info_free = { info in FakeLibgpiod.current?.free(info) }
        table.gpiod_chip_info_get_label = { info in
            let fake = FakeLibgpiod.current!
            return cString(fake.chips[fake.object(info, as: ChipInfo.self)!.chip].label)
        }
        table.gpiod_chip_info_get_num_lines = { info in
            let fake = FakeLibgpiod.current!
            return fake.chips[fake.object(info, as: ChipInfo.self)!.chip].lines.count
        }
        table.gpiod_chip_get_line_info = { chip, offset in
            FakeLibgpiod.current!.store(LineInfo(name: FakeLibgpiod.current!.chips[chipIndex(chip)].lines[Int(offset)]))
        }
        table.gpiod_line_info_free = { info in FakeLibgpiod.current?.free(info) }
        table.gpiod_line_info_get_name = { info in
            let name = FakeLibgpiod.current!.object(info, as: LineInfo.self)!.name
            return name.isEmpty ? nil : cString(name)
        }
        table.gpiod_chip_get_line_offset_from_name = { chip, name in
            let lines = FakeLibgpiod.current!.chips[chipIndex(chip)].lines
            guard let offset = lines.firstIndex(of: String(cString: name!)) else {
                errno = ENOENT
                return -1
            }
            return Int32(offset)
        }
        table.gpiod_line_settings_new = { FakeLibgpiod.current!.store(Settings()) }
        table.gpiod_line_settings_free = { settings in FakeLibgpiod.current?.free(settings) }
        table.gpiod_line_settings_set_direction = { settings, value in
            FakeLibgpiod.update(settings) { $0.direction = value }
            return 0
        }
        table.gpiod_line_settings_set_edge_detection = { settings, value in
            FakeLibgpiod.update(settings) { $0.edge = value }
            return 0
        }
        table.gpiod_line_settings_set_bias = { settings, value in
            FakeLibgpiod.update(settings) { $0.bias = value }
            return 0
        }
        table.gpiod_line_settings_set_active_low = { settings, value in FakeLibgpiod.update(settings) { $0.activeLow = value } }
        table.gpiod_line_settings_set_debounce_period_us = { settings, value in
            FakeLibgpiod.update(settings) { $0.debounce = value }
        }
        table.gpiod_line_settings_set_event_clock = { settings, value in
            FakeLibgpiod.update(settings) { $0.clock = value }
            return 0
        }
        table.gpiod_line_settings_set_output_value = { settings, value in
            FakeLibgpiod.update(settings) { $0.outputValue = value }
            return 0
        }
        table.gpiod_line_config_new = { FakeLibgpiod.current!.store(LineConfig()) }
        table.gpiod_line_config_free = { config in FakeLibgpiod.current?.free(config) }
        table.gpiod_line_config_add_line_settings = { config, offsets, count, settings in
            guard let fake = FakeLibgpiod.current, var lines = fake.object(config, as: LineConfig.self),
                  let value = fake.object(settings, as: Settings.self)
            else { errno = EINVAL; return -1 }
            for index in 0..<count { lines.lines.append((offsets![index], value)) }  // copied, as the library does
            fake.replace(config, with: lines)
            return 0
        }
        table.gpiod_request_config_new = { FakeLibgpiod.current!.store(RequestConfig()) }
        table.gpiod_request_config_free = { config in FakeLibgpiod.current?.free(config) }
        table.gpiod_request_config_set_consumer = { config, consumer in
            FakeLibgpiod.current!.replace(config, with: RequestConfig(consumer: String(cString: consumer!)))
        }
        table.gpiod_chip_request_lines = { chip, requestConfig, lineConfig in
            FakeLibgpiod.requestLines(chip, requestConfig, lineConfig)
        }
        table.gpiod_line_request_release = { pointer in
            FakeLibgpiod.current?.object(pointer, as: Request.self)?.released = true
        }
        table.gpiod_line_request_get_value = { pointer, offset in
            guard let request = FakeLibgpiod.request(pointer, offset) else { return -1 }
            return FakeLibgpiod.current!.logical(request) ? 1 : 0
        }
        table.gpiod_line_request_set_value = { pointer, offset, value in
            guard let request = FakeLibgpiod.request(pointer, offset), request.held.output else { errno = EPERM; return -1 }
            FakeLibgpiod.current!.setLogical(request, value == Int32(LATCHKEY_GPIOD2_VALUE_ACTIVE))
            return 0
        }
        table.gpiod_line_request_get_fd = { pointer in
            guard let request = FakeLibgpiod.current?.object(pointer, as: Request.self) else { errno = EINVAL; return -1 }
            return request.readEnd
        }
        table.gpiod_line_request_read_edge_events = { pointer, buffer, limit in
            guard let fake = FakeLibgpiod.current, let request = fake.object(pointer, as: Request.self),
                  var events = fake.object(buffer, as: Buffer.self)
            else { errno = EINVAL; return -1 }
            guard let popped = fake.popEvents(fd: request.readEnd, limit: min(limit, events.capacity)) else { return -1 }
            events.events.forEach { fake.free($0) }
            events.events = popped.map { fake.store($0) }
            fake.replace(buffer, with: events)
            return Int32(popped.count)
        }
        table.gpiod_edge_event_buffer_new = { capacity in FakeLibgpiod.current!.store(Buffer(capacity: capacity)) }
        table.gpiod_edge_event_buffer_free = { buffer in FakeLibgpiod.current?.free(buffer) }
        table.gpiod_edge_event_buffer_get_event = { buffer, index in
            guard let events = FakeLibgpiod.current?.object(buffer, as: Buffer.self)?.events,
                  Int(index) < events.count
            else { return nil }
            return events[Int(index)]
        }
        table.gpiod_edge_event_get_event_type = { event in
            UInt32(FakeLibgpiod.current!.object(event, as: Event.self)!.rising ? LATCHKEY_GPIOD2_EVENT_RISING_EDGE
                                                                               : LATCHKEY_GPIOD2_EVENT_FALLING_EDGE)
        }
        table.gpiod_edge_event_get_timestamp_ns = { event in FakeLibgpiod.current!.object(event, as: Event.self)!.nanoseconds }
        table.gpiod_api_version = { cString("2.1.3") }
        return table
    }
}
