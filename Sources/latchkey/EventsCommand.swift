import ArgumentParser
import LatchkeyDaemons
import LatchkeyEvents

extension Latchkey {
    struct Events: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "events",
            abstract: "List the events the agents print (JSON lines, journald's LATCHKEY_EVENT): name, meaning, fields.",
            discussion: """
                docs/EVENTS.md is `latchkey events --markdown` and docs/events.txt is `latchkey events --names`
                (scripts/update-events writes both; CI fails when they differ).
                Examples:
                  latchkey events
                  latchkey events --names | grep '^lock\\.'
                """)

        @Flag(help: "Print docs/EVENTS.md: a Markdown table per agent.")
        var markdown = false
        @Flag(help: "Print the names alone, one a line, sorted (docs/events.txt).")
        var names = false

        func validate() throws {
            if markdown && names { throw ValidationError("--markdown and --names: choose one") }
        }

        func run() throws {
            if markdown {
                printLine(String(EventKind.markdown.dropLast()))  // printLine ends the line
            } else if names {
                printLine(String(EventKind.nameList.dropLast()))
            } else {
                for kind in EventKind.all {
                    let fields = kind.fields.map { $0.key + ($0.isOptional ? "?" : "") }.joined(separator: " ")
                    printLine("\(kind.name)\(fields.isEmpty ? "" : "  " + fields)\n    \(kind.meaning)")
                }
            }
        }
    }
}
