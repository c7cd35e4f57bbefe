import Foundation
import Synchronization

/// Pairs per second and latency per pair, over every client and every
/// round of one subject.
struct RoundTripResult {
    let clients: Int
    /// Nanoseconds per counted pair.
    private(set) var latencies: [UInt64] = []
    /// Time counted, from the end of each warm-up until its last client stopped.
    private(set) var seconds = 0.0
    /// The server's CPU time over its rounds, warm-ups included, when it
    /// was watched (``measurePairsInTurn(_:clients:rounds:warmUp:duration:servers:)``),
    /// and the wall time of those rounds.
    var serverCPU = (user: 0.0, kernel: 0.0, wall: 0.0)
    /// Pairs per second of each round added, in order: set against
    /// another subject's round by round, they show how much of a ratio is
    /// the machine's noise (see ``roundRatios(of:to:)``).
    private(set) var roundPairsPerSecond: [Double] = []

    init(clients: Int, latencies: [UInt64] = [], seconds: Double = 0) {
        self.clients = clients
        self.latencies = latencies
        self.seconds = seconds
    }

    /// Counts another round of the same subject.
    mutating func add(_ round: RoundTripResult) {
        roundPairsPerSecond.append(round.pairsPerSecond)
        latencies += round.latencies
        seconds += round.seconds
        serverCPU.user += round.serverCPU.user
        serverCPU.kernel += round.serverCPU.kernel
        serverCPU.wall += round.serverCPU.wall
    }

    /// The server's user and kernel CPU time per pair, in microseconds: its
    /// share of each wall-clock second over the pairs made in one. Warm-ups
    /// count on both sides of that fraction alike, so they cancel out.
    var serverMicrosecondsPerPair: (user: Double, kernel: Double)? {
        guard serverCPU.wall > 0, pairsPerSecond > 0 else { return nil }
        let perPair = 1_000_000 / pairsPerSecond / serverCPU.wall
        return (serverCPU.user * perPair, serverCPU.kernel * perPair)
    }

    var pairs: Int { latencies.count }
    var pairsPerSecond: Double { seconds > 0 ? Double(pairs) / seconds : 0 }

    /// The median and 99th-percentile latency in microseconds, from one sort
    /// of the latencies (a million of them, at 50 clients).
    var percentiles: (p50: Double, p99: Double) {
        guard !latencies.isEmpty else { return (0, 0) }
        let sorted = latencies.sorted()
        func percentile(_ p: Double) -> Double {
            Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]) / 1000
        }
        return (percentile(0.50), percentile(0.99))
    }
}

/// `subject`'s pairs/s over `anchor`'s, round by round: the rounds of one
/// number were run one after the other (``measurePairsInTurn(_:clients:rounds:warmUp:duration:servers:)``),
/// so that each ratio compares the two under the same conditions.
func roundRatios(of subject: RoundTripResult, to anchor: RoundTripResult) -> [Double] {
    zip(subject.roundPairsPerSecond, anchor.roundPairsPerSecond).compactMap { $1 > 0 ? $0 / $1 : nil }
}

/// Measures each of `subjects` in `rounds` slices of `duration / rounds`,
/// taken in turn (a round of each, then the next round of each, in
/// alternating order): on a shared machine a busy spell then slows every
/// side of a comparison, not just the one that happened to run during it.
/// Run once each, the 50-client ratio against Redis swung from 0.78x to
/// 1.21x between back-to-back runs.
///
/// Each subject makes a session per client, numbered from 0 and on across
/// rounds. Returns one result per subject, in `subjects`' order.
func measureRoundTripsInTurn(
    _ subjects: [@Sendable (Int) throws -> (Int) throws -> Void],
    clients: Int,
    rounds: Int = 8,
    warmUp: Duration = .milliseconds(150),
    duration: Duration
) throws -> [RoundTripResult] {
    try inTurn(subjects.count, clients: clients, rounds: rounds) { index, round in
        let makeSession = subjects[index]
        // Clients are numbered on across rounds: sessions name what they
        // make after their client, and each round's names must be new.
        return try measureRoundTrips(
            clients: clients, warmUp: warmUp, duration: duration / rounds
        ) { client in try makeSession(round * clients + client) }
    }
}

