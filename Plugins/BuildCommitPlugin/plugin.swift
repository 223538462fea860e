import Foundation
import PackagePlugin

/// Bakes the git commit of the sources into the `LatchkeyBuildInfo` module, so that
/// `latchkey --version` names the exact sources a lock runs, in every kind of build:
/// a plain `swift build` of a clone, CI's static release build, a Debian package build.
///
/// A prebuild command runs before every build (a build command would run only when its
/// declared inputs change, and git's HEAD, refs and packed-refs are too many moving files
/// to declare). It runs `scripts/build-commit`, which needs no network: `$LATCHKEY_COMMIT`
/// when set (a source tarball has no .git: the packaging sets it), else
/// `git rev-parse` of the package directory, else "unknown". The script rewrites the
/// generated file only when the commit changed, so an unchanged tree recompiles nothing.
@main
struct BuildCommitPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appending(path: "generated")
        var environment: [String: String] = [:]
        // Passed on explicitly: a prebuild command does not inherit SwiftPM's environment.
        for name in ["LATCHKEY_COMMIT", "PATH", "HOME"] {
            if let value = ProcessInfo.processInfo.environment[name] { environment[name] = value }
        }
        return [.prebuildCommand(
            displayName: "Baking the git commit into \(target.name)",
            executable: URL(filePath: "/bin/sh"),
            arguments: [context.package.directoryURL.appending(path: "scripts/build-commit").path(percentEncoded: false),
                        context.package.directoryURL.path(percentEncoded: false),
                        output.appending(path: "BuildCommit.swift").path(percentEncoded: false)],
            environment: environment,
            outputFilesDirectory: output)]
    }
}
