import LatchkeyConfig
import LatchkeyControl
import LatchkeyDaemons
import LatchkeySettings

/// Which state directory `status`, `log` and `keys` read: `--state-dir` when given, else the
/// `state_directory` of the lock's configuration — `-c/--config`, or /etc/latchkey/lock.yaml
/// when it exists — read exactly as `latchkey lock` reads it, else the default.
public enum InspectedStateDirectory {
    public static let defaultConfig = "/etc/latchkey/lock.yaml"
    public static let defaultDirectory = "/var/lib/latchkey/lock"

    /// `exists`: whether a file is there (the default configuration is optional; a named one
    /// is not). A configuration that cannot be used is a configuration error (exit 78).
    public static func resolve(stateDir: String?, config: String?,
                               exists: (String) -> Bool = { (try? readTextFile($0)) != nil }) throws(RuntimeError) -> String {
        if let stateDir { return stateDir }
        let path: String
        if let config { path = config } else if exists(defaultConfig) { path = defaultConfig } else { return defaultDirectory }
        let file = try AgentProcesses.loadConfig(path)
        do { return try LockSettings.load(file).stateDirectory } catch { throw RuntimeError.configuration("\(error)") }
    }
}
