@testable import PromiseJSON
@testable import PromiseModel
@testable import PromiseStore
import Testing

/// Finding which parts of a combined value are its inputs' very values,
/// and making the value again from them.
@Suite("InputValueReferences")
struct InputValueReferencesTests {
    private let big = JSONValue.string(String(repeating: "b", count: 1_000))
    private let list = JSONValue.array([1, 2])

    @Test("a value is the same instance only when it shares its storage: equal copies, other spellings and doubles are not")
    func sameInstance() {
        let copy = JSONValue.string(String(repeating: "b", count: 999) + "b")
        #expect(big.isSameInstance(as: big))
        #expect(copy == big)
        #expect(!copy.isSameInstance(as: big))
        let composed = JSONValue.string("caf\u{E9}" + String(repeating: "-", count: 200))
        let decomposed = JSONValue.string("cafe\u{301}" + String(repeating: "-", count: 200))
        #expect(composed == decomposed)
        #expect(!composed.isSameInstance(as: decomposed))
        #expect(JSONValue.int(3).isSameInstance(as: .int(3)))
        #expect(!JSONValue.double(0).isSameInstance(as: .double(-0.0)))
        #expect(list.isSameInstance(as: list))
        #expect(!list.isSameInstance(as: [1, 2]))
    }

    @Test("an all refers to its inputs by position, or to its fulfilled inputs in order when shorter, small values in place")
    func allSources() {
        let byPosition = InputValueReferences(kind: .all, value: [big, "tiny", list], inputIDs: ["a", "b", "c"],
                                              inputValues: [big, "tiny", list])
        #expect(byPosition?.sources == [0, nil, 2])
        #expect(byPosition?.remainder(of: [big, "tiny", list]) == [nil, "tiny", nil])
        let skipping = InputValueReferences(kind: .all, value: [big, list], inputIDs: ["a", "x", "c"],
                                            inputValues: [big, nil, list])
        #expect(skipping?.sources == [0, 2])
        #expect(skipping?.remainder(of: [big, list]) == nil)
        #expect(InputValueReferences(kind: .all, value: ["tiny"], inputIDs: ["a"], inputValues: ["tiny"]) == nil)
        #expect(InputValueReferences(kind: .all, value: [.string(String(repeating: "b", count: 1_000))],
                                     inputIDs: ["a"], inputValues: [big]) == nil)
    }

    @Test("any and race refer to one input; allSettled to each fulfilled input's element")
    func otherKinds() {
        #expect(InputValueReferences(kind: .any, value: big, inputIDs: ["x", "a"], inputValues: [nil, big])?.sources == [1])
        #expect(InputValueReferences(kind: .race, value: list, inputIDs: ["a"], inputValues: [list])?.sources == [0])
        let element: JSONValue = ["id": "a", "state": "fulfilled", "value": big]
        let failed: JSONValue = ["id": "x", "state": "rejected", "reason": ["message": "no"]]
        let settled = InputValueReferences(kind: .allSettled, value: [element, failed], inputIDs: ["a", "x"],
                                           inputValues: [big, nil])
        #expect(settled?.sources == [0, nil])
        // An element naming another id is not taken for the input's.
        let renamed: JSONValue = ["id": "other", "state": "fulfilled", "value": big]
        #expect(InputValueReferences(kind: .allSettled, value: [renamed], inputIDs: ["a"], inputValues: [big]) == nil)
    }

    @Test("the value is made again from the inputs' values and what was stored in place")
    func rebuilds() throws {
        let references = InputValueReferences(sources: [0, nil, 0])
        let rebuilt = try references.value(kind: .all, remainder: [nil, 7, nil], inputIDs: ["a"], inputValues: [big])
        #expect(rebuilt == [big, 7, big])
        #expect(rebuilt.arrayValue?[2].isSameInstance(as: big) == true)
        let settled = try InputValueReferences(sources: [0]).value(
            kind: .allSettled, remainder: nil, inputIDs: ["a"], inputValues: [big])
        #expect(settled == [["id": "a", "state": "fulfilled", "value": big]])
        #expect(try InputValueReferences(sources: [1]).value(kind: .race, remainder: nil, inputIDs: ["a", "b"],
                                                              inputValues: [nil, list]) == list)
    }

    @Test("references that do not fit their inputs throw, naming what is wrong")
    func misfitsThrow() {
        #expect(throws: InputValueReferenceError.inputMissing("a")) {
            try InputValueReferences(sources: [0]).value(kind: .all, remainder: nil, inputIDs: ["a"], inputValues: [nil])
        }
        #expect(throws: InputValueReferenceError.malformed("input 3 of 1")) {
            try InputValueReferences(sources: [3]).value(kind: .all, remainder: nil, inputIDs: ["a"], inputValues: [big])
        }
        #expect(throws: InputValueReferenceError.malformed("element 1 is neither referenced nor stored")) {
            try InputValueReferences(sources: [0, nil]).value(kind: .all, remainder: nil, inputIDs: ["a"],
                                                              inputValues: [big])
        }
        #expect(throws: InputValueReferenceError.malformed("the value stored in place does not match its references")) {
            try InputValueReferences(sources: [0, nil]).value(kind: .all, remainder: [1], inputIDs: ["a"],
                                                              inputValues: [big])
        }
        #expect(throws: InputValueReferenceError.malformed("one input expected")) {
            try InputValueReferences(sources: [0, 0]).value(kind: .any, remainder: nil, inputIDs: ["a"],
                                                            inputValues: [big])
        }
    }
}
