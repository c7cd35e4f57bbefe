import PromiseJSON
import PromiseModel
import PromiseRPC
import PromiseRegistry
import PromiseStore

extension ThenCommand {
    /// The params of `then`: `id` (the parent), `childId?`, `on?`, `exec?`,
    /// `cwd?`, `env?`, `pool?`, `retry?`, `retryDelayMs?`, `ifExists?`,
    /// `replace?`; `cwd`, `env`, `pool`, `retry` and `retryDelayMs` need `exec`.
    init(decoding params: RPCParams) throws(RPCError) {
        let parentID = try params.promiseID("id")
        let childID = try params.optionalPromiseID("childId")
        let on = try params.choice("on", of: ThenTrigger.self) ?? .fulfilled
        let argv = try params.strings("exec")
        let cwd = try params.string("cwd")
        let env = try params.stringMap("env")
        let ifExists = try params.choice("ifExists", of: IfExists.self) ?? .error
        let retries = try params.int("retry", in: 0...ExecStep.maxRetries)
        let retryDelay = try params.int("retryDelayMs", in: 0...ExecStep.maxRetryDelayMilliseconds)
        let step: ExecStep?
        if let argv {
            step = try refusing { () throws(RegistryError) in
                try ExecStep(
                    argv: argv, cwd: cwd, env: env ?? [:], retries: retries ?? 0,
                    retryDelayMilliseconds: UInt64(retryDelay ?? 0))
            }
        } else {
            if cwd != nil { throw RPCParams.invalid("cwd", "\"cwd\" needs \"exec\"") }
            if env != nil { throw RPCParams.invalid("env", "\"env\" needs \"exec\"") }
            if retries != nil { throw RPCParams.invalid("retry", "\"retry\" needs \"exec\"") }
            if retryDelay != nil { throw RPCParams.invalid("retryDelayMs", "\"retryDelayMs\" needs \"exec\"") }
            step = nil
        }
        let pool = try params.optionalPoolName("pool")
        if pool != nil && step == nil { throw RPCParams.invalid("pool", "\"pool\" needs \"exec\"") }
        let replace = try params.bool("replace") ?? false
        self = try refusing { () throws(RegistryError) in
            var step = step
            step?.pool = pool
            return try ThenCommand(
                parentID: parentID, childID: childID, on: on, step: step, ifExists: ifExists, replace: replace)
        }
    }
}
