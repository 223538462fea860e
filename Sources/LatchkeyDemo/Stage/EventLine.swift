import LatchkeyDaemons
/// One timeline event as an agent printed it (`--event-format json`): a flat JSON object
/// of strings and numbers. The demo only ever reads its own agents' lines, so this parser
/// accepts exactly that shape and rejects anything else.
package struct EventLine: Equatable {
    package var name: String
    package var fields: [String: String]

    package func field(_ key: String) -> String? { fields[key] }

    package init?(parsing line: String) {
        var s = Substring(line)
        func skipSpace() { while let c = s.first, c == " " { s.removeFirst() } }
        func string() -> String? {
            guard s.first == "\"" else { return nil }
            s.removeFirst()
            var out = ""
            while let c = s.first {
                s.removeFirst()
                switch c {
                case "\"": return out
                case "\\":
                    guard let e = s.first else { return nil }
                    s.removeFirst()
                    switch e {
                    case "n": out.append("\n")
                    case "t": out.append("\t")
                    case "r": out.append("\r")
                    case "u":
                        let hex = s.prefix(4)
                        guard hex.count == 4, let v = UInt32(hex, radix: 16), let u = Unicode.Scalar(v) else { return nil }
                        s.removeFirst(4)
                        out.unicodeScalars.append(u)
                    default: out.append(e)
                    }
                default: out.append(c)
                }
            }
            return nil
        }
        func number() -> String? {
            let n = s.prefix { "0123456789+-.eE".contains($0) }
            guard !n.isEmpty else { return nil }
            s.removeFirst(n.count)
            return String(n)
        }
        skipSpace()
        guard s.first == "{" else { return nil }
        s.removeFirst()
        var fields: [String: String] = [:]
        while true {
            skipSpace()
            if s.first == "}" { break }
            guard let key = string() else { return nil }
            skipSpace()
            guard s.first == ":" else { return nil }
            s.removeFirst()
            skipSpace()
            guard let value = s.first == "\"" ? string() : number() else { return nil }
            fields[key] = value
            skipSpace()
            if s.first == "," { s.removeFirst(); continue }
            guard s.first == "}" else { return nil }
            break
        }
        guard let name = fields.removeValue(forKey: "event") else { return nil }
        self.name = name
        self.fields = fields
    }
}
