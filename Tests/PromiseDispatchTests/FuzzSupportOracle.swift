import Glibc
import PromiseJSON
import PromiseModel
import PromiseRPC
import PromiseServer

/// What JSON-RPC 2.0 (docs/PROTOCOL.md, "Envelope") says one line must get,
/// worked out independently of the dispatcher's own envelope code.
enum FuzzExpectation {
    /// Blank lines, notifications, batches of notifications only.
    case nothing
    case single(FuzzAnswerRule)
    /// One array holding an answer per rule, in this order.
    case batch([FuzzAnswerRule])

    /// True when the answer may come later: a `wait` (alone or in a batch) holds it back.
    var mayComeLater: Bool {
        switch self {
        case .nothing: false
        case .single(let rule): rule.isWait
        case .batch(let rules): rules.contains { $0.isWait }
        }
    }
}

/// The answer one request (or one non-request) must get.
struct FuzzAnswerRule {
    enum Code: Equatable {
        /// An envelope error with exactly this code.
        case exactly(Int)
        /// A known method ran: a result, or an error that is not about the envelope.
        case methodRan
    }

    var id: JSONValue
    var code: Code
    var isWait = false
}

/// Checks what a fake peer was sent against the protocol: each message must
/// be strict JSON on one line, a valid JSON-RPC 2.0 response (or a batch
/// array of them) or a valid server notification, and must answer something
/// that was asked and not yet answered. Answers that may come later (`wait`)
/// are kept per peer until they come or the peer closes.
final class FuzzOracle {
    /// One connection under test and the answers it still has coming.
    final class Peer {
        let peer: RPCFakePeer
        var framer: LineFramer
        /// Stream bytes after the last newline, as the model frames them.
        var modelPartial: [UInt8] = []
        /// Lines the model framed that the framer has not delivered yet.
        var modelLines: [[UInt8]] = []
        fileprivate var read = 0
        fileprivate var later: [FuzzExpectation] = []

        init(_ peer: RPCFakePeer, maxLineBytes: Int) {
            self.peer = peer
            framer = LineFramer(maxLineBytes: maxLineBytes)
        }
    }

    let seed: UInt64
    let maxBatchSize: Int
    private(set) var failures: [String] = []
    private(set) var answersChecked = 0
    private(set) var notificationsChecked = 0
    /// Set by the driver: where a failure happened.
    var context = ""
    /// Set by the driver: the line being handled, if any (shown only on failure).
    var line: [UInt8]?
    private static let maxFailures = 20
    private static let knownMethods = Set(FuzzInputs.methods)
    private static let knownCodes: Set<Int> = [-32700, -32600, -32601, -32602, -32001, -32002, -32003, -32004, -32005, -32006]

    init(seed: UInt64, maxBatchSize: Int) {
        self.seed = seed
        self.maxBatchSize = maxBatchSize
    }

    var isFull: Bool { failures.count >= Self.maxFailures }

    func fail(_ problem: String) {
        guard !isFull else { return }
        let shown = line.map { ", line \(FuzzSettings.show($0))" } ?? ""
        failures.append("seed \(seed) (FUZZ_SEED=\(seed)), \(context)\(shown): \(problem)")
    }

    // MARK: The model

