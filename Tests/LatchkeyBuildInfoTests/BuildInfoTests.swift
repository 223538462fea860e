import LatchkeyBuildInfo
import Testing

/// `latchkey --version` names a real commit: a build from a clone bakes git's HEAD in
/// (Plugins/BuildCommitPlugin, scripts/build-commit). Fails when the plugin did not run or
/// could not ask git ("unknown"), e.g. a tarball built without $LATCHKEY_COMMIT.
@Suite struct BuildInfoTests {
    private static func isHex(_ s: Substring) -> Bool { s.allSatisfy { "0123456789abcdef".contains($0) } }

    @Test func theVersionLineNamesTheReleaseAndTheCommit() {
        let line = BuildInfo.versionLine
        #expect(line == "\(BuildInfo.version) (commit \(BuildInfo.commit))")
        let parts = BuildInfo.version.split(separator: ".", omittingEmptySubsequences: false)
        #expect(parts.count == 3 && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isNumber) })
    }

    @Test func theCommitIsTwelveHexDigitsOfGit() {
        let commit = BuildInfo.commit
        let hash = commit.hasSuffix("-dirty") ? commit.dropLast("-dirty".count) : Substring(commit)
        #expect(hash.count == 12 && Self.isHex(hash), "commit \(commit) is not a git commit")
    }
}
