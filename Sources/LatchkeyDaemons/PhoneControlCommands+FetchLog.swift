import LatchkeyAgents
import LatchkeyPhoneAgent

/// `phone-ctl fetch-log [FROM [LIMIT]]`: the phone's log fetch on the link it holds, timed on
/// its loop clock, answered in one line: `ok fetch-log events=N first=S last=S
/// consecutive=yes|no octets=O notifications=K first_chunk_ms=F elapsed_ms=T` (`octets`: the
/// notifications' values; `consecutive`: sequences FROM, FROM+1, ... none missing), or
/// `error ...` with no link or session. HIL scenario 61 prints these beside the kernel's raw
/// notification rate (docs/PERFORMANCE.md, "Log transfer").
extension PhoneControlCommands {
    static let fetchLogUsage = "error usage: fetch-log [FROM(1...) [LIMIT(1...65535)]]"

    static func fetchLog(_ words: [String], agent: PhoneAgent, reply: @escaping (String) -> Void) {
        guard words.count <= 3 else { reply(fetchLogUsage); return }
        let from = words.count > 1 ? UInt32(words[1]) : 1
        let limit = words.count > 2 ? UInt16(words[2]) : 100
        guard let from, from >= 1, let limit, limit >= 1 else { reply(fetchLogUsage); return }
        agent.fetchLog(from: from, limit: limit) { [weak agent] result in
            switch result {
            case .failure(let e):
                reply("error \(e)")
            case .success(let events):
                let sequences = events.map(\.sequence)
                let consecutive = sequences.enumerated().allSatisfy { UInt32($0.offset) &+ from == $0.element }
                let figures = agent?.lastLogTransfer
                reply("ok fetch-log events=\(events.count) first=\(sequences.first.map { "\($0)" } ?? "-") "
                      + "last=\(sequences.last.map { "\($0)" } ?? "-") consecutive=\(consecutive ? "yes" : "no") "
                      + "octets=\(figures?.octets ?? 0) notifications=\(figures?.notifications ?? 0) "
                      + "first_chunk_ms=\(figures.map { formatFixed($0.firstChunk.milliseconds, decimals: 1) } ?? "?") "
                      + "elapsed_ms=\(figures.map { formatFixed($0.elapsed.milliseconds, decimals: 1) } ?? "?")")
            }
        }
    }
}
