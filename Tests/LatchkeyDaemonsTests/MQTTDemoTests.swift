@testable import LatchkeyDemo
import Testing

/// `latchkey demo --mqtt` without Debian's broker: one failed step that says what to install,
/// and nothing started. (The story itself runs the `latchkey` executable: .ci/run plays it.)
@Suite struct MQTTDemoTests {
    @Test func withoutMosquittoItSaysWhatToInstall() {
        var programs = MQTTDemo.Programs()
        programs.broker = "/nonexistent/mosquitto"
        let report = MQTTDemo.run(json: true, verbose: false, programs: programs)
        #expect(!report.passed)
        #expect(report.steps.map(\.name) == ["Debian's mosquitto broker and clients are installed"])
        #expect(report.steps.first?.detail == "not found: /nonexistent/mosquitto; install them with "
                + "`sudo apt-get install mosquitto mosquitto-clients`, then run `latchkey demo --mqtt` again")
        #expect(report.json.hasPrefix("{\"passed\":false,\"steps\":[{\"name\":\"Debian's mosquitto broker and clients are installed\""))
    }
}
