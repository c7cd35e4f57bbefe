import PromiseJSON
import PromiseRPC
import PromiseRegistry

/// The answer the registry gives later to request `id` (a `wait`, a
/// queued `pool.acquire`), written as its JSON-RPC response to `answers`.
struct RequestAnswers: LaterAnswers {
    let id: JSONValue
    let answers: any AnswerChannel

    func answer(record outcome: Result<[UInt8], RegistryError>) {
        switch outcome {
        case .success(let record): answers.send(.recordResult(id: id) { $0.append(record) })
        case .failure(let error): answers.send(.json(JSONRPCResponse.error(id, RPCError(error))))
        }
    }

    func answer(holding outcome: Result<PoolHolding, RegistryError>) {
        answers.send(.json(JSONRPCResponse.answer(id, outcome.map(\.json).mapError(RPCError.init))))
    }
}
