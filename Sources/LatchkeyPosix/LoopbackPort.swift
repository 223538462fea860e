/// TCP on 127.0.0.1, for the local broker `latchkey demo --mqtt` starts.
public enum LoopbackPort {
    /// A port nobody listens on now (the kernel's choice for port 0).
    public static func free() throws(SystemError) -> Int { try Syscalls.freeLoopbackPort() }
}
