import Foundation
import PromiseJSON
import PromiseModel
import PromiseRPC

/// One JSON-RPC request the generator made, with what the checker needs to
/// judge its answer.
package struct SimulationRequest {
    package let rpcID: Int
    package let method: String
    package let params: JSONValue
    /// The promise ids it names: an answer "no such promise" is accepted only
    /// when one of them may be gone (never acknowledged, forgotten, collected).
    package let names: [String]
    /// The id it makes (`create`, `then`, combinators): new, so it must succeed.
    package let creates: String?
    /// The value or reason a successful `resolve`/`reject` must show.
    package let settlesWith: JSONValue?
    /// A read of the simulation's own sweep: its answer may be long.
    package let isSweep: Bool
    /// The step that sent it.
    package let step: Int
}

/// One line a client sends: a request, or a batch of them.
package struct SimulationLine {
    package let client: Int
    package let requests: [SimulationRequest]
    package let isBatch: Bool

    package var bytes: [UInt8] {
        let messages = requests.map { request -> JSONValue in
            ["jsonrpc": "2.0", "id": .int(request.rpcID), "method": .string(request.method), "params": request.params]
        }
        return isBatch ? JSONValue.array(messages).serialized() : messages[0].serialized()
    }

    package var summary: String {
        let text = String(decoding: bytes, as: UTF8.self)
        return "client \(client): " + (text.utf8.count <= 300 ? text : String(text.prefix(300)) + "…(\(text.utf8.count) bytes)")
    }
}

/// What the simulation does next.
package enum SimulationStep {
    /// Lines from one or more clients, handled in one turn of the loop.
    case turn([SimulationLine])
    /// A client closes its connection (its leased promises expire) and reconnects.
    case closeClient(Int)
    /// Time passes: timeouts, `wait` timeouts and retention come due.
    case advanceClock(milliseconds: Int)
    /// Flush, stop, start again on the same store.
    case restart(clean: Bool)
    /// Lines sent, then a crash (kill -9) before their changes are acknowledged.
    case crashDuringTurn([SimulationLine])
}

