import Foundation
import Glibc

// The daemon against Redis and against a bare echo server, across
// processes over Unix sockets, in one run: round trips (create+resolve
// against SET+PUBLISH), notification fan-out to many subscribers, and the
// memory a settled promise costs. Prints one JSON object per line:
// {"name","value","unit","better","anchor"?,"floor"?, …}; `anchor` is the
// Redis figure it is compared with, `floor` the echo server's.
//
//   DaemonBenchmarks --promised PATH [--redis-server PATH] [--seconds S]
//                    [--clients 1,50] [--subscribers K] [--promises N]
//                    [--only roundtrip|fanout|durable|memory|restart|pinned] [--server-cpu N]
//                    [--generator epoll|threads]
//
// The pinned comparison's clients are driven by one thread through epoll
// (EpollLoad.swift); `--generator threads` gives them a thread each, with
// blocking sockets, as the unpinned round trips have.

signal(SIGPIPE, SIG_IGN)

let arguments = CommandLine.arguments
func option(_ flag: String) -> String? {
    guard let index = arguments.firstIndex(of: flag), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}
func note(_ text: String) {
    FileHandle.standardError.write(Data("daemon bench: \(text)\n".utf8))
}

guard let promisedPath = option("--promised").flatMap(executablePath) else {
    note("--promised PATH (a release-built promised) is required")
    exit(64)
}
let redisPath = executablePath(option("--redis-server") ?? "redis-server")
if redisPath == nil { note("redis-server not found: Redis figures are left out") }
// Per subject and client count, in 8 rounds. At 2.5 s in 4 rounds, the
// 50-client ratio against Redis moved by 3% between back-to-back runs and
// the fan-out ratio by 16%: more than the differences being measured.
let seconds = Double(option("--seconds") ?? "6") ?? 6
let clientCounts = (option("--clients") ?? "1,50").split(separator: ",").compactMap { Int($0) }
let openFiles = raiseOpenFileLimit()
// This process holds a socket per subscriber of both promised and Redis.
let subscribers = min(Int(option("--subscribers") ?? "10000") ?? 10000, (openFiles - 256) / 2)
let promiseCount = Int(option("--promises") ?? "1000000") ?? 1_000_000
let only = option("--only")
/// The core the servers of `--only pinned` run on.
let serverCPU = option("--server-cpu").flatMap { Int($0) }
func wanted(_ section: String) -> Bool { only == nil || only == section }

func emit(_ name: String, _ value: Double, _ unit: String, better: String,
          anchor: String? = nil, floor: String? = nil, extra: [String: Int] = [:]) {
    var fields = ["\"name\":\"\(name)\"", "\"value\":\(String(format: "%.3f", value))",
                  "\"unit\":\"\(unit)\"", "\"better\":\"\(better)\""]
    if let anchor { fields.append("\"anchor\":\"\(anchor)\"") }
    if let floor { fields.append("\"floor\":\"\(floor)\"") }
    for (key, number) in extra.sorted(by: { $0.key < $1.key }) { fields.append("\"\(key)\":\(number)") }
    print("{" + fields.joined(separator: ",") + "}")
}

var template = Array("/tmp/daemonbench-XXXXXX".utf8CString)
guard let directoryPointer = mkdtemp(&template) else {
    note("cannot make a temporary directory")
    exit(70)
}
let directory = String(cString: directoryPointer)
defer { try? FileManager.default.removeItem(atPath: directory) }

/// A release `promised` on its own socket: in memory, or durable with its
/// store in `store`; on core `cpu` only, if given.
func startPromised(_ name: String, maxConnections: Int, store: String? = nil, cpu: Int? = nil) throws -> ServerProcess {
    let arguments = (store.map { ["--store", $0] } ?? ["--in-memory"]) + [
        "--socket", "\(directory)/\(name).sock", "--log-level", "warning",
        "--max-promises", "10000000", "--max-connections", "\(maxConnections)"]
    let (executable, command) = cpu.map { CPUPinning.command(promisedPath, arguments, cpu: $0) } ?? (promisedPath, arguments)
    return try ServerProcess(
        name: "promised", executable: executable, arguments: command,
        socketPath: "\(directory)/\(name).sock", logPath: "\(directory)/\(name).log")
}

