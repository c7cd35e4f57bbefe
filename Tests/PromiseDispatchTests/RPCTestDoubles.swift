import Foundation
import Logging
import Promise
@testable import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseDispatch
@testable import PromiseRegistry
@testable import PromiseStore
import PromiseTestSupport
import Testing

/// A connection as the dispatcher sees it: keeps every line sent to it.
final class RPCFakePeer: RPCPeer {
    let connectionID: UInt64
    var isOpen = true
    /// The messages sent, each without the newline that ended its line.
    private(set) var sent: [[UInt8]] = []
    /// Read position in `sent` for `takeMessages()`.
    private var read = 0
    /// "continues" and "finished", as the dispatcher called `lineContinues` and `lineFinished`.
    private(set) var lineEvents: [String] = []

    init(connectionID: UInt64) {
        self.connectionID = connectionID
    }

    /// Checks what every producer of messages owes the connection: one
    /// line, ended by its newline, with no other newline in it.
    func send(_ line: [UInt8]) -> Bool {
        guard isOpen else { return false }
        let newline = UInt8(ascii: "\n")
        if line.last != newline || line.dropLast().contains(newline) {
            Issue.record("sent a message that is not one line: \(String(decoding: line, as: UTF8.self).debugDescription)")
        }
        sent.append(line.last == newline ? Array(line.dropLast()) : line)
        return true
    }

    /// Every message sent, parsed.
    var messages: [JSONValue] { sent.map { try! JSONValue(parsing: $0) } }

    func lineContinues() { lineEvents.append("continues") }
    func lineFinished() { lineEvents.append("finished") }

    /// The messages sent since the last call.
    @discardableResult
    func takeMessages() -> [JSONValue] {
        let fresh = sent[read...].map { try! JSONValue(parsing: $0) }
        read = sent.count
        return fresh
    }
}

/// A dispatcher over a registry with fake loop services and the `.inline`
/// executor: the test's thread plays the loop thread.
final class RPCHarness {
    let loop = RPCFakeLoop()
    let limits: DaemonLimits
    let registry: Registry
    let dispatcher: Dispatcher
    private var nextConnection: UInt64 = 1
    private var nextRequest = 1

    /// The loop side of the group commit, when durable: run by ``settleStore()``.
    let journalLoop = RPCManualExecutor()

    /// - Parameters:
    ///   - store: Makes the registry durable: commits run inline on the
    ///     test's thread when ``settleStore()`` runs the journal's loop work,
    ///     which every ``send(_:from:)`` does.
    ///   - executor: Where the registry's core handlers run: at once by
    ///     default; an ``RPCManualExecutor`` plays the loop's turns.
    init(limits: DaemonLimits = DaemonLimits(), store: MemoryPromiseStore? = nil, executor: any Executor = .inline) {
        self.limits = limits
        let logger = Logger(label: "test.registry") { _ in SwiftLogNoOpLogHandler() }
        let journalLoop = self.journalLoop
        let loop = self.loop
        let journal = store.map { store in
            GroupCommit(store: store, loop: journalLoop, writer: .inline, services: loop, logger: logger)
        }
        registry = Registry(limits: limits, services: loop, executor: executor, journal: journal, logger: logger)
        dispatcher = Dispatcher(registry: registry, limits: limits, logger: logger)
        // A line's work in one go, however slow the build: what it makes is then exact.
        dispatcher.turnBudget = .unbounded
    }

    /// Runs the journal's pending loop work: cuts, commits and releases what they held.
    func settleStore() {
        journalLoop.drain()
    }

    /// Opens a new connection.
    func connect() -> RPCFakePeer {
        let peer = RPCFakePeer(connectionID: nextConnection)
        nextConnection += 1
        dispatcher.connectionOpened(peer)
        return peer
    }

    func close(_ peer: RPCFakePeer) {
        peer.isOpen = false
        dispatcher.connectionClosed(peer)
    }

    /// Sends one raw line.
    func send(_ line: String, from peer: RPCFakePeer) {
        dispatcher.handle(line: Array(line.utf8), from: peer)
        settleStore()
    }

