import Promise
import PromiseJSON
import PromiseModel
import PromiseStore

/// A fulfilled combinator whose value is made of its inputs' values is
/// stored with references to them (``InputValueReferences``), not copies,
/// and gets their very values back at start-up (docs/DURABILITY.md,
/// "Retention"). Its inputs are kept while it is held, as a `then` child
/// that has its parent's value keeps its parent (``shareParentValue(_:)``).
extension Registry {
    /// The references of `entry`'s value to its inputs' values, when it is a
    /// fulfilled combinator without a value of its own and some of its
    /// value is an input's: marks it (``RemotePromise/sharesInputValues``)
    /// and counts it among its inputs' dependents, once. Durable registries
    /// only: in memory the values are shared anyway. Called at each
    /// snapshot of a combinator and when it settles; its inputs, kept by it
    /// pending and then by this, are the promises it was made of.
    @discardableResult
    func shareInputValues(_ entry: RemotePromise) -> InputValueReferences? {
        guard journal != nil, case .success(let value)? = entry.result, let inputIDs = entry.inputIDs,
              entry.sharesInputValues || !entry.hasOwnValue, case .combinator(let kind) = entry.kind,
              let references = InputValueReferences(
                  kind: kind, value: value, inputIDs: inputIDs,
                  inputValues: inputValues(of: inputIDs, besides: entry))
        else { return nil }
        if !entry.sharesInputValues {
            entry.sharesInputValues = true
            holdInputs(of: entry, by: 1)
        }
        return references
    }

    /// Adds `change` to the dependents of each input `entry` names (once per
    /// mention), so that retention and `forget` keep them while `entry`,
    /// which is stored with references to their values, is held.
    func holdInputs(of entry: RemotePromise, by change: Int) {
        guard let inputIDs = entry.inputIDs else { return }
        for inputID in inputIDs { entries[inputID]?.addDependents(change) }
    }

    /// The values of the held and fulfilled promises among `inputIDs`, nil
    /// for the others (and for `entry` itself, should it name itself).
    private func inputValues(of inputIDs: [String], besides entry: RemotePromise?) -> [JSONValue?] {
        inputIDs.map { inputID in
            guard let input = entries[inputID], input !== entry, case .success(let value)? = input.result else {
                return nil
            }
            return value
        }
    }

    /// A fulfilled combinator stored with references to its inputs' values:
    /// its value made again of theirs, the very values (so shared in memory
    /// again). Its inputs, earlier in creation order, are back already: it
    /// kept them from being collected or forgotten. Should one be gone all
    /// the same (its row was quarantined), or the references not fit, it is
    /// rejected at start-up, saying so.
    func rebuildSharingInputValues(_ stored: StoredPromise) -> (RemotePromise, RemoteRejection?) {
        let inputIDs = stored.inputIDs ?? []
        let references = InputValueReferences(sources: stored.valueOfInputs ?? [])
        let rejection: RemoteRejection
        do throws(InputValueReferenceError) {
            guard case .combinator(let combinator) = stored.kind else { throw .malformed("a \(stored.kind.text) has no input values") }
            let value = try references.value(
                kind: combinator, remainder: stored.value, inputIDs: inputIDs,
                inputValues: inputValues(of: inputIDs, besides: nil))
            let entry = register(Promise(value: value), id: stored.id, kind: kind(of: stored), inputIDs: inputIDs,
                                 name: stored.name, restoring: stored)
            entry.sharesInputValues = true
            holdInputs(of: entry, by: 1)
            fill(entry, from: stored)
            return (entry, nil)
        } catch {
            switch error {
            case .inputMissing(let inputID):
                rejection = RemoteRejection(
                    message: "cannot be restored: it had the value of its input \"\(inputID)\", which is no longer stored")
            case .malformed(let why):
                rejection = RemoteRejection(message: "cannot be restored: its stored value does not fit its inputs (\(why))")
            }
        }
        // Back as pending, to be rejected once every promise is back.
        var pending = stored
        (pending.state, pending.settled, pending.value, pending.valueOfInputs) = (.pending, nil, nil, nil)
        let entry = register(Promise(), id: stored.id, kind: kind(of: stored), inputIDs: inputIDs,
                             name: stored.name, restoring: pending)
        fill(entry, from: stored)
        return (entry, rejection)
    }
}
