/// Hex dumps for failure messages, in the spacing BlueZ's `util_hexdump` uses.
public func hex<C: Collection<UInt8>>(_ bytes: C) -> String {
    bytes.map { b in
        let h = String(b, radix: 16)
        return h.count == 1 ? "0" + h : h
    }.joined(separator: " ")
}
