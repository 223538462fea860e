import LatchkeyCentral
import LatchkeyEvents
import LatchkeyPhone

// The phone's own enums onto the catalogue's words, as LatchkeyAgents' EventWords+Domain.swift
// does for the lock's vocabulary: exhaustive both ways, so a new case fails to compile here.

extension Event.Presence {
    package init(_ presence: LatchkeyPhone.Presence) {
        switch presence {
        case .unknown: self = .unknown
        case .home: self = .home
        case .leaving: self = .leaving
        case .away: self = .away
        case .nearby: self = .nearby
        case .arriving: self = .arriving
        }
    }
}

extension Event.LinkState {
    package init(_ state: Peripheral.State) {
        switch state {
        case .disconnected: self = .disconnected
        case .connecting: self = .connecting
        case .connected: self = .connected
        case .disconnecting: self = .disconnecting
        }
    }
}
