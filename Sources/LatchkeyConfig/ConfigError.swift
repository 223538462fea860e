/// A configuration problem, located: which file, which line, which field, what is wrong.
/// The agent prints it and does not start.
public struct ConfigError: Error, Equatable, Sendable, CustomStringConvertible {
    public var file: String
    public var line: Int?
    public var field: String?
    public var message: String

    public init(file: String, line: Int?, field: String?, message: String) {
        self.file = file; self.line = line; self.field = field; self.message = message
    }

    public var description: String {
        var out = file
        if let line { out += ":\(line)" }
        out += ": "
        if let field { out += "field '\(field)': " }
        return out + message
    }
}
