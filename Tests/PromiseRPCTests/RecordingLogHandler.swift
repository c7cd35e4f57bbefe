import Foundation
import Logging

/// Keeps what is logged through it, for tests that check a log line.
///
/// ```swift
/// let log = RecordingLogHandler.Records()
/// let logger = Logger(label: "test") { _ in RecordingLogHandler(records: log) }
/// logger.error("Oops", metadata: ["promise.id": "a"])
/// log.entries.first?.level   // .error
/// ```
struct RecordingLogHandler: LogHandler {
    struct Entry {
        var level: Logger.Level
        var message: String
        var metadata: [String: String]
    }

    final class Records: @unchecked Sendable {  // `lock` guards `stored`.
        private let lock = NSLock()
        private var stored: [Entry] = []

        var entries: [Entry] { lock.withLock { stored } }

        func append(_ entry: Entry) { lock.withLock { stored.append(entry) } }
    }

    let records: Records
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?
    var logLevel: Logger.Level = .trace

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        records.append(Entry(
            level: event.level, message: event.message.description, metadata: merged.mapValues(\.description)))
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
}
