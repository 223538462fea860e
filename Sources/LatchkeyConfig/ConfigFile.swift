/// A YAML configuration file whose every value remembers its line, so that a bad value is
/// reported as "file:line: field 'lock.auto_relock_seconds': ...". Unknown fields are
/// errors too: a misspelt setting on a door lock must not be silently ignored.
public struct ConfigFile {
    public let path: String
    public let root: ConfigTable

    /// Parses `text` as the contents of `path`. An empty document is an empty table.
    public init(path: String, text: String) throws(ConfigError) {
        self.path = path
        let node: YAMLNode?
        do { node = try YAMLComposer.compose(text) } catch {
            throw ConfigError(file: path, line: error.line, field: nil, message: "YAML syntax: \(error.message)")
        }
        guard let node else {
            root = ConfigTable(file: path, prefix: "", mapping: [], line: 1)
            return
        }
        guard case .mapping(let m, let line) = node else {
            throw ConfigError(file: path, line: node.line, field: nil, message: "the top level must be a mapping of fields")
        }
        root = ConfigTable(file: path, prefix: "", mapping: m, line: line)
    }

    /// Reads and parses a file; an unreadable file is a located error too.
    public static func load(_ path: String, read: (String) throws -> String) throws(ConfigError) -> ConfigFile {
        let text: String
        do { text = try read(path) } catch {
            throw ConfigError(file: path, line: nil, field: nil, message: "cannot read: \(error)")
        }
        return try ConfigFile(path: path, text: text)
    }
}

/// One mapping in the file. Readers take fields by name and type; `finish()` rejects any
/// field nobody asked for.
public final class ConfigTable {
    public let file: String
    let prefix: String
    let line: Int
    /// Each field remembers its file: an overlay (`overlaying(_:)`) mixes two files.
    private var entries: [(key: String, line: Int, value: YAMLNode, file: String)] = []
    private var used: Set<String> = []

    init(file: String, prefix: String, mapping: [(key: YAMLNode, value: YAMLNode)], line: Int) {
        self.file = file
        self.prefix = prefix
        self.line = line
        entries = mapping.map { ($0.key.keyText, $0.key.line, $0.value, file) }
    }

    /// This table's fields over `base`'s: a field given here wins, the others come from
    /// `base` (a board definition under a lock's `gpio:` section). Errors name the file each
    /// field came from; `finish()` rejects a stray field of either.
    public func overlaying(_ base: ConfigTable) -> ConfigTable {
        let merged = ConfigTable(file: file, prefix: prefix, mapping: [], line: line)
        let mine = Set(entries.map(\.key))
        merged.entries = entries + base.entries.filter { !mine.contains($0.key) }
        return merged
    }

    func fieldName(_ key: String) -> String { prefix.isEmpty ? key : prefix + "." + key }

    func error(_ key: String, _ message: String, line: Int? = nil) -> ConfigError {
        let given = entries.first { $0.key == key }
        return ConfigError(file: given?.file ?? file, line: line ?? given?.line ?? self.line, field: fieldName(key),
                           message: message)
    }

    /// A problem with `key` found after reading it (a check across fields), located at the
    /// file and line that gave it (this table's own line when it is absent).
    public func invalid(_ key: String, _ message: String) -> ConfigError { error(key, message) }

    private func entry(_ key: String) throws(ConfigError) -> (line: Int, value: YAMLNode)? {
        let matches = entries.filter { $0.key == key }
        if matches.count > 1 {
            throw ConfigError(file: matches[1].file, line: matches[1].line, field: fieldName(key), message: "given more than once")
        }
        used.insert(key)
        return matches.first.map { ($0.line, $0.value) }
    }

    private func scalar(_ key: String, _ kind: String) throws(ConfigError) -> (line: Int, text: String)? {
        guard let (line, node) = try entry(key) else { return nil }
        guard case .scalar(let text, _) = node else { throw error(key, "expected \(kind), found a \(node.kindName)", line: line) }
        return (line, text)
    }

    // MARK: Typed readers

    public func string(_ key: String) throws(ConfigError) -> String? {
        try scalar(key, "a string")?.text
    }

    public func string(_ key: String, default value: String) throws(ConfigError) -> String {
        try string(key) ?? value
    }

    public func required(_ key: String) throws(ConfigError) -> String {
        guard let v = try string(key) else {
            throw ConfigError(file: file, line: line, field: fieldName(key), message: "is required")
        }
        return v
    }

