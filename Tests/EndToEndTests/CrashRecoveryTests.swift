import Foundation
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import Synchronization
import PromiseTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The real daemon under concurrent writers, killed with SIGKILL at random
/// moments and started again on the same store, cycle after cycle: every
/// acknowledged change must be there, and nothing unacknowledged half there.
///
/// `CRASH_SEED` replays a run (the seed is printed with every failure);
/// `CRASH_CYCLES` runs more cycles than the default 20.
@Suite("crash recovery: SIGKILL under concurrent writers")
struct CrashRecoveryTests {
    @Test("after each of 20 SIGKILLs under load, every acknowledged change is present and none is half-applied")
    func killCycles() throws {
        let environment = ProcessInfo.processInfo.environment
        let seed = environment["CRASH_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...UInt64(UInt32.max))
        let cycles = environment["CRASH_CYCLES"].flatMap { Int($0) } ?? 20
        var random = SeededRandom(seed: seed)
        let daemon = try E2EDurableDaemon.started()
        defer { daemon.remove() }

        var model = CrashModel()
        let started = ContinuousClock.now
        let budget: Duration = .seconds(max(60, cycles * 3))
        for cycle in 1...cycles {
            let writers = 2 + Int(random.next() % 3)
            let killAfterMs = random.next() % 10 == 0 ? Int(random.next() % 5) : 10 + Int(random.next() % 290)
            let reports = try runWriters(
                daemon: daemon, cycle: cycle, writers: writers, seed: random.next(), model: model,
                killAfterMs: killAfterMs)
            try daemon.start()

            let client = try daemon.client(timeout: .seconds(30))
            defer { client.close() }
            let info = try client.call("info")
            var problems = reports.flatMap(\.problems)
            if info["store"]?["writable"] != true { problems.append("store not writable after restart: \(info["store"] ?? .null)") }
            problems += try model.absorb(reports, verifyingWith: { try daemon.allRecords(client: client) })
            guard problems.isEmpty else {
                Issue.record("""
                    crash-recovery seed \(seed) (CRASH_SEED=\(seed) replays it), cycle \(cycle) of \(cycles), \
                    \(writers) writers, killed after \(killAfterMs) ms: \(problems.count) problems:
                    \(problems.prefix(25).joined(separator: "\n"))
                    daemon log (tail): \(daemon.logTail(2000))
                    """)
                return
            }
            guard ContinuousClock.now - started < budget else {
                Issue.record("crash-recovery seed \(seed): only \(cycle) of \(cycles) cycles within \(budget)")
                return
            }
        }
        let line = "crash-recovery: \(cycles) cycles, \(model.acknowledged) acknowledged changes checked "
            + "(\(model.checks) checks in all, \(model.uncertainSeen) unacknowledged changes seen, seed \(seed), "
            + "\(Self.seconds(ContinuousClock.now - started)))\n"
        FileHandle.standardError.write(Data(line.utf8))
        #expect(model.acknowledged >= cycles * 5, "too few acknowledged changes to prove anything: \(model.acknowledged)")
    }

    private static func seconds(_ duration: Duration) -> String {
        let (whole, fraction) = duration.components
        return String(format: "%.1f s", Double(whole) + Double(fraction) / 1e18)
    }

    /// Runs the writers against the running daemon, SIGKILLs it after `killAfter`, and collects what they saw.
    private func runWriters(
        daemon: E2EDurableDaemon, cycle: Int, writers: Int, seed: UInt64, model: CrashModel, killAfterMs: Int
    ) throws -> [CrashWriterReport] {
        let shared = CrashShared()
        let done = DispatchSemaphore(value: 0)
        let resolvable = model.resolvable.sorted()
        let existing = model.existing.sorted()
        let socketPath = daemon.socketPath
        for index in 0..<writers {
            let plan = CrashWriterPlan(
                cycle: cycle, writer: index, seed: seed &+ UInt64(index) &* 0x9E37_79B9_7F4A_7C15,
                resolvable: resolvable.enumerated().filter { $0.offset % writers == index }.map(\.element),
                existing: existing, maxChanges: 120)
            let thread = Thread {
                var writer = CrashWriter(plan: plan, socketPath: socketPath, shared: shared)
                let report = writer.run()
                shared.reports.withLock { $0.append(report) }
                done.signal()
            }
            thread.start()
        }
        Thread.sleep(forTimeInterval: Double(killAfterMs) / 1000)
        shared.killed.store(true, ordering: .sequentiallyConsistent)
        daemon.kill9()
        for _ in 0..<writers {
            guard done.wait(timeout: .now() + 20) == .success else {
                throw E2EHarnessError("a writer did not stop within 20 s of the SIGKILL")
            }
        }
        return shared.reports.withLock { $0 }
    }
}

// MARK: - Writers

/// One change a writer asked for.
enum CrashChange: Sendable, CustomStringConvertible {
    case create(String)
    case resolve(String, JSONValue)
    case reject(String, JSONValue)
    case then(parent: String, child: String)
    case all(inputs: [String], id: String)
    /// One batch line: create x1, create x2, then x1 → x3.
    case batch(String, String, String)

