import Foundation
import PromiseModel
import PromiseRPC
import Testing

/// `promised --help` shows the default of every limit it takes, as
/// `DaemonLimits` has it, so that a user knows what a flag would change.
@Suite("promised --help")
struct PromisedHelpTests {
    @Test("every limit flag's help shows its default, the value DaemonLimits holds")
    func limitsShowTheirDefaults() throws {
        let help = try E2ECommand.run(E2EBinaries.promised, ["--help"]).stdout
        // Each option's entry starts a line, indented by two spaces.
        let entries = help.components(separatedBy: "\n  --").map {
            "--" + $0.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        }
        let limits = DaemonLimits()
        let expected: [(flag: String, value: String)] = [
            ("--max-line-bytes", "\(limits.maxLineBytes)"),
            ("--max-output-buffer-bytes", "\(limits.maxOutputBufferBytes)"),
            ("--max-promises", "\(limits.maxPromises)"),
            ("--max-process-output-bytes", "\(limits.maxProcessOutputBytes)"),
            ("--max-running-processes", "\(limits.maxRunningProcesses)"),
            ("--max-queued", "\(limits.maxQueued)"),
            ("--kill-grace-ms", "\(limits.killGraceMilliseconds)"),
            ("--max-value-bytes", "\(limits.maxValueBytes)"),
            ("--max-reason-bytes", "\(limits.maxReasonBytes)"),
            ("--reserved-connections", "\(limits.reservedConnections)"),
            ("--max-waiters-for-uncreated-ids", "\(limits.maxWaitersForUncreatedIDs)"),
            ("--max-subscriptions-to-uncreated-ids", "\(limits.maxSubscriptionsToUncreatedIDs)"),
            ("--max-record-children", "\(limits.maxRecordChildren)"),
            ("--max-batch-answer-bytes", "\(limits.maxBatchAnswerBytes)"),
            ("--max-log-bytes", "\(limits.maxLogBytes)"),
            ("--max-total-log-bytes", "\(limits.maxTotalLogBytes)"),
            ("--retain", "1d"),
            ("--lease-grace", "10s"),
        ]
        for (flag, value) in expected {
            guard let entry = entries.first(where: { $0.hasPrefix("\(flag) <") }) else {
                Issue.record("\(flag) is not in the help")
                continue
            }
            #expect(entry.contains("default \(value)") || entry.contains("default: \(value)"), "\(flag): \(entry)")
        }
    }
}
