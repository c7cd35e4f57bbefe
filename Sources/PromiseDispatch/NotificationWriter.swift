import PromiseJSON
import PromiseModel
import PromiseRPC
import PromiseRegistry

/// The registry's events as JSON-RPC notifications (docs/PROTOCOL.md,
/// "Notifications"): `settled` with the promise's record, `progress` and
/// `log`. Each is written once, as a line, and the same bytes go to every
/// connection that receives it. Loop thread only.
final class NotificationWriter: RegistryEventSink {
    /// The registry whose events these are; it holds this writer.
    private unowned let registry: Registry

    init(registry: Registry) {
        self.registry = registry
    }

    func send(_ event: RegistryEvent, to sessions: Dictionary<UInt64, RegistrySession>.Values) {
        let line = line(for: event)
        for session in sessions { session.push(line: line) }
    }

    func send(_ event: RegistryEvent, afterAnswerTo session: RegistrySession) {
        let line = line(for: event)
        registry.deferred.append { [weak session] in session?.push(line: line) }
    }

    /// `event` as the line a connection reads.
    func line(for event: RegistryEvent) -> [UInt8] {
        switch event {
        case .settled(let entry):
            return settledLine(entry)
        case .progress(let id, let fraction, let message):
            var params: [String: JSONValue] = ["id": .string(id), "progress": .double(fraction)]
            if let message { params["message"] = .string(message) }
            return JSONRPCResponse.notification("progress", .object(params)).serializedLine()
        case .log(let id, let stream, let text, let offset):
            let params: JSONValue = [
                "id": .string(id), "stream": .string(stream.rawValue), "data": .string(text), "offset": .int(offset),
            ]
            return JSONRPCResponse.notification("log", params).serializedLine()
        }
    }

    /// The `settled` notification of `entry`, its record written as text.
    private func settledLine(_ entry: RemotePromise) -> [UInt8] {
        let now = registry.now()
        let maxChildren = registry.limits.maxRecordChildren
        let valueText = registry.valueText(of: entry)
        return JSONTextBuffer.line { text in
            JSONObjectWriter.append(to: &text) { object in
                object.string("jsonrpc", "2.0")
                object.string("method", "settled")
                object.json("params") {
                    entry.writeRecord(now: now, maxChildren: maxChildren, valueText: valueText, to: &$0)
                }
            }
        }
    }
}
