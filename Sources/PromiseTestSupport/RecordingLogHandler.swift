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
package struct RecordingLogHandler: LogHandler {
    package struct Entry {
        package var level: Logger.Level
        package var message: String
        package var metadata: [String: String]
    }

    package final class Records: @unchecked Sendable {  // `lock` guards `stored`.
        private let lock = NSLock()
        private var stored: [Entry] = []

        package init() {}

        package var entries: [Entry] { lock.withLock { stored } }

        package func append(_ entry: Entry) { lock.withLock { stored.append(entry) } }
    }

    package let records: Records
    package var metadata: Logger.Metadata = [:]
    package var metadataProvider: Logger.MetadataProvider?
    package var logLevel: Logger.Level = .trace

    package init(records: Records) {
        self.records = records
    }

    package func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        records.append(Entry(
            level: event.level, message: event.message.description, metadata: merged.mapValues(\.description)))
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
}
