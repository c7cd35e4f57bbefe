import Promise
import PromiseJSON
import PromiseStore

extension RemotePromise {
    /// The fields of a remote promise that most promises leave empty. A
    /// million short-lived promises made with `create` and settled with
    /// `resolve` use none of them, and every 4 KB of new heap is a page
    /// fault. The `then` links and the core promise are here too, for the
    /// same reason (docs/PERFORMANCE.md). Loop thread only, as its promise.
    final class Details {
        /// The id of the promise this one follows (`then`), set when it is made.
        let parentID: String?
        /// Its `then` children, in creation order.
        var childIDs: [String] = []
        /// The inputs of a combinator, by index: AggregateError reasons name them.
        var inputIDs: [String]?
        /// The combinators this is an input of, in creation order (each once):
        /// the record's `consumers`, so that a client can draw the graph downwards.
        var consumerIDs: [String]?
        var name: String?
        var progressMessage: String?
        /// The fraction last given with the `progress` method (what is stored;
        /// a combinator's progress is derived from its inputs).
        var reportedProgress: Double?
        /// The progress the core promise had when it was let go, if not 1.
        var finalProgress: Double?
        var timeoutMilliseconds: UInt64?
        /// When the timeout rejects it: milliseconds since 1970, kept across restarts.
        var deadline: Int64?
        /// An `all`'s policy.
        var policy: AllPolicy?
        /// An `all` that gives up its other inputs once one fails (Registry+StopOnFailure).
        var stopOnFailure = false
        var timeoutTimer: (any ScheduledTimer)?
        /// Its lease: whether it has one, and which connection holds it.
        var lease = LeaseState()
        /// The command of a `then … exec` child.
        var job: ExecJob?
        /// The stdin line its `exec` children's commands share, while any holds it.
        weak var execInput: SharedExecInput?
        /// Its value's JSON text, while ``ValueTextCache`` keeps it.
        var valueText: [UInt8]?
        /// The core promise, while it has one (see `RemotePromise.core`).
        var core: Promise<JSONValue>?

        init(parentID: String? = nil) {
            self.parentID = parentID
        }

        /// Whether nothing is set: details made for a core promise alone go
        /// with it (``RemotePromise/compact()``). A field added above must be
        /// checked here too (`RemotePromiseTests` counts the fields).
        var isEmpty: Bool {
            let links = parentID == nil && childIDs.isEmpty && inputIDs == nil && consumerIDs == nil
            let labels = name == nil && progressMessage == nil && policy == nil && !stopOnFailure
            let progress = reportedProgress == nil && finalProgress == nil
            let timing = timeoutMilliseconds == nil && deadline == nil && timeoutTimer == nil
            let holding = !lease.isLeased && job == nil && execInput == nil
            return links && labels && progress && timing && holding && valueText == nil && core == nil
        }
    }

    /// The details, made on first write.
    private var writableDetails: Details {
        if let details { return details }
        let made = Details()
        details = made
        return made
    }

    /// Writes `value` into the details, making them only for a value that
    /// is there. Also for the core promise (RemotePromise.swift).
    func set<Value>(_ path: ReferenceWritableKeyPath<Details, Value?>, _ value: Value?) {
        guard value != nil || details != nil else { return }
        writableDetails[keyPath: path] = value
    }

    /// The id of the promise this one follows (`then`), if any.
    var parentID: String? { details?.parentID }

    /// Its `then` children, in creation order. Appended to in place.
    var childIDs: [String] {
        get { details?.childIDs ?? [] }
        _modify {
            let details = writableDetails
            yield &details.childIDs
        }
    }

    var inputIDs: [String]? {
        get { details?.inputIDs }
        set { set(\.inputIDs, newValue) }
    }

    var consumerIDs: [String]? {
        get { details?.consumerIDs }
        set { set(\.consumerIDs, newValue) }
    }

    /// Adds `id` to ``consumerIDs`` in place (an input of many combinators
    /// would otherwise copy its list for each).
    func addConsumer(_ id: String) {
        let details = writableDetails
        if details.consumerIDs == nil { details.consumerIDs = [] }
        details.consumerIDs?.append(id)
    }

    var name: String? {
        get { details?.name }
        set { set(\.name, newValue) }
    }

    var progressMessage: String? {
        get { details?.progressMessage }
        set { set(\.progressMessage, newValue) }
    }

    var reportedProgress: Double? {
        get { details?.reportedProgress }
        set { set(\.reportedProgress, newValue) }
    }

    var finalProgress: Double {
        get { details?.finalProgress ?? 1 }
        set { set(\.finalProgress, newValue == 1 ? nil : newValue) }
    }

    var timeoutMilliseconds: UInt64? {
        get { details?.timeoutMilliseconds }
        set { set(\.timeoutMilliseconds, newValue) }
    }

    var deadline: Int64? {
        get { details?.deadline }
        set { set(\.deadline, newValue) }
    }

    var policy: AllPolicy? {
        get { details?.policy }
        set { set(\.policy, newValue) }
    }

    var stopOnFailure: Bool {
        get { details?.stopOnFailure ?? false }
        set { if newValue || details != nil { writableDetails.stopOnFailure = newValue } }
    }

    var timeoutTimer: (any ScheduledTimer)? {
        get { details?.timeoutTimer }
        set { set(\.timeoutTimer, newValue) }
    }

    /// Its lease; every change goes through ``LeaseState``'s events.
    var leaseState: LeaseState {
        get { details?.lease ?? LeaseState() }
        set { if newValue.isLeased || details != nil { writableDetails.lease = newValue } }
    }

    /// Made or taken with a lease (stored, shown in its record; its holder may be gone).
    var lease: Bool { details?.lease.isLeased ?? false }

    var job: ExecJob? {
        get { details?.job }
        set { set(\.job, newValue) }
    }

    var execInput: SharedExecInput? {
        get { details?.execInput }
        set { set(\.execInput, newValue) }
    }

    var valueText: [UInt8]? {
        get { details?.valueText }
        set { set(\.valueText, newValue) }
    }
}

@available(*, unavailable)
extension RemotePromise.Details: Sendable {}
