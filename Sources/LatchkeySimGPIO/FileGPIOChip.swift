// The only file of LatchkeyLock that touches the file system.
import Glibc
import LatchkeyGPIO
import LatchkeyTransport

/// A simulated GPIO chip kept in files, laid out like Linux gpio-sim, so separate processes
/// share it: the lock agent requests and drives lines, a test or the demo reads the outputs and
/// drives the inputs. Level files are replaced by rename(2), never half-written; each line's
/// edge log is append-only and written before `value`, so a reader keeping its offset misses no
/// pulse (`FileGPIOEdgeReader`). Nothing here watches files: the loop's owner calls
/// `pollInputs()` when a pull may have changed. The files: docs/SIMULATOR.md, "The simulated
/// chip's files".
public final class FileGPIOChip: GPIOChip {
    private let table: SimulatedLineTable
    public let directory: String

    /// Lays out a chip (the configfs step of gpio-sim): every line pulled down, driven low.
    /// An existing chip directory is reset.
    public static func create(at directory: String, label: String, lineNames: [String]) throws(GPIOError) {
        precondition(Set(lineNames).count == lineNames.count, "line names must be unique")
        let files = ChipFiles(directory: directory, label: label)
        try files.makeDirectory(directory)
        try files.store("label", label)
        for (offset, name) in lineNames.enumerated() {
            try files.makeDirectory(directory + "/line\(offset)")
            try files.store(ChipFiles.linePath(offset, "name"), name)
            try files.store(ChipFiles.linePath(offset, "value"), "0")
            try files.store(ChipFiles.linePath(offset, "pull"), ChipFiles.pullText(high: false))
            try files.store(ChipFiles.linePath(offset, "consumer"), "")
            try files.truncate(ChipFiles.linePath(offset, "edges"))
        }
    }

    /// Opens a chip laid out by `create(at:label:lineNames:)`.
    public init(directory: String, loop: any EventLoop) throws(GPIOError) {
        let unlabelled = ChipFiles(directory: directory, label: directory)
        let label = try unlabelled.load("label")
        let files = ChipFiles(directory: directory, label: label)
        let names = try files.lineNames()
        self.directory = directory
        table = SimulatedLineTable(label: label, names: names, loop: loop,
                                   levels: FileLevels(files, names: names, clock: { loop.now }))
    }

    public var label: String { table.label }
    /// Edges are raw: the lock debounces them in software (`DebouncedInput`).
    public var debouncesInputs: Bool { false }

    public func requestOutput(_ line: String, _ config: GPIOLineConfig) throws(GPIOError) -> any GPIOOutput {
        let output = try table.requestOutput(line, config)
        try ChipFiles(directory: directory, label: label)
            .store(ChipFiles.linePath(try table.offset(of: line), "consumer"), config.consumer)
        return output
    }

    public func requestInput(_ line: String, _ config: GPIOLineConfig) throws(GPIOError) -> any GPIOInput {
        let input = try table.requestInput(line, config)
        try ChipFiles(directory: directory, label: label)
            .store(ChipFiles.linePath(try table.offset(of: line), "consumer"), config.consumer)
        return input
    }

    /// Re-reads the pull file of every requested input and queues an edge (on the loop)
    /// for each input whose value changed. Reads all lines, then throws the first failure.
    public func pollInputs() throws(GPIOError) {
        try table.refreshInputs()
    }

    /// The directories an inotify watch should cover to know when to call `pollInputs()`.
    public var lineDirectories: [String] {
        table.names.indices.map { directory + "/line\($0)" }
    }
}

/// Finds file-backed chips by label among the subdirectories of `root`.
public struct FileGPIOChipFinder: GPIOChipFinder {
    public var root: String
    public let loop: any EventLoop

    public init(root: String, loop: any EventLoop) {
        self.root = root
        self.loop = loop
    }

