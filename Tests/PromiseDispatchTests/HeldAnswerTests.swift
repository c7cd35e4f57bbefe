@testable import PromiseDispatch
@testable import PromiseModel
import PromiseRegistry
@testable import PromiseRPC
@testable import PromiseStore
import Testing

/// Messages the durable journal holds back until what they tell is stored
/// count towards the connection's output limit: the dispatcher and the
/// registry tell the peer how many bytes wait for it (the connection's side
/// is in PromiseServerTests).
@Suite("held answers count towards the output limit")
struct HeldAnswerTests {
    /// A peer that keeps what is sent and how many bytes are held for it.
    final class CountingPeer: RPCPeer {
        let connectionID: UInt64
        var isOpen = true
        private(set) var sent: [[UInt8]] = []
        private(set) var held = 0

        init(connectionID: UInt64) {
            self.connectionID = connectionID
        }

        func send(_ message: [UInt8]) -> Bool {
            sent.append(message)
            return true
        }

        func hold(bytes: Int) { held += bytes }
        func release(bytes: Int) { held -= bytes }
    }

    @Test("an answer held for the commit is counted in bytes for its peer until it is sent")
    func heldAnswerCounted() {
        let harness = RPCHarness(store: MemoryPromiseStore())
        let peer = CountingPeer(connectionID: 1)
        harness.dispatcher.connectionOpened(peer)
        harness.dispatcher.handle(
            line: Array(#"{"jsonrpc":"2.0","id":1,"method":"create","params":{"id":"a"}}"#.utf8), from: peer)
        #expect(peer.sent.isEmpty)
        #expect(peer.held > 40)
        let held = peer.held
        harness.settleStore()
        #expect(peer.held == 0)
        #expect(peer.sent.count == 1)
        #expect(peer.sent.first?.count == held)
    }

    @Test("a settled notification held for the commit is counted for each subscriber until it is sent")
    func heldNotificationCounted() {
        let harness = RPCHarness(store: MemoryPromiseStore())
        let subscriber = CountingPeer(connectionID: 1)
        let settler = CountingPeer(connectionID: 2)
        harness.dispatcher.connectionOpened(subscriber)
        harness.dispatcher.connectionOpened(settler)
        harness.dispatcher.handle(
            line: Array(#"{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{"ids":["a"]}}"#.utf8), from: subscriber)
        harness.settleStore()
        let value = String(repeating: "v", count: 10_000)
        harness.dispatcher.handle(
            line: Array(#"{"jsonrpc":"2.0","id":2,"method":"create","params":{"id":"a"}}"#.utf8), from: settler)
        harness.dispatcher.handle(
            line: Array(#"{"jsonrpc":"2.0","id":3,"method":"resolve","params":{"id":"a","value":"\#(value)"}}"#.utf8),
            from: settler)
        #expect(subscriber.held > 10_000)
        harness.settleStore()
        #expect(subscriber.held == 0)
        #expect(subscriber.sent.count == 2)  // the subscribe answer, then `settled`
        #expect(subscriber.sent.last.map { String(decoding: $0, as: UTF8.self).contains(#""method":"settled""#) } == true)
    }
}
