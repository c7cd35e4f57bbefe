import PromiseModel

/// News the registry gives the connections that asked for it: a promise
/// settled, a pending promise's progress moved, a step wrote output.
/// Loop thread only, as the registry.
package enum RegistryEvent {
    /// `promise` settled; its subscribers receive its record.
    case settled(RemotePromise)
    /// Pending promise `id` reported `fraction` (0…1), `message` its latest message.
    case progress(id: String, fraction: Double, message: String?)
    /// Step `id` wrote `text` to `stream`, its first byte at `offset` in the stream.
    case log(id: String, stream: StepStream, text: String, offset: Int)
}

/// Takes the registry's events to the connections they are for. Each event
/// is made into what a connection reads once, however many receive it.
package protocol RegistryEventSink: AnyObject {
    /// Sends `event`, as it is now, to each of `sessions`.
    func send(_ event: RegistryEvent, to sessions: Dictionary<UInt64, RegistrySession>.Values)
    /// Sends `event`, as it is now, to `session` once the line being
    /// answered has its answer out (``Registry/endAnswer()``).
    func send(_ event: RegistryEvent, afterAnswerTo session: RegistrySession)
}