    func expectation(for line: [UInt8]) -> FuzzExpectation {
        if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D || $0 == 0x0A }) { return .nothing }
        guard let message = try? JSONValue(parsing: line) else {
            return .single(FuzzAnswerRule(id: .null, code: .exactly(-32700)))
        }
        guard case .array(let members) = message else {
            return rule(for: message).map(FuzzExpectation.single) ?? .nothing
        }
        if members.isEmpty { return .single(FuzzAnswerRule(id: .null, code: .exactly(-32600))) }
        if members.count > maxBatchSize { return .single(FuzzAnswerRule(id: .null, code: .exactly(-32004))) }
        let rules = members.compactMap(rule(for:))
        return rules.isEmpty ? .nothing : .batch(rules)
    }

    /// nil for a notification (an object with `"jsonrpc":"2.0"`, a string
    /// method and no `"id"`), which is never answered.
    private func rule(for message: JSONValue) -> FuzzAnswerRule? {
        guard case .object(let members) = message else { return FuzzAnswerRule(id: .null, code: .exactly(-32600)) }
        let id = members["id"]
        switch id {
        case nil, .null?, .int?, .double?, .string?: break
        default: return FuzzAnswerRule(id: .null, code: .exactly(-32600))
        }
        guard members["jsonrpc"] == "2.0", case .string(let method)? = members["method"] else {
            return FuzzAnswerRule(id: id ?? .null, code: .exactly(-32600))
        }
        guard let id else { return nil }
        switch members["params"] {
        case nil, .null?, .object?: break
        default: return FuzzAnswerRule(id: id, code: .exactly(-32602))
        }
        guard Self.knownMethods.contains(method) else { return FuzzAnswerRule(id: id, code: .exactly(-32601)) }
        return FuzzAnswerRule(id: id, code: .methodRan, isWait: method == "wait")
    }

    // MARK: Checking what was sent

    /// Checks the messages `peer` got since the last check. `current` is what
    /// the line just handled on this peer must get (nil: no line, e.g. a timer
    /// fired or another peer's line ran); unanswered, it must be allowed to come later.
    func check(_ peer: Peer, current: FuzzExpectation?) {
        var pendingNow = current
        if case .nothing? = pendingNow { pendingNow = nil }
        let sent = peer.peer.sent
        while peer.read < sent.count {
            let bytes = sent[peer.read]
            peer.read += 1
            if bytes.withUnsafeBytes({ $0.isEmpty ? nil : memchr($0.baseAddress!, 0x0A, $0.count) }) != nil {
                fail("a message holds a raw line break: \(FuzzSettings.show(bytes))")
            }
            let message: JSONValue
            do {
                message = try JSONValue(parsing: bytes)
            } catch {
                fail("the daemon sent text the strict parser refuses (\(error)): \(FuzzSettings.show(bytes))")
                pendingNow = nil  // most likely its answer: one failure is enough
                continue
            }
            switch message {
            case .array(let answers):
                checkBatch(answers, bytes, peer, &pendingNow)
            case .object(let members) where members["id"] == nil:
                checkNotification(members, bytes)
            case .object:
                checkSingle(message, bytes, peer, &pendingNow)
            default:
                fail("a message that is neither an object nor an array: \(FuzzSettings.show(bytes))")
            }
        }
        if let pendingNow {
            if pendingNow.mayComeLater {
                peer.later.append(pendingNow)
            } else {
                fail("no answer, expected \(pendingNow)")
            }
        }
    }

    /// The peer closed: answers still owed to it are dropped with it.
    func closed(_ peer: Peer) {
        check(peer, current: nil)
        peer.later.removeAll()
    }

    private func checkSingle(_ message: JSONValue, _ bytes: [UInt8], _ peer: Peer, _ pendingNow: inout FuzzExpectation?) {
        answersChecked += 1
        guard let problem = responseProblem(message) else {
            let id = message["id"]!
            if case .single(let rule)? = pendingNow, rule.id == id {
                pendingNow = nil
                checkCode(message, rule, bytes)
            } else if let index = peer.later.firstIndex(where: {
                if case .single(let rule) = $0 { return rule.id == id }
                return false
            }) {
                if case .single(let rule) = peer.later.remove(at: index) { checkCode(message, rule, bytes) }
            } else {
                fail("an answer nothing asked for (expected \(String(describing: pendingNow))): \(FuzzSettings.show(bytes))")
            }
            return
        }
        fail("\(problem): \(FuzzSettings.show(bytes))")
    }

    private func checkBatch(_ answers: [JSONValue], _ bytes: [UInt8], _ peer: Peer, _ pendingNow: inout FuzzExpectation?) {
        answersChecked += 1
        if answers.isEmpty { fail("an empty batch answer: \(FuzzSettings.show(bytes))") }
        for answer in answers {
            if let problem = responseProblem(answer) {
                fail("batch member: \(problem): \(FuzzSettings.show(bytes))")
                return
            }
        }
        let ids = answers.map { $0["id"]! }
        func matches(_ expectation: FuzzExpectation) -> [FuzzAnswerRule]? {
            guard case .batch(let rules) = expectation, rules.map(\.id) == ids else { return nil }
            return rules
        }
        let rules: [FuzzAnswerRule]
        if let current = pendingNow, let matched = matches(current) {
            pendingNow = nil
            rules = matched
        } else if let index = peer.later.firstIndex(where: { matches($0) != nil }) {
            rules = matches(peer.later.remove(at: index))!
        } else {
            fail("a batch answer that does not match its batch (expected \(String(describing: pendingNow))): \(FuzzSettings.show(bytes))")
            return
        }
        for (answer, rule) in zip(answers, rules) { checkCode(answer, rule, bytes) }
    }

    /// A JSON-RPC 2.0 response: `"jsonrpc":"2.0"`, an id that is null, a
    /// number or a string, exactly one of result and error; an error has an
    /// integer code and a string message. nil when it is one.
    private func responseProblem(_ message: JSONValue) -> String? {
        guard case .object(let members) = message else { return "a response that is not an object" }
        guard members["jsonrpc"] == "2.0" else { return "a response without \"jsonrpc\":\"2.0\"" }
        switch members["id"] {
        case .null?, .int?, .double?, .string?: break
        default: return "a response whose id is not null, a number or a string"
        }
        if let extra = members.keys.first(where: { !["jsonrpc", "id", "result", "error"].contains($0) }) {
            return "a response with a member \"\(extra)\""
        }
        switch (members["result"], members["error"]) {
        case (nil, .object(let error)?):
            guard case .int(let code)? = error["code"] else { return "an error without an integer code" }
            guard case .string? = error["message"] else { return "an error without a string message" }
            if let extra = error.keys.first(where: { !["code", "message", "data"].contains($0) }) {
                return "an error object with a member \"\(extra)\""
            }
            if code == -32603 { return "an internal error (a daemon bug, by the protocol's own words)" }
            if !Self.knownCodes.contains(code) { return "an error code the protocol does not list" }
            return nil
        case (nil, _?): return "an error that is not an object"
        case (_?, nil): return nil
        case (nil, nil): return "a response with neither result nor error"
        case (_?, _?): return "a response with both result and error"
        }
    }

    private func checkCode(_ answer: JSONValue, _ rule: FuzzAnswerRule, _ bytes: [UInt8]) {
        let code = answer["error"]?["code"]?.intValue
        switch rule.code {
        case .exactly(let expected):
            if code != expected { fail("expected error \(expected), got \(code.map(String.init) ?? "a result"): \(FuzzSettings.show(bytes))") }
        case .methodRan:
            if let code, [-32700, -32600, -32601].contains(code) {
                fail("a request of a known method answered \(code): \(FuzzSettings.show(bytes))")
            }
            if rule.isWait, let state = answer["result"]?["state"], state == "pending" {
                fail("wait answered with a pending record: \(FuzzSettings.show(bytes))")
            }
        }
    }

    /// A server push: `{"jsonrpc":"2.0","method":"settled"|"progress","params":{…}}`.
    private func checkNotification(_ members: [String: JSONValue], _ bytes: [UInt8]) {
        notificationsChecked += 1
        guard members["jsonrpc"] == "2.0", Set(members.keys) == ["jsonrpc", "method", "params"],
            case .object(let params)? = members["params"], case .string? = params["id"]
        else {
            fail("neither a response (no id) nor a valid notification: \(FuzzSettings.show(bytes))")
            return
        }
        switch members["method"] {
        case "settled":
            if !["fulfilled", "rejected", "cancelled"].contains(params["state"]?.stringValue ?? "") {
                fail("a settled notification without a settled state: \(FuzzSettings.show(bytes))")
            }
        case "progress":
            guard let progress = params["progress"]?.doubleValue, (0...1).contains(progress) else {
                fail("a progress notification without a progress in 0…1: \(FuzzSettings.show(bytes))")
                return
            }
        default:
            fail("a notification of an unknown method: \(FuzzSettings.show(bytes))")
        }
    }
}
