/// What `latchkey --version` prints: the release version and the commit the binary was
/// built from (baked in at build time by Plugins/BuildCommitPlugin, no network needed).
public enum BuildInfo {
    /// The release version (semantic versioning). Raise it when a release is tagged.
    public static let version = "0.1.0"
    /// 12 hex digits of the git commit, "-dirty" when tracked files had changes, or
    /// whatever `$LATCHKEY_COMMIT` gave a build from a source tarball; "unknown" otherwise.
    public static let commit = buildCommit
    /// `0.1.0 (commit 0123456789ab)`
    public static var versionLine: String { "\(version) (commit \(commit))" }
}
