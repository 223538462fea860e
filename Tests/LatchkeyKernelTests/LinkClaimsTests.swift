#if canImport(Glibc)
import Glibc
#endif
import LatchkeyPosix
import LatchkeyTransport
import Testing

import LatchkeyKernelSockets
@testable import LatchkeyKernel

/// `LinkClaims` on its own, without a transport: sockets that connect at once, later, or fail.
@Suite struct LinkClaimsTests {
    /// Claims that are still connecting when `claim` returns (a socketpair is writable at once,
    /// so the loop's next turn finishes them), with the connect error `error` then.
    final class SlowSockets: LinkSocketProvider {
        var error: Errno?
        var farEnds: [CInt] = []
        deinit { for fd in farEnds { Glibc.close(fd) } }
        func listen(on local: BluetoothAddress) throws(KernelError) -> any LinkListener { fatalError("not used") }
        func claim(from local: BluetoothAddress, to peer: BluetoothAddress) throws(KernelError) -> (CInt, connected: Bool) {
            let (ours, theirs) = socketPair()
            farEnds.append(theirs)
            return (ours, false)
        }
        func connectError(_ fd: CInt) -> Errno? { error }
        func maximumTransmissionUnit(_ fd: CInt) -> Int { 185 }
        func peer(of fd: CInt) throws(KernelError) -> BluetoothAddress { fatalError("not used") }
    }

    final class Heard {
        var connected: [BluetoothAddress] = []
        var failures: [KernelError] = []
        var fds: [CInt] = []
        deinit { for fd in fds { Glibc.close(fd) } }
    }

    let loop = PosixEventLoop()
    let heard = Heard()

    func claims(_ sockets: any LinkSocketProvider) -> LinkClaims {
        let claims = LinkClaims(sockets: sockets, loop: loop)
        claims.onConnected = { [heard] fd, peer in heard.connected.append(peer); heard.fds.append(fd) }
        claims.onFailure = { [heard] in heard.failures.append($0) }
        return claims
    }

    @Test func aLinkThatIsUpConnectsAtOnce() throws {
        let claims = claims(FakeLinkSockets())
        guard case .connected(let fd) = claims.claim(TransportWorld.lock, from: TransportWorld.phone) else {
            Issue.record("not connected at once")
            return
        }
        heard.fds.append(fd)
        #expect(!claims.isClaiming(TransportWorld.lock))
    }

    @Test func aConnectingClaimIsHandedOnOnceItConnects() throws {
        let claims = claims(SlowSockets())
        guard case .connecting = claims.claim(TransportWorld.lock, from: TransportWorld.phone) else {
            Issue.record("not connecting")
            return
        }
        #expect(claims.isClaiming(TransportWorld.lock))
        #expect(try loop.run(until: { heard.connected == [TransportWorld.lock] }, timeout: .seconds(2)))
        #expect(!claims.isClaiming(TransportWorld.lock) && heard.failures.isEmpty)
    }

    @Test func aClaimThatFailsToConnectIsReported() throws {
        let sockets = SlowSockets()
        sockets.error = Errno(rawValue: 111)  // ECONNREFUSED
        let claims = claims(sockets)
        _ = claims.claim(TransportWorld.lock, from: TransportWorld.phone)
        #expect(try loop.run(until: { !heard.failures.isEmpty }, timeout: .seconds(2)))
        #expect(heard.failures[0].message.hasPrefix("could not open the ATT channel to \(TransportWorld.lock)"))
        #expect(heard.connected.isEmpty && !claims.isClaiming(TransportWorld.lock))
    }

    @Test func aClaimTheKernelRefusesFailsAtOnceAndCancelDropsTheRest() {
        let refusing = FakeLinkSockets()
        refusing.claimFailure = KernelError(.system, "connect: busy")
        guard case .failed(let error) = claims(refusing).claim(TransportWorld.lock, from: TransportWorld.phone) else {
            Issue.record("not failed")
            return
        }
        #expect(error.message == "could not open the ATT channel to \(TransportWorld.lock): connect: busy")
        let slow = claims(SlowSockets())
        _ = slow.claim(TransportWorld.lock, from: TransportWorld.phone)
        slow.cancelAll()
        #expect(!slow.isClaiming(TransportWorld.lock))
    }
}
