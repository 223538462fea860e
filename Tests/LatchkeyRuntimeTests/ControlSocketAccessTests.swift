#if canImport(Glibc)
import Glibc
#endif
@testable import LatchkeyRuntime
import Testing

/// `control_socket_group: true` opens the control socket to the agent's group (the MQTT
/// bridge's user), and nothing more: the store stays the owner's.
@Suite(.serialized) struct ControlSocketAccessTests {
    func mode(_ path: String) -> mode_t {
        var st = stat()
        return stat(path, &st) == 0 ? st.st_mode & 0o777 : 0
    }

    @Test func ownerOnlyByDefault() throws {
        let rig = try DaemonRig()
        defer { rig.close() }
        try rig.startLock()
        #expect(mode(rig.lockState) == 0o700)  // the socket's own mode follows the umask (the units': 0077)
    }

    @Test func theGroupWhenAsked() throws {
        let rig = try DaemonRig()
        defer { rig.close() }
        try rig.addToLockConfig("control_socket_group: true")
        try rig.startLock()
        #expect(mode(rig.lockState) == 0o710)
        #expect(mode(rig.lock!.controlPath) == 0o660)
        #expect(mode(rig.lockState + "/" + StateStores.lockFile) == 0o600)
    }
}
