import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC

/// What `wait` prints on stderr for a promise that did not fulfil: where the
/// failure began, and for a reason made of several failures (`all` with
/// `all-errors`, `any`), each of them.
///
/// A pipeline's last step fails because a step far above it did; the
/// reason's `origin` names that step, so the user reads which one:
///
/// ```
/// promisectl: test rejected: cc/f07 failed: f07.c:3: error: boom (code 1)
/// promisectl: build rejected: build failed: 2 of 3 input promises were rejected
/// promisectl: cc/f07 failed: f07.c:3: error: boom (code 1)
/// promisectl: cc/f09 failed: f09.c:1: error: bad (code 1)
/// ```
enum FailureReport {
    /// Writes ``lines(for:waitedFor:)`` to stderr, each as `promisectl: …`.
    static func report(_ record: BlockingPromiseClient.Record, waitedFor id: String) {
        for line in lines(for: record, waitedFor: id) { Failure.report(line) }
    }

    /// The lines for `record` (rejected or cancelled), waited for as `id`.
    static func lines(for record: BlockingPromiseClient.Record, waitedFor id: String) -> [String] {
        let state = record.state.rawValue
        guard let reason = record.reason, record.state == .rejected, let origin = record.reasonOrigin else {
            return ["\(id) \(state)\(Output.reasonSuffix(record))"]
        }
        let failure = describe(reason, origin: origin)
        var lines = [origin == id ? failure : "\(id) \(state): \(failure)"]
        var causes = Causes()
        if case .array(let entries)? = reason["data"]?["errors"] {
            for entry in entries { causes.collect(entry) }
        }
        lines += causes.lines
        if let omitted = reason["data"]?["omitted"]?.intValue, omitted > 0 {
            lines.append("… and \(omitted) more not listed (the reason was summarised to fit maxReasonBytes)")
        }
        return lines
    }

    /// `ORIGIN failed: message (code N)`.
    private static func describe(_ reason: JSONValue, origin: String) -> String {
        var text = "\(origin) failed"
        if let message = reason["message"]?.stringValue ?? reason.stringValue, !message.isEmpty {
            text += ": " + message
        }
        if let code = reason["code"]?.intValue { text += " (code \(code))" }
        return text
    }

    /// The innermost failures under a reason's `data.errors`, one line each.
    /// A reason is at most `maxReasonBytes` (64 KiB) long, so are these lines.
    private struct Causes {
        var lines: [String] = []

        mutating func collect(_ entry: JSONValue) {
            guard let reason = entry["reason"] else { return }
            if case .array(let inner)? = reason["data"]?["errors"], !inner.isEmpty {
                for nested in inner { collect(nested) }
                return
            }
            let name = reason["origin"]?.stringValue ?? entry["id"]?.stringValue
                ?? entry["index"].map { "input \($0)" } ?? "an input"
            lines.append(FailureReport.describe(reason, origin: name))
        }
    }
}
