import Foundation
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import PromiseServer
import PromiseStore
import Testing
@testable import promisectl

/// promisectl's output for people, from records made here (no daemon): the
/// exact text, durations included, since the clock is a parameter.
@Suite("promisectl: rendering a pipeline")
struct PipelineViewRenderingTests {
    private static let utc = TimeZone(identifier: "UTC")!
    /// 2026-11-25 12:00:05 UTC, in ms since 1970.
    private static let now: Int64 = 1_795_608_005_000

    private static func record(_ json: String) throws -> BlockingPromiseClient.Record {
        try BlockingPromiseClient.Record(JSONValue(parsing: json))
    }

    /// p → a, b, slow; join = all(a, b) under both; a stale child id (reused by an unrelated promise).
    private static func pipeline() throws -> [String: BlockingPromiseClient.Record] {
        let t = now - 5_000
        let records = [
            #"{"id":"p","state":"fulfilled","value":1,"kind":"created","created":\#(t),"settled":\#(t + 2_100),"children":["p/a","p/b","p/slow","p/gone","p/reused"]}"#,
            #"{"id":"p/a","state":"fulfilled","value":1,"kind":"then","on":"fulfilled","parent":"p","exec":["make","a"],"created":\#(t),"started":\#(t + 100),"settled":\#(t + 1_300),"exitStatus":0,"consumers":["p/join"]}"#,
            #"{"id":"p/b","state":"rejected","reason":{"code":2,"message":"no rule"},"kind":"then","on":"fulfilled","parent":"p","exec":["sh","-c","exit 2"],"created":\#(t),"started":\#(t + 100),"settled":\#(t + 1_000),"exitStatus":2,"consumers":["p/join"]}"#,
            #"{"id":"p/join","state":"rejected","reason":{"code":2,"message":"no rule"},"kind":"all","inputs":["p/a","p/b"],"created":\#(t),"settled":\#(t + 1_000)}"#,
            #"{"id":"p/slow","state":"pending","kind":"then","on":"fulfilled","parent":"p","exec":["sleep","9"],"created":\#(t),"started":\#(t + 1_200),"pid":77,"progress":0.4,"progressMessage":"half\nway"}"#,
            #"{"id":"p/reused","state":"pending","kind":"created","parent":null,"created":\#(t)}"#,
        ]
        return Dictionary(uniqueKeysWithValues: try records.map { let r = try record($0); return (r.id, r) })
    }

    private static func graph(maxNodes: Int = 100, batchSize: Int = 50, fetches: inout [[String]]) throws -> PromiseGraph {
        let records = try pipeline()
        var calls: [[String]] = []
        let graph = PromiseGraph.load(root: records["p"]!, maxNodes: maxNodes, batchSize: batchSize) { ids in
            calls.append(ids)
            return ids.compactMap { records[$0] }
        }
        fetches = calls
        return graph
    }

