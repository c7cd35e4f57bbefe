import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
#if canImport(Glibc)
import Glibc
#endif

/// `wait --show-output`: waits for a promise while printing, as each `then
/// … exec` step it waits on ends, what that step wrote on stderr, each line
/// led by the step's id, as `make -j` shows a job's warnings when the job
/// ends rather than when the whole build does.
///
/// The steps are those at or above the promise when the wait starts
/// (``UpstreamSteps``); they and the promise are subscribed to on one
/// connection, so a restart of the daemon only delays the lines (the
/// subscription is made again, and what settled meanwhile is told then).
enum StepOutputWait {
    enum Outcome {
        /// The promise settled: its record.
        case settled(BlockingPromiseClient.Record)
        /// The timeout passed first.
        case timedOut
        /// Nothing to follow (no step above it, or the daemon refused the
        /// subscription): wait as usual and print the output at the end.
        case unavailable
    }

    static func wait(for id: String, timeout: Duration?, connection: ReconnectingPromiseClient) throws -> Outcome {
        let deadline = timeout.map { ContinuousClock.now + $0 }
        let steps = try connection.withReconnects { try UpstreamSteps.ids(above: id, with: $0) }
        guard !steps.isEmpty else { return .unavailable }
        let subscription: ReconnectingSubscription
        do {
            subscription = try connection.subscribe(steps + [id])
        } catch is RPCError {
            return .unavailable
        }
        let stepSet = Set(steps)
        var printed: Set<String> = []
        while true {
            let left = deadline.map { max(.zero, $0 - .now) }
            guard let notification = try subscription.next(timeout: left) else { return .timedOut }
            guard notification.method == "settled", let settled = notification.params["id"]?.stringValue,
                  notification.params["state"]?.stringValue != "pending"
            else { continue }
            // On the subscription's connection, without reconnecting here: a
            // connection lost now is found and made again by the next `next`,
            // and a step whose lines it cost is printed at the end.
            if stepSet.contains(settled), !printed.contains(settled),
               (try? PrefixedLogs.print([settled], streams: [.stderr], with: connection.client)) != nil
            {
                printed.insert(settled)
            }
            guard settled == id else { continue }
            // Steps that never ended (cancelled with the build, say) show what they wrote so far.
            let rest = steps.filter { !printed.contains($0) }
            if !rest.isEmpty {
                try connection.withReconnects { try PrefixedLogs.print(rest, streams: [.stderr], with: $0) }
            }
            return .settled(try BlockingPromiseClient.Record(notification.params))
        }
    }
}
