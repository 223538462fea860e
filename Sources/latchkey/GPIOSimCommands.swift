import ArgumentParser
import LatchkeyControl
import LatchkeyDaemons
import LatchkeySettings

extension Latchkey {
    /// The outside world of a lock on a simulated chip (`gpio.simulated_chip_root`), for
    /// running the agents by hand: what the lock drives, and a door or button to push.
    struct GPIOSim: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "gpio-sim",
            abstract: "Show or drive the lock's simulated GPIO chip (configurations with gpio.simulated_chip_root).",
            discussion: """
                Example: latchkey gpio-sim set door open --config examples/lock-sim.yaml
                """,
            subcommands: [Show.self, SetInput.self], defaultSubcommand: Show.self)

        struct ConfigOptions: ParsableArguments {
            @Option(name: .shortAndLong, help: "The lock's configuration file (YAML).")
            var config: String = "/etc/latchkey/lock.yaml"
            @Option(help: "A board definition overriding the file's `board:` (as `latchkey lock --board`).")
            var board: String?

            func tool() throws -> SimulatedChipTool {
                let file = try AgentProcesses.loadConfig(config)
                do { return try SimulatedChipTool(try LockSettings.load(file, board: board)) } catch let e as RuntimeError {
                    throw e
                } catch { throw RuntimeError("\(error)") }
            }
        }

        struct Show: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "show",
                abstract: "Print each line: the level the lock drives, the level pulled from outside, who holds it.",
                discussion: "Example: latchkey gpio-sim show --config examples/lock-sim.yaml")
            @OptionGroup var options: ConfigOptions

            func run() throws {
                let tool = try options.tool()
                print("chip \(tool.settings.wiring.chipLabel) at \(tool.directory)")
                for line in try tool.report() { print("  \(line)") }
            }
        }

        struct SetInput: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "set",
                abstract: "Drive an input: `door open|closed`, `button pressed|released`, `bolt_locked on|off`, `bolt_unlocked on|off`.",
                discussion: "Example: latchkey gpio-sim set button pressed --config examples/lock-sim.yaml")
            @Argument(help: "door, button, bolt_locked, bolt_unlocked (or the line's name).")
            var input: String
            @Argument(help: "open/pressed/on/active, or closed/released/off/inactive.")
            var state: String
            @OptionGroup var options: ConfigOptions

            var active: Bool? {
                switch state {
                case "open", "pressed", "on", "active": true
                case "closed", "released", "off", "inactive": false
                default: nil
                }
            }

            func validate() throws {
                guard active != nil else {
                    throw ValidationError("state must be open/pressed/on/active or closed/released/off/inactive, not '\(state)'")
                }
            }

            func run() throws {
                try options.tool().set(input, active: active ?? false)
                print("\(input): \(state)")
            }
        }
    }
}
