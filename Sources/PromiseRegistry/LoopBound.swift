/// Carries a loop-thread object into a `@Sendable` core handler.
///
/// The registry and its entries live on the daemon's loop thread and are not
/// `Sendable`. Core handlers must be `@Sendable`, so the registry wraps what
/// they need in this box and runs every such handler on its executor — the
/// loop's executor in the daemon, `.inline` on the test's own thread in unit
/// tests — so the value is still only ever touched on the loop thread.
package struct LoopBound<Value>: @unchecked Sendable {  // loop-thread confined: only unwrapped inside handlers run on the loop executor
    package let value: Value

    package init(_ value: Value) {
        self.value = value
    }
}

/// Like ``LoopBound``, but holds its object weakly, so that handlers left on
/// long-lived promises do not keep the registry alive.
package struct WeakLoopBound<Object: AnyObject>: @unchecked Sendable {  // loop-thread confined, as LoopBound
    package weak var value: Object?

    package init(_ value: Object) {
        self.value = value
    }
}
