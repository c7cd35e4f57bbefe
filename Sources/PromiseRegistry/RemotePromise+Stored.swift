import Promise
import PromiseJSON
import PromiseModel
import PromiseStore

extension RemotePromise {
    /// What a store keeps of this promise: how it was made, so that links
    /// and combinators can be re-armed, and where it stands now. `now`
    /// stamps `settled` when the registry has not yet seen the settlement;
    /// `references`, those of a combinator that shares its inputs' values
    /// (``sharesInputValues``), stand for the value, but for what they leave out.
    func stored(now: Int64, references: InputValueReferences? = nil) -> StoredPromise {
        // Built in one initializer call from the one reading of `result`:
        // filled in afterwards, the record would be copied and destroyed
        // once more, and `state` would read the core promise's result again,
        // in a snapshot the loop takes per change (docs/PERFORMANCE.md).
        let result = result(stampingSettledAt: now)
        var on: ThenTrigger?
        var job: ExecJob?
        if case .then(let target, _) = kind {
            on = target
            job = self.job
        }
        var value: JSONValue?
        var reason: JSONValue?
        switch result {
        case .success where sharesParentValue: break
        case .success(let fulfilled)? where references != nil: value = references?.remainder(of: fulfilled)
        case .success(let fulfilled)?: value = fulfilled
        case .failure(let error)?: reason = self.reason(for: error).json
        case nil: break
        }
        return StoredPromise(
            id: id, sequence: sequence, kind: kind.stored, parentID: parentID, inputIDs: inputIDs,
            on: on, exec: job?.spec.argv, cwd: job?.spec.cwd,
            env: job.flatMap { $0.spec.env.isEmpty ? nil : $0.spec.env },
            policy: policy, stopOnFailure: stopOnFailure, name: name, created: created, settled: settled, state: Self.storedState(of: result),
            value: value, reason: reason, progress: result == nil ? reportedProgress : nil,
            progressMessage: progressMessage, timeoutMilliseconds: timeoutMilliseconds, deadline: deadline,
            lease: lease, execStarted: job?.started ?? false, valueOfParent: sharesParentValue,
            execPid: job?.recordedProcess?.pid, execStartTime: job?.recordedProcess?.startTime,
            pool: job.flatMap { $0.pool == ExecPools.defaultName ? nil : $0.pool },
            queueTicket: result == nil && job?.isQueued == true ? job?.turn?.ticket : nil,
            started: job?.launched, exitStatus: job?.exitStatus,
            valueOfInputs: references?.sources,
            retry: job.flatMap { $0.retries > 0 ? $0.retries : nil },
            retryDelayMs: job.flatMap { $0.retries > 0 && $0.retryDelayMilliseconds > 0 ? $0.retryDelayMilliseconds : nil },
            attempts: job.flatMap { $0.retries > 0 && $0.attempts > 0 ? $0.attempts : nil })
    }
}
