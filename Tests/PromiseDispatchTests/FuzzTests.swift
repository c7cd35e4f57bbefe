import Foundation
import PromiseJSON
import PromiseModel
import PromiseRPC
@testable import PromiseDispatch
import PromiseRegistry
import PromiseServer
import PromiseTestSupport
import Testing

/// Seeded fuzzing of the framing and JSON-RPC layer, in process: the real
/// ``LineFramer`` feeding the real ``Dispatcher`` and ``Registry`` (fake
/// timers and processes, see RPCTestDoubles.swift). Whatever comes in, every
/// message out must be strict JSON on one line and a valid JSON-RPC 2.0
/// response to something that was asked, or a valid notification; nothing
/// may crash or go unanswered. A failure names its seed: rerun it with
/// `FUZZ_SEED=<seed> swift test --filter FuzzTests`; `FUZZ_SCALE=n` runs n
/// times as many inputs (scripts/fuzz-soak.sh).
@Suite("Fuzzing the framer and the dispatcher")
struct FuzzTests {
    /// What one fuzz run did.
    struct Summary: Sendable {
        var lines = 0
        var answers = 0
        var notifications = 0
        var failures: [String] = []

        static func + (a: Summary, b: Summary) -> Summary {
            Summary(lines: a.lines + b.lines, answers: a.answers + b.answers,
                    notifications: a.notifications + b.notifications, failures: a.failures + b.failures)
        }
    }

    /// Small limits, so that the fuzzer reaches them.
    static var limits: DaemonLimits {
        var limits = DaemonLimits()
        limits.maxBatchSize = 8
        limits.maxWaitersPerConnection = 30
        limits.maxSubscriptionsPerConnection = 30
        limits.maxPromises = 150
        limits.maxLineBytes = 64 * 1024
        return limits
    }

    @Test("over 100,000 seeded random, mutated and hostile lines, split at random points, all get valid JSON-RPC answers")
    func framerAndDispatcherSurviveHostileLines() async {
        let baseSeed = FuzzSettings.seed(0x5EED_F022)
        let perWorker = 50_000 * FuzzSettings.scale
        let started = ContinuousClock.now
        // Two workers, each with its own registry, one per core, on threads
        // of their own: seconds of CPU work must not hold the cooperative
        // pool that the other tests share.
        let seeds = [baseSeed, baseSeed &+ 0x9E37_79B9]
        async let first = Self.onOwnThread { Self.run(seed: seeds[0], lines: perWorker) }
        async let second = Self.onOwnThread { Self.run(seed: seeds[1], lines: perWorker) }
        let summary = await first + second
        let elapsed = ContinuousClock.now - started
        print("FuzzTests: \(summary.lines) lines, \(summary.answers) answers and \(summary.notifications) notifications checked in \(elapsed) (seed \(baseSeed))")
        #expect(summary.failures.isEmpty, "\(summary.failures.count) failures:\n\(summary.failures.joined(separator: "\n"))")
        #expect(summary.lines >= 100_000)
        #expect(summary.answers > summary.lines / 2)
        #expect(summary.notifications > 0)
    }