    public func integer(_ key: String, in range: ClosedRange<Int>) throws(ConfigError) -> Int? {
        guard let (line, text) = try scalar(key, "an integer") else { return nil }
        guard let v = Int(text) else { throw error(key, "expected an integer, found '\(text)'", line: line) }
        guard range.contains(v) else {
            throw error(key, "\(v) is out of range \(range.lowerBound)...\(range.upperBound)", line: line)
        }
        return v
    }

    public func bool(_ key: String) throws(ConfigError) -> Bool? {
        guard let (line, text) = try scalar(key, "true or false") else { return nil }
        switch text.lowercased() {
        case "true", "yes", "on": return true
        case "false", "no", "off": return false
        default: throw error(key, "expected true or false, found '\(text)'", line: line)
        }
    }

    /// A duration in seconds (decimals allowed), bounded.
    public func seconds(_ key: String, in range: ClosedRange<Double>) throws(ConfigError) -> Duration? {
        guard let (line, text) = try scalar(key, "a number of seconds") else { return nil }
        guard let v = Double(text), v.isFinite else {
            throw error(key, "expected a number of seconds, found '\(text)'", line: line)
        }
        guard range.contains(v) else {
            throw error(key, "\(text) s is out of range \(range.lowerBound)...\(range.upperBound) s", line: line)
        }
        return .nanoseconds(Int64((v * 1_000_000_000).rounded()))
    }

    /// A duration in milliseconds (decimals allowed), bounded.
    public func milliseconds(_ key: String, in range: ClosedRange<Double>) throws(ConfigError) -> Duration? {
        guard let (line, text) = try scalar(key, "a number of milliseconds") else { return nil }
        guard let v = Double(text), v.isFinite else {
            throw error(key, "expected a number of milliseconds, found '\(text)'", line: line)
        }
        guard range.contains(v) else {
            throw error(key, "\(text) ms is out of range \(range.lowerBound)...\(range.upperBound) ms", line: line)
        }
        return .nanoseconds(Int64((v * 1_000_000).rounded()))
    }

    /// One of a fixed set of words.
    public func choice(_ key: String, _ allowed: [String]) throws(ConfigError) -> String? {
        guard let (line, text) = try scalar(key, "one of \(allowed.joined(separator: ", "))") else { return nil }
        guard allowed.contains(text) else {
            throw error(key, "'\(text)' is not one of: \(allowed.joined(separator: ", "))", line: line)
        }
        return text
    }

    /// A value parsed by `parse`; nil from it is reported with `expected`.
    public func parsed<T>(_ key: String, expected: String, _ parse: (String) -> T?) throws(ConfigError) -> T? {
        guard let (line, text) = try scalar(key, expected) else { return nil }
        guard let v = parse(text) else { throw error(key, "expected \(expected), found '\(text)'", line: line) }
        return v
    }

    /// A nested mapping, or nil when absent.
    public func table(_ key: String) throws(ConfigError) -> ConfigTable? {
        guard let (line, node) = try entry(key) else { return nil }
        guard case .mapping(let m, _) = node else { throw error(key, "expected a mapping of fields, found a \(node.kindName)", line: line) }
        return ConfigTable(file: entries.first { $0.key == key }?.file ?? file, prefix: fieldName(key), mapping: m, line: line)
    }

    /// A list of single values (`[lock, unlock]` or one `- item` a line), or nil when absent.
    public func strings(_ key: String) throws(ConfigError) -> [String]? {
        guard let (line, node) = try entry(key) else { return nil }
        guard case .sequence(let items, _) = node else { throw error(key, "expected a list, found a \(node.kindName)", line: line) }
        var texts: [String] = []
        for item in items {
            guard case .scalar(let text, _) = item else {
                throw error(key, "expected a list of single values, found a \(item.kindName)", line: item.line)
            }
            texts.append(text)
        }
        return texts
    }

    /// A list of mappings (`- name: ...` entries), each a table named `key[i]`, or nil when absent.
    public func tables(_ key: String) throws(ConfigError) -> [ConfigTable]? {
        guard let (line, node) = try entry(key) else { return nil }
        guard case .sequence(let items, _) = node else { throw error(key, "expected a list, found a \(node.kindName)", line: line) }
        let source = entries.first { $0.key == key }?.file ?? file
        return try items.enumerated().map { (i, item) throws(ConfigError) in
            guard case .mapping(let m, let itemLine) = item else {
                throw error(key, "expected a list of mappings, found a \(item.kindName)", line: item.line)
            }
            return ConfigTable(file: source, prefix: "\(fieldName(key))[\(i)]", mapping: m, line: itemLine)
        }
    }

    /// Rejects the first field no reader asked for.
    public func finish() throws(ConfigError) {
        if let stray = entries.first(where: { !used.contains($0.key) }) {
            throw error(stray.key, "unknown field", line: stray.line)
        }
    }
}
