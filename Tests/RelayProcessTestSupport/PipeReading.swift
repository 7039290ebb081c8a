package import Foundation
import RelayTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Reads a pipe until its writer closes it, chunk by chunk, retrying reads a signal interrupted
/// (Foundation's `FileHandle.availableData` traps on EINTR, which a child's exit can cause).
package func readPipe(
    _ descriptor: Int32, fileID: String = #fileID, filePath: String = #filePath, line: Int = #line, column: Int = #column, chunk: ([UInt8]) -> Void
) {
    CooperativePool.refuseBlocking("reading a pipe to its end", fileID: fileID, filePath: filePath, line: line, column: column)
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count > 0 {
            chunk(Array(buffer[0..<count]))
        } else if count < 0, errno == EINTR {
            continue
        } else {
            return
        }
    }
}

/// One read of what a pipe holds now (blocking until something or the end comes); `nil` at the
/// end. Retries reads a signal interrupted.
package func readChunk(_ descriptor: Int32, fileID: String = #fileID, filePath: String = #filePath, line: Int = #line, column: Int = #column)
    -> [UInt8]?
{
    CooperativePool.refuseBlocking("reading a pipe", fileID: fileID, filePath: filePath, line: line, column: column)
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count > 0 { return Array(buffer[0..<count]) }
        if count < 0, errno == EINTR { continue }
        return nil
    }
}

/// Writes all of `data` to `descriptor`, retrying interrupted and partial writes; stops at the
/// first other failure (the reader closed its end: EPIPE, with SIGPIPE ignored).
package func writeAll(_ data: Data, to descriptor: Int32) {
    data.withUnsafeBytes { bytes in
        var offset = 0
        while offset < bytes.count {
            let written = write(descriptor, bytes.baseAddress.map { $0 + offset }, bytes.count - offset)
            if written > 0 {
                offset += written
            } else if written < 0, errno == EINTR {
                continue
            } else {
                return
            }
        }
    }
}