    @Test("the tree draws each promise once, refers back to a combinator seen before on its input's line, marks the failing step, and skips a reused id")
    func treeDrawing() throws {
        var fetches: [[String]] = []
        let graph = try Self.graph(fetches: &fetches)
        #expect(TreeRenderer(style: .box).lines(for: graph, now: Self.now) == [
            "p  fulfilled  [2.1s]",
            "├── p/a  exec: make a  fulfilled  [1.2s]  exit 0",
            "│   └── p/join  all of 2  rejected: no rule  [1.0s]",
            "├── p/b  exec: sh -c 'exit 2'  rejected: no rule  [900ms]  exit 2  ← failed here  → p/join (above)",
            "└── p/slow  exec: sleep 9  running pid 77  [3.8s]  40% half way",
        ])
        #expect(fetches == [["p/a", "p/b", "p/slow", "p/gone", "p/reused"], ["p/join"]])
    }

    @Test("the ASCII style uses no box-drawing characters")
    func asciiTree() throws {
        var fetches: [[String]] = []
        let lines = TreeRenderer(style: .ascii).lines(for: try Self.graph(fetches: &fetches), now: Self.now)
        #expect(lines[1] == "|-- p/a  exec: make a  fulfilled  [1.2s]  exit 0")
        #expect(lines[3] == "|-- p/b  exec: sh -c 'exit 2'  rejected: no rule  [900ms]  exit 2  <- failed here  -> p/join (above)")
        #expect(lines.allSatisfy { $0.unicodeScalars.allSatisfy(\.isASCII) })
    }

    @Test("fetches go in batches of at most batchSize, and maxNodes stops the walk with a last line saying so")
    func boundedFetches() throws {
        var fetches: [[String]] = []
        let graph = try Self.graph(maxNodes: 3, batchSize: 2, fetches: &fetches)
        #expect(fetches == [["p/a", "p/b"]])
        #expect(graph.nodes.map(\.id) == ["p", "p/a", "p/b"])
        #expect(graph.isTruncated)
        #expect(TreeRenderer(style: .box).lines(for: graph, now: Self.now).last
            == "… stopped at 3 promises (--max-nodes); more are under p")
        let whole = try Self.graph(maxNodes: 100, batchSize: 2, fetches: &fetches)
        #expect(fetches == [["p/a", "p/b"], ["p/slow", "p/gone"], ["p/reused"], ["p/join"]])
        #expect(!whole.isTruncated && whole.nodes.count == 5)
    }

    @Test("a chain of 5,000 steps is drawn without recursion, one line each")
    func deepChain() throws {
        var records: [String: BlockingPromiseClient.Record] = [:]
        for i in 0..<5_000 {
            let children = i < 4_999 ? #"["s\#(i + 1)"]"# : "[]"
            let parent = i == 0 ? "null" : #""s\#(i - 1)""#
            records["s\(i)"] = try Self.record(#"{"id":"s\#(i)","state":"pending","kind":"then","parent":\#(parent),"children":\#(children)}"#)
        }
        let graph = PromiseGraph.load(root: records["s0"]!, maxNodes: 10_000) { ids in ids.compactMap { records[$0] } }
        let lines = TreeRenderer(style: .ascii).lines(for: graph, now: Self.now)
        #expect(lines.count == 5_000)
        #expect(lines.last == String(repeating: " ", count: 4 * 4_998) + "`-- s4999  then  pending")
    }

    @Test("DOT escapes quotes and backslashes in ids and outlines the failing step")
    func dotEscaping() throws {
        let root = try Self.record(#"{"id":"a \"q\" \\ b","state":"rejected","reason":{"message":"x"},"kind":"created","children":[]}"#)
        let graph = PromiseGraph.load(root: root, maxNodes: 10) { _ in [] }
        #expect(DotRenderer().lines(for: graph, now: Self.now) == [
            #"digraph "a \"q\" \\ b" {"#,
            #"  node [shape=box, style="rounded,filled", fontname="monospace"];"#,
            ##"  "a \"q\" \\ b" [label="a \"q\" \\ b\nrejected", fillcolor="#f7d4d4", color="red", penwidth=3];"##,
            "}",
        ])
    }

    @Test("list's table aligns columns over every page, says running and queued")
    func table() throws {
        let records = try Self.pipeline()
        var table = PromiseTable(timeZone: Self.utc)
        let queued = try Self.record(#"{"id":"q","state":"pending","queued":true,"created":\#(Self.now - 61_000)}"#)
        #expect(table.lines(for: [RecordView(records["p/slow"]!), RecordView(queued)], now: Self.now) == [])
        #expect(table.lines(for: [RecordView(records["p/join"]!), RecordView(records["p/b"]!)], now: Self.now) == [])
        #expect(table.finish() == [
            "ID      STATE     PID  STARTED   DURATION  EXIT  PROGRESS",
            "p/slow  running   77   12:00:01  3.8s            40% half way",
            "q       queued         11:59:04  1m01s",
            "p/join  rejected       12:00:00  1.0s",
            "p/b     rejected       12:00:00  900ms     2",
        ])
        #expect(table.finish() == [])
    }

    @Test("list's table prints once it holds 1000 rows, then each page as it comes with columns that only grow")
    func tableFlushesAfterBufferedRows() throws {
        var table = PromiseTable(timeZone: Self.utc)
        let short = try (0..<PromiseTable.bufferedRows).map { try RecordView(Self.record(#"{"id":"i\#($0)","state":"pending"}"#)) }
        let printed = table.lines(for: short, now: Self.now)
        #expect(printed.count == PromiseTable.bufferedRows + 1)
        #expect(printed.first == "ID    STATE    PID  STARTED  DURATION  EXIT  PROGRESS")
        #expect(printed.last == "i999  pending")
        let long = try RecordView(Self.record(#"{"id":"a-longer-id","state":"pending"}"#))
        #expect(table.lines(for: [long], now: Self.now) == ["a-longer-id  pending"])
        #expect(table.finish() == [])
    }

    @Test("text columns pad every cell to its column's widest, two spaces apart, without trailing spaces")
    func textColumns() {
        #expect(TextColumns.lines(header: ["NAME", "LIMIT", "RUNNING", "QUEUED"], rows: [["cc", "2", "1", "0"], ["default-pool", "256", "0", "12"]]) == [
            "NAME          LIMIT  RUNNING  QUEUED",
            "cc            2      1        0",
            "default-pool  256    0        12",
        ])
    }

    @Test("get's details list the message, running pid, command, times and exit status")
    func details() throws {
        let records = try Self.pipeline()
        #expect(RecordDetails.lines(for: RecordView(records["p/slow"]!), now: Self.now, timeZone: Self.utc) == [
            "  message   half way",
            "  state     running, pid 77",
            "  command   sleep 9",
            "  started   12:00:01",
            "  duration  3.8s",
        ])
        #expect(RecordDetails.lines(for: RecordView(records["p/b"]!), now: Self.now, timeZone: Self.utc).last == "  exit      2")
    }

    @Test("watch's lines for progress, fulfilment, rejection and an unknown method")
    func eventLines() throws {
        let records = try Self.pipeline()
        func line(_ method: String, _ params: JSONValue) -> String {
            EventLine.text(for: .init(method: method, params: params), now: Self.now, timeZone: Self.utc)
        }
        #expect(line("progress", ["id": "b", "progress": 0.25, "message": "a\tb"]) == "12:00:05  b  25%  a b")
        #expect(line("settled", records["p/a"]!.json) == "12:00:05  p/a  fulfilled  1  [1.2s]  exit 0")
        #expect(line("settled", records["p/b"]!.json) == "12:00:05  p/b  rejected: no rule (code 2)  [900ms]  exit 2")
        #expect(line("hello", ["x": 1]) == #"12:00:05  hello  {"x":1}"#)
    }

    @Test("the progress bar fills in proportion, clamps, and cuts the message to the terminal's width")
    func progressBar() {
        let bar = ProgressBar(barWidth: 10, columns: 40)
        #expect(bar.line(id: "j", fraction: 0, message: nil) == "j [>         ]   0%")
        #expect(bar.line(id: "j", fraction: 0.55, message: "m") == "j [=====>    ]  55%  m")
        #expect(bar.line(id: "j", fraction: 1.5, message: nil) == "j [==========] 100%")
        #expect(bar.line(id: "j", fraction: 0.5, message: String(repeating: "x", count: 50))
            == "j [=====>    ]  50%  " + String(repeating: "x", count: 17) + "…")
        #expect(ProgressBar.plainLine(id: "j", fraction: 0.5, message: "half") == "j  50%  half")
    }

    @Test("durations in short forms")
    func durations() {
        #expect([0, 999, 1_000, 59_949, 60_000, 3_599_000, 3_600_000, 90_061_000].map { Format.duration(milliseconds: $0) }
            == ["0ms", "999ms", "1.0s", "59.9s", "1m00s", "59m59s", "1h00m", "1d01h"])
    }

    @Test("PROMISECTL_TTY forces terminal output on or off")
    func terminalOverride() {
        #expect(Terminal.isTerminal(-1, environment: ["PROMISECTL_TTY": "1"]))
        #expect(!Terminal.isTerminal(-1, environment: ["PROMISECTL_TTY": "0"]))
        #expect(!Terminal.isTerminal(-1, environment: [:]))
    }
}
