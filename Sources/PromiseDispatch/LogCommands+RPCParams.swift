import PromiseJSON
import PromiseModel
import PromiseRPC
import PromiseRegistry

extension LogCommand {
    /// `id`, `stream` (`stdout` or `stderr`), `data` (a string), `skipped?`.
    init(decoding params: RPCParams) throws(RPCError) {
        let id = try params.promiseID("id")
        guard let stream = try params.choice("stream", of: StepStream.self) else {
            throw RPCParams.invalid("stream", "\"stream\" is required: \"stdout\" or \"stderr\"")
        }
        guard let data = try params.string("data") else {
            throw RPCParams.invalid("data", "\"data\" is required: the output, as a string")
        }
        self.init(id: id, stream: stream, data: data, skipped: try params.int("skipped", in: 0...(1 << 53)) ?? 0)
    }
}

extension LogsQuery {
    /// `id`, `follow?`.
    init(decoding params: RPCParams) throws(RPCError) {
        self.init(id: try params.promiseID("id"), follow: try params.bool("follow") ?? false)
    }
}
