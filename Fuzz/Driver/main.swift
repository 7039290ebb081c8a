#if canImport(Glibc)
    import Glibc
#endif

// SwiftPM gives an executable target the module's own `main`, which would shadow libFuzzer's:
// hand the arguments to libFuzzer's driver (`LLVMFuzzerRunDriver`, in its runtime) instead.

@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

var argumentCount = CommandLine.argc
var argumentVector = CommandLine.unsafeArgv
exit(runFuzzerDriver(&argumentCount, &argumentVector) { data, size in fuzzerTestOneInput(data, size) })