    var description: String {
        switch self {
        case .create(let id): "create \(id)"
        case .resolve(let id, let value): "resolve \(id) = \(value)"
        case .reject(let id, let reason): "reject \(id) with \(reason)"
        case .then(let parent, let child): "then \(parent) → \(child)"
        case .all(let inputs, let id): "all \(inputs) → \(id)"
        case .batch(let a, let b, let c): "batch [create \(a), create \(b), then \(a) → \(c)]"
        }
    }

    var request: (method: String, params: [String: JSONValue]) {
        switch self {
        case .create(let id): ("create", ["id": .string(id)])
        case .resolve(let id, let value): ("resolve", ["id": .string(id), "value": value])
        case .reject(let id, let reason): ("reject", ["id": .string(id), "reason": reason])
        case .then(let parent, let child): ("then", ["id": .string(parent), "childId": .string(child)])
        case .all(let inputs, let id): ("all", ["ids": .array(inputs.map { .string($0) }), "id": .string(id)])
        case .batch: ("batch", [:])
        }
    }
}

struct CrashWriterPlan: Sendable {
    var cycle: Int
    var writer: Int
    var seed: UInt64
    /// Pending created promises this writer alone may settle.
    var resolvable: [String]
    /// Promises known to exist (parents for then, inputs for all).
    var existing: [String]
    var maxChanges: Int
}

struct CrashWriterReport: Sendable {
    var acknowledged: [CrashChange] = []
    /// Sent, but the answer never came (the daemon was killed): may or may not have happened.
    var uncertain: [CrashChange] = []
    var problems: [String] = []
}

/// What the writers and the killer share: lock-free flag and a mutex-guarded list.
final class CrashShared: Sendable {
    let killed = Atomic<Bool>(false)
    let reports = Mutex<[CrashWriterReport]>([])
}

/// One writer thread's loop: pipelines of 1–4 changes, and batch lines, until
/// the daemon dies or `maxChanges` is reached.
struct CrashWriter {
    var plan: CrashWriterPlan
    var socketPath: String
    var shared: CrashShared
    private var random: SeededRandom
    private var report = CrashWriterReport()
    private var counter = 0

    init(plan: CrashWriterPlan, socketPath: String, shared: CrashShared) {
        self.plan = plan
        self.socketPath = socketPath
        self.shared = shared
        random = SeededRandom(seed: plan.seed)
    }

    mutating func run() -> CrashWriterReport {
        guard let client = try? BlockingPromiseClient(socketPath: socketPath, timeout: .seconds(5)) else { return report }
        defer { client.close() }
        while report.acknowledged.count < plan.maxChanges {
            let keepGoing = random.next() % 10 == 0 ? batchStep(client) : pipelineStep(client)
            if !keepGoing { break }
        }
        return report
    }

    private mutating func fresh(_ kind: String) -> String {
        counter += 1
        return "\(kind)\(plan.cycle).\(plan.writer).\(counter)"
    }

    private mutating func pick<T>(_ from: [T]) -> T { from[Int(random.next() % UInt64(from.count))] }

    private mutating func nextChange() -> CrashChange {
        let roll = random.next() % 100
        let stamp = "\(plan.cycle).\(plan.writer).\(counter + 1)"
        if roll >= 35 && roll < 62 && !plan.resolvable.isEmpty {
            let id = plan.resolvable.remove(at: Int(random.next() % UInt64(plan.resolvable.count)))
            counter += 1
            if roll < 55 {
                return .resolve(id, ["w": .string(stamp), "n": .int(counter), "list": [.int(counter), "x", true, nil]])
            }
            return .reject(id, ["message": .string("r\(stamp)"), "code": .int(counter)])
        }
        if roll >= 62 && roll < 82 && !plan.existing.isEmpty {
            return .then(parent: pick(plan.existing), child: fresh("h"))
        }
        if roll >= 82 && plan.existing.count >= 2 {
            let first = pick(plan.existing)
            var second = pick(plan.existing)
            while second == first { second = pick(plan.existing) }
            return .all(inputs: [first, second], id: fresh("a"))
        }
        return .create(fresh("c"))
    }

    private mutating func acknowledge(_ change: CrashChange) {
        report.acknowledged.append(change)
        switch change {
        case .create(let id):
            plan.existing.append(id)
            plan.resolvable.append(id)
        case .then(_, let child): plan.existing.append(child)
        case .all(_, let id): plan.existing.append(id)
        case .batch(let a, let b, let c):
            plan.existing += [a, b, c]
            plan.resolvable += [a, b]
        case .resolve, .reject: break
        }
    }

