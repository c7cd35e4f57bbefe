/// A list that keeps its first element inline and allocates only for a
/// second: the watchers of an id and the ids of a watcher are one element
/// nearly always (a mirror watches one id, and one mirror watches it), and
/// an array of one would cost a heap block per pending mirror.
///
/// ```swift
/// var list = InlineFirstList<Int>()
/// list.append(7)          // no allocation
/// list.append(8)          // the rest goes to an array
/// list.remove(7)          // [8]
/// ```
struct InlineFirstList<Element: Equatable>: Sequence {
    /// Nil only when the list is empty.
    private var head: Element?
    private var rest: [Element] = []

    init() {}

    init(_ elements: [Element]) {
        head = elements.first
        rest = Array(elements.dropFirst())
    }

    var isEmpty: Bool { head == nil }
    var count: Int { head == nil ? 0 : 1 + rest.count }

    mutating func append(_ element: Element) {
        if head == nil {
            head = element
        } else {
            rest.append(element)
        }
    }

    /// Removes every element equal to `element`, keeping the order of the others.
    mutating func remove(_ element: Element) {
        rest.removeAll { $0 == element }
        if head == element {
            head = rest.isEmpty ? nil : rest.removeFirst()
        }
    }

    struct Iterator: IteratorProtocol {
        var head: Element?
        var rest: IndexingIterator<[Element]>

        mutating func next() -> Element? {
            if let element = head {
                head = nil
                return element
            }
            return rest.next()
        }
    }

    func makeIterator() -> Iterator {
        Iterator(head: head, rest: rest.makeIterator())
    }
}

extension InlineFirstList: Sendable where Element: Sendable {}