    public func chip(labelled label: String) throws(GPIOError) -> any GPIOChip {
        for entry in try ChipFiles.list(root, chip: label) {
            let directory = root + "/" + entry
            let candidate = ChipFiles(directory: directory, label: label)
            // A directory without a readable label is not this chip; the search goes on and fails with the list if none is.
            if (try? candidate.load("label")) == label {
                return try FileGPIOChip(directory: directory, loop: loop)
            }
        }
        throw GPIOError(.chipNotFound, chip: label, detail: "no chip labelled so under \(root)")
    }
}

/// The simulated side of a file-backed chip, for a test or the demo in another process:
/// reads what the lock drives and pulls its inputs.
public struct FileGPIOSimulator {
    private let files: ChipFiles
    private let names: [String]

    public init(directory: String) throws(GPIOError) {
        let label = try ChipFiles(directory: directory, label: directory).load("label")
        files = ChipFiles(directory: directory, label: label)
        names = try files.lineNames()
    }

    /// The physical level last driven on `line`.
    public func isHigh(_ line: String) throws(GPIOError) -> Bool {
        let text = try files.load(ChipFiles.linePath(try offset(line), "value"))
        switch text {
        case "1": return true
        case "0": return false
        default: throw GPIOError(.invalidValue, chip: files.label, line: line, detail: "value '\(text)'")
        }
    }

    /// The chip's lines in offset order.
    public var lineNames: [String] { names }

    /// The physical level applied to `line` from outside (its `pull` file).
    public func isPulledHigh(_ line: String) throws(GPIOError) -> Bool {
        try FileLevels(files, names: names, clock: { .zero }).pulled(offset: try offset(line))
    }

    /// The bytes of `line`'s edge log from byte `offset` on (`FileGPIOEdgeReader` parses them).
    func edgeLogBytes(_ line: String, from offset: Int) throws(GPIOError) -> [UInt8] {
        try files.read(ChipFiles.linePath(try self.offset(line), "edges"), from: offset)
    }

    /// The chip's label, for errors about its files.
    var label: String { files.label }

    /// Applies a physical level to `line`. The lock process sees it at its next `pollInputs()`.
    public func pull(_ line: String, high: Bool) throws(GPIOError) {
        try files.store(ChipFiles.linePath(try offset(line), "pull"), ChipFiles.pullText(high: high))
    }

    /// Who holds `line` (empty when nobody has requested it).
    public func consumer(of line: String) throws(GPIOError) -> String {
        try files.load(ChipFiles.linePath(try offset(line), "consumer"))
    }

    private func offset(_ line: String) throws(GPIOError) -> Int {
        guard let offset = names.firstIndex(of: line) else {
            throw GPIOError(.lineNotFound, chip: files.label, line: line)
        }
        return offset
    }
}

private final class FileLevels: SimulatedLevels {
    let files: ChipFiles
    let names: [String]
    let clock: () -> Instant

    init(_ files: ChipFiles, names: [String], clock: @escaping () -> Instant) {
        self.files = files
        self.names = names
        self.clock = clock
    }

    /// The edge log first: a driver killed between the two leaves a level logged that the
    /// value file may not show yet (an observer errs towards seeing a rise), never the reverse.
    func drive(offset: Int, high: Bool) throws(GPIOError) {
        try files.append(ChipFiles.linePath(offset, "edges"), "\(high ? 1 : 0) \(clock().nanoseconds)")
        try files.store(ChipFiles.linePath(offset, "value"), high ? "1" : "0")
    }

    func pulled(offset: Int) throws(GPIOError) -> Bool {
        let text = try files.load(ChipFiles.linePath(offset, "pull"))
        switch text {
        case ChipFiles.pullText(high: true): return true
        case ChipFiles.pullText(high: false): return false
        default:
            throw GPIOError(.invalidValue, chip: files.label, line: names[offset], detail: "pull '\(text)'")
        }
    }
}

/// The file operations, each failure reported as a GPIOError naming the chip.
struct ChipFiles {
    let directory: String
    let label: String