    /// Sends a request with a fresh id; returns that id.
    @discardableResult
    func request(_ method: String, _ params: JSONValue = [:], from peer: RPCFakePeer) -> Int {
        let id = nextRequest
        nextRequest += 1
        let message: JSONValue = ["jsonrpc": "2.0", "id": .int(id), "method": .string(method), "params": params]
        send(message.description, from: peer)
        return id
    }

    /// Sends `requests` (method and params) as one batch line, their ids numbered from 1.
    func sendBatch(_ requests: [(method: String, params: JSONValue)], from peer: RPCFakePeer) {
        let batch = JSONValue.array(requests.enumerated().map { index, request in
            ["jsonrpc": "2.0", "id": .int(index + 1), "method": .string(request.method), "params": request.params]
        })
        send(String(decoding: batch.serialized(), as: UTF8.self), from: peer)
    }

    /// Sends `requests` as one batch line (see ``sendBatch(_:from:)``) and
    /// returns the answers in the line that comes back.
    func batchAnswers(
        _ requests: [(method: String, params: JSONValue)], from peer: RPCFakePeer,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> [JSONValue] {
        let before = peer.sent.count
        sendBatch(requests, from: peer)
        #expect(peer.sent.count == before + 1, "one line answers a batch", sourceLocation: sourceLocation)
        let line = try #require(peer.sent.last, sourceLocation: sourceLocation)
        return try #require(try JSONValue(parsing: line).arrayValue, sourceLocation: sourceLocation)
    }

    /// Sends a notification (no id).
    func notify(_ method: String, _ params: JSONValue = [:], from peer: RPCFakePeer) {
        let message: JSONValue = ["jsonrpc": "2.0", "method": .string(method), "params": params]
        send(message.description, from: peer)
    }

    /// Calls `method` and returns the answer message (result or error).
    func answer(
        _ method: String, _ params: JSONValue = [:], from peer: RPCFakePeer,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> JSONValue {
        let before = peer.sent.count
        let id = request(method, params, from: peer)
        let answers = peer.sent[before...].map { try! JSONValue(parsing: $0) }.filter { $0["id"] == .int(id) }
        #expect(answers.count == 1, "expected one answer to \(method), got \(answers)", sourceLocation: sourceLocation)
        return answers.first ?? .null
    }

    /// Calls `method`, expecting success; returns the result (null on failure, recorded as an issue).
    @discardableResult
    func call(
        _ method: String, _ params: JSONValue = [:], from peer: RPCFakePeer,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> JSONValue {
        let message = answer(method, params, from: peer, sourceLocation: sourceLocation)
        #expect(message["error"] == nil, "\(method) \(params) failed: \(message)", sourceLocation: sourceLocation)
        return message["result"] ?? .null
    }

    /// Calls `method`, expecting an error; returns its code (0 when it succeeded, recorded as an issue).
    func errorCode(
        _ method: String, _ params: JSONValue = [:], from peer: RPCFakePeer,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> Int {
        let message = answer(method, params, from: peer, sourceLocation: sourceLocation)
        #expect(message["error"] != nil, "\(method) \(params) succeeded: \(message)", sourceLocation: sourceLocation)
        return message["error"]?["code"]?.intValue ?? 0
    }

    /// The record of `id`, read with `get`.
    func record(_ id: String, from peer: RPCFakePeer, sourceLocation: SourceLocation = #_sourceLocation) -> JSONValue {
        call("get", ["id": .string(id)], from: peer, sourceLocation: sourceLocation)
    }

    /// The state of `id`, read with `get`.
    func state(_ id: String, from peer: RPCFakePeer, sourceLocation: SourceLocation = #_sourceLocation) -> String? {
        record(id, from: peer, sourceLocation: sourceLocation)["state"]?.stringValue
    }
}

extension JSONValue {
    /// The notifications among `messages` with this method.
    static func notifications(_ method: String, in messages: [JSONValue]) -> [JSONValue] {
        messages.filter { $0["method"] == .string(method) && $0["id"] == nil }
    }
}

