import Foundation
@testable import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
import PromiseServer
@testable import PromiseDispatch
import PromiseRegistry
import PromiseTestSupport

/// One seeded simulation of the daemon in process: the generator's steps
/// against the real dispatcher, registry, group commit and SQLite store, with
/// the simulation's clock, clean restarts (stop, close, reopen) and crash
/// restarts (drop everything not committed), every message checked by the
/// model, and a sweep of every record before and after each restart.
struct SimulationRun {
    /// What a run did, for the test's report.
    struct Summary: Sendable {
        var seed: UInt64
        var steps = 0
        var requests = 0
        var messages = 0
        var cleanRestarts = 0
        var crashRestarts = 0
        var promisesAtEnd = 0
        var largestStoreBytes = 0
        var elapsed: Duration = .zero
        var longestStep: Duration = .zero
        /// CPU time of the longest turn of the loop (a line, a piece of queued work, a timer).
        var longestTurn: Duration = .zero
        /// Links of the longest combinator chain the run made.
        var longestCombinatorChain = 0
        var failures: [String] = []
    }

    let options: SimulationOptions
    let directory: String

    init(options: SimulationOptions) {
        self.options = options
        // A RAM-backed folder when there is one: every commit is fsynced.
        let base = FileManager.default.isWritableFile(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
        directory = base + "/promise-simulation-\(options.seed)-\(UUID().uuidString)"
    }

    var limits: DaemonLimits {
        var limits = DaemonLimits()
        limits.maxPromises = options.maxPromises
        limits.maxValueBytes = options.maxValueBytes
        limits.maxBatchAnswerBytes = options.maxBatchAnswerBytes
        return limits
    }

    func run() -> Summary {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let began = ContinuousClock.now
        let clock = SimulationClock()
        let meter = TurnMeter()
        let outbox = SimulationOutbox()
        let model = SimulationModel(options: options, now: { clock.now })
        var summary = Summary(seed: options.seed)
        var nextConnection: UInt64 = 0
        let sweeper = options.clients

        func start() -> SimulationDaemon? {
            let files = ["", "-wal"].map { directory + "/promises.sqlite3" + $0 }
            let bytes = files.compactMap { try? FileManager.default.attributesOfItem(atPath: $0)[.size] as? Int }.reduce(0, +)
            summary.largestStoreBytes = max(summary.largestStoreBytes, bytes)
            if bytes > options.maxStoreBytes {
                model.fail("the store's files hold \(bytes) bytes, over the cap of \(options.maxStoreBytes)")
            }
            do {
                return try SimulationDaemon(directory: directory, limits: limits, retain: options.retainMilliseconds,
                                            clock: clock, meter: meter, outbox: outbox, clients: options.clients,
                                            nextConnection: &nextConnection)
            } catch {
                model.fail("the daemon does not start: \(error)")
                return nil
            }
        }

        /// Hands every message sent so far to the model, in the order sent.
        func deliver() {
            for message in outbox.messages {
                summary.messages += 1
                model.receive(client: message.client, bytes: message.bytes)
            }
            outbox.messages.removeAll()
            if let problem = outbox.malformed.first { model.fail(problem) }
        }

        /// Every record the daemon holds, read with `list` pages by the sweeper client, and `info`.
        func sweep(_ daemon: SimulationDaemon) -> [[UInt8]: JSONValue] {
            var records: [[UInt8]: JSONValue] = [:]
            var cursor: JSONValue = .null
            repeat {
                var params: [String: JSONValue] = ["limit": 1000]
                if !cursor.isNull { params["cursor"] = cursor }
                let line = model.makeLine(client: sweeper, method: "list", params: .object(params))
                daemon.dispatcher.handle(line: line.bytes, from: daemon.peers[sweeper])
                daemon.settle()
                deliver()
                guard let page = model.sweepResults[line.requests[0].rpcID] else {
                    model.fail("the sweep's list was not answered")
                    return records
                }
                for record in page["promises"]?.arrayValue ?? [] {
                    if let id = record["id"]?.stringValue { records[Array(id.utf8)] = record }
                }
                cursor = page["cursor"] ?? .null
            } while !cursor.isNull && !model.hasFailed
            let info = model.makeLine(client: sweeper, method: "info", params: [:])
            daemon.dispatcher.handle(line: info.bytes, from: daemon.peers[sweeper])
            daemon.settle()
            deliver()
            if let counts = model.sweepResults[info.requests[0].rpcID], counts["promises"]?.intValue != records.count {
                model.fail("info counts \(counts["promises"] ?? .null) promises, list gives \(records.count)")
            }
            return records
        }

        guard var daemon = start() else {
            summary.failures = model.failures
            return summary
        }
        while summary.steps < options.steps && !model.hasFailed {
            let step = model.nextStep()
            summary.steps += 1
            let started = ContinuousClock.now
            meter.reset()
            switch step {
            case .turn(let lines):
                for line in lines {
                    summary.requests += line.requests.count
                    daemon.handle(line: line.bytes, from: daemon.peers[line.client])
                }
                daemon.settle()
                deliver()
                model.expectAnswered(lines)
            case .closeClient(let client):
                daemon.reconnect(client, nextConnection: &nextConnection, outbox: outbox)
                deliver()
                model.closed(client: client)
            case .advanceClock(let milliseconds):
                daemon.advance(by: Int64(milliseconds))
                deliver()
            case .restart(clean: true):
                let before = sweep(daemon)
                guard daemon.stop() else {
                    model.fail("a clean stop did not finish")
                    break
                }
                deliver()
                model.stopped()
                summary.cleanRestarts += 1
                guard let next = start() else { break }
                daemon = next
                model.verifyRestart(records: sweep(daemon), before: before)
            case .restart(clean: false):
                // Between turns nothing is in flight: what the sweep reads is what the crash keeps.
                let before = sweep(daemon)
                daemon.crash()
                model.stopped()
                summary.crashRestarts += 1
                guard let next = start() else { break }
                daemon = next
                model.verifyRestart(records: sweep(daemon), before: before)
            case .crashDuringTurn(let lines):
                for line in lines {
                    summary.requests += line.requests.count
                    daemon.handle(line: line.bytes, from: daemon.peers[line.client])
                }
                // What was sent before the crash was delivered; nothing else is.
                deliver()
                daemon.crash()
                model.stopped()
                summary.crashRestarts += 1
                guard let next = start() else { break }
                daemon = next
                model.verifyRestart(records: sweep(daemon), before: nil)
            }
            let elapsed = ContinuousClock.now - started
            let longestTurn = meter.longest
            if case .turn = step { summary.longestTurn = max(summary.longestTurn, longestTurn) }
            if !model.hasFailed, let check = model.spotCheck(client: sweeper) {
                daemon.dispatcher.handle(line: check.bytes, from: daemon.peers[sweeper])
                daemon.settle()
                deliver()
                model.expectAnswered([check])
            }
            summary.longestStep = max(summary.longestStep, elapsed)
            if daemon.registry.count > options.maxPromises {
                model.fail("\(daemon.registry.count) promises held, over the cap of \(options.maxPromises)")
            }
            if longestTurn > options.stallBound, case .turn = step {
                model.fail("one turn took \(longestTurn) of CPU (the step \(elapsed) in all), "
                    + "past the stall bound of \(options.stallBound)")
            }
        }
        if !model.hasFailed { _ = sweep(daemon) }
        summary.promisesAtEnd = daemon.registry.count
        summary.longestCombinatorChain = model.longestCombinatorChain
        daemon.crash()
        summary.failures = model.failures
        summary.elapsed = ContinuousClock.now - began
        return summary
    }
}