/// The same, with every client of a round driven by the one-thread epoll
/// load generator (``measurePairs(_:clients:warmUp:duration:)``); each
/// round connects afresh and tags its keys with the round's number. With
/// `servers` (one per script), each server's CPU time over its rounds is
/// kept too (``RoundTripResult/serverCPU``).
func measurePairsInTurn(
    _ scripts: [PairScript],
    clients: Int,
    rounds: Int = 8,
    warmUp: Duration = .milliseconds(150),
    duration: Duration,
    servers: [ServerProcess]? = nil
) throws -> [RoundTripResult] {
    try inTurn(scripts.count, clients: clients, rounds: rounds) { index, round in
        let script = scripts[index]
        let tagged = PairScript(path: script.path, tag: "\(script.tag)r\(round).", request: script.request,
                                accepts: script.accepts)
        let server = servers?[index]
        let (cpuBefore, wallBefore) = (server?.cpuSeconds(), ContinuousClock.now)
        var result = try measurePairs(tagged, clients: clients, warmUp: warmUp, duration: duration / rounds)
        if let server, let cpuBefore {
            let cpuAfter = server.cpuSeconds()
            result.serverCPU = (cpuAfter.user - cpuBefore.user, cpuAfter.kernel - cpuBefore.kernel,
                                seconds(ContinuousClock.now - wallBefore))
        }
        return result
    }
}

private func seconds(_ duration: Duration) -> Double {
    let (whole, attoseconds) = duration.components
    return Double(whole) + Double(attoseconds) / 1e18
}

/// Runs `measure(subject, round)` for `rounds` rounds of each of `count`
/// subjects, a round of each in turn, and adds up each subject's rounds.
private func inTurn(
    _ count: Int, clients: Int, rounds: Int, _ measure: (Int, Int) throws -> RoundTripResult
) throws -> [RoundTripResult] {
    var results = (0..<count).map { _ in RoundTripResult(clients: clients) }
    for round in 0..<rounds {
        // Every other round runs the subjects in reverse, so that none always
        // comes right after another's connections were torn down.
        let order = round.isMultiple(of: 2) ? Array(0..<count) : (0..<count).reversed()
        for index in order {
            results[index].add(try measure(index, round))
        }
    }
    return results
}

/// Runs `clients` threads, each with its own connection, doing one pair
/// (two request/answer round trips) after another for `duration`, after a
/// warm-up that is not counted. `makeSession(client)` connects and returns
/// the function that does pair number `i` on that connection.
func measureRoundTrips(
    clients: Int,
    warmUp: Duration,
    duration: Duration,
    makeSession: @escaping @Sendable (Int) throws -> (Int) throws -> Void
) throws -> RoundTripResult {
    let ready = DispatchSemaphore(value: 0)
    let go = DispatchSemaphore(value: 0)
    let done = DispatchGroup()
    let latencies = Mutex<[[UInt64]]>([])
    let failures = Mutex<[String]>([])
    let times = Mutex<(warmEnd: ContinuousClock.Instant, end: ContinuousClock.Instant)?>(nil)

    for client in 0..<clients {
        done.enter()
        Thread.detachNewThread {
            defer { done.leave() }
            let pair: (Int) throws -> Void
            do {
                pair = try makeSession(client)
            } catch {
                failures.withLock { $0.append("client \(client): \(error)") }
                ready.signal()
                return
            }
            ready.signal()
            go.wait()
            guard let (warmEnd, end) = times.withLock({ $0 }) else { return }
            var mine: [UInt64] = []
            mine.reserveCapacity(1 << 16)
            var index = 0
            do {
                let clock = ContinuousClock()
                while true {
                    let started = clock.now
                    if started >= end { break }
                    try pair(index)
                    index += 1
                    if started >= warmEnd {
                        let (seconds, attoseconds) = (clock.now - started).components
                        mine.append(UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000))
                    }
                }
            } catch {
                failures.withLock { $0.append("client \(client), pair \(index): \(error)") }
            }
            latencies.withLock { $0.append(mine) }
        }
    }
    for _ in 0..<clients { ready.wait() }
    let start = ContinuousClock.now
    times.withLock { $0 = (start + warmUp, start + warmUp + duration) }
    for _ in 0..<clients { go.signal() }
    done.wait()
    let elapsed = ContinuousClock.now - (start + warmUp)
    if let failure = failures.withLock({ $0.first }) { throw SocketError(message: failure) }

    // A pair started just before the end finishes after it: count the time
    // until the last client stopped, not the nominal duration.
    let (seconds, attoseconds) = elapsed.components
    let result = RoundTripResult(
        clients: clients, latencies: latencies.withLock { $0.flatMap { $0 } },
        seconds: Double(seconds) + Double(attoseconds) / 1e18)
    guard result.pairs > 0 else { throw SocketError(message: "no pair completed") }
    return result
}
