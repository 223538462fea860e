import ArgumentParser
import LatchkeyConfig
import LatchkeyRuntime

@main
struct Latchkey: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "latchkey",
        abstract: "A Bluetooth LE smart lock for Pi-class Linux, and the phone agent that opens it when you come home.",
        subcommands: [Demo.self, Lock.self, Phone.self, Air.self, Status.self, Log.self, Keys.self, PhoneCtl.self,
                      Pair.self, Doctor.self])
}

/// Loads a configuration file; any problem is reported as file:line: field: message
/// (without a usage banner: the command line was right, the file is not).
func loadConfig(_ path: String) throws -> ConfigFile {
    do {
        return try ConfigFile.load(path) { try readTextFile($0) }
    } catch {
        throw RuntimeError("\(error)")
    }
}