/// The simulation's generator and its model of what was acknowledged.
///
/// The generator makes only valid requests, from several clients: creates
/// (named, with timeouts, leased), settles, cancels, progress, `then`
/// children and chains of hundreds, combinators over random and duplicated
/// inputs, `any` chains that wrap reasons, combinator chains thousands
/// long, fan-ins over one id repeated thousands of times, batches of heavy
/// reads, large values, waits,
/// subscriptions, lists, `forget`, clients closing, time passing, and clean
/// and crash restarts. The model keeps, per id, what delivered answers
/// showed: a settlement seen once is acknowledged and must never change; a
/// promise seen once exists until it may have been forgotten or collected.
///
/// Every message received is checked (``receive(client:bytes:)``); the
/// driver reports failures with ``options``' ``SimulationOptions/replay``.
/// Shared by the in-process simulation (PromiseSQLiteStoreTests) and the
/// one against the real daemon (EndToEndTests).
package final class SimulationModel {
    package let options: SimulationOptions
    package var random: SeededRandom
    /// The registry's clock, in milliseconds since 1970 (for retention and timeouts).
    package var now: () -> Int64
    /// Extra milliseconds granted to time-based judgements (the daemon's clock is real).
    package var clockSlack: Int64 = 0
    package private(set) var failures: [String] = []
    /// The last steps, for a failure's report.
    private var history: [String] = []
    package private(set) var step = 0

    /// What the model knows of one id.
    package struct Known {
        package var kind: String
        package var inputs: [String] = []
        package var parent: String?
        package var lease = false
        package var timeoutMs: Int?
        package var createdAt: Int64
        /// A delivered answer showed that it exists.
        package var acknowledged = false
        /// The step whose messages showed first that it exists. Another
        /// client's request of that step may have run before it was made:
        /// a batch runs in slices, and other lines are read between them.
        package var acknowledgedStep = Int.max
        /// Made by a line that may have been lost in a crash before its answer.
        package var uncertain = false
        /// Its acknowledged settlement: `{"state", "value"?, "reason"?}`.
        package var settled: JSONValue?
        package var settledAt: Int64?
        /// The step whose messages showed the settlement first.
        package var settledStep = 0
        package var lastSeenPendingAt: Int64?
        package var forgetRequested = false
        /// Upper bound of the bytes of its value or reason.
        package var bound: Int
        /// How many reason-wrapping links (`any`, `all-errors`) lie below it.
        package var nesting: Int
        /// Resolved with large values.
        package var big: Bool
        /// What it takes its settlement from: its parent, then its inputs.
        package var links: [String] { (parent.map { [$0] } ?? []) + inputs }
    }

    private var known: [[UInt8]: Known] = [:]
    /// Ids in the order made, for picking.
    package private(set) var order: [String] = []
    /// Ids whose acknowledged value is large (tens of KB).
    private var largeFulfilled: [String] = []
    /// A long chain of combinators that a later line may grow.
    private struct LongChain {
        let root: String
        var tail: String
        var length: Int
    }

    /// The chains of ``combinatorChain(client:)`` still growing, at most three.
    private var longChains: [LongChain] = []
    /// The most links any one of them reached, for the run's report.
    package private(set) var longestCombinatorChain = 0
    /// Ids some combinator takes as an input.
    private var combinatorInputs: Set<[UInt8]> = []
    /// Unicode ids whose canonically equivalent twin (decomposed) has not been made yet.
    private var composedIDs: [String] = []
    private var nextNumber = 0
    private var nextRPC = 1

    private struct Outstanding {
        let client: Int
        let request: SimulationRequest
        /// The rpc ids of the batch it belongs to, in order (nil: a line of its own).
        let batch: [Int]?
    }

    private var outstanding: [Int: Outstanding] = [:]
    /// Results of sweep requests, by rpc id, for the driver.
    package private(set) var sweepResults: [Int: JSONValue] = [:]
    private var waitsPerClient: [Int: Int] = [:]
    private var subscriptionsPerClient: [Int: Int] = [:]

    package static let states: Set<String> = ["pending", "fulfilled", "rejected", "cancelled"]
    package static let recordMethods: Set<String> = [
        "create", "resolve", "reject", "cancel", "get", "then", "progress", "all", "any", "race", "allSettled", "wait",
    ]
    package static let settleMethods: Set<String> = ["resolve", "reject", "cancel", "progress"]

    package init(options: SimulationOptions, now: @escaping () -> Int64) {
        self.options = options
        random = SeededRandom(seed: options.seed)
        self.now = now
    }

    private static func key(_ id: String) -> [UInt8] { Array(id.utf8) }

    // MARK: Failures

    /// Records a failure with the step it happened at and the steps before it.
    package func fail(_ message: String) {
        guard failures.isEmpty else { return }
        failures.append(
            "seed \(options.seed), step \(step): \(message)\n  replay: \(options.replay) "
                + "swift test --filter Simulation\n  last steps:\n    " + history.suffix(12).joined(separator: "\n    "))
    }

    package var hasFailed: Bool { !failures.isEmpty }

    package func note(_ text: String) {
        history.append("[\(step)] " + text)
        if history.count > 64 { history.removeFirst(history.count - 32) }
    }

    // MARK: Generating

    /// The next step. Every request in it is expected from now on.
    package func nextStep() -> SimulationStep {
        step += 1
        let restartRoll = random.int(0..<100)
        if restartRoll < options.crashRestartPercent {
            if random.percent(50) {
                let lines = makeTurn()
                note("crash during turn: " + lines.map(\.summary).joined(separator: " | "))
                return .crashDuringTurn(lines)
            }
            note("crash restart")
            return .restart(clean: false)
        }
        if restartRoll < options.crashRestartPercent + options.cleanRestartPercent {
            note("clean restart")
            return .restart(clean: true)
        }
        switch random.int(0..<100) {
        case 0..<3:
            let client = random.int(0..<options.clients)
            note("close client \(client)")
            return .closeClient(client)
        case 3..<9:
            let milliseconds = random.weighted([(6, random.int(1...50)), (3, random.int(50...800)),
                                                (1, random.int(800...3_000))])
            note("advance clock \(milliseconds) ms")
            return .advanceClock(milliseconds: milliseconds)
        default:
            let lines = makeTurn()
            note(lines.map(\.summary).joined(separator: " | "))
            return .turn(lines)
        }
    }

    /// One to three lines, from distinct clients.
    private func makeTurn() -> [SimulationLine] {
        var clients = Array(0..<options.clients)
        var lines: [SimulationLine] = []
        for _ in 0..<random.weighted([(6, 1), (3, 2), (1, 3)]) {
            let client = clients.remove(at: random.int(0..<clients.count))
            lines.append(makeLine(client: client))
        }
        return lines
    }

    private func makeLine(client: Int) -> SimulationLine {
        let heavy = random.int(0..<100)
        if heavy < options.combinatorChainPercent { return register(combinatorChain(client: client), client: client) }
        if heavy < options.combinatorChainPercent + options.repeatedFanInPercent, let line = repeatedFanIn(client: client) {
            return register(line, client: client)
        }
        if heavy < options.combinatorChainPercent + options.repeatedFanInPercent + options.heavyReadPercent {
            return register(heavyReads(client: client), client: client)
        }
        switch random.int(0..<100) {
        case 0..<4: return register(thenChain(client: client), client: client)
        case 4..<7: return register(anyChain(client: client), client: client)
        case 7..<15:
            // A batch of simple requests (no wait: a wait holds a batch's answer back).
            let requests = (0..<random.int(2...5)).map { _ in simpleRequest(client: client, allowWait: false) }
            return register(SimulationLine(client: client, requests: requests, isBatch: true), client: client)
        default:
            return register(SimulationLine(client: client, requests: [simpleRequest(client: client, allowWait: true)],
                                           isBatch: false), client: client)
        }
    }

    /// A line of the simulation's own, made by the driver (a sweep's `list`, `info`).
    package func makeLine(client: Int, method: String, params: JSONValue, isSweep: Bool = true) -> SimulationLine {
        let request = makeRequest(method, params, names: [], isSweep: isSweep)
        return register(SimulationLine(client: client, requests: [request], isBatch: false), client: client)
    }

    /// After every step: a batch of `get`s, from `client` (the sweeper), of
    /// up to four promises a delivered answer showed; each must still be
    /// there (unless it may be gone) with its acknowledged settlement.
    package func spotCheck(client: Int) -> SimulationLine? {
        let ids = (0..<4).compactMap { _ -> String? in
            guard !order.isEmpty else { return nil }
            let id = order[random.int(0..<order.count)]
            return knownEntry(id)?.acknowledged == true ? id : nil
        }
        guard !ids.isEmpty else { return nil }
        let requests = ids.map { makeRequest("get", ["id": .string($0)], names: [$0]) }
        return register(SimulationLine(client: client, requests: requests, isBatch: true), client: client)
    }

    private func register(_ line: SimulationLine, client: Int) -> SimulationLine {
        let batch = line.isBatch ? line.requests.map(\.rpcID) : nil
        for request in line.requests {
            outstanding[request.rpcID] = Outstanding(client: client, request: request, batch: batch)
            if request.method == "wait" { waitsPerClient[client, default: 0] += 1 }
        }
        return line
    }

    private func makeRequest(_ method: String, _ params: JSONValue, names: [String], creates: String? = nil,
                             settlesWith: JSONValue? = nil, isSweep: Bool = false) -> SimulationRequest {
        defer { nextRPC += 1 }
        return SimulationRequest(rpcID: nextRPC, method: method, params: params, names: names, creates: creates,
                                 settlesWith: settlesWith, isSweep: isSweep, step: step)
    }

    /// A new id, never used before (compared by code points): mostly ASCII,
    /// sometimes with spaces, slashes and non-ASCII letters.
    private func freshID() -> String {
        nextNumber += 1
        let n = nextNumber
        switch random.int(0..<100) {
        case 0..<6: return "build/lib v\(n)"
        case 6..<12:
            let id = "caf\u{E9}-\(n)"
            composedIDs.append(id)
            return id
        case 12..<16: return "日本-\(n)-ü"
        default: return "s\(n)"
        }
    }

    /// An id made before: mostly a recent one.
    private func existingID() -> String? {
        guard !order.isEmpty else { return nil }
        if random.percent(70) { return order[random.int(max(0, order.count - 40)..<order.count)] }
        return order[random.int(0..<order.count)]
    }

    private func learn(_ id: String, _ entry: Known) {
        known[Self.key(id)] = entry
        order.append(id)
    }

    private func knownEntry(_ id: String) -> Known? { known[Self.key(id)] }

    /// A small JSON value: scalars, short strings (with non-ASCII text), shallow arrays and objects.
    private func smallValue(depth: Int = 0) -> JSONValue {
        switch random.int(0..<(depth < 3 ? 9 : 6)) {
        case 0: return .null
        case 1: return .bool(random.percent(50))
        case 2: return .int(random.int(-1_000_000...1_000_000))
        case 3: return .double(Double(random.int(-4000...4000)) + 0.25)
        case 4: return .string("v\(random.int(0..<1000))")
        case 5: return .string(random.pick(["", "ünïcødé ✓", "line\nbreak \"quoted\"", "日本語", "tab\t🙂"]))
        case 6, 7: return .array((0..<random.int(0...4)).map { _ in smallValue(depth: depth + 1) })
        default:
            var object: [String: JSONValue] = [:]
            for index in 0..<random.int(0...4) { object["k\(index)"] = smallValue(depth: depth + 1) }
            return .object(object)
        }
    }

    /// Tens of kilobytes: a long string or an array of small objects.
    private func largeValue() -> JSONValue {
        if random.percent(50) {
            let unit = random.pick(["abcdefgh", "ünï✓", "0123456789"])
            return .string(String(repeating: unit, count: random.int(1_000...5_000)))
        }
        return .array((0..<random.int(300...1_200)).map { index in ["i": .int(index), "s": .string("entry \(index)")] as JSONValue })
    }

    private func reason() -> JSONValue {
        let code = random.int(1...200)
        switch random.int(0..<3) {
        case 0: return .string("sim reason \(code)")
        case 1: return ["message": .string("sim failure \(code)")]
        default: return ["code": .int(code), "message": .string("sim failure \(code)"), "data": smallValue(depth: 2)]
        }
    }

    /// The reason a successful `reject` of `id` shows: a string is taken as
    /// the message, a null `data` is left out like an absent one, and the
    /// rejected promise is its `origin`.
    private static func normalized(_ reason: JSONValue, origin id: String) -> JSONValue {
        if case .string(let message) = reason { return ["message": .string(message), "origin": .string(id)] }
        guard var object = reason.objectValue else { return reason }
        if object["data"] == .null { object["data"] = nil }
        object["origin"] = .string(id)
        return .object(object)
    }

    private func simpleRequest(client: Int, allowWait: Bool) -> SimulationRequest {
        let roll = random.int(0..<100)
        guard let target = existingID(), roll >= 16 else { return create(client: client) }
        switch roll {
        case 16..<30:
            let value = knownEntry(target)?.big == true && random.percent(80) ? largeValue() : smallValue()
            return makeRequest("resolve", ["id": .string(target), "value": value], names: [target],
                               settlesWith: ["state": "fulfilled", "value": value])
        case 30..<37:
            let reason = reason()
            return makeRequest("reject", ["id": .string(target), "reason": reason], names: [target],
                               settlesWith: ["state": "rejected", "reason": Self.normalized(reason, origin: target)])
        case 37..<41:
            return makeRequest("cancel", ["id": .string(target)], names: [target])
        case 41..<44:
            var params: JSONValue = ["id": .string(target), "progress": .double(Double(random.int(0...8)) / 8)]
            if random.percent(50) { params = merged(params, ["message": .string("step \(random.int(0..<9))")]) }
            return makeRequest("progress", params, names: [target])
        case 44..<54:
            return then(parent: target)
        case 54..<64:
            return combinator() ?? get(target)
        case 64..<72:
            return get(target)
        case 72..<75:
            let bounded = options.avoiding.contains(.unboundedListPages)
            var params: JSONValue = ["limit": .int(bounded ? random.int(1...5) : random.int(100...1_000))]
            if !bounded && random.percent(50) {
                params = merged(params, ["state": "fulfilled"])
            } else if random.percent(50) { params = merged(params, ["state": .string(random.pick(["pending", "fulfilled", "rejected", "cancelled"]))]) }
            if random.percent(30) { params = merged(params, ["prefix": .string(random.pick(["s1", "build/", "caf", "日本", "none"]))]) }
            return makeRequest("list", params, names: [])
        case 75..<77:
            return makeRequest("info", [:], names: [])
        case 77..<83 where allowWait && waitsPerClient[client, default: 0] < 20:
            // Sometimes before the id exists: the wait then waits for its creation.
            let id = random.percent(10) ? "not-yet-\(random.int(0..<5))" : target
            var params: JSONValue = ["id": .string(id)]
            if random.percent(70) { params = merged(params, ["timeoutMs": .int(random.int(0...2_000))]) }
            return makeRequest("wait", params, names: [id])
        case 83..<87 where subscriptionsPerClient[client, default: 0] < 200:
            let ids = (0..<random.int(1...3)).compactMap { _ in existingID() }
            subscriptionsPerClient[client, default: 0] += ids.count
            return makeRequest("subscribe", ["ids": .array(ids.map(JSONValue.string))], names: [])
        case 87..<92:
            var ids = (0..<random.int(1...4)).compactMap { _ in existingID() }
            if options.avoiding.contains(.retentionDropsCombinatorInputs) {
                ids.removeAll { combinatorInputs.contains(Self.key($0)) }
            }
            guard !ids.isEmpty else { return get(target) }
            for id in ids { known[Self.key(id)]?.forgetRequested = true }
            return makeRequest("forget", ["ids": .array(ids.map(JSONValue.string))], names: [])
        case 92..<95 where !options.avoiding.contains(.canonicallyEquivalentIDs) && !composedIDs.isEmpty:
            // The decomposed twin of a composed id: other code points, so another id.
            let composed = composedIDs.removeFirst()
            let twin = String(String.UnicodeScalarView(composed.unicodeScalars.flatMap { scalar -> [Unicode.Scalar] in
                scalar == "\u{E9}" ? ["e", "\u{301}"] : [scalar]
            }))
            learn(twin, Known(kind: "created", createdAt: now(), bound: 64, nesting: 0, big: false))
            return makeRequest("create", ["id": .string(twin)], names: [], creates: twin)
        default:
            return create(client: client)
        }
    }

    private func merged(_ a: JSONValue, _ b: JSONValue) -> JSONValue {
        var object = a.objectValue ?? [:]
        for (key, value) in b.objectValue ?? [:] { object[key] = value }
        return .object(object)
    }

    private func get(_ id: String) -> SimulationRequest {
        makeRequest("get", ["id": .string(id)], names: [id])
    }

    private func create(client: Int) -> SimulationRequest {
        let id = freshID()
        var params: [String: JSONValue] = ["id": .string(id)]
        var entry = Known(kind: "created", createdAt: now(), bound: 256, nesting: 0, big: random.percent(10))
        if entry.big { entry.bound = 80_000 }
        if random.percent(20) { params["name"] = .string("job \(random.int(0..<50))") }
        if random.percent(20) {
            let timeout = random.weighted([(3, random.int(0...300)), (2, random.int(300...4_000))])
            params["timeoutMs"] = .int(timeout)
            entry.timeoutMs = timeout
        }
        if random.percent(12) {
            params["lease"] = true
            entry.lease = true
        }
        learn(id, entry)
        return makeRequest("create", .object(params), names: [], creates: id)
    }

    private func then(parent: String) -> SimulationRequest {
        let child = freshID()
        let on = random.pick(["fulfilled", "rejected", "settled"])
        let parentEntry = knownEntry(parent)
        learn(child, Known(kind: "then", parent: parent, createdAt: now(), bound: max(256, parentEntry?.bound ?? 256),
                           nesting: parentEntry?.nesting ?? 0, big: parentEntry?.big ?? false))
        return makeRequest("then", ["id": .string(parent), "childId": .string(child), "on": .string(on)],
                           names: [parent], creates: child)
    }

    /// A combinator over random inputs, some duplicated many times; nil when
    /// the avoided defects leave none to make.
    private func combinator() -> SimulationRequest? {
        if options.retainMilliseconds != nil && options.avoiding.contains(.retentionDropsCombinatorInputs) { return nil }
        let method = random.pick(["all", "all", "any", "race", "allSettled"])
        var ids = (0..<random.weighted([(1, 0), (6, random.int(1...4)), (2, random.int(5...12))]))
            .compactMap { _ in existingID() }
        if !options.avoiding.contains(.unboundedCombinatorValues) && !largeFulfilled.isEmpty && random.percent(30) {
            // A large fulfilled value, many times over: the combinator settles at once, as large as them all.
            ids += Array(repeating: random.pick(largeFulfilled), count: random.int(20...60))
        } else if random.percent(25), let repeated = existingID() {
            ids += Array(repeating: repeated, count: random.weighted([(3, random.int(2...10)), (1, random.int(10...60))]))
            ids.shuffle(using: &random)
        }
        var params: [String: JSONValue] = [:]
        var policy = "fail-fast"
        if method == "all" && random.percent(60) {
            policy = random.pick(["fail-fast", "all-errors", "ignore-errors", "nulls"])
            params["policy"] = .string(policy)
        }
        let wraps = method == "any" || policy == "all-errors"
        func bound(_ ids: [String]) -> Int { ids.reduce(64) { $0 + ($1.utf8.count + 96) + (knownEntry($1)?.bound ?? 256) } }
        func nesting(_ ids: [String]) -> Int { (ids.map { knownEntry($0)?.nesting ?? 0 }.max() ?? 0) + (wraps ? 1 : 0) }
        if options.avoiding.contains(.unboundedCombinatorValues) {
            while !ids.isEmpty && bound(ids) > options.maxAnswerBytes / 8 { ids.removeLast() }
        }
        if options.avoiding.contains(.deepAnyReasons) && nesting(ids) > 40 { return nil }
        let id = freshID()
        params["id"] = .string(id)
        params["ids"] = .array(ids.map(JSONValue.string))
        for input in ids { combinatorInputs.insert(Self.key(input)) }
        learn(id, Known(kind: method, inputs: ids, createdAt: now(), bound: bound(ids), nesting: nesting(ids),
                        big: ids.contains { knownEntry($0)?.big == true }))
        return makeRequest(method, .object(params), names: ids, creates: id)
    }

    /// One batch line: a chain of `then` children, each following the one before.
    private func thenChain(client: Int) -> SimulationLine {
        var parent = existingID() ?? ""
        var requests: [SimulationRequest] = []
        if parent.isEmpty {
            let head = create(client: client)
            requests.append(head)
            parent = head.creates ?? ""
        }
        var length = random.weighted([(3, random.int(5...40)), (1, random.int(40...options.maxChainLength))])
        // Every link copies the parent's value or reason, and the batch answer carries every copy.
        if options.avoiding.contains(.valueCopiedPerChild), knownEntry(parent).map({ $0.big || $0.bound > 2_000 }) ?? true {
            length = min(length, 10)
        }
        for _ in 0..<length {
            let link = then(parent: parent)
            requests.append(link)
            parent = link.creates ?? parent
        }
        return SimulationLine(client: client, requests: requests, isBatch: true)
    }

    /// One batch line: a new head, a chain of `any` links over it (each wraps
    /// the reason below it), and sometimes the head's rejection.
    private func anyChain(client: Int) -> SimulationLine {
        let head = create(client: client)
        var requests = [head]
        var tail = head.creates ?? ""
        var length = random.weighted([(3, random.int(2...20)), (1, random.int(20...options.maxAnyChainLength))])
        if options.avoiding.contains(.deepAnyReasons) { length = min(length, 40) }
        if options.retainMilliseconds != nil && options.avoiding.contains(.retentionDropsCombinatorInputs) { length = 0 }
        for _ in 0..<length {
            let link = freshID()
            let below = knownEntry(tail)
            combinatorInputs.insert(Self.key(tail))
            learn(link, Known(kind: "any", inputs: [tail], createdAt: now(), bound: (below?.bound ?? 256) + 160,
                              nesting: (below?.nesting ?? 0) + 1, big: false))
            requests.append(makeRequest("any", ["id": .string(link), "ids": [.string(tail)]], names: [tail], creates: link))
            tail = link
        }
        if random.percent(60), let headID = head.creates {
            let reason = reason()
            requests.append(makeRequest("reject", ["id": .string(headID), "reason": reason], names: [headID],
                                        settlesWith: ["state": "rejected", "reason": Self.normalized(reason, origin: headID)]))
        }
        return SimulationLine(client: client, requests: requests, isBatch: true)
    }

    /// One batch line that grows a long chain of combinators, each over the
    /// link before: from a new root (sometimes with a timeout or a lease),
    /// or on the end of a chain an earlier line made. Sometimes it ends by
    /// settling or cancelling the root, or cancelling the last link: either
    /// walks the whole chain, as a restart that restores it does.
    private func combinatorChain(client: Int) -> SimulationLine {
        var requests: [SimulationRequest] = []
        // The hostile profile grows its longest chain, so that a run reaches
        // thousands of links; the mixed one any of them.
        let index = longChains.isEmpty || !random.percent(options.profile == .hostile ? 95 : 75)
            ? nil
            : options.profile == .hostile
                ? longChains.indices.max { longChains[$0].length < longChains[$1].length }
                : random.int(0..<longChains.count)
        var chain: LongChain
        if let index, longChains[index].length < options.maxCombinatorChainLength {
            chain = longChains[index]
        } else {
            let head = create(client: client)
            requests.append(head)
            chain = LongChain(root: head.creates ?? "", tail: head.creates ?? "", length: 0)
        }
        let kinds = options.avoiding.contains(.longTurns) ? ["all", "race", "allSettled"] : ["all", "any", "race", "allSettled"]
        let kind = random.pick(kinds)
        let links = min(random.int(1...options.maxCombinatorChainLinks), options.maxCombinatorChainLength - chain.length)
        for _ in 0..<links {
            let link = freshID()
            let method = random.percent(85) ? kind : random.pick(kinds)
            let below = knownEntry(chain.tail)
            combinatorInputs.insert(Self.key(chain.tail))
            learn(link, Known(kind: method, inputs: [chain.tail], createdAt: now(), bound: (below?.bound ?? 256) + 160,
                              nesting: (below?.nesting ?? 0) + 1, big: below?.big ?? false))
            requests.append(makeRequest(method, ["id": .string(link), "ids": [.string(chain.tail)]], names: [chain.tail],
                                        creates: link))
            chain.tail = link
            chain.length += 1
        }
        switch random.int(0..<10) {
        case 0..<3:
            let value = smallValue()
            requests.append(makeRequest("resolve", ["id": .string(chain.root), "value": value], names: [chain.root],
                                        settlesWith: ["state": "fulfilled", "value": value]))
        case 3:
            let reason = reason()
            requests.append(makeRequest("reject", ["id": .string(chain.root), "reason": reason], names: [chain.root],
                                        settlesWith: ["state": "rejected", "reason": Self.normalized(reason, origin: chain.root)]))
        case 4:
            requests.append(makeRequest("cancel", ["id": .string(chain.root)], names: [chain.root]))
        case 5:
            requests.append(makeRequest("cancel", ["id": .string(chain.tail)], names: [chain.tail]))
        default:
            break
        }
        longestCombinatorChain = max(longestCombinatorChain, chain.length)
        if let index, longChains[index].root == chain.root {
            longChains[index] = chain
        } else {
            longChains.append(chain)
            if longChains.count > 3 { longChains.removeFirst() }
        }
        return SimulationLine(client: client, requests: requests, isBatch: true)
    }

    /// One line: an `all` over one id repeated thousands of times (as many
    /// as a request line holds), cancelled in the same batch most times.
    private func repeatedFanIn(client: Int) -> SimulationLine? {
        guard let input = existingID() else { return nil }
        let perID = JSONValue.string(input).serialized().count + 1
        let most = 40_000
        let count = min(random.int(most / 20...most), (DaemonLimits().maxLineBytes - 4_096) / perID)
        let ids = Array(repeating: input, count: count)
        let id = freshID()
        let below = knownEntry(input)
        combinatorInputs.insert(Self.key(input))
        learn(id, Known(kind: "all", inputs: ids, createdAt: now(),
                        bound: min(options.maxValueBytes, count * ((below?.bound ?? 256) + 1)) + 256,
                        nesting: below?.nesting ?? 0, big: below?.big ?? false))
        var requests = [makeRequest("all", ["id": .string(id), "ids": .array(ids.map(JSONValue.string))], names: [input],
                                    creates: id)]
        if random.percent(60) { requests.append(makeRequest("cancel", ["id": .string(id)], names: [id])) }
        return SimulationLine(client: client, requests: requests, isBatch: requests.count > 1)
    }

    /// One batch of many `list` reads of thousands of records each: the
    /// batch's answer is bounded, and the members past the bound are left out.
    private func heavyReads(client: Int) -> SimulationLine {
        let short = options.avoiding.contains(.longTurns)
        let requests = (0..<random.int(short ? 5...20 : 20...300)).map { _ in
            makeRequest("list", ["limit": .int(short ? random.int(100...1_000) : random.int(1_000...10_000))], names: [])
        }
        return SimulationLine(client: client, requests: requests, isBatch: true)
    }

    /// A line that creates a new id for the driver's own traffic beside the
    /// steps (the daemon variant's silent subscribers and the progress they
    /// do not read), so that the model knows every promise there is.
    package func driverTopic(client: Int) -> SimulationLine {
        let id = freshID()
        learn(id, Known(kind: "created", createdAt: now(), bound: 256, nesting: 0, big: false))
        let request = makeRequest("create", ["id": .string(id)], names: [], creates: id)
        return register(SimulationLine(client: client, requests: [request], isBatch: false), client: client)
    }

    // MARK: Checking

    /// Whether `id` may no longer be held: never acknowledged (or lost in a
    /// crash), forgotten, or settled long enough ago for retention.
    package func mayBeGone(_ id: String) -> Bool {
        guard let entry = knownEntry(id) else { return true }
        if !entry.acknowledged || entry.uncertain || entry.forgetRequested { return true }
        if let retain = options.retainMilliseconds {
            let since = entry.settledAt ?? entry.lastSeenPendingAt ?? entry.createdAt
            if now() + clockSlack >= since + retain { return true }
        }
        return false
    }

    /// Checks one message a client received: valid JSON-RPC 2.0 within the
    /// limits, an answer to a request of that client (once) or a valid
    /// notification, consistent with everything acknowledged before.
    package func receive(client: Int, bytes: [UInt8]) {
        let message: JSONValue
        do {
            message = try JSONValue(parsing: bytes)
        } catch {
            return fail("client \(client) received a line that is not JSON (\(error)): \(Self.show(bytes))")
        }
        if case .array(let elements) = message {
            guard let first = elements.first?["id"]?.intValue, let entry = outstanding[first],
                let batch = entry.batch, entry.client == client
            else { return fail("client \(client) received an array that answers no batch of its own: \(Self.show(bytes))") }
            guard elements.count == batch.count else {
                return fail("a batch of \(batch.count) requests was answered with \(elements.count) elements: \(Self.show(bytes))")
            }
            let bound = options.maxBatchAnswerBytes + elements.count * SimulationOptions.batchAnswerSlack
            if bytes.count > bound {
                return fail("a batch answer of \(bytes.count) bytes passes the limit of \(bound): \(Self.show(bytes, limit: 200))")
            }
            for (element, rpcID) in zip(elements, batch) {
                guard element["id"] == .int(rpcID), let member = outstanding.removeValue(forKey: rpcID) else {
                    return fail("batch answer out of order or unknown: expected id \(rpcID) in \(Self.show(bytes))")
                }
                if element["error"]?["data"]?["limit"] == "maxBatchAnswerBytes" {
                    leftOut(member.request, element)
                } else {
                    checkAnswer(element, to: member.request, client: client)
                }
            }
            return
        }
        guard case .object(let object) = message else {
            return fail("client \(client) received a message that is not an object: \(Self.show(bytes))")
        }
        if object["id"] == nil {
            return checkNotification(object, client: client, bytes: bytes)
        }
        guard let rpcID = object["id"]?.intValue, let entry = outstanding[rpcID], entry.client == client,
            entry.batch == nil
        else { return fail("client \(client) received an answer to no request of its own (or twice): \(Self.show(bytes))") }
        outstanding[rpcID] = nil
        if entry.request.method == "wait" { waitsPerClient[client, default: 1] -= 1 }
        checkSize(bytes, isSweep: entry.request.isSweep)
        checkAnswer(message, to: entry.request, client: client)
    }

    /// A batch member whose answer did not fit in the batch's: it was
    /// carried out, and nothing of it is acknowledged (as a request sent
    /// before a crash). Its error must say so, with the daemon's bound.
    private func leftOut(_ request: SimulationRequest, _ answer: JSONValue) {
        guard answer["error"]?["code"] == -32004, answer["result"] == nil,
              answer["error"]?["data"]?["value"] == .int(options.maxBatchAnswerBytes)
        else { return fail("\(request.method) left out of its batch's answer with \(answer.description.prefix(300))") }
        if let id = request.creates, known[Self.key(id)]?.acknowledged == false {
            known[Self.key(id)]?.uncertain = true
        }
    }

    private func checkSize(_ bytes: [UInt8], isSweep: Bool) {
        if !isSweep && bytes.count > options.maxAnswerBytes {
            fail("an answer of \(bytes.count) bytes passes the limit of \(options.maxAnswerBytes): \(Self.show(bytes, limit: 200))")
        }
    }

    private func checkNotification(_ object: [String: JSONValue], client: Int, bytes: [UInt8]) {
        guard object["jsonrpc"] == "2.0", let method = object["method"]?.stringValue,
            Set(object.keys).isSubset(of: ["jsonrpc", "method", "params"])
        else { return fail("client \(client) received an invalid notification: \(Self.show(bytes))") }
        checkSize(bytes, isSweep: false)
        switch method {
        case "settled":
            guard let record = object["params"], record["state"] != "pending" else {
                return fail("a settled notification without a settled record: \(Self.show(bytes))")
            }
            observe(record, context: "settled notification")
        case "progress":
            guard let params = object["params"], params["id"]?.stringValue != nil,
                let progress = params["progress"]?.doubleValue, (0...1).contains(progress)
            else { return fail("an invalid progress notification: \(Self.show(bytes))") }
        default:
            fail("a notification of unknown method \(method): \(Self.show(bytes))")
        }
    }

    /// Codes a valid request may be answered with, besides success.
    private func checkAnswer(_ message: JSONValue, to request: SimulationRequest, client: Int) {
        guard case .object(let object) = message, object["jsonrpc"] == "2.0", object["id"] == .int(request.rpcID),
            Set(object.keys).isSubset(of: ["jsonrpc", "id", "result", "error"]),
            (object["result"] == nil) != (object["error"] == nil)
        else { return fail("not a JSON-RPC 2.0 response to \(request.method) #\(request.rpcID): \(message)") }
        if let error = object["error"] {
            guard let code = error["code"]?.intValue, error["message"]?.stringValue != nil,
                Set(error.objectValue?.keys.map { $0 } ?? []).isSubset(of: ["code", "message", "data"])
            else { return fail("an invalid error object for \(request.method): \(message)") }
            let someMayBeGone = request.names.contains {
                mayBeGone($0) || knownEntry($0).map { $0.acknowledgedStep >= request.step } == true
            }
            switch code {
            case -32001 where someMayBeGone:
                return
            case -32002 where Self.settleMethods.contains(request.method):
                if let record = error["data"] { observe(record, context: "already settled") }
                if error["data"]?["state"] == "pending" { fail("-32002 \"already settled\" for a pending promise: \(message)") }
                return
            case -32005 where request.method == "wait" && request.params["timeoutMs"] != nil:
                return
            default:
                let twin = request.creates.map { $0.unicodeScalars.allSatisfy(\.isASCII) ? "" : " (its id: \(Self.codePoints($0)))" } ?? ""
                return fail("\(request.method) \(Self.show(request.params.serialized(), limit: 300))\(twin) was answered with an error it should not get: \(message.description.prefix(600))")
            }
        }
        guard let result = object["result"] else { return }
        if let settlesWith = request.settlesWith {
            let shown = Self.settlement(result)
            if shown != settlesWith {
                return fail("\(request.method) of \(request.names.first ?? "?") succeeded but shows \(shown.description.prefix(300)), not \(settlesWith.description.prefix(300))")
            }
        }
        // Settled by an earlier step: a settlement shown in this step may be this request's own
        // (a `wait` answer or a `settled` notification sent before the request's answer).
        if let target = request.names.first.flatMap({ knownEntry($0) }), let existing = target.settled,
            target.settledStep < request.step, Self.settleMethods.contains(request.method)
        {
            return fail("\(request.method) of \(request.names[0]) succeeded although its settlement \(existing.description.prefix(200)) was acknowledged")
        }
        if Self.recordMethods.contains(request.method) {
            guard result["id"]?.stringValue != nil else { return fail("\(request.method) answered without a record: \(result)") }
            // Compared by code points, not by canonical equivalence.
            if let creates = request.creates, result["id"]?.stringValue.map({ Array($0.utf8) }) != Array(creates.utf8) {
                return fail("\(request.method) of \(creates.debugDescription) answered with the record of \(result["id"]?.description ?? "?")")
            }
            observe(result, context: request.method)
            return
        }
        switch request.method {
        case "list":
            guard let page = result["promises"]?.arrayValue, result["cursor"] != nil else {
                return fail("list answered without promises and cursor: \(result.description.prefix(300))")
            }
            if !request.isSweep { for record in page { observe(record, context: "list") } }
            if request.isSweep { sweepResults[request.rpcID] = result }
        case "info":
            checkInfo(result)
            if request.isSweep { sweepResults[request.rpcID] = result }
        case "forget":
            guard result["forgotten"]?.intValue != nil, result["pending"]?.arrayValue != nil else {
                return fail("forget answered \(result)")
            }
        case "subscribe":
            guard result["subscribed"]?.intValue != nil else { return fail("subscribe answered \(result)") }
        default:
            fail("unexpected result for \(request.method): \(result)")
        }
    }

    /// `info`: counts that add up and stay under the configured caps.
    package func checkInfo(_ info: JSONValue) {
        guard let promises = info["promises"]?.intValue, let pending = info["pending"]?.intValue,
            let settled = info["settled"]?.intValue
        else { return fail("info without counts: \(info)") }
        if pending + settled != promises { fail("info counts do not add up: \(info)") }
        if promises > options.maxPromises { fail("\(promises) promises held, over the cap of \(options.maxPromises)") }
        if info["store"]?["writable"] == false { fail("the store cannot write: \(info["store"] ?? .null)") }
    }

    /// `{"state", "value"?, "reason"?}` of a record.
    package static func settlement(_ record: JSONValue) -> JSONValue {
        var object: [String: JSONValue] = ["state": record["state"] ?? .null]
        if let value = record["value"] { object["value"] = value }
        if let reason = record["reason"] { object["reason"] = reason }
        return .object(object)
    }

    /// Takes in a record a delivered message showed: acknowledged, so a
    /// settlement must match the one seen before (or become the one to match).
    package func observe(_ record: JSONValue, context: String) {
        guard let id = record["id"]?.stringValue, let state = record["state"]?.stringValue, Self.states.contains(state)
        else { return fail("\(context): not a record: \(record.description.prefix(300))") }
        let key = Self.key(id)
        guard var entry = known[key] else {
            return fail("\(context): a record of \(id.debugDescription), which no client made")
        }
        if !entry.acknowledged { entry.acknowledgedStep = step }
        entry.acknowledged = true
        entry.uncertain = false
        if state == "pending" {
            // A step's messages are not ordered against the order its requests ran in: a batch
            // answer (a progress run before the resolve) can come after the `settled` notification.
            if let settled = entry.settled, entry.settledStep < step || context == "after restart" {
                return fail("\(context): \(id) is pending, but its settlement \(settled.description.prefix(200)) was acknowledged")
            }
            entry.lastSeenPendingAt = now()
            known[key] = entry
            return
        }
        if let message = record["reason"]?["message"]?.stringValue, message.hasPrefix("cannot be restored") {
            fail("\(context): \(id) was rejected \(message.debugDescription): something it needed was dropped (issue 22 item 6)")
        }
        let settlement = Self.settlement(record)
        if let settled = entry.settled {
            if settled != settlement {
                fail("\(context): acknowledged settlement of \(id) changed from \(settled.description.prefix(300)) to \(settlement.description.prefix(300))")
            }
            return
        }
        if let value = record["value"], value.serialized().count > 8_000 { largeFulfilled.append(id) }
        entry.settled = settlement
        entry.settledAt = record["settled"]?.intValue.map(Int64.init) ?? now()
        entry.settledStep = step
        known[key] = entry
        checkCombinatorValue(entry, id: id)
    }

    /// A fulfilled `all` (fail-fast, all-errors) holds its inputs' values in order.
    private func checkCombinatorValue(_ entry: Known, id: String) {
        guard entry.kind == "all", entry.settled?["state"] == "fulfilled" else { return }
        let inputs = entry.inputs.map { knownEntry($0)?.settled }
        guard inputs.allSatisfy({ $0?["state"] == "fulfilled" }) else { return }
        let expected = JSONValue.array(inputs.map { $0?["value"] ?? .null })
        if entry.settled?["value"] != expected, entry.settled?["value"]?.arrayValue?.count == entry.inputs.count {
            fail("all \(id) is fulfilled with \(entry.settled?["value"]?.description.prefix(200) ?? "?"), not its inputs' values \(expected.description.prefix(200))")
        }
    }

    // MARK: Turns, connections, restarts

    /// Every request in `lines` but `wait`s must be answered by now.
    package func expectAnswered(_ lines: [SimulationLine]) {
        for line in lines {
            for request in line.requests where request.method != "wait" && outstanding[request.rpcID] != nil {
                return fail("no answer to \(request.method) #\(request.rpcID) from client \(line.client)")
            }
        }
    }

    /// The requests not answered yet (waits mostly).
    package var unanswered: Int { outstanding.count }

    /// Whether the request `rpcID` was answered (or dropped with its connection).
    package func isAnswered(_ rpcID: Int) -> Bool { outstanding[rpcID] == nil }

    /// A client closed: what it waited for is dropped.
    package func closed(client: Int) {
        outstanding = outstanding.filter { $0.value.client != client }
        waitsPerClient[client] = 0
        subscriptionsPerClient[client] = 0
    }

    /// The daemon stops, cleanly or not: nothing more is answered. What
    /// unanswered requests made may or may not have been stored.
    package func stopped() {
        for entry in outstanding.values {
            if let id = entry.request.creates, known[Self.key(id)]?.acknowledged == false {
                known[Self.key(id)]?.uncertain = true
            }
        }
        outstanding.removeAll()
        waitsPerClient.removeAll()
        subscriptionsPerClient.removeAll()
    }

    /// After a restart, with every record the daemon now holds (and, for a
    /// restart between turns, clean or kill -9, every record it held just
    /// before): every acknowledged settlement is there, unchanged; every
    /// acknowledged promise is there unless it may have been forgotten or
    /// collected; a promise pending before is pending, or settled for a
    /// documented reason.
    package func verifyRestart(records: [[UInt8]: JSONValue], before: [[UInt8]: JSONValue]?) {
        for id in order {
            let key = Self.key(id)
            guard let entry = known[key] else { continue }
            guard let record = records[key] else {
                if entry.acknowledged && !mayBeGone(id) {
                    fail("after a restart, acknowledged promise \(id) (\(entry.settled?.description.prefix(200) ?? "pending")) is missing")
                }
                continue
            }
            if let before, let previous = before[key], previous["state"] == "pending", record["state"] != "pending" {
                checkSettledByRestart(id, entry: entry, record: record, before: before, after: records)
            }
            observe(record, context: "after restart")
        }
        for (key, record) in records where known[key] == nil {
            fail("after a restart, a promise nobody made: \(record.description.prefix(200))")
        }
    }

    /// A promise pending before a restart and settled after it: only
    /// its lease, its timeout, a settlement that came down its links, or a
    /// quarantined input may explain it.
    private func checkSettledByRestart(_ id: String, entry: Known, record: JSONValue,
                                       before: [[UInt8]: JSONValue], after: [[UInt8]: JSONValue]) {
        let message = record["reason"]?["message"]?.stringValue ?? ""
        if entry.lease && message.hasPrefix("lease expired") { return }
        if let timeout = entry.timeoutMs, record["reason"]?["code"] == -32005,
            let created = record["created"]?.intValue, now() + clockSlack >= Int64(created + timeout)
        {
            return
        }
        if message.contains("quarantine") { return }
        if timedOutAbove(id, reason: record["reason"], after: after) { return }
        let linkSettledByRestart = entry.links.contains { link in
            let key = Self.key(link)
            return before[key]?["state"] == "pending" && after[key]?["state"] != "pending"
        }
        if linkSettledByRestart && !message.hasPrefix("cannot be restored") { return }
        fail("\(id) was pending before a restart and is \(Self.settlement(record).description.prefix(300)) after it, for no documented reason")
    }

    /// Whether `reason` is the timeout of a promise up `id`'s links whose
    /// deadline has passed. The daemon variant reads the records after a
    /// restart in several `list` pages, one loop turn each (a page is
    /// bounded in bytes): a timer that fires between two pages rejects a
    /// link read on an earlier one, still pending there, and what came down
    /// from it, read on a later one.
    private func timedOutAbove(_ id: String, reason: JSONValue?, after: [[UInt8]: JSONValue]) -> Bool {
        guard reason?["code"] == -32005, let origin = reason?["origin"]?.stringValue,
            let timeout = known[Self.key(origin)]?.timeoutMs,
            let created = after[Self.key(origin)]?["created"]?.intValue,
            now() + clockSlack >= Int64(created + timeout)
        else { return false }
        var above = [id]
        var seen: Set<String> = []
        while let next = above.popLast() {
            guard seen.insert(next).inserted, let entry = known[Self.key(next)] else { continue }
            if entry.links.contains(origin) { return true }
            above += entry.links
        }
        return false
    }

    /// `id` with every non-ASCII code point written `\u{…}`: canonically equivalent ids look alike.
    package static func codePoints(_ id: String) -> String {
        id.unicodeScalars.map { $0.isASCII ? String($0) : "\\u{\(String($0.value, radix: 16, uppercase: true))}" }.joined()
    }

    package static func show(_ bytes: [UInt8], limit: Int = 400) -> String {
        let text = String(decoding: bytes, as: UTF8.self)
        return text.count <= limit ? text : String(text.prefix(limit)) + "…(\(bytes.count) bytes)"
    }
}
