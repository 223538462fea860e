import Foundation
import LatchkeyAgents
import LatchkeyEvents
import LatchkeyPosix
import Logging
import Testing
@testable import LatchkeyDaemons
#if canImport(Glibc)
import Glibc
#endif

/// What `latchkey lock` says about its loop's scheduling (`RealtimePriority`), on a thread of
/// its own: the policy is per thread (the test process's other threads stay as they are).
struct RealtimePriorityTests {
    func enter(_ priority: Int?) -> [AgentEvent] {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var events: [AgentEvent] = []
        let thread = Thread {
            let loop = PosixEventLoop()
            let printer = EventPrinter(format: .json, output: nil)
            printer.onEvent = { events.append($0) }
            RealtimePriority.enter(priority, printer: printer, loop: loop, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
            done.signal()
        }
        thread.start()
        done.wait()
        return events
    }

    @Test func grantedItSaysSoAndDropsTheLimitRefusedItSaysWhy() {
        let events = enter(10)
        #expect(events.count == 1)
        guard let e = events.first else { return }
        if e.name == EventKind.lockRealtime.name {
            #expect(e.field("policy") == "fifo" && e.field("priority") == "10")
            #expect(e.field("rtprio_limit") == "0")
        } else {
            #expect(geteuid() != 0, "root has CAP_SYS_NICE: the request must be granted")
            #expect(e.name == EventKind.lockRealtimeRefused.name)
            #expect(e.field("error")?.contains("errno 1") == true)
            #expect(e.field("hint")?.contains("LimitRTPRIO") == true)
        }
    }

    @Test func configuredOffItAsksForNothingAndSaysNothing() {
        #expect(enter(nil).isEmpty)
    }
}
