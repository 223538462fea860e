#if canImport(Glibc)
import Glibc
#endif
import CGPIOD
import LatchkeyGPIO
import LatchkeyPosix

/// A line found by name on an open chip: v1's `struct gpiod_line *`, v2's offset.
enum GPIODLine {
    case v1(OpaquePointer)
    case v2(offset: UInt32)
}

/// What one line request asks of the library.
struct GPIODRequest {
    enum Direction: Equatable {
        /// Driven to its INACTIVE value by the request itself.
        case output
        /// Edge events on both edges; `debounce` is given to the kernel where the API has it.
        case input(debounce: Duration)
    }

    var direction: Direction
    var consumer: String
    var activeLow: Bool
    var bias: GPIOBias
}

/// One edge event read from a request: the logical value after it, and the event's own
/// CLOCK_MONOTONIC timestamp when the API reports one Latchkey uses (v2).
struct GPIODEdgeEvent: Equatable {
    var rising: Bool
    var timestampNanoseconds: Int64?
}

/// One libgpiod API (v1: libgpiod.so.2, v2: libgpiod.so.3) as the calls `LibgpiodChip` makes.
/// Each implementation makes its C calls through `Syscalls` (errno policy and mocking hook).
protocol GPIODBackend: AnyObject, Sendable {
    /// The loaded library and its version, e.g. "libgpiod.so.3 (libgpiod 2.1.3)".
    var description: String { get }
    /// Whether input requests carry the kernel's debounce (v2), so software debounce is not needed.
    var debouncesInKernel: Bool { get }
    func openChip(_ device: String) throws(SystemError) -> OpaquePointer
    func closeChip(_ chip: OpaquePointer)
    func chipLabel(_ chip: OpaquePointer) -> String
    /// Every line's name by offset ("" for an unnamed line); reads line info, requests nothing.
    func lineNames(_ chip: OpaquePointer) -> [String]
    func findLine(_ chip: OpaquePointer, _ name: String) throws(SystemError) -> GPIODLine
    func request(_ chip: OpaquePointer, _ line: GPIODLine, _ request: GPIODRequest) throws(SystemError)
        -> any GPIODLineRequest
}

/// One requested line. Values are logical (active-low is in the request). Released when
/// the object goes away (v2), or with its chip (v1).
protocol GPIODLineRequest: AnyObject {
    func setValue(_ active: Bool) throws(SystemError)
    func value() throws(SystemError) -> Bool
    /// The non-blocking fd that is readable while edge events wait (inputs only).
    func eventDescriptor() throws(SystemError) -> CInt
    /// Up to `limit` waiting edge events, oldest first; `.wouldBlock` when none wait.
    func readEdges(limit: Int) throws(SystemError) -> IOResult<[GPIODEdgeEvent]>
}

/// Which libgpiod the process uses, loaded once: libgpiod.so.3 (2.x) when it is installed,
/// else libgpiod.so.2 (1.6). `LATCHKEY_GPIOD=libgpiod.so.2` (or `.so.3`) forces one: the
/// soname, because "libgpiod 2" and "libgpiod.so.2" are different libraries. Neither present
/// is a clear error, raised when a chip is first opened (a simulated-GPIO lock and the phone
/// never need the library).
enum LibgpiodLoader {
    static let environmentVariable = "LATCHKEY_GPIOD"

    static let shared: Result<any GPIODBackend, GPIOError> = load(override: Syscalls.environment(environmentVariable))

    /// The sonames tried in order: the override's alone, else .so.3 then .so.2.
    static func candidates(override: String?) throws(GPIOError) -> [String] {
        switch override {
        case nil, "": return [Libgpiod2.soname, Libgpiod1.soname]
        case Libgpiod2.soname?, Libgpiod1.soname?: return [override!]
        case let other?:
            throw GPIOError(.libraryMissing, chip: "",
                            detail: "\(environmentVariable)=\(other) is neither \(Libgpiod1.soname) (libgpiod 1.6) nor "
                                + "\(Libgpiod2.soname) (libgpiod 2.x)")
        }
    }

    static func load(override: String?) -> Result<any GPIODBackend, GPIOError> {
        let sonames: [String]
        do { sonames = try candidates(override: override) } catch { return .failure(error) }
        var failures: [String] = []
        for soname in sonames {
            do {
                return .success(try backend(soname))
            } catch {
                failures.append(error.call)
            }
        }
        let packages = sonames.map { $0 == Libgpiod2.soname ? "libgpiod3" : "libgpiod2" }.joined(separator: " or ")
        return .failure(GPIOError(.libraryMissing, chip: "",
                                  detail: "install \(packages) (" + failures.joined(separator: "; ") + ")"))
    }

    private static func backend(_ soname: String) throws(SystemError) -> any GPIODBackend {
        let library = try Syscalls.loadLibrary(soname)
        if soname == Libgpiod2.soname {
            return Libgpiod2(try Syscalls.resolveGPIOD2(library, soname))
        }
        return Libgpiod1(try Syscalls.resolveGPIOD1(library, soname))
    }
}
