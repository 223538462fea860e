#if canImport(Glibc)
import Glibc
#endif
@testable import LatchkeyControl
@testable import LatchkeyDaemons
@testable import LatchkeyDemo

/// Debian's `mosquitto` broker on 127.0.0.1 at a free port, in a scratch directory, and its
/// `mosquitto_sub` / `mosquitto_pub` clients: real MQTT peers for the bridge's tests. The
/// broker keeps a persistence file, so a subscriber with a persistent session (`-c`) gets
/// what was published while it reconnected after a broker restart.
final class MosquittoBroker {
    static var isInstalled: Bool { access("/usr/sbin/mosquitto", X_OK) == 0 && access("/usr/bin/mosquitto_sub", X_OK) == 0 }

    let directory: String
    let port: Int
    private(set) var pid: pid_t = 0
    let users: [String: String]

    /// With TLS, a second listener: TLS on `tlsPort` with a certificate for 127.0.0.1 from a
    /// CA made for the test (`<directory>/ca.pem`); `port` stays plain for the observers.
    private(set) var tlsPort: Int?

    /// `running: false` picks the port and writes the configuration but starts nothing: a
    /// broker that is down until the test calls `start()`.
    /// `acl`: an `acl_file` for the broker; `anonymous`: admit clients without a user name
    /// beside `users` (the ACL then decides what they may do). `logPackets`: the broker's log
    /// names every packet it receives (`Received PUBLISH from <client> (d0, q1, ...)`), the
    /// record of what a client sent.
    init(directory: String, users: [String: String] = [:], tls: Bool = false, running: Bool = true,
         acl: String? = nil, anonymous: Bool = false, logPackets: Bool = false) throws {
        self.directory = directory
        self.users = users
        port = try Self.freePort()
        var conf = "per_listener_settings false\nlistener \(port) 127.0.0.1\npersistence true\npersistence_location \(directory)/\n"
        if tls {
            try Self.makeCertificates(in: directory)
            let p = try Self.freePort()
            tlsPort = p
            conf += "listener \(p) 127.0.0.1\ncafile \(directory)/ca.pem\ncertfile \(directory)/server.pem\nkeyfile \(directory)/server.key\n"
        }
        // As root the broker would switch to user mosquitto, which cannot write the scratch directory.
        if getuid() == 0 { conf += "user root\n" }
        if logPackets { conf += "log_type all\n" }
        if let acl {
            try writeFile(directory + "/acl", acl)
            conf += "acl_file \(directory)/acl\n"
        }
        if users.isEmpty {
            conf += "allow_anonymous true\n"
        } else {
            conf += "allow_anonymous \(anonymous)\npassword_file \(directory)/passwords\n"
            for (i, (user, password)) in users.sorted(by: { $0.key < $1.key }).enumerated() {
                let status = try run("/usr/bin/mosquitto_passwd", (i == 0 ? ["-c"] : []) + ["-b", directory + "/passwords", user, password])
                guard status == 0 else { throw RuntimeError("mosquitto_passwd failed: \(status)") }
            }
        }
        try writeFile(directory + "/mosquitto.conf", conf)
        if running { try start() }
    }

    func start() throws {
        pid = try spawn("/usr/sbin/mosquitto", ["-c", directory + "/mosquitto.conf"], output: directory + "/broker.log")
    }

    /// SIGTERM (the broker saves its persistence file), then reaped.
    func stop() {
        guard pid > 0 else { return }
        terminate(pid)
        pid = 0
    }

    /// SIGSTOP: the broker holds its connections but reads nothing, so nothing is acknowledged.
    func freeze() {
        if pid > 0 { kill(pid, SIGSTOP) }
    }

    /// SIGKILL, then reaped: the broker dies without reading what its sockets hold (the
    /// kernel resets those connections) and without saving its persistence file.
    func crash() {
        guard pid > 0 else { return }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        pid = 0
    }

    /// The broker log's `Received PUBLISH` lines from `client` on `topic`.
    func publicationsReceived(from client: String, topic: String) -> [String] {
        ((try? readTextFile(directory + "/broker.log")) ?? "").split(separator: "\n").map(String.init)
            .filter { $0.contains("Received PUBLISH from \(client) (") && $0.contains(", '\(topic)',") }
    }

