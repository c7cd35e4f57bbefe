// Round trips through the daemon from Swift, one JSON line per figure:
//
//   swift build -c release --package-path examples/swift-client
//   examples/swift-client/.build/release/ConnectionBench --socket SOCKET [--seconds 5] [--clients 50]
//       [--async-only --name NAME --anchor METRIC]
//
// - create+resolve pairs per second from CLIENTS tasks sharing one
//   PromiseConnection, and from CLIENTS threads each with its own
//   BlockingPromiseClient (the same load, the blocking way);
// - bytes per pending mirror (`promise(_:as:)` of an id not created),
//   over 50,000 mirrors on one connection (resident memory, so within a page);
// - heap allocations per pair in the async run, with MallocCounter/malloc_counter.so
//   preloaded (LD_PRELOAD); without it that figure is left out.
//
// With --async-only, only the async pairs per second, reported as NAME with
// METRIC as its anchor: `make bench` runs it pinned to the core the pinned
// benchmark's epoll load generator runs on, against a daemon pinned as that
// benchmark's is, and anchors it to the generator's figure.
import Foundation
import Promise
import PromiseClient
import Synchronization

var socketPath: String?
var seconds = 5.0
var clients = 50
var asyncOnly = false
var asyncName = "client.async.pairsPerSecond"
var asyncAnchor = "client.blocking.pairsPerSecond"
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--socket": socketPath = arguments.popFirst()
    case "--seconds": seconds = arguments.popFirst().flatMap(Double.init) ?? seconds
    case "--clients": clients = arguments.popFirst().flatMap(Int.init) ?? clients
    case "--async-only": asyncOnly = true
    case "--name": asyncName = arguments.popFirst() ?? asyncName
    case "--anchor": asyncAnchor = arguments.popFirst() ?? asyncAnchor
    default:
        FileHandle.standardError.write(Data(
            "usage: ConnectionBench --socket PATH [--seconds S] [--clients N] [--async-only --name NAME --anchor METRIC]\n".utf8))
        exit(64)
    }
}
let run = "b\(ProcessInfo.processInfo.processIdentifier)"
let duration = Duration.seconds(seconds)

/// One figure as a line of bench/daemon.jsonl (scripts/bench_report.py), with its anchor if any.
func report(_ name: String, _ value: Double, _ unit: String, better: String, anchor: String? = nil) {
    let anchorMember = anchor.map { #","anchor":"\#($0)""# } ?? ""
    print(#"{"name":"\#(name)","value":\#((value * 10).rounded() / 10),"unit":"\#(unit)","better":"\#(better)"\#(anchorMember)}"#)
}

/// The process's resident memory, in bytes (`/proc/self/statm`).
func residentBytes() -> Int {
    let statm = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? ""
    let pages = statm.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// Heap allocations made so far in this process, when MallocCounter/malloc_counter.so
/// is preloaded; else nil.
func mallocCount() -> UInt64? {
    guard let read = dlsym(nil, "malloc_counter_read") else { return nil }
    return unsafeBitCast(read, to: (@convention(c) () -> UInt64).self)()
}

// Memory per pending mirror, first, on a connection of its own: resident
// memory grows by what the mirrors take, not by what earlier work freed.
let mirrorCount = 50_000
var bytesPerMirror: Double?
if !asyncOnly {
    let watching = try await PromiseConnection.connect(socketPath: socketPath)
    _ = try await watching.call("info")
    let before = residentBytes()
    let mirrors = (0..<mirrorCount).map { watching.promise("\(run)/m/\($0)", as: Int.self) }
    _ = try await watching.call("info")
    let after = residentBytes()
    withExtendedLifetime(mirrors) {}
    watching.close()
    bytesPerMirror = Double(after - before) / Double(mirrorCount)
}

// One async connection, CLIENTS tasks.
let remote = try await PromiseConnection.connect(socketPath: socketPath)
let mallocsBefore = mallocCount()
let asyncPairs = try await withThrowingTaskGroup(of: Int.self) { group in
    let deadline = ContinuousClock.now + duration
    for client in 0..<clients {
        group.addTask {
            var pairs = 0
            while ContinuousClock.now < deadline {
                let id = "\(run)/a\(client)/\(pairs)"
                try await remote.create(id)
                try await remote.resolve(id, with: 1)
                pairs += 1
            }
            return pairs
        }
    }
    var total = 0
    for try await pairs in group { total += pairs }
    return total
}
let asyncRate = Double(asyncPairs) / seconds
let asyncMallocs = mallocCount().flatMap { after in mallocsBefore.map { after - $0 } }
if asyncOnly {
    report(asyncName, asyncRate, "pairs/s", better: "higher", anchor: asyncAnchor)
    remote.close()
    exit(0)
}

// CLIENTS threads, a blocking client each.
let blockingPairs = Atomic<Int>(0)
let path = remote.socketPath
let threads = (0..<clients).map { client in
    Thread {
        guard let connection = try? BlockingPromiseClient(socketPath: path) else { return }
        defer { connection.close() }
        let deadline = ContinuousClock.now + duration
        var pairs = 0
        while ContinuousClock.now < deadline {
            let id = "\(run)/b\(client)/\(pairs)"
            guard (try? connection.call("create", ["id": .string(id)])) != nil,
                (try? connection.call("resolve", ["id": .string(id), "value": 1])) != nil
            else { return }
            pairs += 1
        }
        blockingPairs.add(pairs, ordering: .relaxed)
    }
}
threads.forEach { $0.start() }
while threads.contains(where: { !$0.isFinished }) { try await Task.sleep(for: .milliseconds(20)) }
report("client.blocking.pairsPerSecond", Double(blockingPairs.load(ordering: .relaxed)) / seconds, "pairs/s", better: "higher")
report(asyncName, asyncRate, "pairs/s", better: "higher", anchor: asyncAnchor)

if let asyncMallocs {
    report("client.async.allocationsPerPair", Double(asyncMallocs) / Double(asyncPairs), "allocations", better: "lower")
}
if let bytesPerMirror { report("client.mirror.bytesPerPending", bytesPerMirror, "bytes", better: "lower") }
remote.close()
