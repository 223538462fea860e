import LatchkeyAgents
import LatchkeyDaemons

/// The demo's result: each step with pass/fail, its latency and what was seen, plus the
/// measured figures. `--json` prints it as one object; otherwise it prints as it goes.
public struct DemoReport {
    public struct Step {
        public var name: String
        public var passed: Bool
        public var latencyMs: Double?
        public var detail: String
    }
    public private(set) var steps: [Step] = []
    public private(set) var figures: [(String, Double)] = []
    public var passed: Bool { !steps.isEmpty && steps.allSatisfy(\.passed) }

    let live: Bool
    init(live: Bool) { self.live = live }

    mutating func record(_ name: String, _ passed: Bool, latencyMs: Double? = nil, _ detail: String = "") {
        steps.append(Step(name: name, passed: passed, latencyMs: latencyMs, detail: detail))
        if live {
            let mark = passed ? "PASS" : "FAIL"
            let ms = latencyMs.map { "  [\(format1($0)) ms]" } ?? ""
            print("\(mark)  \(name)\(ms)\(detail.isEmpty ? "" : " — " + detail)")
        }
    }

    mutating func figure(_ name: String, _ value: Double) {
        figures.append((name, value))
    }

    public var json: String {
        let stepsJSON = steps.map { s in
            var parts = ["\"name\":\(jsonString(s.name))", "\"passed\":\(s.passed)"]
            parts.append("\"latency_ms\":" + (s.latencyMs.map { format3($0) } ?? "null"))
            parts.append("\"detail\":\(jsonString(s.detail))")
            return "{" + parts.joined(separator: ",") + "}"
        }
        let figs = figures.map { "\(jsonString($0.0)):\(format3($0.1))" }
        return "{\"passed\":\(passed),\"steps\":[" + stepsJSON.joined(separator: ",") + "],\"figures\":{"
            + figs.joined(separator: ",") + "}}"
    }
}

package func format1(_ x: Double) -> String {
    let t = Int64((x * 10).rounded())
    return "\(t / 10).\(abs(t % 10))"
}

/// The p-th percentile (0...100) by nearest rank.
package func percentile(_ values: [Double], _ p: Double) -> Double? {
    guard !values.isEmpty else { return nil }
    let sorted = values.sorted()
    let rank = Int((p / 100 * Double(sorted.count)).rounded(.up))
    return sorted[max(0, min(sorted.count - 1, rank - 1))]
}
