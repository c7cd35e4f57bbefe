import ArgumentParser
import Foundation
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
#if canImport(Glibc)
import Glibc
#endif

/// What commands print: values as JSON on stdout, flushed line by line so
/// pipes and `watch` consumers see each line at once.
enum Output {
    static func line(_ text: String) {
        write(text + "\n", to: STDOUT_FILENO)
    }

    /// Writes all of `text` to `descriptor` with write(2), not `FileHandle`
    /// and `Data(text.utf8)`, which make a dynamic cast that searches the
    /// runtime's conformance tables at start-up (docs/PERFORMANCE.md). A
    /// stream that cannot be written (a full disk, a closed descriptor) ends
    /// promisectl with status 70, as a `FileHandle` trap would, but with a
    /// message.
    static func write(_ text: String, to descriptor: Int32) {
        var text = text
        let failure: Int32? = text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written >= 0 {
                    offset += written
                } else if errno == EAGAIN {
                    // A non-blocking descriptor shared with the parent: wait until it takes more.
                    var ready = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&ready, 1, -1)
                } else if errno != EINTR {
                    return errno
                }
            }
            return nil
        }
        guard let failure else { return }
        if descriptor != STDERR_FILENO {
            Failure.report("cannot write to descriptor \(descriptor): \(String(cString: strerror(failure)))")
        }
        exit(ExitCode.internalError.rawValue)
    }

    static func json(_ value: JSONValue) -> String {
        String(decoding: value.serialized(), as: UTF8.self)
    }

    /// A value as JSON; with `raw`, a string value is printed without quotes.
    static func value(_ value: JSONValue, raw: Bool) -> String {
        if raw, let text = value.stringValue { return text }
        return json(value)
    }

    /// `get`'s text: the state, then the value or the reason.
    static func summary(of record: BlockingPromiseClient.Record) -> String {
        switch record.state {
        case .pending:
            if let progress = record.json["progress"]?.doubleValue, progress > 0 {
                return "pending (\(Int((progress * 100).rounded()))%)"
            }
            return "pending"
        case .fulfilled:
            return "fulfilled " + json(record.value ?? .null)
        case .rejected, .cancelled:
            return record.state.rawValue + reasonSuffix(record)
        }
    }

    /// `: message (code N)` for a rejected or cancelled record, or "" without a reason.
    /// One line: a message's line breaks become spaces, as on `wait`'s stderr.
    static func reasonSuffix(_ record: BlockingPromiseClient.Record) -> String {
        var text = ""
        if let message = record.reasonMessage, !message.isEmpty { text += ": " + Format.oneLine(message, limit: .max) }
        if let code = record.reasonCode { text += " (code \(code))" }
        return text
    }
}

/// Parsing values given on the command line.
enum ValueInput {
    /// `text` as JSON, or a usage error that suggests `--string`.
    static func json(_ text: String, what: String) throws -> JSONValue {
        do {
            return try JSONValue(parsing: text)
        } catch {
            throw UsageError("\(what) is not valid JSON: \(text.prefix(80)) (quote it, or pass --string to take text as is)")
        }
    }

    /// All of standard input.
    static func standardInput() -> [UInt8] {
        Array(FileHandle.standardInput.readDataToEndOfFile())
    }

    /// Text without one trailing newline ("\n" or "\r\n"), as `$(…)` would strip it.
    static func droppingTrailingNewline(_ bytes: [UInt8]) -> String {
        var slice = bytes[...]
        if slice.last == UInt8(ascii: "\n") { slice = slice.dropLast() }
        if slice.last == UInt8(ascii: "\r") { slice = slice.dropLast() }
        return String(decoding: slice, as: UTF8.self)
    }

    /// Seconds from the command line as whole milliseconds for the daemon.
    static func milliseconds(seconds: Double) -> Int {
        Int((seconds * 1000).rounded(.up))
    }
}