    static func linePath(_ offset: Int, _ file: String) -> String { "line\(offset)/\(file)" }
    static func pullText(high: Bool) -> String { high ? "pull-up" : "pull-down" }

    func path(_ offset: Int, _ file: String) -> String { directory + "/" + Self.linePath(offset, file) }

    /// Line names in offset order: line0, line1, ... up to the first missing directory.
    func lineNames() throws(GPIOError) -> [String] {
        var names: [String] = []
        while exists(path(names.count, "name")) {
            names.append(try load(Self.linePath(names.count, "name")))
        }
        return names
    }

    func makeDirectory(_ path: String) throws(GPIOError) {
        if mkdir(path, 0o755) != 0 && errno != EEXIST {
            throw failure("mkdir \(path)")
        }
    }

    /// Writes `text` plus a newline through a temporary file and rename(2).
    func store(_ relative: String, _ text: String) throws(GPIOError) {
        let target = directory + "/" + relative
        // Same directory as the target, so rename(2) replaces it atomically.
        let temporary = "\(target).\(getpid()).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw failure("open \(temporary)") }
        let bytes = Array((text + "\n").utf8)
        let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        let writeErrno = errno
        close(fd)
        guard written == bytes.count else {
            unlink(temporary)
            throw GPIOError(.ioFailed, chip: label, errno: writeErrno, detail: "write \(temporary)")
        }
        guard rename(temporary, target) == 0 else {
            let renameError = failure("rename \(temporary) to \(target)")
            unlink(temporary)
            throw renameError
        }
    }

    /// Appends `text` plus a newline in one write(2) to a file opened with O_APPEND: entries
    /// never interleave, and a process killed after the call returned has still logged it.
    func append(_ relative: String, _ text: String) throws(GPIOError) {
        let path = directory + "/" + relative
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw failure("open \(path)") }
        defer { close(fd) }
        let bytes = Array((text + "\n").utf8)
        while true {
            let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if written == bytes.count { return }
            if written < 0 && errno == EINTR { continue }
            // A short append would leave half an entry: the reader would stop at it.
            throw written < 0 ? failure("write \(path)")
                : GPIOError(.ioFailed, chip: label, detail: "short write to \(path): \(written) of \(bytes.count) bytes")
        }
    }

    /// Creates `relative` empty, or empties it.
    func truncate(_ relative: String) throws(GPIOError) {
        let path = directory + "/" + relative
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw failure("open \(path)") }
        close(fd)
    }

    /// The bytes of `relative` from byte `offset` to its current end; none when the file does
    /// not exist (a chip laid out before edge logs).
    func read(_ relative: String, from offset: Int) throws(GPIOError) -> [UInt8] {
        let path = directory + "/" + relative
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return [] }
            throw failure("open \(path)")
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(offset + bytes.count)) }
            if count < 0 {
                if errno == EINTR { continue }
                throw failure("read \(path)")
            }
            if count == 0 { return bytes }
            bytes += buffer[..<count]
        }
    }

    /// Reads a small text file, without its trailing whitespace.
    func load(_ relative: String) throws(GPIOError) -> String {
        let path = directory + "/" + relative
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw failure("open \(path)") }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 256)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw failure("read \(path)")
            }
            if count == 0 { break }
            bytes += buffer[..<count]
        }
        var text = String(decoding: bytes, as: UTF8.self)
        while let last = text.last, last.isWhitespace { text.removeLast() }
        return text
    }

    func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// Names in `root`, without "." and "..", sorted so the search order is stable.
    static func list(_ root: String, chip: String) throws(GPIOError) -> [String] {
        guard let handle = opendir(root) else {
            throw GPIOError(.chipNotFound, chip: chip, errno: errno, detail: "opendir \(root)")
        }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    private func failure(_ call: String) -> GPIOError {
        GPIOError(.ioFailed, chip: label, errno: errno, detail: call)
    }
}