    /// A failure of the connection is expected once the daemon is killed, and a problem before.
    private mutating func connectionFailed(_ error: any Error, during change: CrashChange) {
        if !shared.killed.load(ordering: .sequentiallyConsistent) {
            report.problems.append("writer \(plan.writer): \(change) failed before the kill: \(error)")
        }
    }

    private mutating func pipelineStep(_ client: BlockingPromiseClient) -> Bool {
        var sent: [(Int, CrashChange)] = []
        for _ in 0..<(1 + Int(random.next() % 4)) {
            let change = nextChange()
            do {
                let request = change.request
                sent.append((try client.send(request.method, request.params), change))
            } catch {
                report.uncertain += sent.map(\.1) + [change]
                connectionFailed(error, during: change)
                return false
            }
        }
        for (index, (requestID, change)) in sent.enumerated() {
            do {
                try client.result(for: requestID)
                acknowledge(change)
            } catch let error as RPCError {
                report.problems.append("writer \(plan.writer): \(change) was answered with \(error.code.rawValue) \(error.message)")
                report.uncertain += sent[(index + 1)...].map(\.1)
                return false
            } catch {
                report.uncertain += sent[index...].map(\.1)
                connectionFailed(error, during: change)
                return false
            }
        }
        return true
    }

    private mutating func batchStep(_ client: BlockingPromiseClient) -> Bool {
        let (a, b, c) = (fresh("b"), fresh("b"), fresh("b"))
        let change = CrashChange.batch(a, b, c)
        do {
            let results = try client.batch(
                [.init("create", ["id": .string(a)]), .init("create", ["id": .string(b)]),
                 .init("then", ["id": .string(a), "childId": .string(c)])],
                timeout: .seconds(5))
            let failures = results.compactMap { result -> String? in
                if case .failure(let error) = result { return "\(error.code.rawValue) \(error.message)" }
                return nil
            }
            guard failures.isEmpty else {
                report.problems.append("writer \(plan.writer): \(change) was answered with \(failures)")
                return false
            }
            acknowledge(change)
            return true
        } catch {
            report.uncertain.append(change)
            connectionFailed(error, during: change)
            return false
        }
    }
}

// MARK: - What must be in the store

/// What the test knows must be in the store, across cycles.
struct CrashModel {
    enum Kind: Equatable {
        case created
        case then(parent: String)
        case all(inputs: [String])
    }

    struct Expected {
        var kind: Kind
        /// The settlement a client made and had acknowledged (created promises only).
        var outcome: CrashChange?
        var because: String
    }

    private(set) var expected: [String: Expected] = [:]
    /// Created promises seen pending at the last check, which a writer may settle.
    private(set) var resolvable: Set<String> = []
    /// Acknowledged changes so far.
    private(set) var acknowledged = 0
    /// Single checks made over all cycles.
    private(set) var checks = 0
    private(set) var uncertainSeen = 0

    var existing: Set<String> { Set(expected.keys) }