/// redis-server on its own socket (`name`.sock), without persistence; on core `cpu` only, if given.
func startRedis(_ name: String = "redis", maxClients: Int, cpu: Int? = nil) throws -> ServerProcess? {
    guard let redisPath else { return nil }
    let arguments = ["--port", "0", "--unixsocket", "\(directory)/\(name).sock", "--unixsocketperm", "700",
                     "--save", "", "--appendonly", "no", "--dir", directory, "--maxclients", "\(maxClients)",
                     "--daemonize", "no", "--loglevel", "warning", "--dbfilename", "\(name).rdb"]
    let (executable, command) = cpu.map { CPUPinning.command(redisPath, arguments, cpu: $0) } ?? (redisPath, arguments)
    return try ServerProcess(
        name: "redis-server", executable: executable, arguments: command,
        socketPath: "\(directory)/\(name).sock", logPath: "\(directory)/\(name).log")
}

func run() throws {
    let connections = subscribers + 64
    let promised = try startPromised("promised", maxConnections: connections)
    defer { promised.stop() }
    let redis = try startRedis(maxClients: connections)
    defer { redis?.stop() }

    // 4. Round trips: create+resolve, SET+PUBLISH, two echoed lines.
    if wanted("roundtrip") {
        let echo = try EchoServer(path: "\(directory)/echo.sock")
        defer { echo.stop() }
        for clients in clientCounts {
            var subjects: [(String, @Sendable (Int) throws -> (Int) throws -> Void)] = [
                ("echo", { [path = echo.path] in try echoSession(path: path, client: "\(clients).\($0)") }),
            ]
            if let redis {
                subjects.append(("redis", { [path = redis.socketPath] in try redisSession(path: path, client: "\(clients).\($0)") }))
            }
            subjects.append(("promised", { [path = promised.socketPath] in
                try promisedSession(path: path, client: "\(clients).\($0)")
            }))
            let results = try measureRoundTripsInTurn(subjects.map(\.1), clients: clients, duration: .seconds(seconds))
            for ((subject, _), result) in zip(subjects, results) {
                let prefix = "daemon.c\(clients)"
                let anchor = subject == "promised" && redis != nil ? "redis" : nil
                let floor = subject == "echo" ? nil : "echo"
                func related(_ other: String?, _ metric: String) -> String? {
                    other.map { "\(prefix).\($0).\(metric)" }
                }
                let latency = result.percentiles
                emit("\(prefix).\(subject).pairsPerSecond", result.pairsPerSecond, "pairs/s", better: "higher",
                     anchor: related(anchor, "pairsPerSecond"), floor: related(floor, "pairsPerSecond"),
                     extra: ["clients": clients, "pairs": result.pairs])
                emit("\(prefix).\(subject).p50", latency.p50, "µs", better: "lower",
                     anchor: related(anchor, "p50"), floor: related(floor, "p50"), extra: ["clients": clients])
                emit("\(prefix).\(subject).p99", latency.p99, "µs", better: "lower",
                     anchor: related(anchor, "p99"), floor: related(floor, "p99"), extra: ["clients": clients])
            }
        }
    }

    // 4b. The same round trips with each server pinned to core
    // `--server-cpu` (only with `--only pinned`, this benchmark itself
    // pinned to another core from outside: see CPUPinning). Both servers
    // are fresh processes of their own, driven by the same one-thread epoll
    // generator: with a thread per client, the clients' core was the
    // tighter limit for both servers.
    if only == "pinned", let serverCPU, redisPath != nil {
        let pinnedPromised = try startPromised("pinned", maxConnections: 256, cpu: serverCPU)
        defer { pinnedPromised.stop() }
        guard let pinnedRedis = try startRedis("redis-pinned", maxClients: 256, cpu: serverCPU) else { return }
        defer { pinnedRedis.stop() }
        let clients = clientCounts.max() ?? 50
        let subjects = ["redis", "promised"]
        let results: [RoundTripResult]
        if option("--generator") == "threads" {
            // The former generator: a thread per client, blocking I/O.
            results = try measureRoundTripsInTurn([
                { [path = pinnedRedis.socketPath] in try redisSession(path: path, client: "pinned.\($0)") },
                { [path = pinnedPromised.socketPath] in try promisedSession(path: path, client: "pinned.\($0)") },
            ], clients: clients, duration: .seconds(seconds))
        } else {
            results = try measurePairsInTurn([
                .redis(path: pinnedRedis.socketPath, tag: "pinned."),
                .promised(path: pinnedPromised.socketPath, tag: "pinned."),
            ], clients: clients, duration: .seconds(seconds), servers: [pinnedRedis, pinnedPromised])
        }
        let prefix = "daemon.pinned.c\(clients)"
        for (subject, result) in zip(subjects, results) {
            let anchor: (String) -> String? = { metric in subject == "promised" ? "\(prefix).redis.\(metric)" : nil }
            emit("\(prefix).\(subject).pairsPerSecond", result.pairsPerSecond, "pairs/s", better: "higher",
                 anchor: anchor("pairsPerSecond"), extra: ["clients": clients, "pairs": result.pairs])
            emit("\(prefix).\(subject).p99", result.percentiles.p99, "µs", better: "lower",
                 anchor: anchor("p99"), extra: ["clients": clients])
            // Where each server's time goes, per pair: its own code, and the
            // kernel's work on its behalf (system calls, wake-ups).
            if let cpu = result.serverMicrosecondsPerPair {
                emit("\(prefix).\(subject).userMicrosecondsPerPair", cpu.user, "µs", better: "lower",
                     anchor: anchor("userMicrosecondsPerPair"))
                emit("\(prefix).\(subject).kernelMicrosecondsPerPair", cpu.kernel, "µs", better: "lower",
                     anchor: anchor("kernelMicrosecondsPerPair"))
            }
        }
        // The pairs/s ratio is of all rounds together; round by round, its
        // spread shows how far this machine's noise moves it.
        let ratios = roundRatios(of: results[1], to: results[0])

        if !ratios.isEmpty {
            for (statistic, value) in [("median", median(ratios)), ("min", ratios.min()!), ("max", ratios.max()!)] {
                emit("\(prefix).promised.roundRatio.\(statistic)", value, "x Redis", better: "higher",
                     extra: ["rounds": ratios.count])
            }
        }
    }

    // 5. Fan-out: one settlement, `subscribers` connections told, in rounds
    // taken in turn by promised and Redis, in alternating order (as the
    // round trips are), so that neither always goes first.
    if wanted("fanout") && subscribers > 0 {
        let rounds = 12
        let promisedFanOut = try PromisedFanOut(path: promised.socketPath, subscribers: subscribers, rounds: rounds)
        let redisFanOut = try redis.map { try RedisFanOut(path: $0.socketPath, subscribers: subscribers) }
        var promisedTimes: [Double] = []
        var redisTimes: [Double] = []
        for round in 0..<rounds {
            let measurePromised = { promisedTimes.append(milliseconds(try promisedFanOut.measure(round: round))) }
            if round.isMultiple(of: 2) { try measurePromised() }
            if let redisFanOut { redisTimes.append(milliseconds(try redisFanOut.measure())) }
            if !round.isMultiple(of: 2) { try measurePromised() }
        }
        let name = "daemon.fanout\(subscribers)"
        emit("\(name).promised.lastSubscriber", median(promisedTimes), "ms", better: "lower",
             anchor: redis == nil ? nil : "\(name).redis.lastSubscriber", extra: ["subscribers": subscribers])
        if redis != nil {
            emit("\(name).redis.lastSubscriber", median(redisTimes), "ms", better: "lower",
                 extra: ["subscribers": subscribers])
        }
    }

    // 6. Durable settles: create+resolve pairs (each acknowledged only once
    // stored, group-committed) against the in-memory daemon, same clients.
    if wanted("durable") {
        let durable = try startPromised("durable", maxConnections: 256, store: "\(directory)/store")
        defer { durable.stop() }
        for clients in clientCounts {
            let prefix = "daemon.durable.c\(clients)"
            let subjects = [("inMemory", promised.socketPath), ("durable", durable.socketPath)]
            let results = try measureRoundTripsInTurn(
                subjects.map { subject, path in
                    { client in try promisedSession(path: path, client: "d\(clients).\(subject).\(client)") }
                },
                clients: clients, duration: .seconds(seconds))
            for ((subject, _), result) in zip(subjects, results) {
                let anchor = subject == "durable" ? "\(prefix).inMemory.settlesPerSecond" : nil
                emit("\(prefix).\(subject).settlesPerSecond", result.pairsPerSecond, "settles/s", better: "higher",
                     anchor: anchor, extra: ["clients": clients, "pairs": result.pairs])
                emit("\(prefix).\(subject).p99", result.percentiles.p99, "µs", better: "lower",
                     anchor: subject == "durable" ? "\(prefix).inMemory.p99" : nil, extra: ["clients": clients])
            }
        }
        // Settling throughput: 8 clients, each sending batch lines of 100 creates, then 100 resolves.
        let batch = 100
        let prefix = "daemon.durable.batched"
        let subjects = [("inMemory", promised.socketPath), ("durable", durable.socketPath)]
        let results = try measureRoundTripsInTurn(
            subjects.map { subject, path in
                { client in try promisedBatchSession(path: path, client: "b.\(subject).\(client)", batch: batch) }
            },
            clients: 8, duration: .seconds(seconds))
        for ((subject, _), result) in zip(subjects, results) {
            emit("\(prefix).\(subject).settlesPerSecond", result.pairsPerSecond * Double(batch), "settles/s",
                 better: "higher", anchor: subject == "durable" ? "\(prefix).inMemory.settlesPerSecond" : nil,
                 extra: ["clients": 8, "batch": batch])
        }
    }

    // 7. Memory: a fresh daemon, `promiseCount` promises created and resolved.
    if wanted("memory") {
        let fresh = try startPromised("memory", maxConnections: 64)
        defer { fresh.stop() }
        let result = try measureMemory(daemon: fresh, promises: promiseCount)
        let mib = 1024.0 * 1024.0
        emit("daemon.memory.promised.bytesPerSettledPromise", result.bytesPerPromise, "bytes", better: "lower",
             extra: ["promises": promiseCount])
        emit("daemon.memory.promised.rssBefore", Double(result.residentBefore) / mib, "MiB", better: "lower")
        emit("daemon.memory.promised.rssAfter", Double(result.residentAfter) / mib, "MiB", better: "lower",
             extra: ["promises": promiseCount])
        emit("daemon.pipelined.promised.requestsPerSecond", result.requestsPerSecond, "requests/s",
             better: "higher", extra: ["batch": 1000])
    }

    // 8. Restart: a durable daemon stopped over `promiseCount` stored
    // promises, a tenth of them pending consumers of one pending promise,
    // and started again.
    if wanted("restart") {
        let consumers = promiseCount / 10
        let result = try measureRestart(promises: promiseCount, consumers: consumers) {
            try startPromised("restart", maxConnections: 64, store: "\(directory)/restart-store")
        }
        emit("daemon.restart.promised.secondsToAnswer", result.secondsToAnswer, "s", better: "lower",
             extra: ["promises": result.promises, "consumers": result.consumers])
        emit("daemon.restart.promised.secondsToListen", result.secondsToListen, "s", better: "lower",
             extra: ["promises": result.promises, "consumers": result.consumers])
    }
}

func milliseconds(_ duration: Duration) -> Double {
    let (seconds, attoseconds) = duration.components
    return Double(seconds) * 1e3 + Double(attoseconds) / 1e15
}

func median(_ values: [Double]) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    let middle = sorted.count / 2
    return sorted.count.isMultiple(of: 2) ? (sorted[middle - 1] + sorted[middle]) / 2 : sorted[middle]
}

do {
    try run()
} catch {
    note("\(error)")
    try? FileManager.default.removeItem(atPath: directory)
    exit(1)
}
