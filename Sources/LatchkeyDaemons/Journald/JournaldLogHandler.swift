import Logging

/// swift-log's handler under systemd: each message one journal entry with the level as
/// its PRIORITY (trace and debug 7, info 6, notice 5, warning 4, error 3, critical 2), the
/// metadata as fields (`LATCHKEY_` + the key in upper case), the logger's label as
/// LATCHKEY_LOGGER, the source location as CODE_FILE/CODE_LINE/CODE_FUNC, and no timestamp
/// of its own (journald keeps one). Outside systemd the agents keep `StreamLogHandler`.
public struct JournaldLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    let label: String
    let journal: JournaldSocket
    let identifier: String

    public init(label: String, journal: JournaldSocket, identifier: String = "latchkey") {
        self.label = label; self.journal = journal; self.identifier = identifier
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public static func priority(_ level: Logger.Level) -> JournaldEntry.Priority {
        switch level {
        case .trace, .debug: .debug
        case .info: .info
        case .notice: .notice
        case .warning: .warning
        case .error: .error
        case .critical: .critical
        }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let own = event.metadata { merged.merge(own) { _, new in new } }
        var fields: [(String, String)] = [("SYSLOG_IDENTIFIER", identifier), ("LATCHKEY_LOGGER", label),
                                          ("CODE_FILE", event.file), ("CODE_LINE", "\(event.line)"),
                                          ("CODE_FUNC", event.function)]
        var text = event.message.description
        for (key, value) in merged.sorted(by: { $0.key < $1.key }) {
            fields.append((JournaldEntry.fieldName(key, prefix: "LATCHKEY_"), "\(value)"))
            text += " \(key)=\(value)"  // journalctl's default output shows MESSAGE only
        }
        if let error = event.error { fields.append(("LATCHKEY_ERROR", "\(error)")) }
        journal.send(JournaldEntry(Self.priority(event.level), text, fields: fields))
    }
}
