import Foundation
@testable import PromiseModel
@testable import PromiseRegistry
import Testing

/// What a step's monitor writes (StepOutputFiles.swift, monitor_relay.c) and
/// how a daemon reads it back, and the monitor's command line.
@Suite("StepOutputFiles: a step's output and outcome, as its monitor writes them")
struct StepOutputFilesTests {
    /// A fresh folder, removed by the caller.
    private func folder() throws -> String {
        let path = NSTemporaryDirectory() + "steps-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        return path
    }

    private func write(_ text: String, to path: String) {
        #expect(FileManager.default.createFile(atPath: path, contents: Data(text.utf8)))
    }

    /// Writes a step's `.out` and `.err`, and its result line naming `stdoutBytes`.
    private func writeStep(_ files: StepOutputFiles, out: String, err: String, stdoutBytes: Int) {
        write(out, to: files.prefix + ".out")
        write(err, to: files.prefix + ".err")
        write("promised-step-result 1 status=0 signal=0 stdout=\(stdoutBytes) truncated=0 stderr=\(err.utf8.count)\n",
              to: files.prefix + ".result")
    }

    @Test("a result line gives the exit status, the signal, the stdout kept, whether it passed the limit, and the stderr total")
    func resultLineParses() {
        let exited = StepResultLine(parsing: "promised-step-result 1 status=3 signal=0 stdout=5 truncated=0 stderr=12\n")
        #expect(exited == StepResultLine(exitStatus: 3, signal: nil, stdoutBytes: 5, stdoutTruncated: false, stderrTotal: 12))
        let killed = StepResultLine(parsing: "promised-step-result 1 status=137 signal=9 stdout=0 truncated=1 stderr=0\n")
        #expect(killed?.signal == 9)
        #expect(killed?.exitStatus == 137)
        #expect(killed?.stdoutTruncated == true)
    }

    @Test("a result line cut short, of another version, repeated or out of range is refused")
    func badResultLinesAreRefused() {
        for text in [
            "", "promised-step-result 1 status=0 signal=0 stdout=5 truncated=0 stderr=0",
            "promised-step-result 2 status=0 signal=0 stdout=5 truncated=0 stderr=0\n",
            "promised-step-result 1 status=0 signal=0 stdout=5 truncated=0\n",
            "promised-step-result 1 status=0 status=0 stdout=5 truncated=0 stderr=0\n",
            "promised-step-result 1 status=-1 signal=0 stdout=5 truncated=0 stderr=0\n",
            "promised-step-result 1 status=0 signal=0 stdout=5 truncated=2 stderr=0\n",
            "promised-step-result 1 status=0 signal=200 stdout=5 truncated=0 stderr=0\n",
            "promised-step-result 1 status=0 signal=0 stdout=x truncated=0 stderr=0\n",
        ] {
            #expect(StepResultLine(parsing: text) == nil, "\(text)")
        }
    }

    @Test("the files of a step are named after its sequence; other names in the folder are not a step's")
    func fileNamesGiveTheSequence() {
        #expect(StepOutputFiles(folder: "/s", sequence: 42).prefix == "/s/42")
        #expect(StepOutputFiles.sequence(ofFileNamed: "42.out") == 42)
        #expect(StepOutputFiles.sequence(ofFileNamed: "7.result.tmp") == 7)
        #expect(StepOutputFiles.sequence(ofFileNamed: "0.err.tmp") == 0)
        for name in ["42", ".out", "x.out", "042.out", "-1.out", "4 2.err", "42.result.bak", "..", "+4.out"] {
            #expect(StepOutputFiles.sequence(ofFileNamed: name) == nil, "\(name)")
        }
    }

    @Test("a written outcome is read with stdout as kept and the last limit bytes of stderr")
    func writtenOutcomeIsRead() throws {
        let folder = try folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let files = StepOutputFiles(folder: folder, sequence: 9)
        write("done\n", to: files.prefix + ".out")
        write("line one\nline two\n", to: files.prefix + ".err")
        #expect(files.written(limit: 100) == nil, "no outcome before the result is written")
        write("promised-step-result 1 status=0 signal=0 stdout=5 truncated=0 stderr=40\n", to: files.prefix + ".result")
        let written = try #require(files.written(limit: 9))
        #expect(written.outcome == ProcessOutcome(exitStatus: 0, stdout: Array("done\n".utf8), stderr: Array("line two\n".utf8)))
        #expect(written.stderrTotal == 40)
        files.remove()
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).isEmpty)
    }

    @Test("a stdout file that does not hold the bytes the result names is no outcome (cut short by a crash)")
    func stdoutShortOfTheResultIsNoOutcome() throws {
        let folder = try folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let files = StepOutputFiles(folder: folder, sequence: 1)
        writeStep(files, out: "do", err: "", stdoutBytes: 5)
        #expect(files.written(limit: 100) == nil)
    }

    @Test("a step file that is a symbolic link is not followed")
    func linkIsNotFollowed() throws {
        let folder = try folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let files = StepOutputFiles(folder: folder, sequence: 1)
        writeStep(files, out: "secret", err: "", stdoutBytes: 6)
        #expect(files.written(limit: 100) != nil)
        try FileManager.default.moveItem(atPath: files.prefix + ".out", toPath: folder + "/elsewhere")
        try FileManager.default.createSymbolicLink(atPath: files.prefix + ".out", withDestinationPath: folder + "/elsewhere")
        #expect(files.written(limit: 100) == nil)
    }

    @Test("a monitor's command line says where its files are; the daemon's own or a broken one is no monitor's")
    func monitorCommandLine() {
        let arguments = StepMonitor.arguments(for: ["cc", "-c", "x.c"], graceMilliseconds: 500, files: "/s/4", limit: 10)
        #expect(arguments == ["promised", "--step-monitor", "500", "--files", "/s/4", "--limit", "10", "--", "cc", "-c", "x.c"])
        let invocation = StepMonitor.Invocation(arguments)
        #expect(invocation == StepMonitor.Invocation(argv: ["cc", "-c", "x.c"], graceMilliseconds: 500, files: "/s/4", limit: 10))
        #expect(StepMonitor.Invocation(StepMonitor.arguments(for: ["true"], graceMilliseconds: 1))?.files == nil)
        for broken in [
            ["promised"], ["promised", "--step-monitor", "x", "--", "true"], ["promised", "--step-monitor", "1", "--"],
            ["promised", "--step-monitor", "1", "--files", "", "--", "true"],
            ["promised", "--step-monitor", "1", "--limit", "-3", "--", "true"],
            ["promised", "--step-monitor", "1", "--other", "v", "--", "true"],
            ["promised", "--socket", "/s", "--", "true"],
        ] {
            #expect(StepMonitor.Invocation(broken) == nil, "\(broken)")
        }
    }
}
