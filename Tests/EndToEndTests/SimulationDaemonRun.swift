import Foundation
import PromiseJSON
import PromiseModel
import PromiseRPC
import PromiseTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A client's socket to the daemon, read line by line with a bound on each wait.
final class SimulationSocket {
    let fd: Int32
    private var buffer: [UInt8] = []
    /// Where in `buffer` to look for the next newline: no byte is scanned twice.
    private var scanned = 0
    private(set) var reachedEnd = false

    init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard UnixSocketAddress(path: path)?.connect(fd) == 0 else {
            let error = errno
            close(fd)
            throw E2EHarnessError("connect to \(path) failed: errno \(error)")
        }
    }

    deinit { close(fd) }

    @discardableResult
    func send(_ line: [UInt8]) -> Bool { E2ERawConnection.sendAll(fd, line + [UInt8(ascii: "\n")]) }

    /// The next line (without its newline); nil at end of input or once `milliseconds` pass.
    func readLine(milliseconds: Int32) -> [UInt8]? {
        let deadline = ContinuousClock.now + .milliseconds(Int(milliseconds))
        while true {
            if let newline = buffer[scanned...].firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(buffer[..<newline])
                buffer.removeFirst(newline + 1)
                scanned = 0
                return line
            }
            scanned = buffer.count
            if reachedEnd { return nil }
            let left = deadline - ContinuousClock.now
            let wait = max(0, Int32(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000))
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, wait)
            if ready < 0 && errno == EINTR { continue }
            if ready <= 0 { return nil }
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            let count = read(fd, &chunk, chunk.count)
            if count <= 0 {
                reachedEnd = true
                continue
            }
            buffer.append(contentsOf: chunk[..<count])
        }
    }
}

/// Measures, on a connection of its own, how long the daemon takes to answer
/// `info` while the simulation runs: what any other client would wait.
final class SimulationProbe: @unchecked Sendable {  // `lock` guards everything below `bound`.
    /// Longer answers are stalls.
    private let bound: Duration
    private let lock = NSLock()
    private var paused = true
    private var stopped = false
    private var socketPath: String
    private(set) var samples = 0
    private(set) var longest: Duration = .zero
    private var slow: [String] = []
    private let done = DispatchSemaphore(value: 0)

    init(socketPath: String, bound: Duration) {
        self.socketPath = socketPath
        self.bound = bound
    }

    func start() {
        let thread = Thread { [self] in
            run()
            done.signal()
        }
        thread.start()
    }

    /// Probes only while the daemon is meant to be up.
    func pause() { lock.withLock { paused = true } }
    func resume() { lock.withLock { paused = false } }

    func stop() -> (samples: Int, longest: Duration, slow: [String]) {
        lock.withLock { stopped = true }
        done.wait()
        return lock.withLock { (samples, longest, slow) }
    }

