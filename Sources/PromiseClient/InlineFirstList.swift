/// A list that keeps its first element inline and allocates only for a
/// second: the watchers of an id are one nearly always (one mirror watches
/// it), and an array of one would cost a heap block per pending mirror.
///
/// ```swift
/// var list = InlineFirstList<Int>()
/// list.append(7)          // no allocation
/// list.append(8)          // the rest goes to an array
/// list.remove(7)          // [8]
/// ```
struct InlineFirstList<Element>: Sequence {
    /// Nil only when the list is empty.
    private var head: Element?
    private var rest: [Element] = []

    init() {}

    /// `first`, then `rest`, keeping `rest`'s buffer.
    init(first: Element, rest: [Element]) {
        head = first
        self.rest = rest
    }

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

    /// Removes every element `matches` picks, keeping the order of the others.
    /// - Returns: whether it removed any.
    @discardableResult
    mutating func remove(where matches: (Element) -> Bool) -> Bool {
        let before = count
        rest.removeAll(where: matches)
        if let element = head, matches(element) {
            head = rest.isEmpty ? nil : rest.removeFirst()
        }
        return count != before
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

extension InlineFirstList where Element: Equatable {
    /// Removes every element equal to `element`, keeping the order of the others.
    mutating func remove(_ element: Element) {
        remove { $0 == element }
    }
}

extension InlineFirstList: Sendable where Element: Sendable {}
