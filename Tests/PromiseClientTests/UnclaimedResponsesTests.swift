@testable import PromiseClient
@testable import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
import Testing

/// The answers a client read before they were asked for: each id's answers
/// come out first in, first out (takeLast: last in), however many wait, and
/// across the move from the short list to the dictionary.
@Suite("unclaimed answers")
struct UnclaimedResponsesTests {
    private static func answer(_ id: JSONValue, _ n: Int) -> JSONValue { ["id": id, "result": .int(n)] }

    @Test("answers come out by id, each id's in the order they came", arguments: [3, 16, 17, 40])
    func answersComeOutByIDInOrder(count: Int) {
        var unclaimed = UnclaimedResponses()
        // Ids 0, 1, 2 in turn, then the null id twice: `count` answers in all.
        var expected: [JSONValue: [JSONValue]] = [:]
        for n in 0..<count {
            let id: JSONValue = n >= count - 2 ? .null : .int(n % 3)
            unclaimed.append(Self.answer(id, n), for: id)
            expected[id, default: []].append(Self.answer(id, n))
        }
        #expect(!unclaimed.isEmpty)
        #expect(unclaimed.takeFirst(for: 99) == nil)
        for id in expected.keys.sorted(by: { $0.serialized().lexicographicallyPrecedes($1.serialized()) }) {
            for answer in expected[id]! {
                #expect(unclaimed.takeFirst(for: id) == answer, "\(id)")
            }
            #expect(unclaimed.takeFirst(for: id) == nil, "\(id)")
        }
        #expect(unclaimed.isEmpty)
    }

    @Test("takeLast takes the newest answer of an id, below and past the list's length", arguments: [2, 30])
    func takeLastTakesTheNewest(count: Int) {
        var unclaimed = UnclaimedResponses()
        for n in 0..<count { unclaimed.append(Self.answer(.null, n), for: .null) }
        unclaimed.append(Self.answer(1, 100), for: 1)
        #expect(unclaimed.takeLast(for: .null) == Self.answer(.null, count - 1))
        #expect(unclaimed.takeFirst(for: .null) == Self.answer(.null, 0))
        #expect(unclaimed.takeLast(for: 1) == Self.answer(1, 100))
        #expect(unclaimed.takeLast(for: 1) == nil)
    }

    @Test("answers that come after the dictionary emptied keep their order")
    func orderKeptAfterTheDictionaryEmpties() {
        var unclaimed = UnclaimedResponses()
        for n in 0..<20 { unclaimed.append(Self.answer(7, n), for: 7) }
        for n in 0..<20 { #expect(unclaimed.takeFirst(for: 7) == Self.answer(7, n)) }
        #expect(unclaimed.isEmpty)
        unclaimed.append(Self.answer(7, 20), for: 7)
        unclaimed.append(Self.answer(7, 21), for: 7)
        #expect(unclaimed.takeFirst(for: 7) == Self.answer(7, 20))
        #expect(unclaimed.takeFirst(for: 7) == Self.answer(7, 21))
    }
}