    private func run() {
        var socket: SimulationSocket?
        var generation = 0
        var number = 0
        while true {
            let (isStopped, isPaused) = lock.withLock { (stopped, paused) }
            if isStopped { return }
            if isPaused {
                socket = nil
                generation += 1
                Thread.sleep(forTimeInterval: 0.01)
                continue
            }
            if socket == nil { socket = try? SimulationSocket(path: socketPath) }
            guard let open = socket else {
                Thread.sleep(forTimeInterval: 0.01)
                continue
            }
            number += 1
            let sent = ContinuousClock.now
            open.send(Array(#"{"jsonrpc":"2.0","id":\#(number),"method":"info"}"#.utf8))
            let line = open.readLine(milliseconds: 10_000)
            let elapsed = ContinuousClock.now - sent
            let wasPaused = lock.withLock { paused }
            if line == nil || wasPaused {
                // The daemon went away (a restart): not a stall.
                socket = nil
                continue
            }
            lock.withLock {
                samples += 1
                longest = max(longest, elapsed)
                if elapsed > bound && slow.count < 10 { slow.append("info took \(elapsed)") }
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }
}

/// One seeded simulation against the real `promised` (durable, SQLite) over
/// its socket: the generator's steps from several clients, each answer's
/// latency bounded, clean (SIGTERM) and kill -9 restarts, a sweep of every
/// record before and after each restart, the daemon's memory bounded.
struct SimulationDaemonRun {
    struct Summary: Sendable {
        var seed: UInt64
        var steps = 0
        var requests = 0
        var cleanRestarts = 0
        var crashRestarts = 0
        var longestAnswer: Duration = .zero
        var probeSamples = 0
        var longestProbe: Duration = .zero
        var largestRSSKiB = 0
        /// Steps with hostile traffic beside them, the connections it flooded and the progress it sent.
        var hostileSteps = 0
        var connectionsFlooded = 0
        var progressSentToSilentReaders = 0
        /// Links of the longest combinator chain the run made.
        var longestCombinatorChain = 0
        var failures: [String] = []
    }

    let options: SimulationOptions
    /// The daemon's resident memory may not pass this.
    let memoryCapKiB = 512 * 1024

    func run() -> Summary {
        var summary = Summary(seed: options.seed)
        let model = SimulationModel(options: options, now: { Int64(E2E.nowMilliseconds()) })
        // The daemon's clock is real: its timers and retention run a little late.
        model.clockSlack = 1_500
        var arguments = ["--max-promises", "\(options.maxPromises)", "--max-value-bytes", "\(options.maxValueBytes)",
                         "--max-batch-answer-bytes", "\(options.maxBatchAnswerBytes)",
                         "--log-level", "error",
                         // The model expects a restart to end every lease at once, as without a grace.
                         "--lease-grace", "0"]
        if let retain = options.retainMilliseconds { arguments += ["--retain", "\(retain)ms"] }
        let daemon: E2EDurableDaemon
        do {
            daemon = try E2EDurableDaemon(extraArguments: arguments)
            try daemon.start()
        } catch {
            summary.failures = ["seed \(options.seed): the daemon does not start: \(error)"]
            return summary
        }
        defer {
            // SIMULATION_KEEP=1 keeps a failed run's folder (store, logs) for inspection.
            if model.hasFailed && SimulationOptions.environment["SIMULATION_KEEP"] == "1" {
                daemon.kill9()
                print("SimulationDaemon seed \(options.seed): kept \(daemon.directory)")
            } else {
                daemon.remove()
            }
        }
        let probe = SimulationProbe(socketPath: daemon.socketPath, bound: options.wallStallBound)
        probe.start()
        probe.resume()
        var sockets: [SimulationSocket] = []
        let sweeper = options.clients

        func connectAll() {
            sockets = []
            for _ in 0...options.clients {
                do {
                    sockets.append(try SimulationSocket(path: daemon.socketPath))
                } catch {
                    return model.fail("a client cannot connect: \(error)")
                }
            }
        }

        /// Hands the model what `client` has received, waiting up to `milliseconds` for the first line.
        func readAvailable(_ client: Int, milliseconds: Int32 = 0) {
            var wait = milliseconds
            while let line = sockets[client].readLine(milliseconds: wait) {
                model.receive(client: client, bytes: line)
                wait = 0
            }
        }

        /// Reads `client`'s messages until every request of `line` but `wait`s is answered.
        func awaitAnswers(_ line: SimulationLine, sent: ContinuousClock.Instant, isSweep: Bool = false) {
            let expected = line.requests.filter { $0.method != "wait" }.map(\.rpcID)
            while !model.hasFailed, expected.contains(where: { !model.isAnswered($0) }) {
                guard let bytes = sockets[line.client].readLine(milliseconds: 20_000) else {
                    return model.fail("no answer within 20 s (or the connection closed) to \(line.summary)")
                }
                model.receive(client: line.client, bytes: bytes)
            }
            let elapsed = ContinuousClock.now - sent
            if !isSweep { summary.longestAnswer = max(summary.longestAnswer, elapsed) }
            // A sweep reads every record, megabytes: the probe measures what others wait meanwhile.
            if elapsed > options.wallStallBound && !isSweep && !model.hasFailed {
                model.fail("an answer took \(elapsed), past the stall bound of \(options.wallStallBound): \(line.summary)")
            }
        }

        /// While ``KnownDefect/leaseOpenAtStop`` is avoided: every client
        /// closes (its leases expire, as documented) and what was sent to it
        /// is read, before a SIGTERM.
        func closeBeforeStop() {
            guard options.avoiding.contains(.leaseOpenAtStop) else { return }
            for client in sockets.indices {
                readAvailable(client)
                model.closed(client: client)
                // The old connection closes as the new one opens.
                sockets[client] = (try? SimulationSocket(path: daemon.socketPath)) ?? sockets[client]
            }
            // Wait until the daemon has closed the old connections (and so expired their
            // leases): `info` counts the new ones and at most the probe's besides.
            for _ in 0..<250 where !model.hasFailed {
                let line = model.makeLine(client: sweeper, method: "info", params: [:])
                sockets[sweeper].send(line.bytes)
                awaitAnswers(line, sent: .now, isSweep: true)
                let open = model.sweepResults[line.requests[0].rpcID]?["connections"]?.intValue ?? 0
                if open <= sockets.count + 1 { return }
                Thread.sleep(forTimeInterval: 0.02)
            }
            model.fail("the daemon did not close the clients' old connections within 5 s")
        }

        func sweep() -> [[UInt8]: JSONValue] {
            var records: [[UInt8]: JSONValue] = [:]
            var cursor: JSONValue = .null
            repeat {
                var params: [String: JSONValue] = ["limit": 1000]
                if !cursor.isNull { params["cursor"] = cursor }
                let line = model.makeLine(client: sweeper, method: "list", params: .object(params))
                sockets[sweeper].send(line.bytes)
                awaitAnswers(line, sent: .now, isSweep: true)
                guard let page = model.sweepResults[line.requests[0].rpcID] else {
                    if !model.hasFailed { model.fail("the sweep's list was not answered") }
                    return records
                }
                for record in page["promises"]?.arrayValue ?? [] {
                    if let id = record["id"]?.stringValue { records[Array(id.utf8)] = record }
                }
                cursor = page["cursor"] ?? .null
            } while !cursor.isNull && !model.hasFailed
            return records
        }

        func restart(clean: Bool, before: [[UInt8]: JSONValue]?) {
            probe.pause()
            if clean {
                closeBeforeStop()
                let status = daemon.terminate(grace: .seconds(15))
                if status != 0 {
                    model.fail("a clean stop (SIGTERM) ended with status \(status.map(String.init) ?? "none: killed after 15 s"); "
                        + "the daemon's log ends:\n\(daemon.logTail())")
                }
                for client in sockets.indices { readAvailable(client) }
                summary.cleanRestarts += 1
            } else {
                daemon.kill9()
                for client in sockets.indices { readAvailable(client) }
                summary.crashRestarts += 1
            }
            model.stopped()
            do {
                try daemon.start(timeout: .seconds(30))
            } catch {
                return model.fail("the daemon does not start again: \(error)")
            }
            probe.resume()
            connectAll()
            model.verifyRestart(records: sweep(), before: before)
        }

        /// A flood of connections and subscribers that never read, beside
        /// the step just made: the probe's bound holds meanwhile, the
        /// writer is answered throughout, and memory stays under the cap.
        func hostileTraffic() {
            let line = model.driverTopic(client: sweeper)
            sockets[sweeper].send(line.bytes)
            awaitAnswers(line, sent: .now)
            guard !model.hasFailed, let topic = line.requests.first?.creates else { return }
            let traffic = SimulationHostileTraffic(socketPath: daemon.socketPath, topic: topic)
            let outcome = traffic.run(for: .milliseconds(model.random.int(200...800)), silentReaders: model.random.int(5...40))
            summary.hostileSteps += 1
            summary.connectionsFlooded += outcome.connectionsFlooded
            summary.progressSentToSilentReaders += outcome.progressSent
            if let problem = outcome.problem { model.fail("beside hostile traffic: \(problem)") }
        }

        connectAll()
        while summary.steps < options.steps && !model.hasFailed {
            let step = model.nextStep()
            summary.steps += 1
            switch step {
            case .turn(let lines):
                for line in lines {
                    summary.requests += line.requests.count
                    let sent = ContinuousClock.now
                    guard sockets[line.client].send(line.bytes) else {
                        model.fail("the daemon closed client \(line.client)'s connection")
                        break
                    }
                    awaitAnswers(line, sent: sent)
                }
                model.expectAnswered(lines)
            case .closeClient(let client):
                sockets[client] = (try? SimulationSocket(path: daemon.socketPath)) ?? sockets[client]
                model.closed(client: client)
            case .advanceClock(let milliseconds):
                Thread.sleep(forTimeInterval: Double(min(milliseconds, 1_200)) / 4_000)
            case .restart(let clean):
                // Between turns nothing is in flight: a kill -9 keeps what the sweep reads
                // (timers that fire meanwhile settle for documented reasons).
                restart(clean: clean, before: sweep())
            case .crashDuringTurn(let lines):
                for line in lines {
                    summary.requests += line.requests.count
                    sockets[line.client].send(line.bytes)
                }
                restart(clean: false, before: nil)
            }
            if !model.hasFailed, model.random.percent(options.hostileTrafficPercent) {
                hostileTraffic()
            }
            if !model.hasFailed, let check = model.spotCheck(client: sweeper) {
                sockets[sweeper].send(check.bytes)
                awaitAnswers(check, sent: .now)
            }
            for client in sockets.indices { readAvailable(client) }
            if let pid = daemon.pid, let rss = Self.residentKiB(pid) {
                summary.largestRSSKiB = max(summary.largestRSSKiB, rss)
                if rss > memoryCapKiB { model.fail("the daemon holds \(rss) KiB, over the cap of \(memoryCapKiB) KiB") }
            }
        }
        if !model.hasFailed { _ = sweep() }
        summary.longestCombinatorChain = model.longestCombinatorChain
        let probed = probe.stop()
        closeBeforeStop()
        summary.probeSamples = probed.samples
        summary.longestProbe = probed.longest
        if let slow = probed.slow.first, !model.hasFailed {
            model.fail("another client waited past the stall bound: \(slow) (\(probed.slow.count) such answers)")
        }
        if let status = daemon.terminate(grace: .seconds(15)), status != 0, !model.hasFailed {
            model.fail("the final clean stop ended with status \(status); the daemon's log ends:\n\(daemon.logTail())")
        }
        let log = daemon.log.split(separator: "\n")
        let notable = log.filter { $0.contains("Fatal") || $0.contains("error") || $0.contains("crashed") }.prefix(10)
        summary.failures = model.failures.map {
            $0 + "\n  daemon log (start \(daemon.starts)), notable lines:\n    " + notable.joined(separator: "\n    ")
                + "\n  its end:\n    " + log.suffix(8).joined(separator: "\n    ")
        }
        return summary
    }

    /// VmRSS of `pid`, from /proc.
    static func residentKiB(_ pid: pid_t) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        }
        return nil
    }
}