    /// Adds what the writers had acknowledged, then checks the store against
    /// everything known, and folds unacknowledged changes in as they turned out.
    /// - Returns: what is wrong, one line each.
    mutating func absorb(
        _ reports: [CrashWriterReport], verifyingWith fetch: () throws -> [String: BlockingPromiseClient.Record]
    ) throws -> [String] {
        for change in reports.flatMap(\.acknowledged) {
            acknowledged += 1
            switch change {
            case .create(let id): expected[id] = Expected(kind: .created, because: "\(change)")
            case .resolve(let id, _), .reject(let id, _): expected[id]?.outcome = change
            case .then(let parent, let child): expected[child] = Expected(kind: .then(parent: parent), because: "\(change)")
            case .all(let inputs, let id): expected[id] = Expected(kind: .all(inputs: inputs), because: "\(change)")
            case .batch(let a, let b, let c):
                expected[a] = Expected(kind: .created, because: "\(change)")
                expected[b] = Expected(kind: .created, because: "\(change)")
                expected[c] = Expected(kind: .then(parent: a), because: "\(change)")
            }
        }
        let uncertain = reports.flatMap(\.uncertain)
        uncertainSeen += uncertain.count
        var problems: [String] = []
        var records = try fetch()

        // Unacknowledged changes: all or nothing; those that happened become expected.
        var settledUncertainly: Set<String> = []
        for change in uncertain {
            checks += 1
            switch change {
            case .create(let id):
                if records[id] != nil { expected[id] = Expected(kind: .created, because: "\(change) (unacknowledged, present)") }
            case .resolve(let id, _), .reject(let id, _):
                guard let record = records[id] else {
                    problems.append("\(change) (unacknowledged): \(id) is missing")
                    continue
                }
                settledUncertainly.insert(id)
                if record.state == .pending { continue }
                if Self.matches(record, change) {
                    expected[id]?.outcome = change
                } else {
                    problems.append("\(change) (unacknowledged) half-applied or garbled: \(record.json)")
                }
            case .then(let parent, let child):
                if let record = records[child] {
                    if record.parent != parent { problems.append("\(change) (unacknowledged): parent is \(record.parent ?? "nil")") }
                    expected[child] = Expected(kind: .then(parent: parent), because: "\(change) (unacknowledged, present)")
                }
            case .all(let inputs, let id):
                if records[id] != nil { expected[id] = Expected(kind: .all(inputs: inputs), because: "\(change) (unacknowledged, present)") }
            case .batch(let a, let b, let c):
                let present = [a, b, c].filter { records[$0] != nil }
                if present.count == 3 {
                    expected[a] = Expected(kind: .created, because: "\(change) (unacknowledged, present)")
                    expected[b] = Expected(kind: .created, because: "\(change) (unacknowledged, present)")
                    expected[c] = Expected(kind: .then(parent: a), because: "\(change) (unacknowledged, present)")
                } else if !present.isEmpty {
                    problems.append("\(change) (unacknowledged) half-applied: only \(present) exist")
                }
            }
        }

        // Everything acknowledged (or seen before) is there, as it was made and settled.
        for (id, expectation) in expected {
            checks += 1
            guard let record = records[id] else {
                problems.append("\(id) is missing (\(expectation.because))")
                continue
            }
            switch expectation.kind {
            case .created:
                if record.parent != nil { problems.append("\(id) has parent \(record.parent!) (\(expectation.because))") }
            case .then(let parent):
                if record.parent != parent { problems.append("\(id) has parent \(record.parent ?? "nil"), not \(parent)") }
            case .all(let inputs):
                if record.json["inputs"] != .array(inputs.map { .string($0) }) {
                    problems.append("\(id) has inputs \(record.json["inputs"] ?? .null), not \(inputs)")
                }
            }
            if let outcome = expectation.outcome {
                if !Self.matches(record, outcome) { problems.append("\(id) after acknowledged \(outcome): \(record.json)") }
            } else if expectation.kind == .created && !settledUncertainly.contains(id) && record.state != .pending {
                problems.append("\(id) was never settled by a client but is \(record.state): \(record.json)")
            }
        }
        for id in records.keys where expected[id] == nil {
            problems.append("\(id) exists but no client asked for it: \(records[id]!.json)")
        }

        // Derived settlements (then children, all) are re-armed: they may take a moment after the start.
        let deadline = ContinuousClock.now + .seconds(2)
        var derived = derivedProblems(records)
        while !derived.isEmpty && ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.1)
            records = try fetch()
            derived = derivedProblems(records)
        }
        problems += derived

        resolvable = Set(expected.filter { $0.value.kind == .created && records[$0.key]?.state == .pending }.keys)
        return problems
    }

    private func derivedProblems(_ records: [String: BlockingPromiseClient.Record]) -> [String] {
        var problems: [String] = []
        for (id, expectation) in expected {
            guard let record = records[id] else { continue }
            switch expectation.kind {
            case .created: break
            case .then(let parentID):
                guard let parent = records[parentID] else { continue }
                if parent.state == .pending {
                    if record.state != .pending { problems.append("then child \(id) is \(record.state) while its parent \(parentID) is pending") }
                } else if record.state != parent.state || record.value != parent.value || record.reason != parent.reason {
                    problems.append("then child \(id) does not follow its settled parent: \(record.json) vs \(parent.json)")
                }
            case .all(let inputs):
                let states = inputs.map { records[$0] }
                guard states.allSatisfy({ $0 != nil }) else { continue }
                if states.contains(where: { $0!.state == .rejected || $0!.state == .cancelled }) {
                    if record.state != .rejected { problems.append("all \(id) over \(inputs) with a rejected input is \(record.state)") }
                } else if states.allSatisfy({ $0!.state == .fulfilled }) {
                    let values = JSONValue.array(states.map { $0!.value ?? .null })
                    if record.state != .fulfilled || record.value != values {
                        problems.append("all \(id) over fulfilled \(inputs) is \(record.json), expected value \(values)")
                    }
                } else if record.state != .pending {
                    problems.append("all \(id) over \(inputs), some pending, is \(record.state)")
                }
            }
        }
        return problems
    }

    /// True when `record` is settled exactly as `change` (a resolve or reject) says.
    static func matches(_ record: BlockingPromiseClient.Record, _ change: CrashChange) -> Bool {
        switch change {
        case .resolve(_, let value): return record.state == .fulfilled && record.value == value
        case .reject(_, let reason):
            return record.state == .rejected && record.reasonMessage == reason["message"]?.stringValue
                && record.reasonCode == reason["code"]?.intValue
        default: return false
        }
    }
}
