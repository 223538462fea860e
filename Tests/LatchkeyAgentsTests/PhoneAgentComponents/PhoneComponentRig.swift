import LatchkeyAgents
@testable import LatchkeyPhoneAgent
import LatchkeySim

/// What a phone agent's component needs to run alone: a manual clock and a sink to read.
final class PhoneComponentRig {
    let loop = ManualEventLoop()
    let sink = RecordingEventSink()
    var output: PhoneEventOutput { PhoneEventOutput(sink: sink, loop: loop) }
    func names() -> [String] { sink.names() }
}
