import Foundation
@testable import Promise
import Testing

/// Chains of combinators, each over the previous one's output, and inputs repeated
/// many times: settling and cancelling them, in either direction, runs in a loop at
/// a constant depth of the stack and in time linear in their length.
@Suite("Combinator chains", .serialized, .timeLimit(.minutes(3)))
struct CombinatorChainTests {
    enum Kind: String, CaseIterable, Sendable {
        case all, any, race, allSettled
    }

    /// One link: `kind` over `previous` alone, mapped back to an `Int` one more than
    /// the input's where the combinator changes the type (`all`, `allSettled`), and
    /// `any`'s aggregate error unwrapped.
    private static func link(_ kind: Kind, over previous: Promise<Int>) -> Promise<Int> {
        switch kind {
        case .all: Promise.all([previous]).then(on: .inline) { $0[0] + 1 }
        // Unwrapped: the aggregate of an aggregate of … would be a value 20,000 levels deep.
        case .any: Promise.any([previous]).recover(on: .inline) { error throws -> Int in
            throw (error as? AggregateError)?.failures.first?.error ?? error
        }
        case .race: Promise.race([previous])
        case .allSettled: Promise.allSettled([previous]).then(on: .inline) { try $0[0].get() + 1 }
        }
    }

    /// A root and the end of a chain of `length` links of `kind` over it.
    private static func chain(_ kind: Kind, length: Int) -> (root: Promise<Int>, end: Promise<Int>) {
        let root = Promise<Int>()
        var end = root
        for _ in 0..<length { end = link(kind, over: end) }
        return (root, end)
    }

    /// Runs `body` on a thread with a 1 MiB stack: code that recursed once per link
    /// would overflow it (and end the test process) long before 20,000 links.
    private func onSmallStack<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T? {
        switch await onNewThread(timeout: .seconds(120), stackSize: 1 << 20, body) {
        case .success(let value)?: return value
        case .failure(let error)?: Issue.record("unexpected error \(error)"); return nil
        case nil: Issue.record("did not finish within 120 s"); return nil
        }
    }

    /// Links of each chain, and repeats of an input. Under ThreadSanitizer
    /// (`make test-tsan` sets `PROMISE_TESTS_UNDER_TSAN`), which looks for
    /// races rather than depth, a tenth: still past what a recursion leaves
    /// of a 1 MiB stack.
    private static let scale = ProcessInfo.processInfo.environment["PROMISE_TESTS_UNDER_TSAN"] == nil ? 1 : 10
    private static let length = 20_000 / scale

    @Test("a chain of 20,000 combinators settles when its root is fulfilled", arguments: Kind.allCases)
    func chainSettlesFromRoot(kind: Kind) async throws {
        let result = await onSmallStack { () -> Result<Int, any Error>? in
            let (root, end) = Self.chain(kind, length: Self.length)
            root.fulfill(0)
            return end.result
        }
        let expected = kind == .any || kind == .race ? 0 : Self.length
        #expect(try result??.get() == expected)
    }

    @Test("a chain of 20,000 combinators passes its root's rejection to its end", arguments: Kind.allCases)
    func chainRejectsFromRoot(kind: Kind) async {
        let error = await onSmallStack { () -> String? in
            let (root, end) = Self.chain(kind, length: Self.length)
            root.reject(TestError.boom)
            guard case .failure(let error)? = end.result else { return nil }
            return String(describing: type(of: error))
        }
        // `allSettled` records the rejection and goes on: its `then` rethrows it.
        #expect(error == "TestError")
    }

    @Test("cancelling the root of a chain of 20,000 combinators rejects its end as cancelled",
          arguments: Kind.allCases)
    func cancellingRootReachesEnd(kind: Kind) async {
        let outcome = await onSmallStack { () -> (rootCancelled: Bool, endRejected: Bool) in
            let (root, end) = Self.chain(kind, length: Self.length)
            root.cancel()
            return (root.isCancelled, end.isRejected)
        }
        #expect(outcome?.rootCancelled == true)
        #expect(outcome?.endRejected == true)
    }

    @Test("cancelling the end of a chain of 20,000 combinators cancels every link up to the root",
          arguments: Kind.allCases)
    func cancellingEndReachesRoot(kind: Kind) async {
        let outcome = await onSmallStack { () -> (rootCancelled: Bool, endCancelled: Bool) in
            let (root, end) = Self.chain(kind, length: Self.length)
            end.cancel()
            return (root.isCancelled, end.isCancelled)
        }
        #expect(outcome?.rootCancelled == true)
        #expect(outcome?.endCancelled == true)
    }

    @Test("cancelling a combinator over one pending input repeated 250,000 times cancels the input",
          arguments: Kind.allCases)
    func cancellingRepeatedInput(kind: Kind) async {
        let outcome = await onSmallStack { () -> (inputCancelled: Bool, handlersLeft: Int) in
            let input = Promise<Int>()
            let inputs = Array(repeating: input, count: 250_000 / Self.scale)
            switch kind {
            case .all: Promise.all(inputs).cancel()
            case .any: Promise.any(inputs).cancel()
            case .race: Promise.race(inputs).cancel()
            case .allSettled: Promise.allSettled(inputs).cancel()
            }
            return (input.isCancelled, input._withState { $0.callbacks.count })
        }
        #expect(outcome?.inputCancelled == true)
        #expect(outcome?.handlersLeft == 0)
    }

    @Test("withdrawing 99,999 of 100,000 children keeps the parent pending, with the last child to run")
    func withdrawingMostChildren() async {
        let outcome = await onSmallStack { () -> (kept: Int, marked: Int, last: Int?, othersRan: Bool) in
            let parent = Promise<Int>()
            let children = (0..<100_000 / Self.scale).map { _ in parent.then(on: .inline) { $0 + 1 } }
            for child in children.dropLast() { child.cancel() }
            let kept = parent._withState { $0.callbacks.count }
            let marked = parent._withState { $0.extras?.withdrawnCount ?? 0 }
            parent.fulfill(1)
            let othersRan = children.dropLast().contains { !$0.isCancelled }
            return (kept, marked, children.last?.result.flatMap { try? $0.get() }, othersRan)
        }
        // Withdrawn handlers are dropped in passes, once they make up half the list:
        // no more than twice the live handlers stay behind.
        #expect(outcome.map { $0.kept - $0.marked == 1 && $0.kept <= 2 } == true)
        #expect(outcome?.last == 2)
        #expect(outcome?.othersRan == false)
    }

    @Test("a handler withdrawn from a long list never runs when the promise settles")
    func withdrawnHandlerDoesNotRun() {
        let parent = Promise<Int>()
        let children = (0..<100).map { _ in parent.then(on: .inline) { $0 } }
        children[3].cancel()
        children[50].cancel()
        #expect(parent._withState { $0.extras?.withdrawnCount } == 2)
        parent.fulfill(7)
        #expect(children[3].isCancelled)
        #expect(children[50].isCancelled)
        #expect(children.enumerated().allSatisfy { index, child in
            index == 3 || index == 50 || child.result.flatMap { try? $0.get() } == 7
        })
        #expect(parent._withState { $0.callbacks.count } == 0)
    }
}