    /// Whether a TCP connect to the port succeeds now.
    var isListening: Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// Publishes one message with `mosquitto_pub` (MQTT 5); returns its exit status.
    func publish(_ topic: String, _ payload: String, retain: Bool = false, user: String? = "watcher", password: String? = "w") throws -> Int32 {
        var args = ["-h", "127.0.0.1", "-p", "\(port)", "-V", "5", "-q", "1", "-t", topic, "-m", payload]
        if retain { args.append("-r") }
        if let user { args += ["-u", user, "-P", password ?? ""] }
        return try run("/usr/bin/mosquitto_pub", args)
    }

    /// A `mosquitto_sub` with a persistent session (MQTT 3.1.1, `-c`): one "topic TAB retain
    /// TAB payload" line per message in `file`, kept across broker restarts.
    func subscribe(_ filters: [String], to file: String, user: String? = nil, password: String? = nil,
                   clientID: String = "test-observer") throws -> pid_t {
        var args = ["-h", "127.0.0.1", "-p", "\(port)", "-V", "311", "-c", "-i", clientID, "-q", "1",
                    "-F", "%t\t%r\t%p"]
        for f in filters { args += ["-t", f] }
        if let user { args += ["-u", user, "-P", password ?? ""] }
        return try spawn("/usr/bin/mosquitto_sub", args, output: file)
    }

    deinit { stop() }

    /// A CA and a server certificate for 127.0.0.1 signed by it, with openssl(1).
    private static func makeCertificates(in d: String) throws {
        let steps: [[String]] = [
            ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=Latchkey Test CA",
             "-keyout", d + "/ca.key", "-out", d + "/ca.pem"],
            ["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", d + "/server.key", "-out", d + "/server.csr"],
            ["x509", "-req", "-in", d + "/server.csr", "-CA", d + "/ca.pem", "-CAkey", d + "/ca.key", "-CAcreateserial",
             "-days", "2", "-extfile", d + "/san.cnf", "-out", d + "/server.pem"],
            ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=Another CA",
             "-keyout", d + "/other-ca.key", "-out", d + "/other-ca.pem"],
        ]
        try writeFile(d + "/san.cnf", "subjectAltName=IP:127.0.0.1\n")
        for args in steps {
            let status = try run("/usr/bin/openssl", args)
            guard status == 0 else { throw RuntimeError("openssl \(args[0]) failed: \(status)") }
        }
    }

    private static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard ok else { throw RuntimeError("no free port: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// Starts `executable` with stdout and stderr into `output`.
func spawn(_ executable: String, _ arguments: [String], output: String) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output, O_WRONLY | O_CREAT | O_APPEND, 0o600)
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO)
    // The test's loop blocks SIGTERM and SIGINT (it takes them from a signalfd): a child
    // inheriting that mask would never stop on SIGTERM. It starts with none blocked.
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var none = sigset_t()
    sigemptyset(&none)
    posix_spawnattr_setsigmask(&attributes, &none)
    var defaults = sigset_t()
    sigemptyset(&defaults)
    sigaddset(&defaults, SIGTERM)
    sigaddset(&defaults, SIGINT)
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    defer { for p in argv { free(p) } }
    var pid: pid_t = 0
    let rc = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
    guard rc == 0 else { throw RuntimeError("cannot start \(executable): error \(rc)") }
    return pid
}

/// Ends a child this test started: SIGTERM, reaped within 5 s, else SIGKILL and reaped. A
/// child found with SIGTERM blocked (mosquitto_sub was, once, in a full run) never ended and
/// the test's teardown waited forever. A teardown, not a test's wait: polling is fine here.
func terminate(_ pid: pid_t) {
    kill(pid, SIGTERM)
    var status: Int32 = 0
    for _ in 0..<100 {
        if waitpid(pid, &status, WNOHANG) == pid { return }
        usleep(50_000)
    }
    kill(pid, SIGKILL)
    waitpid(pid, &status, 0)
}

/// Runs `executable` to its end; its exit status.
func run(_ executable: String, _ arguments: [String]) throws -> Int32 {
    let pid = try spawn(executable, arguments, output: "/dev/null")
    var status: Int32 = 0
    waitpid(pid, &status, 0)
    return (status >> 8) & 0xff
}
