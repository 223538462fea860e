import LatchkeyKernelSockets
import LatchkeyMgmt
import LatchkeyPosix
import LatchkeyTransport

/// A wanted state is never dropped: a mgmt command that carries one (power, advertising,
/// discovery, connection timing, an Add Device entry) and that the kernel refuses (Busy,
/// No Resources, Failed: the controller was in the middle of something) is sent again after
/// a capped backoff (`RetrySchedule` keeps the timers), until it takes or the application
/// withdraws the wish. Each refusal is reported to the delegate (`didRefuse`) and to
/// `onFailure`; while a request waits for its next attempt the mirror says what the kernel
/// holds (`isAdvertising`, `isScanning` false), and `afterRequestsAnswered` waits for it, so
/// READY means taken.
extension KernelTransport {
    /// The wait before the next attempt: `first`, doubled after each refusal, at most `cap`.
    public struct RetryBackoff: Sendable, Equatable {
        public var first: Duration
        public var cap: Duration
        public init(first: Duration, cap: Duration) { self.first = first; self.cap = cap }

        /// Our choice: the kernel refuses while one HCI command is outstanding, itself bounded
        /// by HCI_CMD_TIMEOUT (2 s), so the first retry after 0.5 s usually takes; a kernel that
        /// keeps refusing is asked at most every 30 s, so a phone still links within 30 s of
        /// the kernel taking requests again.
        public static let standard = RetryBackoff(first: .milliseconds(500), cap: .seconds(30))

        /// The wait after the `attempt`-th refusal in a row (1-based).
        public func delay(after attempt: Int) -> Duration {
            var delay = first
            for _ in 1..<max(attempt, 1) {
                delay = delay * 2
                if delay >= cap { return cap }
            }
            return min(delay, cap)
        }
    }

    /// Whether `request` waits for its next attempt after a refusal.
    func isRetrying(_ request: TransportRefusal.Request) -> Bool { retrySchedule.isRetrying(request) }

    /// The kernel refused `request`: report it and schedule the next attempt.
    func refused(_ request: TransportRefusal.Request, _ error: MgmtError) {
        let (attempt, delay) = retrySchedule.refused(request)
        onFailure?(KernelError(error))
        delegate?.transport(self, didRefuse: TransportRefusal(request: request, reason: "\(error)", attempt: attempt,
                                                              retryIn: delay))
    }

    /// The kernel took `request`: its refusals are over.
    func took(_ request: TransportRefusal.Request) { runWhenAnswered(retrySchedule.took(request)) }

    /// The application withdrew the wish (or the whole mirror is about to be re-asserted).
    func forgetRetry(_ request: TransportRefusal.Request) { took(request) }

    /// The application asked again itself: its commands are the attempt, the timer's is not
    /// needed (the entry stays until their answer).
    func attemptNow(_ request: TransportRefusal.Request) { retrySchedule.attemptNow(request) }

    /// Drops every scheduled attempt: the controller went away or powered on (`reassert`
    /// sends everything again).
    func forgetRetries() { runWhenAnswered(retrySchedule.forgetAll()) }

    /// Sends what `request` wants again, if it is still wanted and can be sent now. The
    /// entry stays (with no timer) until the answer comes: `took` or another `refused`.
    func retry(_ request: TransportRefusal.Request) {
        guard isAttached else { return forgetRetries() }  // re-asserted when the index returns
        switch request {
        case .power:
            configureController()
        case .advertising:
            guard let advertising, state == .poweredOn else { return forgetRetry(request) }
            sendAdvertising(advertising)
        case .scanning:
            // Computed from the same parameters when the scan started, so it cannot fail here.
            guard let scan, state == .poweredOn,
                  let timing = try? SystemConfiguration.discovery(scan) else { return forgetRetry(request) }
            command(.setDefaultSystemConfiguration(timing))
            startDiscovery()
        case .connectionTiming:
            guard let connectionTiming else { return forgetRetry(request) }
            sendConnectionTiming(connectionTiming)
            // As `setConnectionParameters`: the running auto-connect scan restarts with it.
            if state == .poweredOn { for peer in unlinkedPendingConnections { resendPending(peer) } }
        case .pendingConnection(let peer):
            guard pendingConnections.contains(peer) else { return forgetRetry(request) }
            sendAddDevice(peer)
        }
    }

    /// Add Device for an entry we want; a refusal keeps the entry wanted and asks again.
    func sendAddDevice(_ peer: BluetoothAddress) {
        let request = TransportRefusal.Request.pendingConnection(peer)
        send(.addDevice(peer, .autoConnect)) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success:
                self.took(request)
            case .failure(let error):
                guard self.pendingConnections.contains(peer) else { return self.forgetRetry(request) }
                self.refused(request, error)
            }
        }
    }

    /// Set Default System Configuration for connection timing, asked again when refused.
    func sendConnectionTiming(_ timing: [SystemParameter]) {
        send(.setDefaultSystemConfiguration(timing)) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success:
                self.took(.connectionTiming)
            case .failure(let error):
                guard self.connectionTiming == timing else { return self.forgetRetry(.connectionTiming) }
                self.refused(.connectionTiming, error)
            }
        }
    }

    /// `afterRequestsAnswered` bodies that found a request waiting for its next attempt run
    /// once none does (through `afterRequestsAnswered` again: the attempt's answer is in).
    private func runWhenAnswered(_ released: [() -> Void]) {
        for body in released { afterRequestsAnswered(body) }
    }
}
