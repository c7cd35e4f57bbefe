/// `replace: true` on `create` and `then`: a script run again makes its
/// promises under the same ids, each forgetting the settled one of the run
/// before (docs/PROTOCOL.md, "create").
extension Registry {
    /// Forgets the settled `existing` so that its id may be made again, or
    /// says why not (alreadyExists): it is pending, or a pending promise needs it.
    func forgetToReplace(_ existing: RemotePromise) throws(RegistryError) {
        if existing.isPending {
            throw .alreadyExists(id: existing.id, state: existing.state, conflict: .pending)
        }
        if existing.dependents > 0 {
            throw .alreadyExists(id: existing.id, state: existing.state, conflict: .needed)
        }
        remove(existing)
    }
}
