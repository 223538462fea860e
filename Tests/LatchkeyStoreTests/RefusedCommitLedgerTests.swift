import Foundation
import LatchkeyLock
import LatchkeyStore
import Testing

/// The ledger of decisions whose commit a card refused: what it answers when the file is
/// missing, written, or cannot be read.
@Suite struct RefusedCommitLedgerTests {
    @Test func rememberedIDsAreFoundAndOthersAreNot() throws {
        let scratch = ScratchDirectory()
        let ledger = RefusedCommitLedger(directory: scratch.path)
        #expect(!ledger.contains(DecisionID(2)), "no file yet: nothing was refused")
        try ledger.add(DecisionID(2))
        try ledger.add(DecisionID(40))
        #expect(ledger.contains(DecisionID(2)) && ledger.contains(DecisionID(40)))
        #expect(!ledger.contains(DecisionID(4)) && !ledger.contains(DecisionID(20)), "whole ids only")
        #expect(FileManager.default.permissions(ledger.path) == 0o600)
    }

    /// A ledger that cannot be read cannot vouch for any unlock: none is resumed.
    @Test func anUnreadableLedgerAnswersEveryID() throws {
        let scratch = ScratchDirectory()
        let ledger = RefusedCommitLedger(directory: scratch.path)
        try FileManager.default.createDirectory(atPath: ledger.path, withIntermediateDirectories: false)
        #expect(ledger.contains(DecisionID(7)))
        #expect(throws: StoreError.self) { try ledger.add(DecisionID(7)) }
    }
}
