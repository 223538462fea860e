#if canImport(Glibc)
import Glibc
#endif
import LatchkeyConfig
import LatchkeyControl
import LatchkeyPosix
import LatchkeyTransport

/// One board definition (`board/<name>.yaml`): the lock's wiring on that board as a `gpio:`
/// section (chip by label, lines by name), the lines the board's header chip offers, the
/// jam timeout, and the hardware safe state in words. A lock configuration's own `gpio:`
/// fields override the board's (see `LockSettings.load`).
public struct BoardDefinition: Sendable {
    public var name: String
    public var description: String
    /// Every line name the board's header chip offers (the device tree's gpio-line-names):
    /// a wiring line outside this list is an error that lists them.
    public var lines: [String]
    /// The status LED's line, driven by the agent (StatusLight) unless the lock file wires
    /// its own (`gpio.status_led_line`); `latchkey doctor` checks it exists.
    public var statusLEDLine: String?
    public var jamTimeout: Duration?
    /// What each output does with the process dead or the Pi off, and the resistor that makes it so.
    public var safeState: String

    /// The definition and its `gpio:` section (which goes under the lock configuration's).
    public static func parse(_ file: ConfigFile, name: String) throws(ConfigError) -> (BoardDefinition, gpio: ConfigTable) {
        let root = file.root
        let declared = try root.required("board")
        guard declared == name else {
            throw ConfigError(file: file.path, line: nil, field: "board", message: "says '\(declared)' but the file is \(name).yaml")
        }
        let description = try root.string("description", default: name)
        let lines = try root.required("lines").split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init)
        let led = try root.string("status_led_line")
        let jam = try root.seconds("jam_timeout_seconds", in: 0.1...60)
        let safe = try root.required("safe_state")
        guard let gpio = try root.table("gpio") else {
            throw ConfigError(file: file.path, line: nil, field: "gpio", message: "is required (the board's wiring)")
        }
        try root.finish()
        if let led, !lines.isEmpty, !lines.contains(led) {
            throw ConfigError(file: file.path, line: nil, field: "status_led_line",
                              message: "'\(led)' is not a line of this board; its lines: \(lines.joined(separator: " "))")
        }
        return (BoardDefinition(name: name, description: description, lines: lines, statusLEDLine: led,
                                jamTimeout: jam, safeState: safe), gpio)
    }
}

/// Where board definitions are looked up: `$LATCHKEY_BOARD_PATH` (colon-separated) when
/// set, else the checkout's `board/` when the binary runs from a `.build` directory, then
/// `/usr/share/latchkey/board` (where an install copies them).
public struct BoardCatalog: Sendable {
    public static let installedDirectory = "/usr/share/latchkey/board"
    public var directories: [String]

    public init(directories: [String]) { self.directories = directories }

    /// The catalog for this process (see the type's comment).
    public static func standard(environment: [String: String] = ProcessEnvironment.current,
                                executable: String = ProcessEnvironment.executablePath) -> BoardCatalog {
        if let path = environment["LATCHKEY_BOARD_PATH"], !path.isEmpty {
            return BoardCatalog(directories: path.split(separator: ":").map(String.init))
        }
        var dirs: [String] = []
        if let checkout = checkoutRoot(of: executable) { dirs.append(checkout + "/board") }
        dirs.append(installedDirectory)
        return BoardCatalog(directories: dirs)
    }

    /// `/src/latchkey/.build/x86_64-unknown-linux-gnu/debug/latchkey` → `/src/latchkey`.
    package static func checkoutRoot(of executable: String) -> String? {
        let parts = executable.split(separator: "/", omittingEmptySubsequences: false)
        guard let build = parts.lastIndex(of: ".build"), build > 0 else { return nil }
        return parts[..<build].joined(separator: "/")
    }

    /// Every board name found, sorted, without duplicates.
    public func names() -> [String] {
        var found: Set<String> = []
        for dir in directories {
            for file in directoryEntries(dir) where file.hasSuffix(".yaml") { found.insert(String(file.dropLast(5))) }
        }
        return found.sorted()
    }

    /// The first `<name>.yaml` along the directories, or the one board whose name starts
    /// with `name` (`pi4` is `pi4b`, as people say it); an unknown or ambiguous name lists
    /// the known ones.
    public func load(_ name: String, read: (String) throws -> String = readTextFile) throws(ConfigError)
        -> (BoardDefinition, gpio: ConfigTable)
    {
        guard !name.isEmpty, !name.contains("/"), !name.hasPrefix(".") else {
            throw ConfigError(file: "board", line: nil, field: nil, message: "'\(name)' is not a board name")
        }
        for dir in directories {
            let path = dir + "/" + name + ".yaml"
            guard access(path, R_OK) == 0 else { continue }
            return try BoardDefinition.parse(try ConfigFile.load(path, read: read), name: name)
        }
        let known = names()
        let starting = known.filter { $0.hasPrefix(name) }
        if starting.count == 1 { return try load(starting[0], read: read) }
        throw ConfigError(file: "board", line: nil, field: nil,
                          message: (starting.isEmpty ? "unknown" : "ambiguous") + " board '\(name)'; known boards: "
                              + (known.isEmpty ? "none" : known.joined(separator: ", "))
                              + " (looked in \(directories.joined(separator: ", ")))")
    }
}

/// The process's environment and executable path, read once (no Foundation).
public enum ProcessEnvironment {
    public static var current: [String: String] {
        var env: [String: String] = [:]
        var p = environ
        while let entry = p.pointee {
            let text = String(cString: entry)
            if let eq = text.firstIndex(of: "=") { env[String(text[..<eq])] = String(text[text.index(after: eq)...]) }
            p += 1
        }
        return env
    }

    public static var executablePath: String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return "" }
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
