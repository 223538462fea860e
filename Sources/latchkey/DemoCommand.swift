import ArgumentParser
import LatchkeyDemo

extension Latchkey {
    struct Demo: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "demo",
            abstract: "Play the whole story on the simulated radio and GPIO: away, return and unlock, auto-relock, "
                + "departure lock, and recovery after SIGKILL of either agent.",
            discussion: """
                Starts three processes — the simulated air, a lock agent and a phone agent — in a scratch \
                directory, drives the phone in and out of range, and checks each step against the GPIO line \
                files and the air's own state. Exits non-zero when any step fails.

                With --mqtt, plays the MQTT bridge's story instead, with Debian's mosquitto (sudo apt-get install \
                mosquitto mosquitto-clients) on 127.0.0.1: Home Assistant discovery, lock and unlock from MQTT to \
                the GPIO line, a stale and a retained command refused, the broker stopped and restarted with \
                every audit event delivered once, in order.

                Examples: latchkey demo --json
                          latchkey demo --mqtt
                """)

        @Flag(help: "Print one JSON object with every step's name, pass/fail and latency, and the figures.")
        var json = false
        @Flag(help: "Also show every line the agents print.")
        var verbose = false
        @Flag(help: "Play the MQTT bridge's story (needs Debian's mosquitto and mosquitto-clients).")
        var mqtt = false
        @Option(help: "Authenticated commands timed in the latency step (command received → actuator line).")
        var probe = 20
        @Option(name: .customLong("connection-interval-ms"),
                help: "The phone's connection interval, 7.5...4000 ms (default: the phone's, 7.5).")
        var connectionInterval: Double?
        @Option(name: .customLong("idle-interval-ms"),
                help: "The phone's idle_connection_interval_ms, 7.5...4000 (default: none); adds a command on the slowed link.")
        var idleInterval: Double?

        func validate() throws {
            guard (1...10_000).contains(probe) else { throw ValidationError("--probe must be 1...10000") }
            if let ms = connectionInterval, !(7.5...4000).contains(ms) {
                throw ValidationError("--connection-interval-ms must be 7.5...4000")
            }
            if let ms = idleInterval, !(7.5...4000).contains(ms) {
                throw ValidationError("--idle-interval-ms must be 7.5...4000")
            }
        }

        func run() throws {
            if !json {
                print(mqtt ? "latchkey demo --mqtt: the lock agent, Debian's mosquitto and the MQTT bridge\n"
                           : "latchkey demo: lock and phone agents on the simulated radio\n")
            }
            let report = mqtt ? MQTTDemo.run(json: json, verbose: verbose)
                              : LatchkeyDemo.Demo.run(json: json, verbose: verbose, probeCount: probe,
                                                                          connectionIntervalMs: connectionInterval,
                                                                          idleIntervalMs: idleInterval)
            if json {
                print(report.json)
            } else {
                print("")
                for (name, value) in report.figures { print("  \(name): \(value)") }
                print(report.passed ? "\nAll \(report.steps.count) steps passed." : "\nSome steps FAILED.")
            }
            if !report.passed { throw ExitCode(1) }
        }
    }
}
