import Foundation
import PackagePlugin

/// Bakes the git commit of the sources into `LatchkeyBuildInfo`, so `latchkey --version` names
/// the exact sources in every kind of build. A build command runs `scripts/build-commit` (no
/// network: `$LATCHKEY_COMMIT`, else `git rev-parse` with `-dirty`, else "unknown"); its inputs
/// are git's HEAD, index and HEAD reflog and every source file, so a commit or an edit reruns it
/// (a prebuild command ran only when SwiftPM re-planned, leaving an old commit in the binary).
/// It rewrites the generated file only when the text changes. docs/BUILDING.md, "Version".
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
