import CYAML

/// A YAML node as the configuration reads it: scalars keep their text as written (the typed
/// readers of `ConfigTable` interpret it), every node its 1-based line.
enum YAMLNode {
    case scalar(String, line: Int)
    case mapping([(key: YAMLNode, value: YAMLNode)], line: Int)
    case sequence([YAMLNode], line: Int)

    var line: Int {
        switch self {
        case .scalar(_, let line), .mapping(_, let line), .sequence(_, let line): line
        }
    }

    var kindName: String {
        switch self {
        case .scalar: "single value"
        case .mapping: "mapping"
        case .sequence: "list"
        }
    }

    /// A key's text; a mapping or list used as a key is shown by its kind.
    var keyText: String {
        if case .scalar(let text, _) = self { return text }
        return "(\(kindName))"
    }
}

/// What libyaml or the composer refused, with the 1-based line it points at.
struct YAMLSyntaxError: Error {
    var line: Int?
    var message: String
}

/// Builds the node tree of one YAML document from libyaml's parser events.
/// libyaml (the reference C parser, the one Yams wraps) does the parsing; this file only
/// assembles its events. Taking it directly instead of through Yams keeps full Foundation and
/// ICU out of the agents: Yams imports Foundation (NSRegularExpression, DateFormatter), which
/// alone costs a static binary ~6 MB of resident memory.
///
/// Anchors and aliases are resolved (an alias is a copy of its anchor's node); a second
/// document and a key given twice in one mapping are errors.
enum YAMLComposer {
    static func compose(_ text: String) throws(YAMLSyntaxError) -> YAMLNode? {
        var bytes = Array(text.utf8)
        var parser = yaml_parser_t()
        guard yaml_parser_initialize(&parser) == 1 else { throw YAMLSyntaxError(line: nil, message: "out of memory") }
        defer { yaml_parser_delete(&parser) }
        return try bytes.withUnsafeMutableBufferPointer { (buffer) throws(YAMLSyntaxError) -> YAMLNode? in
            yaml_parser_set_input_string(&parser, buffer.baseAddress, buffer.count)
            var builder = Builder()
            while true {
                var event = yaml_event_t()
                guard yaml_parser_parse(&parser, &event) == 1 else { throw Self.failure(parser) }
                defer { yaml_event_delete(&event) }
                if event.type == YAML_STREAM_END_EVENT { return builder.root }
                try builder.take(event)
            }
        }
    }

    private static func failure(_ parser: yaml_parser_t) -> YAMLSyntaxError {
        var message = parser.problem.map { String(cString: $0) } ?? "unreadable YAML"
        if let context = parser.context { message += " " + String(cString: context) }
        return YAMLSyntaxError(line: Int(parser.problem_mark.line) + 1, message: message)
    }

    /// The containers being filled, innermost last.
    private struct Builder {
        enum Frame {
            case mapping(entries: [(key: YAMLNode, value: YAMLNode)], pendingKey: YAMLNode?, line: Int, anchor: String?)
            case sequence(items: [YAMLNode], line: Int, anchor: String?)
        }

        var stack: [Frame] = []
        var anchors: [String: YAMLNode] = [:]
        var root: YAMLNode?
        var documents = 0

        mutating func take(_ event: yaml_event_t) throws(YAMLSyntaxError) {
            let line = Int(event.start_mark.line) + 1
            switch event.type {
            case YAML_DOCUMENT_START_EVENT:
                documents += 1
                guard documents == 1 else { throw YAMLSyntaxError(line: line, message: "expected one document, found a second") }
            case YAML_SCALAR_EVENT:
                let scalar = event.data.scalar
                let text = String(decoding: UnsafeBufferPointer(start: scalar.value, count: scalar.length), as: UTF8.self)
                try add(.scalar(text, line: line), anchor: Self.name(scalar.anchor))
            case YAML_ALIAS_EVENT:
                let name = Self.name(event.data.alias.anchor) ?? ""
                guard let node = anchors[name] else { throw YAMLSyntaxError(line: line, message: "unknown alias '\(name)'") }
                try add(node, anchor: nil)
            case YAML_MAPPING_START_EVENT:
                stack.append(.mapping(entries: [], pendingKey: nil, line: line,
                                      anchor: Self.name(event.data.mapping_start.anchor)))
            case YAML_SEQUENCE_START_EVENT:
                stack.append(.sequence(items: [], line: line, anchor: Self.name(event.data.sequence_start.anchor)))
            case YAML_MAPPING_END_EVENT, YAML_SEQUENCE_END_EVENT:
                switch stack.removeLast() {
                case .mapping(let entries, _, let line, let anchor): try add(.mapping(entries, line: line), anchor: anchor)
                case .sequence(let items, let line, let anchor): try add(.sequence(items, line: line), anchor: anchor)
                }
            default:
                break  // stream start, document end: nothing to build
            }
        }

        private mutating func add(_ node: YAMLNode, anchor: String?) throws(YAMLSyntaxError) {
            if let anchor { anchors[anchor] = node }
            guard let top = stack.popLast() else {
                root = node
                return
            }
            switch top {
            case .sequence(var items, let line, let anchor):
                items.append(node)
                stack.append(.sequence(items: items, line: line, anchor: anchor))
            case .mapping(var entries, let pendingKey, let line, let anchor):
                if let key = pendingKey {
                    entries.append((key, node))
                    stack.append(.mapping(entries: entries, pendingKey: nil, line: line, anchor: anchor))
                } else {
                    if let first = entries.first(where: { $0.key.keyText == node.keyText }) {
                        throw YAMLSyntaxError(line: node.line, message: "duplicate key '\(node.keyText)' (first on line \(first.key.line))")
                    }
                    stack.append(.mapping(entries: entries, pendingKey: node, line: line, anchor: anchor))
                }
            }
        }

        private static func name(_ anchor: UnsafeMutablePointer<yaml_char_t>?) -> String? {
            anchor.map { String(cString: $0) }
        }
    }
}
