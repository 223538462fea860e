import ArgumentParser
import LatchkeyBridge
import LatchkeyControl
import LatchkeyDaemons

extension Latchkey {
    struct MQTT: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "mqtt",
            abstract: "Run the MQTT bridge: the agents' control sockets to a broker (Home Assistant discovery, events, commands).")

        @Option(name: .shortAndLong, help: "The bridge's configuration file (YAML).")
        var config: String = "/etc/latchkey/mqtt.yaml"
        @Flag(help: "Check the configuration file and exit (78 when it is wrong).")
        var check = false
        @OptionGroup var logging: LoggingOptions

        func run() throws {
            try exitingWithStatus { () throws(RuntimeError) in
                let settings = try BridgeDaemon.settings(config)
                if check {
                    printLine("ok \(config): broker \(settings.endpoint.host):\(settings.endpoint.port), "
                              + "\(settings.locks.count) lock(s), \(settings.phones.count) phone(s)")
                    return
                }
                try BridgeDaemon.run(settings, logger: logging.makeLogger("latchkey.mqtt"))
            }
        }
    }
}
