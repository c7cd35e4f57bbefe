@testable import PromiseClient
import Testing

/// The connection's small lists: order kept through appends and removals,
/// the first element moving inline when the head goes.
@Suite("inline-first list")
struct InlineFirstListTests {
    @Test("appends keep their order; removing the head brings the next one inline")
    func appendAndRemove() {
        var list = InlineFirstList<Int>()
        #expect(list.isEmpty && list.count == 0 && Array(list).isEmpty)
        list.append(1)
        list.append(2)
        list.append(3)
        #expect(Array(list) == [1, 2, 3] && list.count == 3)
        list.remove(1)
        #expect(Array(list) == [2, 3])
        list.remove(3)
        #expect(Array(list) == [2])
        list.remove(9)
        #expect(Array(list) == [2])
        list.remove(2)
        #expect(list.isEmpty && Array(list).isEmpty)
        list.append(4)
        #expect(Array(list) == [4])
    }

    @Test("removing an element removes every copy of it")
    func removeEveryCopy() {
        var list = InlineFirstList([5, 6, 5, 7, 5])
        list.remove(5)
        #expect(Array(list) == [6, 7])
    }
}
