import Promise
import PromiseJSON

/// `all` with `stopOnFailure`: once one input fails, the work behind the
/// others stops.
///
/// A fail-fast `all` rejects at the first failure but leaves its other
/// inputs running: in a build, the other compile steps go on for nothing.
/// With `stopOnFailure` it gives up its other inputs, by the counted rule a
/// cancelled combinator follows: an input this `all` was the last
/// uncancelled consumer of is cancelled (a queued step never starts, a
/// running command's process group is stopped), while an input another
/// pending promise still consumes (a `then` child, another combinator)
/// carries on. Waits and subscriptions are not consumers.
extension Registry {
    /// A fail-fast `all` over `inputs` that, once it has failed, gives up
    /// its inputs still pending.
    ///
    /// Each input is consumed through a `then` child of its own, the `all`
    /// consuming those: cancelling such a child takes this `all` off its
    /// input's consumers, and cancels the input if no other is left (the
    /// core's rule for a cancelled child). The core's `all` keeps its handler
    /// on an input that is still pending after it settled, so it could not
    /// be withdrawn directly without a new core API.
    ///
    /// ```swift
    /// // cc/f01 rejected: cc/f02 (running) is cancelled and its command stopped.
    /// let joined = stoppingOnFailure([f01.promise, f02.promise])
    /// ```
    static func stoppingOnFailure(_ inputs: [Promise<JSONValue>]) -> Promise<[JSONValue]> {
        // Pure and loop-free: each consumer settles as its input does, at once.
        let consumers = inputs.map { input in input.then(on: .inline) { value in value } }
        let joined = Promise<JSONValue>.all(consumers, policy: .failFast)
        // An observer, not a child: it does not keep the inputs from being cancelled.
        // Inline: settlements happen on the loop thread, and so do these cancels.
        joined.onSettled(on: .inline) { result in
            guard case .failure = result else { return }
            for consumer in consumers where consumer.isPending {
                consumer.cancel()
            }
        }
        return joined
    }
}
