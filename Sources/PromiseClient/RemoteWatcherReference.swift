/// A ``RemoteWatcher`` as a connection's tables hold it: the object alone,
/// one word, where `any RemoteWatcher` is two (the object and its witness
/// table). Each watched id's table entry holds its first watcher, so the
/// word is saved once per pending mirror; the witness table is looked up
/// (a cached conformance) only when the watcher is told something.
struct RemoteWatcherReference: Sendable {
    private let object: any AnyObject & Sendable

    init(_ watcher: any RemoteWatcher) {
        object = watcher
    }

    /// The watcher, to tell it something.
    var watcher: any RemoteWatcher {
        object as! any RemoteWatcher
    }
}
