/// The check a log's opening makes of its keys: that the key file given (or the lack of one) fits
/// the frames already in the log, before anything is appended.
///
/// It opens the first valid frame of every segment, and every (key, salt) of the newest one, the
/// segment the writer goes on with: a log that holds encrypted frames there is not opened without
/// a key file (new frames would be written in the clear beside them, and its consumers could not
/// read the old ones), nor with a key file lacking a key those frames name or holding another key
/// under that id. A key changes only when a writer starts (or `wal rekey` rewrites a whole
/// segment), so this names every key in use but, rarely, one that sealed frames only in the middle
/// of a sealed segment; a reader meeting such a frame stops there with the same error.
/// `wal verify --json` counts every frame's key.
enum LogKeyCheck {
    /// Opens the first frame of each segment in `walDirectory` with `keys`.
    ///
    /// - Throws: ``LogError/unreadableFrame(_:segment:offset:)`` naming the first key missing (or
    ///   not authentic), ``LogError/fileSystem(_:context:)`` when a segment cannot be read.
    static func check(walDirectory: String, fileSystem: any FileSystem, keys: LogKeyRing?) throws(LogError) {
        let starts: [UInt64]
        do {
            starts = try fileSystem.listDirectory(walDirectory).compactMap(SegmentHeader.firstSequence(fromFileName:)).sorted()
        } catch {
            throw .fileSystem(error, context: "listing \(walDirectory)")
        }
        for start in starts {
            let name = SegmentHeader.fileName(firstSequence: start)
            let isNewest = start == starts.last
            // The salts already opened in this segment: one frame of each says the key fits.
            var opened: Set<[UInt8]> = []
            var unreadable: LogError?
            do {
                let handle = try fileSystem.open("\(walDirectory)/\(name)", create: false)
                defer { handle.close() }
                var walker = try FrameWalker(handle: handle)
                walking: while true {
                    switch try walker.next() {
                    case .frame(let header, let offset, let stored):
                        if header.isEncrypted, opened.insert(Array(stored.prefix(1 + Int(stored.first ?? 0) + FrameEnvelope.saltSize))).inserted {
                            do {
                                _ = try stored.withUnsafeBufferPointer { buffer throws(FrameEncryptionError) in
                                    try FrameEnvelope.open(buffer, header: header, keys: keys)
                                }
                            } catch {
                                unreadable = .unreadableFrame(error, segment: name, offset: offset)
                                break walking
                            }
                        }
                        if !isNewest { break walking }
                    case .damaged:
                        continue
                    case .damagedTail, .end:
                        break walking
                    }
                }
            } catch  where error.errno == LogLayout.noSuchFileErrno {
                continue
            } catch {
                throw .fileSystem(error, context: "reading the first frame of \(name)")
            }
            if let unreadable { throw unreadable }
        }
    }
}
