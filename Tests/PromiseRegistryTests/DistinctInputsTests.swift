import Promise
import PromiseJSON
@testable import PromiseRegistry
import Testing

@Suite("DistinctInputs: a combinator watches each input once")
struct DistinctInputsTests {
    private static func entry(_ id: String) -> RemotePromise {
        RemotePromise(id: id, promise: Promise<JSONValue>(), kind: .created, sequence: 0, parentID: nil,
                      inputIDs: nil, name: nil, created: 0)
    }

    @Test("an input named many times is one promise to watch, and results spread back to every position")
    func repeatedInput() {
        let a = Self.entry("a"), b = Self.entry("b")
        var asked: [String] = []
        let distinct = DistinctInputs([a, b, a, a], promise: { asked.append($0.id); return $0.corePromise! })
        #expect(asked == ["a", "b"])
        #expect(distinct.promises.count == 2)
        #expect(distinct.spreading.repeats)
        #expect(distinct.spreading.spread(["A", "B"]) == ["A", "B", "A", "A"])
    }

    @Test("a failure of a repeated input is listed at each of its positions, in position order")
    func repeatedFailure() {
        let a = Self.entry("a"), b = Self.entry("b"), c = Self.entry("c")
        let distinct = DistinctInputs([b, a, b, c], promise: { $0.corePromise! })
        let spread = distinct.spreading.spread(AggregateError(failures: [(0, PromiseError.timedOut), (2, CancellationError())]))
        let failures = (spread as? AggregateError)?.failures ?? []
        #expect(failures.map(\.index) == [0, 2, 3])
        #expect(failures.map { $0.error is CancellationError } == [false, false, true])
        #expect((distinct.spreading.spread(PromiseError.cycle) as? PromiseError) == .cycle, "other errors pass as they are")
    }

    @Test("inputs that do not repeat are taken as they are")
    func distinctInputs() {
        let inputs = ["a", "b", "c"].map(Self.entry)
        let distinct = DistinctInputs(inputs, promise: { $0.corePromise! })
        #expect(distinct.promises.count == 3)
        #expect(!distinct.spreading.repeats)
        #expect(distinct.spreading.spread([1, 2, 3]) == [1, 2, 3])
    }
}
