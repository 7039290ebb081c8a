import RelayFuzzTargets

#if canImport(Glibc)
    import Glibc
#endif

// libFuzzer's entry points. This target is built only by `Fuzz/fuzz.sh`, with
// `-sanitize=fuzzer,address`; main.swift hands control to libFuzzer's driver.

/// The target `CAMPAIGN_RELAY_FUZZ_TARGET` names, read once before the first input.
let selectedTarget: FuzzTarget? = getenv("CAMPAIGN_RELAY_FUZZ_TARGET").flatMap { FuzzTarget(rawValue: String(cString: $0)) }

/// Refuses to start without a known target, naming the choices.
@_cdecl("LLVMFuzzerInitialize")
public func fuzzerInitialize(_ argc: UnsafeMutablePointer<CInt>?, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?)
    -> CInt
{
    if selectedTarget == nil {
        let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
        printError("set CAMPAIGN_RELAY_FUZZ_TARGET to one of: \(names)\n")
        exit(2)
    }
    if let target = selectedTarget, let directory = getenv("CAMPAIGN_RELAY_FUZZ_WRITE_SEEDS").map({ String(cString: $0) }) {
        // Fuzz/fuzz.sh starts an empty corpus from the seeds: one file per seed, named by index.
        for (index, seed) in FuzzSeeds.inputs(for: target).enumerated() {
            let path = "\(directory)/seed-\(index)"
            guard let file = fopen(path, "wb") else {
                printError("cannot write \(path): \(String(cString: strerror(errno)))\n")
                exit(1)
            }
            _ = seed.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
            fclose(file)
        }
        exit(0)
    }
    return 0
}

/// Runs the selected target on one input; a broken property aborts, so libFuzzer keeps the input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let target = selectedTarget else { return 0 }
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    do {
        try target.run(bytes)
    } catch {
        printError("property broken: \(error)\n")
        abort()
    }
    return 0
}

/// Writes `text` to standard error (the C `stderr` global is not safe to touch from Swift 6 code).
func printError(_ text: String) {
    var text = text
    text.withUTF8 { _ = write(STDERR_FILENO, $0.baseAddress, $0.count) }
}
