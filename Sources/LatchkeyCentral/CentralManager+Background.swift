import LatchkeyATT
import LatchkeyManagers
import LatchkeyTransport

/// What a central manager remembers about its execution mode and the scan the app asked for.
struct CentralBackgroundState {
    var mode: ExecutionMode = .foreground
    /// The app's own request for the running scan, before the mode adjusted it.
    var requestedFilter: [BluetoothUUID]?
    var requestedOptions = ScanOptions()
    var scanEnds: Instant?
    /// The auto-connect timing last given to the transport (nil: never set, the default).
    var appliedTiming: ConnectionParameters?
    /// The connection interval the app asked for (nil: the kernel's default).
    var connectionInterval: Duration?
}

/// Execution modes for the central role. In background mode:
/// - a scan must name the services it looks for (iOS ignores unfiltered background scans;
///   here the call fails, so the mistake is seen);
/// - allow-duplicates is ignored: each peripheral is discovered once per scan, however
///   often it advertises (Core Bluetooth coalesces background discoveries);
/// - explicit scans and the system's auto-connect scan run at a 1.28 s interval with an
///   11.25 ms window instead of 60/30 ms (on Linux, mgmt Set Default System Configuration).
extension CentralManager {
    public var executionMode: ExecutionMode { background.mode }

    /// Switches the mode at run time. A running scan is re-issued with the new timing, or
    /// ended (`didStopScan(.stopped)`) when it has no service filter and the new mode is
    /// background. The auto-connect timing goes to the transport now when the radio is on,
    /// else when it comes on. Throws when the transport refuses it.
    public func setExecutionMode(_ mode: ExecutionMode) throws(BluetoothError) {
        let old = background.mode
        background.mode = mode
        if state == .poweredOn {
            do {
                try applyModeTiming()
            } catch {
                background.mode = old
                throw error
            }
        }
        guard isScanning, old != mode, let ends = background.scanEnds else { return }
        let remaining = ends - transport.loop.now
        var options = background.requestedOptions
        options.duration = remaining > .zero ? remaining : .nanoseconds(1)
        do {
            try scanForPeripherals(withServices: background.requestedFilter, options: options)
        } catch {
            endScan(.stopped)
        }
    }

    /// The connection interval of the links the system makes for this manager (mgmt Set
    /// Default System Configuration on Linux: the central chooses it); nil for the kernel's
    /// default (30 ms). A short one makes each ATT round trip short — two connection events
    /// — at the cost of radio time while the link is up. Applies to links made from now on.
    /// Throws when the transport refuses it (outside 7.5 ms–4 s).
    public func setConnectionInterval(_ interval: Duration?) throws(BluetoothError) {
        let old = background.connectionInterval
        background.connectionInterval = interval
        guard state == .poweredOn else { return }
        do {
            try applyModeTiming()
        } catch {
            background.connectionInterval = old
            throw error
        }
    }

    public var connectionInterval: Duration? { background.connectionInterval }

    /// Gives the transport the auto-connect timing of the mode, when it differs from what
    /// it has (a foreground manager that never switched leaves the kernel's default alone).
    func applyModeTiming() throws(BluetoothError) {
        var wanted = BackgroundScanTiming.connectionParameters(for: background.mode)
        if let interval = background.connectionInterval { wanted.connectionInterval = interval }
        guard wanted != (background.appliedTiming ?? .kernelDefault) else { return }
        do {
            try transport.setConnectionParameters(wanted)
        } catch {
            throw .invalidParameters("auto-connect timing for \(background.mode) mode: \(error.description)")
        }
        background.appliedTiming = wanted
    }

    /// The options a scan runs with in the current mode; refuses what the mode forbids.
    func optionsForMode(services: [BluetoothUUID]?, _ options: ScanOptions) throws(BluetoothError) -> ScanOptions {
        var effective = options
        if background.mode == .background {
            guard let services, !services.isEmpty else {
                throw .operationNotSupported(
                    "a central in background mode must scan for specific services; scanning for all peripherals is refused")
            }
            effective.allowDuplicates = false
        }
        background.requestedFilter = services
        background.requestedOptions = options
        background.scanEnds = transport.loop.now + options.duration
        return effective
    }

    /// The radio timing of an explicit scan in the current mode.
    func scanParameters(for options: ScanOptions) -> ScanParameters {
        switch background.mode {
        case .foreground:
            ScanParameters(active: options.active, interval: BackgroundScanTiming.foregroundInterval,
                           window: BackgroundScanTiming.foregroundWindow, filterDuplicates: !options.allowDuplicates)
        case .background:
            ScanParameters(active: options.active, interval: BackgroundScanTiming.interval,
                           window: BackgroundScanTiming.window, filterDuplicates: true)
        }
    }
}
