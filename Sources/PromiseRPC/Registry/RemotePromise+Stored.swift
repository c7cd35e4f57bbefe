import Promise

extension RemotePromise {
    /// What a store keeps of this promise: how it was made, so that links
    /// and combinators can be re-armed, and where it stands now. `now`
    /// stamps `settled` when the registry has not yet seen the settlement.
    func stored(now: Int64) -> StoredPromise {
        let result = result(stampingSettledAt: now)
        var stored = StoredPromise(
            id: id, sequence: sequence, kind: kind.name, parentID: parentID, inputIDs: inputIDs,
            policy: policy, name: name, created: created, settled: settled, state: state,
            progressMessage: progressMessage, timeoutMilliseconds: timeoutMilliseconds, deadline: deadline,
            lease: lease)
        if case .then(let on, _) = kind {
            stored.on = on
            if let job {
                stored.exec = job.spec.argv
                stored.cwd = job.spec.cwd
                stored.env = job.spec.env.isEmpty ? nil : job.spec.env
                stored.execStarted = job.started
            }
        }
        switch result {
        case .success(let value)?: stored.value = value
        case .failure(let error)?: stored.reason = reason(for: error).json
        case nil: stored.progress = reportedProgress
        }
        return stored
    }
}
