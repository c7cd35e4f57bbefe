import Foundation
import Synchronization

/// Pairs per second and latency per pair, over every client.
struct RoundTripResult {
    let clients: Int
    let pairs: Int
    let pairsPerSecond: Double
    let p50Microseconds: Double
    let p99Microseconds: Double
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

    var all = latencies.withLock { $0.flatMap { $0 } }
    all.sort()
    guard !all.isEmpty else { throw SocketError(message: "no pair completed") }
    func percentile(_ p: Double) -> Double {
        Double(all[min(all.count - 1, Int(Double(all.count) * p))]) / 1000
    }
    // A pair started just before the end finishes after it: count the time
    // until the last client stopped, not the nominal duration.
    let (seconds, attoseconds) = elapsed.components
    let elapsedSeconds = Double(seconds) + Double(attoseconds) / 1e18
    return RoundTripResult(
        clients: clients, pairs: all.count, pairsPerSecond: Double(all.count) / elapsedSeconds,
        p50Microseconds: percentile(0.50), p99Microseconds: percentile(0.99))
}
