import ArgumentParser
import LatchkeyPosix
import LatchkeyControl
import LatchkeyDaemons
import LatchkeyInspection
import LatchkeyStore

/// `-c/--config` and `--state-dir` of the commands that read the lock's store.
struct InspectedStateOptions: ParsableArguments {
    @Option(name: .shortAndLong, help: ArgumentHelp(
        "The lock's configuration file: its state_directory is read (default /etc/latchkey/lock.yaml when present)."))
    var config: String?
    @Option(help: "The lock agent's state directory (overrides the configuration's; default /var/lib/latchkey/lock).")
    var stateDir: String?

    /// The store, read-only: a missing or foreign directory is one sentence and exit status 1
    /// (a configuration that cannot be used: 78).
    func open() throws -> LockInspection {
        try exitingWithStatus { () throws(RuntimeError) in
            try LockInspection(directory: InspectedStateDirectory.resolve(stateDir: stateDir, config: config))
        }
    }
}

extension Latchkey {
    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status",
            abstract: "Show the lock's last known state and its most recent events, from its state directory.",
            discussion: """
                Reads the store read-only (the lock agent may keep running); for the running agent's own \
                view, see `latchkey lock-ctl status`.

                Example: latchkey status -c /etc/latchkey/lock.yaml --json
                """)

        @OptionGroup var state: InspectedStateOptions
        @Flag(help: "Print one JSON object: state_directory, lock, door, last_sequence, recent (newest first).")
        var json = false

        func run() throws {
            let report = try state.open().status()
            if json { print(report.json.rendered) } else { report.text.forEach { print($0) } }
        }
    }

    struct Log: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "log",
            abstract: "Print the lock's audit log (Matter-shaped events), newest first, with key names beside ids.",
            discussion: """
                Reads the store read-only; the lock agent may keep running. With --follow, the last \
                --limit events print oldest first, then each new one as the agent writes it (inotify on \
                the state directory, no polling while the log is quiet), until SIGINT or SIGTERM (exit 0). `--format json` prints one JSON \
                object per line (JSON Lines); `csv` a header, then one row per event.

                Examples:
                  latchkey log --since 2h
                  latchkey log -c /etc/latchkey/lock.yaml --since 2026-11-01 --format csv > door.csv
                  latchkey log --follow --json | jq .summary
                """)

        @OptionGroup var state: InspectedStateOptions
        @Option(help: "Most events to print (with --follow: before following).")
        var limit: Int = 100
        @Option(help: ArgumentHelp("Only events from this time on: 30m, 2h, 7d ago; YYYY-MM-DD[ HH:MM[:SS]] local time; @EPOCH_SECONDS.",
                                   valueName: "time"))
        var since: String?
        @Flag(help: "Keep printing events as the lock agent appends them.")
        var follow = false
        @Option(help: "text, csv or json (JSON Lines).")
        var format: String = "text"
        @Flag(help: "Same as --format json.")
        var json = false

        var outputFormat: AuditLogFormat { json ? .json : AuditLogFormat(rawValue: format) ?? .text }

        func validate() throws {
            guard AuditLogFormat(rawValue: format) != nil else { throw ValidationError("--format must be text, csv or json") }
            guard limit >= 0 else { throw ValidationError("--limit must be 0 or more") }
            if let since, sinceNanos(since) == nil {
                throw ValidationError("--since '\(since)' is not a time: use 30m, 2h, 7d, YYYY-MM-DD[ HH:MM[:SS]] or @EPOCH_SECONDS")
            }
        }

        func sinceNanos(_ text: String) -> Int64? { WallTime.parseSince(text, nowNanos: WallClock.system.nanosecondsSinceEpoch()) }

        func run() throws {
            let inspection = try state.open()
            let names = try inspection.keyNames()
            let format = outputFormat
            let entries = try inspection.newest(limit: limit, sinceWallNanos: since.flatMap(sinceNanos))
            if let header = format.header { printLine(header) }
            guard follow else {
                for entry in entries { printLine(format.line(entry, names: names)) }
                return
            }
            for entry in entries.reversed() { printLine(format.line(entry, names: names)) }
            try followLog(inspection, after: entries.first?.sequence, format: format)
        }

        /// Prints new entries until SIGINT or SIGTERM; key names are read again when an entry
        /// names a key not seen before (a phone paired meanwhile).
        func followLog(_ inspection: LockInspection, after printed: UInt64?, format: AuditLogFormat) throws {
            let loop = PosixEventLoop()
            // Before the first entry printed here: a script that stops us once it saw one
            // gets exit 0, not death by the signal.
            let stop = { loop.stop() }
            let term = try loop.onSignal(.terminate, stop)
            let int = try loop.onSignal(.interrupt, stop)
            var names = try inspection.keyNames()
            var failure: RuntimeError?
            let start = try printed ?? inspection.newest(limit: 1).first?.sequence ?? 0
            let follower = try AuditLogFollower(inspection, after: start, loop: loop) { entry in
                if let id = entry.event.keyID?.rawValue, names[id] == nil, let fresh = try? inspection.keyNames() {
                    names = fresh  // try?: a name that cannot be read leaves the id alone
                }
                printLine(format.line(entry, names: names))
            }
            follower.onError = { failure = $0; loop.stop() }
            try follower.catchUp()  // anything appended between the first read and the watch
            try loop.run()
            withExtendedLifetime((term, int, follower)) {}
            if let failure { throw failure }
        }
    }
}
