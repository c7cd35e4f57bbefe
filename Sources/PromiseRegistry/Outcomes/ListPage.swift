/// One page of `list`: the promises found, in order, and where the next
/// page starts.
///
/// The wire answers each promise with its record, taken when the answer is
/// written, in the same turn.
///
/// ```swift
/// var page = try registry.list(ListQuery(prefix: "build/"))
/// while let cursor = page.cursor {
///     page = try registry.list(ListQuery(prefix: "build/", cursor: cursor))
/// }
/// ```
package struct ListPage {
    /// The promises on the page, in creation order (or their parent's order).
    package var promises: [RemotePromise]
    /// The position the next page starts after; nil when nothing more matches.
    package var cursor: Int?
}
