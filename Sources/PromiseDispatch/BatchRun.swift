import PromiseModel
import PromiseRPC
import PromiseRegistry

/// A JSON-RPC batch being run: its members, the next one to run, and the
/// answer they fill. The dispatcher runs it in slices of a loop turn each
/// (``TurnBudget``), so that a batch of a thousand `list` reads or a hundred
/// thousand `create`s does not hold every other client until it ends; its
/// connection handles no further line meanwhile (`RPCPeer.lineContinues()`),
/// which keeps its answers in order. Loop thread only.
final class BatchRun {
    let peer: any RPCPeer
    let answer: BatchAnswer
    private var members: [JSONRPCEnvelope?]
    private var nextIndex = 0
    /// Set while a slice runs, so that a slice asked for meanwhile (by an
    /// executor that runs work at once, as unit tests' does) runs after it
    /// rather than inside it.
    var isRunning = false
    /// A slice was asked for while one ran.
    var runsAgain = false

    init(members: [JSONRPCEnvelope?], peer: any RPCPeer, answer: BatchAnswer) {
        self.members = members
        self.peer = peer
        self.answer = answer
    }

    /// The next member to run, and its index; nil once all have run.
    func next() -> (index: Int, member: JSONRPCEnvelope?)? {
        guard nextIndex < members.count else { return nil }
        let index = nextIndex
        nextIndex += 1
        // Taken out, so that the member's storage goes once it has run.
        return (index, members[index].take())
    }

    /// Whether every member has run.
    var isFinished: Bool { nextIndex == members.count }

    /// The members not run yet keep their ids in their params: the line they
    /// lend their ids from (``LentPromiseID``) is gone once the turn that
    /// read it ends.
    func ownLentIDs() {
        for index in nextIndex..<members.count {
            members[index]?.putBackLentID()
        }
    }

    /// Drops the members not run yet: their connection is gone, or the daemon stops.
    func abandon() {
        members = []
        nextIndex = 0
    }
}

@available(*, unavailable)
extension BatchRun: Sendable {}
