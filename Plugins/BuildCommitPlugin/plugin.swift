import Foundation
import PackagePlugin

/// Bakes the git commit of the sources into the `LatchkeyBuildInfo` module, so that
/// `latchkey --version` names the exact sources a lock runs, in every kind of build:
/// a plain `swift build` of a clone, CI's static release build, a Debian package build.
///
/// A build command that runs `scripts/build-commit`, which needs no network:
/// `$LATCHKEY_COMMIT` when set (a source tarball has no .git: the packaging sets it), else
/// `git rev-parse` of the package directory (`-dirty` when tracked files changed), else
/// "unknown". Its inputs are what moves when either answer can change: git's HEAD, index
/// and HEAD reflog (a commit, an amend, a checkout, a reset) and every source file of the
/// package and the manifest (an edit that makes the tree dirty). SwiftPM re-plans — and
/// so re-reads this list — whenever files are added or removed. (A prebuild command is not
/// enough: SwiftPM runs those only when it re-plans, so a commit that adds no file left
/// the old commit in the binary.) The script rewrites the generated file only when the
/// text changes, so a build with nothing new compiles nothing.
@main
struct BuildCommitPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let package = context.package.directoryURL
        let output = context.pluginWorkDirectoryURL.appending(path: "BuildCommit.swift")
        var environment: [String: String] = [:]
        // Passed on explicitly: the command does not inherit SwiftPM's environment.
        for name in ["LATCHKEY_COMMIT", "PATH", "HOME"] {
            if let value = ProcessInfo.processInfo.environment[name] { environment[name] = value }
        }
        var inputs = gitFiles(package)
        inputs.append(package.appending(path: "Package.swift"))
        inputs.append(package.appending(path: "scripts/build-commit"))
        for case let source as SourceModuleTarget in context.package.targets {
            inputs += source.sourceFiles.map(\.url)
        }
        return [.buildCommand(
            displayName: "Baking the git commit into \(target.name)",
            executable: URL(filePath: "/bin/sh"),
            arguments: [package.appending(path: "scripts/build-commit").path(percentEncoded: false),
                        package.path(percentEncoded: false), output.path(percentEncoded: false)],
            environment: environment,
            inputFiles: inputs,
            outputFiles: [output])]
    }

    /// HEAD, index and the HEAD reflog of the package's git directory: `.git` itself, or
    /// the directory a worktree's `.git` file names (`gitdir: ...`). None in a tarball.
    private func gitFiles(_ package: URL) -> [URL] {
        let dotGit = package.appending(path: ".git")
        var gitDirectory = dotGit
        if let text = try? String(contentsOf: dotGit, encoding: .utf8), text.hasPrefix("gitdir: ") {
            let path = text.dropFirst("gitdir: ".count).trimmingCharacters(in: .whitespacesAndNewlines)
            gitDirectory = path.hasPrefix("/") ? URL(filePath: path) : package.appending(path: path)
        }
        return ["HEAD", "index", "logs/HEAD"].map { gitDirectory.appending(path: $0) }
            .filter { FileManager.default.fileExists(atPath: $0.path(percentEncoded: false)) }
    }
}
