import PromiseStore

/// `list`: a page of promises in creation order (or of one parent's `then`
/// children, in their order), filtered by state and id prefix.
package struct ListQuery {
    /// Only promises in this state.
    package var state: StoredPromise.State?
    /// Only promises whose id starts with this, byte for byte.
    package var prefix: String?
    /// Only the `then` children of this promise.
    package var parentID: String?
    /// The most records the page holds (1 to ``maxLimit``).
    package var limit: Int
    /// Where the page starts: after the position an earlier page's cursor names.
    package var cursor: Int?

    /// The largest `limit` a `list` takes.
    package static let maxLimit = 10_000
    /// The `limit` of a `list` that gives none.
    package static let defaultLimit = 100

    package init(
        state: StoredPromise.State? = nil, prefix: String? = nil, parentID: String? = nil,
        limit: Int = Self.defaultLimit, cursor: Int? = nil
    ) {
        self.state = state
        self.prefix = prefix
        self.parentID = parentID
        self.limit = limit
        self.cursor = cursor
    }
}