    static func onOwnThread(_ body: @escaping @Sendable () -> Summary) async -> Summary {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: body()) }
        }
    }

    /// Feeds `lines` lines on a few connections of a fresh harness at a time,
    /// firing timers and ending fake processes in between.
    static func run(seed: UInt64, lines total: Int) -> Summary {
        let limits = Self.limits
        var inputs = FuzzInputs(seed: seed, maxBatchSize: limits.maxBatchSize)
        var random = SeededRandom(seed: ~seed)
        let oracle = FuzzOracle(seed: seed, maxBatchSize: limits.maxBatchSize)
        var lines = 0
        var session = 0
        while lines < total && !oracle.isFull {
            session += 1
            let harness = RPCHarness(limits: limits)
            var peers = (0..<3).map { _ in FuzzOracle.Peer(harness.connect(), maxLineBytes: limits.maxLineBytes) }
            for round in 0..<random.int(100...600) where lines < total && !oracle.isFull {
                let peer = random.pick(peers)
                var stream: [UInt8] = []
                for _ in 0..<random.int(1...6) {
                    stream += inputs.line()
                    stream += random.percent(15) ? [0x0D, 0x0A] : [0x0A]
                }
                if random.percent(5) { stream.removeLast() }  // the line ends in the next piece
                oracle.context = "session \(session), round \(round), connection \(peer.peer.connectionID)"
                lines += feed(stream, to: peer, splitBy: &random, harness: harness, peers: peers, oracle: oracle)

                switch random.int(0..<100) {
                case 0..<6:
                    harness.loop.advance(by: UInt64(random.int(0...60)))
                case 6..<9:
                    let running = harness.loop.processes.filter { !$0.hasExited }
                    if !running.isEmpty { exitRandomly(random.pick(running), &random, &inputs) }
                case 9:
                    let index = random.int(0..<peers.count)
                    lines += close(peers[index], harness: harness, peers: peers, oracle: oracle)
                    peers[index] = FuzzOracle.Peer(harness.connect(), maxLineBytes: limits.maxLineBytes)
                default:
                    continue
                }
                oracle.context = "session \(session), after round \(round)"
                for other in peers { oracle.check(other, current: nil) }
            }
            for peer in peers { lines += close(peer, harness: harness, peers: peers, oracle: oracle) }
        }
        return Summary(lines: lines, answers: oracle.answersChecked, notifications: oracle.notificationsChecked,
                       failures: oracle.failures)
    }

    /// Feeds `stream` to the peer's framer in random pieces, checks each line
    /// it frames against a plain model of the framing, dispatches it and
    /// checks every answer. Returns the number of lines dispatched.
    private static func feed(
        _ stream: [UInt8], to peer: FuzzOracle.Peer, splitBy random: inout SeededRandom, harness: RPCHarness,
        peers: [FuzzOracle.Peer], oracle: FuzzOracle
    ) -> Int {
        peer.modelPartial += stream
        while let newline = peer.modelPartial.firstIndex(of: 0x0A) {
            var line = Array(peer.modelPartial[..<newline])
            if line.last == 0x0D { line.removeLast() }
            peer.modelLines.append(line)
            peer.modelPartial.removeSubrange(...newline)
        }
        var dispatched = 0
        var offset = 0
        while offset < stream.count {
            let size = random.percent(30) ? random.int(1...3) : random.int(1...stream.count)
            let piece = stream[offset..<min(stream.count, offset + size)]
            offset += piece.count
            do {
                try peer.framer.feed(piece) { line in
                    dispatch(line, on: peer, harness: harness, peers: peers, oracle: oracle)
                    dispatched += 1
                }
            } catch {
                oracle.fail("the framer refused a stream with lines under its limit: \(error)")
                return dispatched
            }
        }
        if !peer.modelLines.isEmpty {
            oracle.fail("the framer did not deliver \(peer.modelLines.count) complete lines")
            peer.modelLines.removeAll()
        }
        return dispatched
    }

    private static func dispatch(
        _ line: [UInt8], on peer: FuzzOracle.Peer, harness: RPCHarness, peers: [FuzzOracle.Peer], oracle: FuzzOracle
    ) {
        if peer.modelLines.isEmpty {
            oracle.fail("the framer delivered a line the stream does not end yet: \(FuzzSettings.show(line))")
        } else {
            let expected = peer.modelLines.removeFirst()
            if expected != line {
                oracle.fail("the framer delivered \(FuzzSettings.show(line)), expected \(FuzzSettings.show(expected))")
            }
        }
        if line.count % 8 == 0 { checkRoundTrip(line, oracle) }
        let expectation = oracle.expectation(for: line)
        harness.dispatcher.handle(line: line, from: peer.peer)
        oracle.line = line
        for other in peers {
            oracle.check(other, current: other === peer ? expectation : nil)
        }
        oracle.line = nil
    }

    /// Ends a connection the way the daemon does at end of stream: the last
    /// line without its newline is still handled, then the peer closes.
    private static func close(
        _ peer: FuzzOracle.Peer, harness: RPCHarness, peers: [FuzzOracle.Peer], oracle: FuzzOracle
    ) -> Int {
        var dispatched = 0
        var model = peer.modelPartial
        if model.last == 0x0D { model.removeLast() }
        let last = peer.framer.finish()
        if last != (peer.modelPartial.isEmpty ? nil : model) {
            oracle.fail("finish() gave \(last.map { FuzzSettings.show($0) } ?? "nil") for \(FuzzSettings.show(peer.modelPartial))")
        }
        peer.modelPartial = []
        if let last {
            peer.modelLines = [last]
            dispatch(last, on: peer, harness: harness, peers: peers, oracle: oracle)
            dispatched = 1
        }
        harness.close(peer.peer)
        oracle.closed(peer)
        for other in peers where other !== peer { oracle.check(other, current: nil) }
        return dispatched
    }

    /// Ends a fake `then … exec` process with a random status and output,
    /// JSON or not (its stdout becomes the child's value).
    private static func exitRandomly(_ process: RPCFakeLoop.Process, _ random: inout SeededRandom, _ inputs: inout FuzzInputs) {
        let stdout: String
        switch random.int(0..<4) {
        case 0: stdout = String(decoding: inputs.text(inputs.value(depth: 3)), as: UTF8.self)
        case 1: stdout = String(decoding: inputs.line(), as: UTF8.self) + "\n"
        case 2: stdout = String(repeating: "[", count: 600)
        default: stdout = inputs.string()
        }
        process.exit(Int32(random.pick([0, 0, 1, 127, 255])), stdout: stdout, stderr: inputs.string(),
                     signal: random.percent(10) ? 9 : nil, stdoutTruncated: random.percent(10))
    }

    /// What the strict parser accepts, the daemon's writer must write back to the same value.
    private static func checkRoundTrip(_ line: [UInt8], _ oracle: FuzzOracle) {
        guard let value = try? JSONValue(parsing: line) else { return }
        let text = value.serialized()
        guard let again = try? JSONValue(parsing: text), again == value else {
            oracle.fail("\(FuzzSettings.show(line)) parses, but its serialization \(FuzzSettings.show(text)) does not parse back to it")
            return
        }
    }

    /// Found by this fuzzer: params are capped at `maxValueDepth` levels, but
    /// each combinator over a combinator wraps the value in one more array, so
    /// a chain of them once nested its value past the 512 levels a strict
    /// parser reads. A combined value past `maxValueDepth` is now a rejection.
    @Test("a chain of combinators over a deep value still answers JSON a strict parser can read")
    func deepValuesComeBackReadable() {
        let harness = RPCHarness()
        let peer = harness.connect()
        let depth = harness.limits.maxValueDepth - 1  // params add one level
        let deep = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        harness.send(#"{"jsonrpc":"2.0","id":1,"method":"create","params":{"id":"c0"}}"#, from: peer)
        harness.send(#"{"jsonrpc":"2.0","id":2,"method":"resolve","params":{"id":"c0","value":\#(deep)}}"#, from: peer)
        let chain = 520 - depth
        for link in 1...chain {
            harness.send(#"{"jsonrpc":"2.0","id":"all","method":"all","params":{"ids":["c\#(link - 1)"],"id":"c\#(link)"}}"#, from: peer)
        }
        harness.send(#"{"jsonrpc":"2.0","id":"last","method":"get","params":{"id":"c\#(chain)"}}"#, from: peer)
        #expect(peer.sent.count == chain + 3)
        let resolved = peer.sent.count > 1 ? try? JSONValue(parsing: peer.sent[1]) : nil
        #expect(resolved?["result"]?["state"] == "fulfilled", "the value at the depth limit is accepted")
        let unreadable = peer.sent.indices.filter { (try? JSONValue(parsing: peer.sent[$0])) == nil }
        #expect(unreadable.isEmpty, "\(unreadable.count) answers are not readable, the first: \(unreadable.first.map { FuzzSettings.show(peer.sent[$0], limit: 120) } ?? "")")
        let last = peer.sent.last.flatMap { try? JSONValue(parsing: $0) }
        #expect(last?["result"]?["state"] == "rejected")
        #expect(last?["result"]?["reason"]?["code"] == -32004)
        #expect(last?["result"]?["reason"]?["data"]?["limit"] == "maxValueDepth")
    }

    @Test("the framer agrees with a plain split-on-newline model on random streams cut at random points, limits included")
    func framerMatchesModel() {
        let seed = FuzzSettings.seed(0xF4A3_E5)
        var random = SeededRandom(seed: seed)
        var failures: [String] = []
        let streams = 3_000 * FuzzSettings.scale
        var linesSeen = 0
        for streamIndex in 0..<streams where failures.count < 10 {
            let limit = random.int(0...12)
            let alphabet: [UInt8] = [0x0A, 0x0D, 0x61, 0x62, 0x20, 0x00, 0xFF]
            let stream = (0..<random.int(0...40)).map { _ in random.pick(alphabet) }
            // The model: split on "\n", drop one "\r" before it, the rest is the last line.
            var expected: [[UInt8]] = []
            var tooLong = false
            var pieces = stream.split(separator: 0x0A, omittingEmptySubsequences: false).map(Array.init)
            let tail = pieces.removeLast()
            for piece in pieces {
                let line = piece.last == 0x0D ? Array(piece.dropLast()) : piece
                if line.count > limit { tooLong = true; break }
                expected.append(line)
            }
            var lastLine: [UInt8]?
            if !tooLong && !tail.isEmpty {
                let line = tail.last == 0x0D ? Array(tail.dropLast()) : tail
                if line.count > limit { tooLong = true } else { lastLine = line }
            }

            var framer = LineFramer(maxLineBytes: limit)
            var got: [[UInt8]] = []
            var threw = false
            var offset = 0
            while offset < stream.count {
                let end = min(stream.count, offset + random.int(1...8))
                do {
                    try framer.feed(stream[offset..<end]) { got.append($0) }
                } catch {
                    threw = true
                }
                offset = end
            }
            let finished = framer.finish()
            linesSeen += got.count
            if got != expected || threw != tooLong || finished != lastLine {
                failures.append("seed \(seed), stream \(streamIndex), limit \(limit): \(FuzzSettings.show(stream)): lines \(got) (expected \(expected)), threw \(threw) (expected \(tooLong)), finish \(String(describing: finished)) (expected \(String(describing: lastLine)))")
            }
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
        #expect(linesSeen > streams)
    }
}
