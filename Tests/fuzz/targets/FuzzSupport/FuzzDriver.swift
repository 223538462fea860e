#if canImport(Glibc)
import Glibc
#endif

/// libFuzzer's entry point for programs that keep their own `main` (LLVM LibFuzzer docs,
/// "Using libFuzzer as a library"). SwiftPM renames an executable's `main`, so a Swift fuzz
/// target cannot rely on libFuzzer's; it hands control over from `main.swift` instead
/// (docs/BUILDING.md, "Fuzzing").
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

/// What every fuzz target's `main.swift` calls.
public enum FuzzDriver {
    public typealias TestOneInput = @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt

    /// `target --write-seeds DIR` writes the target's seed corpus (built from the
    /// LatchkeyTestKit vectors) and exits; any other command line goes to libFuzzer.
    public static func main(seeds: () -> [[UInt8]], _ testOneInput: TestOneInput) -> Never {
        let arguments = CommandLine.arguments
        if arguments.count == 3 && arguments[1] == "--write-seeds" {
            exit(write(seeds(), to: arguments[2]) ? 0 : 1)
        }
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv, testOneInput))
    }

    /// The input as an array (the targets' parsers take arrays and slices).
    public static func bytes(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
        guard let data, size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: size))
    }

    /// Targets that feed several parsers: the first octet picks one (modulo their count) and
    /// the rest is its input; an empty input feeds nothing.
    public static func select(_ data: UnsafePointer<UInt8>?, _ size: Int, among parsers: [([UInt8]) -> Void]) {
        let input = bytes(data, size)
        guard let selector = input.first, !parsers.isEmpty else { return }
        parsers[Int(selector) % parsers.count](Array(input.dropFirst()))
    }

    /// A failed invariant: crash so that libFuzzer saves the input.
    public static func check(_ condition: Bool, _ message: @autoclosure () -> String) {
        if !condition {
            printError("invariant failed: \(message())")
            abort()
        }
    }

    /// To standard error (fd 2: Glibc's `stderr` is a global Swift 6 will not share).
    static func printError(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { Glibc.write(2, $0.baseAddress, $0.count) }
    }

    private static func write(_ seeds: [[UInt8]], to directory: String) -> Bool {
        for (i, seed) in seeds.enumerated() {
            let digits = String(i)
            let path = directory + "/seed-" + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
            guard let file = fopen(path, "wb") else {
                printError("cannot write \(path)")
                return false
            }
            let written = seed.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
            fclose(file)
            guard written == seed.count else { return false }
        }
        print("\(seeds.count) seeds written to \(directory)")
        return true
    }
}
